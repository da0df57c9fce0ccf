import ProfileDrop
import Foundation
import ProfileDropCapture
import ProfileDropCore
import ProfileDropCrypto
import ProfileDropTransport

#if canImport(Glibc)
    import Glibc
#endif

/// One run of `share`: the device on real sockets, its motion, and what the user sees.
final class ShareSession {
    /// The longest a closed device keeps its session to finish the close before the process exits.
    /// The process exits as soon as the core has nothing left to do: on a clean path a few round
    /// trips after closing (the close's drain is three probe timeouts of the session's round trip,
    /// PROTOCOL.md 6.7). This bound only cuts a close whose CLOSE_ACK keeps being lost, after
    /// several retransmissions; the outcome was already decided on both sides.
    static let exitLinger: Duration = .milliseconds(700)
    /// Pose updates while a scripted motion plays.
    static let motionTick: Duration = .milliseconds(50)
    /// Interactive steps: one arrow press moves 1 cm or turns 5 degrees.
    static let keyStep = (distance: 1.0, degrees: 5.0)
    /// How long past `--timeout` the process may run, in any state. The core's overall limit is
    /// `--timeout`: it closes a live session then (an unanswered request is declined) and the
    /// device with it, and the process lingers at most ``exitLinger`` after that; this bound only
    /// stops a process whose device, against that rule, did not close.
    static let deadlineGrace: Duration = .seconds(1)

    private let options: ShareOptions
    private let console: Console
    private let clock = MonotonicClock()
    private var display: ShareDisplay
    private var motion: MotionMode
    private var movement: DeviceMotion
    private var initiator = false
    private var receivedCard: ProfileCard?
    private var keyDecoder = KeyDecoder()
    private var lineSplitter = LineSplitter()
    /// Whether the device waits for the user's answer to a consent request.
    private var pendingConsent = false
    /// Whether standard input may still bring answers: false once it reached its end.
    private var stdinOpen = true
    /// When `--timeout` runs out, from the start of the run.
    private var deadline = Instant.zero
    /// Why the last session that did not end the device ended.
    private var lastSessionFailure: CloseReason?
    /// The peer acknowledged our card.
    private var cardAcknowledged = false
    /// The exchange closed with no card either way (both sides only receive).
    private var nothingMoved = false
    /// The received card could not be saved (`--save`): it was shown, and the run fails.
    private var saveFailed = false

    init(options: ShareOptions, console: Console) throws {
        self.options = options
        self.console = console
        motion = options.motion
        display = ShareDisplay(
            mode: options.output, console: console, consent: options.consent)
        movement = DeviceMotion(options.motion)
    }

