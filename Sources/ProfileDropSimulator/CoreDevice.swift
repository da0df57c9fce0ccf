import ProfileDropCore
import ProfileDropCrypto

extension DeviceContext {
    /// The configuration of the device at this context: the scenario's card, consent asked of the
    /// owner, a static key from ``staticKeySeedMaterial``, an ``identity`` and no known peers, the
    /// scenario's timers and the run's gate.
    public var coreConfiguration: DeviceConfiguration {
        DeviceConfiguration(
            card: spec.card, consent: .askUser, staticKey: staticKey, identity: identity, timeouts: timeouts,
            gate: options.gate)
    }

    /// The device's address on the simulated LAN.
    public var localAddress: PeerAddress { PeerAddress(ipv4: ipv4, port: port) }

    /// The real protocol core for this context: ``coreConfiguration``, every draw from
    /// ``seedMaterial``, its clock starting at ``startTime``.
    public func makeCoreDevice() -> Device {
        Device(
            configuration: coreConfiguration, random: DeterministicRandom(seedMaterial: seedMaterial),
            now: startTime, localAddress: localAddress)
    }
}

/// Reduces one device's ``DeviceEvent``s to what the simulation acts on and the transcript shows,
/// naming peers by their scenario names.
struct EventTranslator {
    let directory: PeerDirectory
    let verbose: Bool
    /// Whether events carry their transcript text; without a transcript, building it is waste.
    let keepsText: Bool

    init(directory: PeerDirectory, verbose: Bool, keepsText: Bool = true) {
        self.directory = directory
        self.verbose = verbose
        self.keepsText = keepsText
    }

    private func reduced(_ kind: SimulatedDeviceEvent.Kind, text: @autoclosure () -> String)
        -> SimulatedDeviceEvent
    {
        SimulatedDeviceEvent(kind, text: keepsText ? text() : "")
    }

    /// The event as the simulation sees it, or nil when the transcript leaves it out.
    mutating func translate(_ event: consuming DeviceEvent) -> SimulatedDeviceEvent? {
        switch event {
        case .advertising:
            return reduced(.note, text: "advertising")
        case .peerFound(let peer):
            return reduced(.note, text: "found \(directory.name(of: peer.rawValue))")
        case .peerBusy(let peer):
            return reduced(.note, text: "\(directory.name(of: peer.rawValue)) is busy")
        case .connecting(let peer, let initiator):
            let verb = initiator ? "inviting" : "invited by"
            return reduced(.note, text: "\(verb) \(directory.name(of: peer.rawValue))")
        case .secured(let peer):
            return reduced(.note, text: "secured with \(directory.name(of: peer.rawValue))")
        case .verified(let verification):
            let known = verification.knownPeer.map { ", known as \($0.name)" } ?? ", new"
            return reduced(
                .verified(code: verification.code, known: verification.knownPeer != nil),
                text:
                    "verified \(directory.name(of: verification.peer.rawValue)), code \(verification.code)\(known)"
            )
        case .pairingInterrupted(let peer, let code, let reason):
            return reduced(
                .pairingInterrupted,
                text:
                    "pairing with \(directory.name(of: peer.rawValue)) interrupted (code \(code ?? "none")): \(reason)"
            )
        case .knownPeerMismatch(let name):
            return reduced(
                .note, text: "WARNING: a device claimed to be known peer \(name) but could not prove it")
        case .peerRemembered(let peer):
            return reduced(.peerRemembered(peer), text: "remembered \(peer.name)")
        case .incompatiblePeer(let peer, let version):
            return reduced(
                .note, text: "\(directory.name(of: peer.rawValue)) speaks protocol version \(version)")
        case .ranging(let distance, let bearing):
            guard verbose else { return nil }
            return reduced(.note, text: "ranging \(Self.format(distance)) cm \(Self.format(bearing))°")
        case .inRange:
            return reduced(.note, text: "in range")
        case .consentRequested(let peer):
            let node = directory.node(of: peer.rawValue)
            return reduced(
                .consentRequested(peer: node), text: "asks to share with \(directory.name(of: peer.rawValue))"
            )
        case .exchanging(let sent, let total):
            guard verbose || sent == 0 || sent == total else { return nil }
            return reduced(.note, text: "exchanging \(sent)/\(total) chunks")
        case .cardVerified(let card, let peer):
            let node = directory.node(of: peer.rawValue)
            return reduced(.cardVerified(card, peer: node), text: "card verified: \(card.name)")
        case .cardReceived(let card, let peer):
            let node = directory.node(of: peer.rawValue)
            return reduced(.cardReceived(card, peer: node), text: "card received: \(card.summary)")
        case .acknowledged:
            return reduced(.note, text: "card acknowledged")
        case .sessionEnded(let peer, let reason):
            return reduced(.note, text: "session with \(directory.name(of: peer.rawValue)) ended: \(reason)")
        case .closed(let reason):
            return reduced(.closed(reason), text: "closed: \(reason)")
        case .datagramRejected(let reason):
            guard verbose else { return nil }
            return reduced(.note, text: "rejected datagram: \(reason)")
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
        run(scenario: scenario, seed: seed, options: options) { $0.makeCoreDevice() }
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
        run(runs: runs, seed: seed, timeouts: timeouts, transcripts: transcripts) { $0.makeCoreDevice() }
    }
}
