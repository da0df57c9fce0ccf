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
    /// How long a closed device keeps answering retransmitted CLOSEs before the process exits. The
    /// protocol drains for 3 s; 700 ms covers the first two retransmissions (200 and 400 ms), which
    /// is what a lost CLOSE_ACK costs on a LAN, without making every exit wait 3 s.
    static let exitLinger: Duration = .milliseconds(700)
    /// Pose updates while a scripted motion plays.
    static let motionTick: Duration = .milliseconds(50)
    /// Interactive steps: one arrow press moves 1 cm or turns 5 degrees.
    static let keyStep = (distance: 1.0, degrees: 5.0)

    private let options: ShareOptions
    private let console: Console
    private let clock = MonotonicClock()
    private var display: ShareDisplay
    private var motion: MotionMode
    private var movement: DeviceMotion
    private var initiator = false
    private var receivedCard: ProfileCard?
    private var keyDecoder = KeyDecoder()
    private var pendingConsent = false

    init(options: ShareOptions, console: Console) throws {
        self.options = options
        self.console = console
        motion = options.motion
        display = ShareDisplay(mode: options.output, console: console)
        movement = DeviceMotion(options.motion)
    }

    func run() throws -> ExitCode {
        let key = try StaticKeyStore.loadOrCreate(at: options.staticKeyPath).key
        let host = try UDPHost(interfaces: options.interfaces, endpoint: options.endpoint, clock: clock)
        var timeouts = Timeouts()
        timeouts.overall = options.timeout
        let configuration = DeviceConfiguration(
            card: options.card, consent: options.consent, staticKey: key, timeouts: timeouts)
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
                name: "share", recorder: recorder)
            // Written however the session ends, so that a failing pairing can be replayed.
            defer {
                do {
                    try recorder.write(to: path)
                } catch {
                    console.error("profiledrop share: \(error)")
                }
            }
            return try drive(
                ImpairedDevice(device, impairment: options.impairment), state: \.inner.device, host: host)
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
        let readsStdin = readsKeys || options.consent == .askUser
        if readsKeys { terminal.enable() }
        defer { terminal.restore() }

        var closedAt: Instant?
        while true {
            var wake = clock.now + .milliseconds(250)
            if movement.isMoving { wake = min(wake, clock.now + Self.motionTick) }
            // Datagrams, timeout, and every reply and event they cause, all within this one turn.
            let stdinReadable = try driver.turn(
                wakingBy: wake, alsoWatching: readsStdin ? STDIN_FILENO : nil, onEvent: onEvent)
            if stdinReadable, readInput(&driver.device, state: state) == .quit {
                display.finish(reason: nil, snapshot: driver.device[keyPath: state].snapshot, card: nil)
                return .declined
            }
            let now = clock.now
            advanceMotion(&driver.device, at: now)
            try driver.flush(onEvent: onEvent)

            if driver.device.isClosed {
                if closedAt == nil {
                    // Report the outcome now; the process only lingers to answer retransmitted CLOSEs.
                    closedAt = now
                    try reportOutcome(driver.device[keyPath: state])
                }
                if driver.device.nextDeadline == nil || now >= (closedAt ?? now) + Self.exitLinger { break }
            }
        }

        let core = driver.device[keyPath: state]
        if options.verbose { console.error(Self.countersLine(core.counters, host: host.statistics)) }
        return Self.exitCode(for: core.closedReason ?? .timeout(.noExchange))
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

    private func reportOutcome(_ device: Device) throws {
        let reason = device.closedReason ?? .timeout(.noExchange)
        if case .exchanged = reason, let card = receivedCard, let directory = options.saveDirectory {
            try CardSaver.save(card, in: directory)
        }
        display.finish(reason: reason, snapshot: device.snapshot, card: receivedCard)
    }

    static func exitCode(for reason: CloseReason) -> ExitCode {
        switch reason {
        case .exchanged: return .success
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
        case .consentRequested:
            pendingConsent = true
        case .sessionEnded:
            pendingConsent = false
        case .advertising, .peerFound, .peerBusy, .ranging, .inRange, .exchanging, .cardVerified,
            .acknowledged, .closed, .datagramRejected, .verified, .pairingInterrupted, .knownPeerMismatch,
            .peerRemembered, .incompatiblePeer:
            break
        }
        display.show(event, snapshot: state.snapshot)
    }

    private func advanceMotion(_ device: inout some SansIODevice, at now: Instant) {
        if let pose = movement.advance(to: now) { device.updatePose(pose, at: now) }
    }

    private func readInput<D: SansIODevice>(_ device: inout D, state: KeyPath<D, Device>) -> KeyPress? {
        var buffer = [UInt8](repeating: 0, count: 64)
        let count = buffer.withUnsafeMutableBytes { read(STDIN_FILENO, $0.baseAddress, $0.count) }
        guard count > 0 else { return nil }
        for key in keyDecoder.feed(Array(buffer[0..<count])) {
            switch key {
            case .quit:
                return .quit
            case .letter(let letter):
                guard pendingConsent else { continue }
                let decision: ConsentDecision? =
                    letter == "s" ? .share : letter == "r" ? .receiveOnly : letter == "d" ? .decline : nil
                if let decision {
                    pendingConsent = false
                    device.decide(decision, at: clock.now)
                }
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
}
