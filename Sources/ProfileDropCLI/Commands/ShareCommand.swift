import ProfileDrop

/// `profiledrop share --profile FILE`: pair with a peer on the LAN and swap profile cards.
enum ShareCommand: Subcommand {
    static let name = "share"
    static let summary =
        "find a peer on the LAN and swap profile cards once the devices are held together and you agree"
    static let parser = ArgumentParser(
        command: name,
        options: [
            Options.profile, Options.interface, Options.pose, Options.still, Options.motion, Options.json,
            Options.save, Options.receiveOnly, Options.yes, Options.yesKnown, Options.confirm,
            Options.timeout, Options.keyFile,
            Options.knownPeers, Options.port, Options.verbose, Options.capture, Options.keylog,
            Options.impairLoss, Options.address,
        ]
    )
    static let synopsis = ["--profile FILE [OPTIONS]", "--receive-only [OPTIONS]"]

    static let helpSections = [
        HelpSection(
            title: "examples",
            lines: [
                "profiledrop share --profile Examples/bori.json",
                "profiledrop share --profile bori.json --interface eth0 --save ~/cards",
                "profiledrop share --profile bori.json --pose 0,0,0       # then move with the arrow keys",
                "profiledrop share --receive-only --json                  # answers as JSON lines on stdin",
                "profiledrop share --profile bori.json --interface lo --port 47600 --key-file /tmp/bori/key",
            ]),
        HelpSection(
            title: "keys (on a terminal)",
            lines: [
                "s          share your card (when asked, after comparing the code)",
                "r          receive the peer's card only, send none",
                "d          decline",
                "s1 r1 d1   with several devices listed: share with, receive from or decline device 1",
                "d Enter    with several devices listed: decline them all",
                "\u{2191} \u{2193}        move forward or back 1 cm (with --pose, not --still or --motion)",
                "\u{2190} \u{2192}        turn 5 degrees left or right",
                "q          quit (exit 4); Ctrl-C ends with exit 130; either declines a pending request",
            ]),
        HelpSection(
            title: "answers when standard input is not a terminal",
            lines: [
                "one per line: s or share, r or receive-only, d or decline, q to quit;",
                "with several devices listed, followed by the device's number (s1, d2); d alone declines all;",
                "with --json: {\"decision\":\"share\"}, \"receive-only\" or \"decline\",",
                "naming one of several: {\"decision\":\"share\",\"candidate\":\"<peer>\"} (or 1, its number)",
            ]),
    ]

    static let exitCodes: [(code: ExitCode, meaning: String)] = [
        (.success, "exchanged"),
        (.usage, "usage or input error (a bad flag, card file or key file)"),
        (.timeout, "timeout (no peer, or a wait that ran out, --timeout included)"),
        (.declined, "declined, by either user, or a question nobody answered"),
        (.outOfRange, "out of range: the devices never held 5-10 cm, facing each other"),
        (.runtimeError, "error: a peer that broke the protocol, or a socket or file that failed"),
        (.hangUp, "ended by SIGHUP; a pending request is declined, so the peer hears at once"),
        (.interrupted, "ended by Ctrl-C (SIGINT); a pending request is declined, so the peer hears at once"),
        (.terminated, "ended by SIGTERM; a pending request is declined, so the peer hears at once"),
    ]

    /// Every option of `share`, declared once.
    enum Options {
        static let profile = Option.path("profile", valueName: "FILE", help: "the card to share (JSON)")
        static let interface = Option.text(
            "interface", valueName: "NAME", repeatable: true,
            help: "interface to use (default: all up, multicast, non-loopback)")
        static let pose = Option<Pose>("pose", valueName: "X,Y,H", help: "start pose: cm, cm, degrees") {
            try PoseSyntax.pose($0, flag: "pose")
        }
        static let still = Flag("still", help: "keep the start pose")
        static let motion = Option.text(
            "motion", valueName: "SCRIPT", help: "scripted motion, e.g. 'hold 1; move 7,0,180 2'")
        static let json = Flag("json", help: "one JSON snapshot per line")
        static let save = Option.path(
            "save", valueName: "DIR", help: "write the received card and photo here")
        static let receiveOnly = Flag(
            "receive-only",
            help: "receive the peer's card, send none, without --profile (still asks first, unless --yes)")
        static let yes = Flag(
            "yes",
            help:
                "share with whoever completes pairing, without asking; anyone on this network can get your card"
        )
        static let yesKnown = Flag(
            "yes-known",
            help:
                "share without asking with known peers (devices you exchanged with before, proven); "
                + "ask about any other device")
        static let confirm = Flag(
            "confirm",
            help: "ask before sharing, showing the code to compare; declines by itself after 60 s or at "
                + "--timeout (the default; kept for scripts)")
        static let timeout = Option.integer(
            "timeout", valueName: "SECONDS", in: 1...3600,
            help: "give up after this long, an unanswered question included (default 120)")
        static let keyFile = IdentityFileOptions.keyFile
        static let knownPeers = IdentityFileOptions.knownPeers
        static let port = Option<UInt16>("port", valueName: "PORT", help: "discovery port (default 47544)") {
            guard let number = UInt16($0), number >= 1024 else {
                throw UsageError("--port takes a port from 1024 to 65535, got '\($0)'")
            }
            return number
        }
        static let verbose = Flag("verbose", help: "show counters of dropped datagrams")
        static let capture = Option.path(
            "capture", valueName: "FILE.pcapng", help: "record the session for Wireshark and replay")
        static let keylog = Flag(
            "keylog", help: "with --capture: also record the session secrets replay needs")
        static let address = Option.text(
            "address", valueName: "A.B.C.D",
            help: "send from this local IPv4 address (default: the interface's), e.g. 127.0.0.2 on lo")
        static let impairLoss = Option<Double>(
            "impair-loss", valueName: "P", help: "testing: drop this fraction of outgoing datagrams"
        ) {
            guard let fraction = Double($0), (0...0.9).contains(fraction) else {
                throw UsageError("--impair-loss takes a fraction from 0 to 0.9, got '\($0)'")
            }
            return fraction
        }
    }