    func run() throws -> ExitCode {
        // Checked before anything is exchanged: a card must never arrive with nowhere to go.
        if let directory = options.saveDirectory { try CardSaver.checkDirectory(directory) }
        // So is the capture's file, not found unwritable once the session it records is over.
        if let path = options.capturePath { try OutputFile.checkWritable(path, option: "--capture") }
        deadline = clock.now + options.timeout
        // The key file holds the long-term identity secret, which only known peers can recognise;
        // the Noise static key is new every run, so nothing long-term reaches a stranger.
        let secret = try StaticKeyStore.loadOrCreate(at: options.staticKeyPath).key
        let identity = DeviceIdentity(secret: secret.rawRepresentation)
        var random = SystemRandom()
        let runKey = X25519.PrivateKey(using: &random)
        let knownPeers = try KnownPeersStore.load(at: options.knownPeersPath)
        // Written when an exchange with a new peer completes: a bond that could not be kept is
        // found now, before anything is exchanged.
        try OutputFile.createDirectories(for: options.knownPeersPath)
        try OutputFile.checkWritable(options.knownPeersPath, option: "--known-peers")
        let host = try UDPHost(interfaces: options.interfaces, endpoint: options.endpoint, clock: clock)
        var timeouts = Timeouts()
        timeouts.overall = options.timeout
        let configuration = DeviceConfiguration(
            card: options.card, consent: options.consent, staticKey: runKey, identity: identity,
            knownPeers: knownPeers, timeouts: timeouts)
        if let path = options.capturePath {
            let recorder = CaptureRecorder(
                options: CaptureOptions(
                    keylog: options.keylog,
                    multicastGroup: PeerAddress(
                        ipv4: options.endpoint.ipv4Group.value, port: options.endpoint.port),
                    epochNanoseconds: Self.epochOfClock(clock)))
            let device = CapturingDevice(
                configuration: configuration, random: SystemRandom(), now: clock.now,
                localAddress: host.localAddress,
                name: "share", recorder: recorder,
                // The run's key is on no disk: replay can only find it in the capture.
                staticKey: options.keylog ? .embedded(runKey.rawRepresentation) : .external)
            // Written however the session ends, so that a failing pairing can be replayed; with its
            // keylog it holds the identity's and the known peers' secrets, so only its owner reads
            // it. A capture that cannot be written fails the run (exit 6), whatever its outcome.
            let outcome = Result {
                try drive(
                    ImpairedDevice(device, impairment: options.impairment), state: \.inner.device, host: host)
            }
            var written = true
            do {
                try OutputFile.replace(path, with: recorder.fileBytes(), secret: options.keylog)
            } catch {
                console.error("profiledrop share: --capture \(error)")
                written = false
            }
            let code = try outcome.get()
            return written ? code : .runtimeError
        }
        let device = Device(
            configuration: configuration, random: SystemRandom(), now: clock.now,
            localAddress: host.localAddress)
        return try drive(ImpairedDevice(device, impairment: options.impairment), state: \.inner, host: host)
    }

    /// Nanoseconds since 1970 at which the monotonic clock read zero, for capture timestamps.
    static func epochOfClock(_ clock: MonotonicClock) -> UInt64 {
        let wall = UInt64(max(0, Date().timeIntervalSince1970 * 1e9))
        return wall &- clock.now.nanoseconds
    }

