import ProfileDropCore
import ProfileDropCrypto

/// The real protocol core behind the ``SimulatedDevice`` interface: builds a `Device` from the
/// scenario (card, consent, a static key from the device's seeded stream) and translates between
/// node indices and LAN addresses.
public struct CoreDeviceAdapter: SimulatedDevice {
    /// The wrapped device.
    public private(set) var device: Device
    private let nodeCount: Int
    private let directory: PeerDirectory
    private let verbose: Bool
    /// The peer of the current exchange session, whose card a `cardReceived` event carries.
    private var sessionPeer: DeviceID?

    /// Builds the device for `context`.
    public init(context: DeviceContext) {
        var keyRandom = DeterministicRandom(seedMaterial: context.seedMaterial + Array("/static-key".utf8))
        let configuration = DeviceConfiguration(
            card: context.spec.card, consent: .askUser, staticKey: X25519.PrivateKey(using: &keyRandom),
            timeouts: context.timeouts, gate: context.options.gate)
        device = Device(
            configuration: configuration, random: DeterministicRandom(seedMaterial: context.seedMaterial),
            now: .zero, localAddress: PeerAddress(ipv4: context.ipv4, port: context.port))
        nodeCount = context.nodeCount
        directory = context.directory
        verbose = context.options.verbose
    }

    public var identity: UInt64 { device.deviceID.rawValue }
    public var nextDeadline: Instant? { device.nextDeadline }
    public var isClosed: Bool { device.isClosed }

    public mutating func receive(_ bytes: [UInt8], from source: Int, at time: Instant) {
        let address = PeerAddress(ipv4: DeviceContext.ipv4(ofNode: source), port: DeviceContext.simulatedPort)
        device.handleDatagram(bytes, from: address, at: time)
    }

    public mutating func timeout(at time: Instant) { device.handleTimeout(at: time) }

    public mutating func updatePose(_ pose: Pose, at time: Instant) { device.updatePose(pose, at: time) }

    public mutating func decide(accept: Bool, at time: Instant) {
        device.decide(accept ? .share : .decline, at: time)
    }

    public mutating func pollTransmit() -> (destination: NetworkDestination, bytes: [UInt8])? {
        guard let datagram = device.pollTransmit() else { return nil }
        switch datagram.destination {
        case .multicast:
            return (.multicast, datagram.bytes)
        case .unicast(let address):
            // An address no simulated device holds is sent to a node index that does not exist.
            let node =
                address.port == DeviceContext.simulatedPort
                ? DeviceContext.node(ofIPv4: address.ipv4, nodeCount: nodeCount) : nil
            return (.unicast(node ?? nodeCount), datagram.bytes)
        }
    }

    public mutating func pollEvent() -> SimulatedDeviceEvent? {
        while let event = device.pollEvent() {
            if let translated = translate(event) { return translated }
        }
        return nil
    }

    private mutating func translate(_ event: DeviceEvent) -> SimulatedDeviceEvent? {
        switch event {
        case .advertising:
            return .init(.note, text: "advertising")
        case .peerFound(let peer):
            return .init(.note, text: "found \(directory.name(of: peer.rawValue))")
        case .peerBusy(let peer):
            return .init(.note, text: "\(directory.name(of: peer.rawValue)) is busy")
        case .connecting(let peer, let initiator):
            sessionPeer = peer
            let verb = initiator ? "inviting" : "invited by"
            return .init(.note, text: "\(verb) \(directory.name(of: peer.rawValue))")
        case .secured(let peer, let code):
            sessionPeer = peer
            return .init(.note, text: "secured with \(directory.name(of: peer.rawValue)), code \(code)")
        case .ranging(let distance, let bearing):
            guard verbose else { return nil }
            return .init(.note, text: "ranging \(Self.format(distance)) cm \(Self.format(bearing))°")
        case .inRange:
            return .init(.note, text: "in range")
        case .consentRequested(let peer):
            let node = directory.node(of: peer.rawValue)
            return .init(
                .consentRequested(peer: node), text: "asks to share with \(directory.name(of: peer.rawValue))"
            )
        case .exchanging(let sent, let total):
            guard verbose || sent == 0 || sent == total else { return nil }
            return .init(.note, text: "exchanging \(sent)/\(total) chunks")
        case .cardVerified(let card):
            let node = sessionPeer.flatMap { directory.node(of: $0.rawValue) }
            return .init(.cardVerified(card, peer: node), text: "card verified: \(card.name)")
        case .cardReceived(let card):
            let node = sessionPeer.flatMap { directory.node(of: $0.rawValue) }
            return .init(.cardReceived(card, peer: node), text: "card received: \(card.summary)")
        case .acknowledged:
            return .init(.note, text: "card acknowledged")
        case .sessionEnded(let peer, let reason):
            return .init(.note, text: "session with \(directory.name(of: peer.rawValue)) ended: \(reason)")
        case .closed(let reason):
            return .init(.closed(Self.outcome(reason)), text: "closed: \(reason)")
        case .datagramRejected(let reason):
            guard verbose else { return nil }
            return .init(.note, text: "rejected datagram: \(reason)")
        }
    }

    private static func outcome(_ reason: CloseReason) -> CloseOutcome {
        switch reason {
        case .exchanged: return CloseOutcome(exchanged: true, reason: "exchanged")
        case .declined(by: .local): return CloseOutcome(exchanged: false, reason: "declined-by-us")
        case .declined(by: .peer): return CloseOutcome(exchanged: false, reason: "declined-by-peer")
        case .outOfRange: return CloseOutcome(exchanged: false, reason: "out-of-range")
        case .timeout(let what):
            return CloseOutcome(
                exchanged: false, reason: "timeout(\(what.replacingOccurrences(of: " ", with: "-")))")
        case .error(let error): return CloseOutcome(exchanged: false, reason: "error(\(error.code))")
        }
    }

    private static func format(_ value: Double) -> String {
        String(Double(Int((value * 10).rounded())) / 10)
    }
}

extension Simulation {
    /// Runs `scenario` with the real protocol core. `seed` overrides the scenario's own seed.
    public static func run(
        scenario: Scenario, seed: UInt64? = nil, options: SimulationOptions = SimulationOptions()
    ) -> SimulationReport {
        run(scenario: scenario, seed: seed, options: options) { CoreDeviceAdapter(context: $0) }
    }
}

extension Swarm {
    /// The devices' timers in swarm runs: the defaults with a 60 s overall limit, a 10 s consent
    /// wait and a 30 s transfer limit, so that bystanders that never find a partner close within a
    /// modest virtual time. (With 20 s, a pair in a room of six at 30 % loss sometimes had no turn
    /// to try each other before giving up.)
    public static let timeouts: Timeouts = {
        var timeouts = Timeouts()
        timeouts.overall = .seconds(60)
        timeouts.consent = .seconds(10)
        timeouts.transfer = .seconds(30)
        return timeouts
    }()

    /// Runs `runs` simulations from `seed` with the real protocol core. Run 1 uses `seed` itself, so
    /// `runs: 1` with a failing run's seed replays exactly that run; later runs use seeds drawn from
    /// it. `transcripts` includes every run's full transcript (the default for a single run).
    public static func run(runs: Int, seed: UInt64, transcripts: Bool? = nil) -> SwarmReport {
        run(runs: runs, seed: seed, timeouts: timeouts, transcripts: transcripts) {
            CoreDeviceAdapter(context: $0)
        }
    }
}