    static func run(_ arguments: ParsedArguments, console: Console) throws -> ExitCode {
        guard arguments.positionals.isEmpty else {
            throw UsageError("unexpected argument '\(arguments.positionals[0])'")
        }
        let options = try ShareOptions(arguments)
        let session = try ShareSession(options: options, console: console)
        return try session.run()
    }
}

/// The parsed and validated options of `share`.
struct ShareOptions {
    var card: ProfileCard?
    var consent: PairingConfiguration.ConsentPolicy
    var motion: MotionMode
    /// The interfaces named with `--interface` (none: every usable one); the library checks them.
    var interfaces: [String]
    var port: UInt16 = PairingConfiguration.Network().port
    /// Testing: the fraction of outgoing datagrams dropped (`--impair-loss`).
    var sendLoss: Double = 0
    /// The local address to send from (`--address`); nil: the interface's.
    var address: String?
    /// The file of the device's long-term identity secret.
    var staticKeyPath: String
    /// The known-peers file: read at start, written when an exchange completes.
    var knownPeersPath: String
    var timeout: Duration
    var saveDirectory: String?
    var output: OutputMode
    var verbose: Bool
    var capturePath: String?
    var keylog: Bool

    enum OutputMode { case terminal, lines, json }

    init(_ arguments: ParsedArguments) throws {
        let receiveOnly = arguments.has(ShareCommand.Options.receiveOnly)
        let yes = arguments.has(ShareCommand.Options.yes)
        let yesKnown = arguments.has(ShareCommand.Options.yesKnown)
        if yes && arguments.has(ShareCommand.Options.confirm) {
            throw UsageError("--yes and --confirm cannot be combined: --yes shares without asking")
        }
        if yesKnown && (yes || arguments.has(ShareCommand.Options.confirm)) {
            throw UsageError(
                "--yes-known cannot be combined with --\(yes ? "yes" : "confirm"): it shares without asking "
                    + "with known peers only")
        }
        if let path = arguments.value(ShareCommand.Options.profile) {
            guard !receiveOnly else {
                throw UsageError(
                    "--receive-only and --profile cannot be combined: --receive-only sends no card")
            }
            do {
                card = try CardFiles.load(contentsOf: path)
            } catch {
                throw UsageError(error.diagnostic)
            }
        } else if !receiveOnly {
            throw UsageError("--profile FILE is required (or --receive-only)")
        }
        // --receive-only offers no card; the user is asked all the same, unless --yes (which then
        // receives). With --yes-known a known peer gets the share decision, which without a card
        // means receive-only.
        consent = yes ? .always : yesKnown ? .knownPeers : .ask

        let start = arguments.value(ShareCommand.Options.pose)
        if let script = arguments.value(ShareCommand.Options.motion) {
            guard !arguments.has(ShareCommand.Options.still) else {
                throw UsageError("--motion and --still cannot be combined")
            }
            motion = .scripted(try PoseSyntax.script(script, from: start ?? Pose(x: 0, y: 0, heading: 0)))
        } else if arguments.has(ShareCommand.Options.still) {
            guard let start else { throw UsageError("--still needs --pose X,Y,H") }
            motion = .still(start)
        } else if let start {
            motion = .interactive(start)
        } else {
            motion = .approach
        }

        interfaces = arguments.allValues(ShareCommand.Options.interface)
        if let port = arguments.value(ShareCommand.Options.port) { self.port = port }
        if let loss = arguments.value(ShareCommand.Options.impairLoss) { sendLoss = loss }
        address = arguments.value(ShareCommand.Options.address)
        staticKeyPath = try IdentityFileOptions.keyFilePath(arguments)
        knownPeersPath = IdentityFileOptions.knownPeersPath(arguments, keyFilePath: staticKeyPath)
        let seconds = arguments.value(ShareCommand.Options.timeout, default: 120)
        timeout = .seconds(seconds)
        saveDirectory = arguments.value(ShareCommand.Options.save)
        verbose = arguments.has(ShareCommand.Options.verbose)
        capturePath = arguments.value(ShareCommand.Options.capture)
        keylog = arguments.has(ShareCommand.Options.keylog)
        if keylog && capturePath == nil { throw UsageError("--keylog goes with --capture FILE") }
        output =
            arguments.has(ShareCommand.Options.json) ? .json : RawTerminal.isInteractive ? .terminal : .lines
    }

    /// The run these options ask for, in the library's terms.
    var configuration: PairingConfiguration {
        let pose: PairingConfiguration.Motion
        switch motion {
        case .approach: pose = .approach
        case .still(let start), .interactive(let start): pose = .fixed(start)
        case .scripted(let script): pose = .scripted(script)
        }
        var network = PairingConfiguration.Network(interfaces: interfaces, port: port, sendLoss: sendLoss)
        network.address = address
        return PairingConfiguration(
            card: card, identity: .keyFile(staticKeyPath), knownPeers: .file(knownPeersPath),
            network: network, motion: pose,
            consent: consent, timeout: timeout,
            capture: capturePath.map { PairingConfiguration.Capture(path: $0, keylog: keylog) })
    }
}