    /// Runs the device until it closes and has lingered, or the user quits. `state` reads the core
    /// device inside `device`, for display.
    private func drive<D: SansIODevice>(
        _ device: D, state: KeyPath<D, Device>, host: UDPHost
    ) throws -> ExitCode {
        var driver = DeviceDriver(device: device, sockets: host)
        let onEvent = { (event: DeviceEvent, device: D) in self.handle(event, state: device[keyPath: state]) }
        driver.device.updatePose(movement.pose, at: clock.now)
        display.started(
            interfaces: options.interfaces.map(\.name), listening: host.listeningDescription,
            snapshot: driver.device[keyPath: state].snapshot)
        try driver.flush(onEvent: onEvent)

        let terminal = RawTerminal()
        let readsKeys = options.output == .terminal
        let readsStdin = readsKeys || options.consent.mayAskUser
        EndingSignal.install()
        if readsKeys { terminal.enable() }
        defer { terminal.restore() }

        var closedAt: Instant?
        var outcome: SettledOutcome?
        var stopped: CloseReason?
        var quitRequested = false
        while stopped == nil {
            var wake = clock.now + .milliseconds(250)
            if movement.isMoving { wake = min(wake, clock.now + Self.motionTick) }
            // Woken at the end of the linger, or at the hard bound, so that neither is overrun.
            wake = min(wake, closedAt.map { $0 + Self.exitLinger } ?? deadline + Self.deadlineGrace)
            // Datagrams, timeout, and every reply and event they cause, all within this one turn.
            // Standard input is watched until it ends: a closed one is always readable.
            let stdinReadable = try driver.turn(
                wakingBy: wake, alsoWatching: readsStdin && stdinOpen ? STDIN_FILENO : nil, onEvent: onEvent)
            // A signal or `q` cancels a device still running; once it closed, the outcome is
            // reported below and they only cut the close short.
            if stdinReadable, readInput(&driver.device, state: state) == .quit { quitRequested = true }
            let signal = EndingSignal.received
            if signal != nil || quitRequested, !driver.device.isClosed {
                return try endEarly(&driver, state: state, signal: signal, onEvent: onEvent)
            }
            let now = clock.now
            advanceMotion(&driver.device, at: now)
            try driver.flush(onEvent: onEvent)

            if driver.device.isClosed {
                if closedAt == nil {
                    // The outcome is settled now (the card saved); the process only lingers to answer
                    // retransmitted CLOSEs, and prints its final line when it is done, so that the
                    // line is its last act whatever standard input holds open.
                    closedAt = now
                    outcome = settleOutcome(driver.device[keyPath: state])
                }
                if driver.device.nextDeadline == nil || now >= (closedAt ?? now) + Self.exitLinger
                    || now >= deadline + Self.deadlineGrace || signal != nil || quitRequested
                {
                    break
                }
            } else if now >= deadline + Self.deadlineGrace {
                // Not reached while the core keeps its overall limit (`--timeout`), which closes the
                // device in every state; kept so that the process ends on time all the same.
                let reason: CloseReason =
                    lastSessionFailure == .outOfRange ? .outOfRange : .timeout(.noExchange)
                display.finish(reason: reason, snapshot: driver.device[keyPath: state].snapshot, card: nil)
                stopped = reason
            }
        }

        let core = driver.device[keyPath: state]
        if let outcome { report(outcome) }
        if options.verbose { console.error(Self.countersLine(core.counters, host: host.statistics)) }
        if nothingMoved { return .declined }
        if saveFailed { return .runtimeError }
        return Self.exitCode(for: stopped ?? core.closedReason ?? .timeout(.noExchange))
    }

    /// Ends the run at the user's word (`q`, or a signal): the device is cancelled, so a live
    /// session sends CLOSE(declined) (with CONSENT(decline) if a question was pending) and the peer
    /// hears at once instead of waiting out its timers; the process stays until the core has
    /// nothing left to do, at most ``exitLinger``, answering the close. Then the final line, and
    /// the exit code (4 for `q`, 128 + the signal's number).
    private func endEarly<D: SansIODevice>(
        _ driver: inout DeviceDriver<D, UDPHost>, state: KeyPath<D, Device>, signal: Int32?,
        onEvent: (DeviceEvent, D) -> Void
    ) throws -> ExitCode {
        pendingConsent = false
        driver.device.cancel(at: clock.now)
        try driver.flush(onEvent: onEvent)
        let end = clock.now + Self.exitLinger
        while let due = driver.device.nextDeadline, clock.now < end {
            _ = try driver.turn(wakingBy: min(due, end), alsoWatching: nil, onEvent: onEvent)
            try driver.flush(onEvent: onEvent)
        }
        display.finish(
            reason: nil, snapshot: driver.device[keyPath: state].snapshot, card: nil,
            signal: signal.map(EndingSignal.name))
        switch signal {
        case SIGHUP: return .hangUp
        case SIGTERM: return .terminated
        case .some: return .interrupted
        case nil: return .declined
        }
    }

    /// One line of traffic counters for `--verbose`: what was dropped, by reason, and what was resent.
    static func countersLine(_ counters: DeviceCounters, host: UDPHost.Statistics) -> String {
        let dropped = ProtocolError.Code.allCases.compactMap { code -> String? in
            let count = counters.rejected(code)
            return count > 0 ? "\(code.name) \(count)" : nil
        }
        return "datagrams: received \(counters.datagramsReceived), accepted \(counters.datagramsAccepted), "
            + "dropped \(counters.datagramsRejected)"
            + (dropped.isEmpty ? "" : " (" + dropped.joined(separator: ", ") + ")")
            + ", sent \(counters.datagramsSent); resent: handshake \(counters.handshakeRetransmissions), "
            + "chunks \(counters.chunkRetransmissions); send failures \(host.sendFailures)"
    }

