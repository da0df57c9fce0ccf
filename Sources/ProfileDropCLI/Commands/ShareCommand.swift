import ProfileDropCardFile
import ProfileDropCore
import ProfileDropCrypto
import ProfileDropTransport

/// `profiledrop share --profile FILE`: pair with a peer on the LAN and swap profile cards.
enum ShareCommand: Subcommand {
    static let name = "share"
    static let summary = "find a peer on the LAN and swap profile cards once the devices are held together"
    static let parser = ArgumentParser(
        command: name,
        options: [
            OptionSpec(name: "profile", kind: .single, valueName: "FILE", help: "the card to share (JSON)"),
            OptionSpec(
                name: "interface", kind: .repeatable, valueName: "NAME",
                help: "interface to use (default: all up, multicast, non-loopback)"),
            OptionSpec(name: "pose", kind: .single, valueName: "X,Y,H", help: "start pose: cm, cm, degrees"),
            OptionSpec(name: "still", kind: .flag, help: "keep the start pose"),
            OptionSpec(
                name: "motion", kind: .single, valueName: "SCRIPT",
                help: "scripted motion, e.g. 'hold 1; move 7,0,180 2'"),
            OptionSpec(name: "json", kind: .flag, help: "one JSON snapshot per line"),
            OptionSpec(
                name: "save", kind: .single, valueName: "DIR", help: "write the received card and photo here"),
            OptionSpec(name: "receive-only", kind: .flag, help: "receive the peer's card, send none"),
            OptionSpec(
                name: "confirm", kind: .flag, help: "ask before sharing; declines by itself after 60 s"),
            OptionSpec(
                name: "timeout", kind: .single, valueName: "SECONDS",
                help: "give up after this long (default 120)"),
            OptionSpec(name: "key-file", kind: .single, valueName: "PATH", help: "static key file"),
            OptionSpec(
                name: "port", kind: .single, valueName: "PORT", help: "discovery port (default 47544)"),
            OptionSpec(name: "verbose", kind: .flag, help: "show counters of dropped datagrams"),
            OptionSpec(
                name: "capture", kind: .single, valueName: "FILE.pcapng",
                help: "record the session for Wireshark and replay"),
            OptionSpec(
                name: "keylog", kind: .flag,
                help: "with --capture: also record the session secrets replay needs"),
            OptionSpec(
                name: "impair-loss", kind: .single, valueName: "P",
                help: "testing: drop this fraction of outgoing datagrams"),
        ]
    )

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
    var consent: ConsentPolicy
    var motion: MotionMode
    var interfaces: [NetworkInterface]
    var endpoint = DiscoveryEndpoint()
    var impairment = Impairment()
    var staticKeyPath: String
    var timeout: Duration
    var saveDirectory: String?
    var output: OutputMode
    var verbose: Bool
    var capturePath: String?
    var keylog: Bool

    enum OutputMode { case terminal, lines, json }

    init(_ arguments: ParsedArguments) throws {
        let receiveOnly = arguments.has("receive-only")
        if let path = arguments.value("profile") {
            do {
                card = try CardFile.load(contentsOf: path)
            } catch {
                throw UsageError("\(error)")
            }
        } else if !receiveOnly {
            throw UsageError("--profile FILE is required (or --receive-only)")
        }
        if receiveOnly && arguments.has("confirm") {
            throw UsageError("--receive-only and --confirm cannot be combined")
        }
        consent = receiveOnly ? .receiveOnly : arguments.has("confirm") ? .askUser : .share

        let start = try arguments.value("pose").map { try PoseSyntax.pose($0, flag: "pose") }
        if let script = arguments.value("motion") {
            guard !arguments.has("still") else { throw UsageError("--motion and --still cannot be combined") }
            motion = .scripted(try PoseSyntax.script(script, from: start ?? Pose(x: 0, y: 0, heading: 0)))
        } else if arguments.has("still") {
            guard let start else { throw UsageError("--still needs --pose X,Y,H") }
            motion = .still(start)
        } else if let start {
            motion = .interactive(start)
        } else {
            motion = .approach
        }

        do {
            interfaces = try NetworkInterface.select(
                names: arguments.allValues("interface"), from: NetworkInterface.all())
        } catch let error as TransportError {
            throw UsageError(error.diagnostic)
        }
        if let port = arguments.value("port") {
            guard let number = UInt16(port), number >= 1024 else {
                throw UsageError("--port takes a port from 1024 to 65535, got '\(port)'")
            }
            endpoint.port = number
        }
        if let loss = arguments.value("impair-loss") {
            guard let fraction = Double(loss), (0...0.9).contains(fraction) else {
                throw UsageError("--impair-loss takes a fraction from 0 to 0.9, got '\(loss)'")
            }
            impairment = Impairment(loss: fraction, seed: 1)
        }
        staticKeyPath = try arguments.value("key-file") ?? StaticKeyStore.defaultPath()
        let seconds = try arguments.integer("timeout", default: 120, in: 1...3600)
        timeout = .seconds(seconds)
        saveDirectory = arguments.value("save")
        verbose = arguments.has("verbose")
        capturePath = arguments.value("capture")
        keylog = arguments.has("keylog")
        if keylog && capturePath == nil { throw UsageError("--keylog goes with --capture FILE") }
        output = arguments.has("json") ? .json : RawTerminal.isInteractive ? .terminal : .lines
    }
}