    /// What a closed device ended with, kept from its close to the final line.
    private struct SettledOutcome {
        var reason: CloseReason
        var snapshot: DeviceSnapshot
        var saved: String?
    }

    /// Settles the outcome of a device that just closed: the received card is saved (`--save`),
    /// and whether anything moved is decided. The final line is printed later, by ``report(_:)``.
    private func settleOutcome(_ device: Device) -> SettledOutcome {
        let reason = device.closedReason ?? .timeout(.noExchange)
        var saved: String?
        if case .exchanged = reason, let card = receivedCard, let directory = options.saveDirectory {
            // A card that cannot be written is still shown in full, and the process still lingers
            // to answer the peer's close: only the exit code says the save failed.
            do {
                saved = try CardSaver.save(card, in: directory)
            } catch {
                saveFailed = true
                console.error("profiledrop share: \(error)")
            }
        }
        // Both sides only receive: the session closes as exchanged with nothing to move, which
        // the user must not read as a success.
        nothingMoved = reason == .exchanged && receivedCard == nil && !cardAcknowledged
        return SettledOutcome(reason: reason, snapshot: device.snapshot, saved: saved)
    }

    /// The final line of a run whose device closed: the outcome, the card and where it was saved.
    private func report(_ outcome: SettledOutcome) {
        display.finish(
            reason: outcome.reason, snapshot: outcome.snapshot, card: receivedCard, saved: outcome.saved,
            nothingMoved: nothingMoved)
    }

    /// The exit code of a run that ended with `reason`, as docs/share.md lists them. It follows the
    /// coarse `reason` of `--json` (``ShareDisplay/reasonCode(_:)``): a request nobody answered
    /// declines (4), as it does on the wire; a peer that broke the protocol is an error (6).
    static func exitCode(for reason: CloseReason) -> ExitCode {
        switch reason {
        case .exchanged: return .success
        case .timeout(.consent): return .declined
        case .timeout: return .timeout
        case .declined: return .declined
        case .outOfRange: return .outOfRange
        case .error: return .runtimeError
        }
    }

    private func handle(_ event: DeviceEvent, state: Device) {
        switch event {
        case .connecting(_, let isInitiator):
            initiator = isInitiator
        case .secured:
            if case .approach = motion { movement.startApproach(initiator: initiator, at: clock.now) }
        case .cardReceived(let card):
            receivedCard = card
        case .acknowledged:
            cardAcknowledged = true
        case .consentRequested:
            pendingConsent = true
            display.askConsent(
                timeoutSeconds: consentSeconds(), offersCard: options.card != nil, snapshot: state.snapshot)
            return
        case .peerRemembered(let peer):
            display.remembered(
                peer, fingerprint: KnownPeersStore.fingerprint(peer), stored: remember(peer),
                snapshot: state.snapshot)
            return
        case .sessionEnded(_, let reason):
            pendingConsent = false
            lastSessionFailure = reason
        case .closed(let reason):
            // The request was declined for want of an answer: before --timeout, or at it.
            if pendingConsent && reason == .timeout(.consent) {
                display.declinedUnanswered(snapshot: state.snapshot)
            }
            pendingConsent = false
        case .advertising, .peerFound, .peerBusy, .ranging, .inRange, .exchanging, .cardVerified,
            .datagramRejected, .verified, .pairingInterrupted, .knownPeerMismatch,
            .incompatiblePeer:
            break
        }
        display.show(event, snapshot: state.snapshot)
    }

    /// How long the request just made waits for an answer: the core's consent timeout, or less
    /// when `--timeout` comes first.
    private func consentSeconds() -> Int {
        let left = clock.now < deadline ? deadline - clock.now : .zero
        return Int(min(Timeouts().consent, left).components.seconds)
    }

    /// Stores a peer the exchange completed with. A failure is one line on standard error: the
    /// exchange happened all the same.
    private func remember(_ peer: KnownPeer) -> Bool {
        do {
            try KnownPeersStore.remember(peer, at: options.knownPeersPath)
            return true
        } catch {
            console.error("profiledrop share: cannot remember the peer: \(error)")
            return false
        }
    }

    private func advanceMotion(_ device: inout some SansIODevice, at now: Instant) {
        if let pose = movement.advance(to: now) { device.updatePose(pose, at: now) }
    }

    /// Reads what standard input holds: key presses on a terminal, answer lines otherwise.
    private func readInput<D: SansIODevice>(_ device: inout D, state: KeyPath<D, Device>) -> KeyPress? {
        var buffer = [UInt8](repeating: 0, count: 512)
        let count = buffer.withUnsafeMutableBytes { read(STDIN_FILENO, $0.baseAddress, $0.count) }
        if count < 0 {
            if errno == EINTR || errno == EAGAIN { return nil }
            stdinOpen = false
            return nil
        }
        if count == 0 {
            // The end of input: no answer will come, and an unanswered request declines by itself.
            stdinOpen = false
            if options.output != .terminal, let last = lineSplitter.finish() {
                return answer(last, &device, state: state)
            }
            return nil
        }
        let bytes = Array(buffer[0..<count])
        guard options.output == .terminal else {
            for line in lineSplitter.feed(bytes) where answer(line, &device, state: state) == .quit {
                return .quit
            }
            return nil
        }
        for key in keyDecoder.feed(bytes) {
            switch key {
            case .quit:
                return .quit
            case .letter(let letter):
                guard pendingConsent else { continue }
                let decision: ConsentDecision? =
                    letter == "s" ? .share : letter == "r" ? .receiveOnly : letter == "d" ? .decline : nil
                if let decision { decide(decision, &device, state: state) }
            case .up, .down, .left, .right:
                guard case .interactive = motion else { continue }
                let moved: Pose
                switch key {
                case .up: moved = movement.pose.moved(forward: Self.keyStep.distance)
                case .down: moved = movement.pose.moved(forward: -Self.keyStep.distance)
                case .left: moved = movement.pose.turned(by: Self.keyStep.degrees)
                case .right: moved = movement.pose.turned(by: -Self.keyStep.degrees)
                case .quit, .letter: continue
                }
                guard let pose = movement.step(to: moved) else { continue }
                device.updatePose(pose, at: clock.now)
                display.poseChanged(pose, snapshot: device[keyPath: state].snapshot)
            }
        }
        return nil
    }

    /// One line of input in lines or `--json` mode: an answer, `q` (lines mode), or an input error
    /// that is reported and otherwise ignored.
    private func answer<D: SansIODevice>(
        _ line: LineSplitter.Line, _ device: inout D, state: KeyPath<D, Device>
    ) -> KeyPress? {
        let input: ConsentInput
        switch line {
        case .tooLong:
            input = .invalid("line longer than \(LineSplitter.maximumLineBytes) bytes")
        case .text(let text):
            input = options.output == .json ? ConsentInput.parseJSON(text) : ConsentInput.parseLine(text)
        }
        switch input {
        case .blank:
            break
        case .quit:
            return .quit
        case .invalid(let detail):
            display.inputError(detail)
        case .decision(let decision):
            guard pendingConsent else {
                display.inputError("no consent request is pending")
                break
            }
            decide(decision, &device, state: state)
        }
        return nil
    }

    private func decide<D: SansIODevice>(
        _ decision: ConsentDecision, _ device: inout D, state: KeyPath<D, Device>
    ) {
        pendingConsent = false
        device.decide(decision, at: clock.now)
        display.decided(decision, snapshot: device[keyPath: state].snapshot)
    }
}
