import ProfileDropCore
import ProfileDropCrypto

/// What a cleartext attacker forges.
enum CleartextBehaviour: Sendable, Equatable {
    /// BEACONs carrying a victim's device id and a dead port, from that victim's IP address.
    case hijack
    /// INVITEs of random bytes (random sender, session and Noise message) at each victim, from
    /// random spoofed sources.
    case squat
    /// BEACONs of fresh fake device ids pointing at a dead port, from random spoofed sources.
    case phantoms
    /// Junk of every kind from 256 ports on each of four spoofed addresses.
    case flood
    /// BEACONs recorded earlier: the victims' own from a previous run (their old ids, from their
    /// real addresses), and this run's from a second or more ago (from the attacker's address).
    case replay
}

/// A cleartext attacker on the LAN: it hears every multicast datagram and sends, at a fixed budget
/// of datagrams per second, forged datagrams from any source address it likes. It holds no key.
///
/// A class, shared by its ``AttackerSpeaker`` in the room (which hears for it and wakes it) and the
/// attack driver (which puts what it forged in flight with ``Room/inject(_:from:to:after:)``,
/// since a participant's own sends always carry its own address).
final class CleartextAttacker {
    /// A victim as the attacker sees it: where it is and, once a BEACON showed it, its id.
    struct Target {
        let member: Int
        let address: PeerAddress
        var id: DeviceID?
    }

    /// A recorded BEACON: its bytes, its source and when it was heard.
    struct Recorded {
        let bytes: [UInt8]
        let source: PeerAddress
        let at: Instant
    }

    /// One forged datagram for the driver to inject.
    struct Forged {
        let bytes: [UInt8]
        let source: PeerAddress
        let recipient: Int
    }

    let behaviour: CleartextBehaviour
    /// Datagrams a second.
    let budget: Int
    let ownAddress: PeerAddress
    private(set) var targets: [Target]
    private var random: DeterministicRandom
    /// BEACONs of an earlier run, replayed from their original sources.
    private let previousRun: [Recorded]
    /// BEACONs heard in this run.
    private var heard: [Recorded] = []
    private(set) var nextSendAt: Instant?
    /// Forged datagrams the driver has not injected yet.
    var pending: [Forged] = []
    /// Datagrams and bytes forged so far.
    private(set) var sentDatagrams = 0
    private(set) var sentBytes = 0
    private var turn = 0

    /// A replayed BEACON must be at least this old.
    static let replayAge: Duration = .seconds(1)

    init(
        behaviour: CleartextBehaviour, budget: Int, targets: [Target], ownAddress: PeerAddress,
        seedMaterial: [UInt8], previousRun: [Recorded] = [], startAt: Instant
    ) {
        precondition(budget > 0, "a budget of at least one datagram a second")
        self.behaviour = behaviour
        self.budget = budget
        self.targets = targets
        self.ownAddress = ownAddress
        self.previousRun = previousRun
        random = DeterministicRandom(seedMaterial: seedMaterial)
        nextSendAt = startAt
    }

    /// Stops sending.
    func stop() { nextSendAt = nil }

    /// A datagram that reached the attacker (multicast, or unicast to its own address).
    func heard(_ bytes: [UInt8], from source: PeerAddress, at time: Instant) {
        guard case .beacon(let beacon)? = try? Packet(datagram: bytes) else { return }
        if let index = targets.firstIndex(where: { $0.address == source }), targets[index].id == nil {
            targets[index].id = beacon.deviceID
        }
        if behaviour == .replay && heard.count < 256 {
            heard.append(Recorded(bytes: bytes, source: source, at: time))
        }
    }

    /// Forges what is due at `time`, one datagram per 1/budget seconds.
    func fire(at time: Instant) {
        guard var due = nextSendAt else { return }
        let interval = Duration.nanoseconds(1_000_000_000 / Int64(budget))
        while due <= time {
            if let forged = forge(at: time) {
                pending.append(forged)
                sentDatagrams += 1
                sentBytes += forged.bytes.count
            }
            due = due + interval
        }
        nextSendAt = due
    }

    private func forge(at time: Instant) -> Forged? {
        let victim = targets[turn % targets.count]
        let other = targets[(turn + 1) % targets.count]
        turn += 1
        switch behaviour {
        case .hijack:
            // The other victim's id, a dead port, from the other victim's own IP address.
            guard let id = other.id, victim.id != nil else { return nil }
            let beacon = Beacon(deviceID: id, port: deadPort(), busy: false)
            return Forged(
                bytes: Packet.beacon(beacon).encoded(),
                source: PeerAddress(ipv4: other.address.ipv4, port: deadPort()), recipient: victim.member)
        case .squat:
            guard let id = victim.id else { return nil }
            let invite = HandshakePacket(
                sessionID: random.nextUInt64(), sender: DeviceID(rawValue: random.nextUInt64()), receiver: id,
                noiseMessage: random.bytes(X25519.keyLength))
            return Forged(bytes: Packet.invite(invite).encoded(), source: spoofed(), recipient: victim.member)
        case .phantoms:
            let beacon = Beacon(
                deviceID: DeviceID(rawValue: random.nextUInt64()), port: deadPort(), busy: false)
            return Forged(bytes: Packet.beacon(beacon).encoded(), source: spoofed(), recipient: victim.member)
        case .flood:
            let source = PeerAddress(
                ipv4: Self.spoofedBase + 0x100 + UInt32(sentDatagrams / 256 % 4),
                port: 40_000 + UInt16(sentDatagrams % 256))
            return Forged(bytes: junk(for: victim), source: source, recipient: victim.member)
        case .replay:
            // Alternately an old run's BEACON from its real source, and one of this run's from our own
            // address.
            if turn % 2 == 1, !previousRun.isEmpty {
                let old = previousRun[Int(random.uniform(below: UInt64(previousRun.count)))]
                guard old.source != victim.address else { return nil }
                return Forged(bytes: old.bytes, source: old.source, recipient: victim.member)
            }
            let old = heard.filter { $0.at + Self.replayAge <= time && $0.source != victim.address }
            guard !old.isEmpty else { return nil }
            let pick = old[Int(random.uniform(below: UInt64(old.count)))]
            return Forged(bytes: pick.bytes, source: ownAddress, recipient: victim.member)
        }
    }

    /// 10.0.200.0/22: addresses nobody in the room holds.
    static let spoofedBase: UInt32 = 0x0A00_C800

    private func spoofed() -> PeerAddress {
        PeerAddress(
            ipv4: Self.spoofedBase + UInt32(random.uniform(below: 256)),
            port: 1024 + UInt16(random.uniform(below: 60_000)))
    }

    /// A port nobody listens on: the room's devices all use ``DeviceContext/simulatedPort``.
    private func deadPort() -> UInt16 {
        let port = 20_000 + UInt16(random.uniform(below: 20_000))
        return port == DeviceContext.simulatedPort ? port + 1 : port
    }

    /// One datagram of junk: garbage, a truncated or other-version header, a QUERY, or a handshake,
    /// BUSY or SECURE packet of a session nobody has.
    private func junk(for victim: Target) -> [UInt8] {
        let receiver = victim.id ?? DeviceID(rawValue: random.nextUInt64())
        switch random.uniform(below: 7) {
        case 0:
            return random.bytes(1 + Int(random.uniform(below: UInt64(WireConstants.maxDatagramSize))))
        case 1:
            let type = UInt8(1 + random.uniform(below: 7))
            return [0x50, 0x44, WireConstants.version, type] + random.bytes(Int(random.uniform(below: 12)))
        case 2:
            var beacon = Packet.beacon(
                Beacon(deviceID: DeviceID(rawValue: random.nextUInt64()), port: deadPort(), busy: false)
            ).encoded()
            beacon[2] = random.uniform(below: 2) == 0 ? 1 : 3
            return beacon
        case 3:
            let answers = (0..<random.uniform(below: 8)).map { _ in DeviceID(rawValue: random.nextUInt64()) }
            return Packet.query(
                Query(deviceID: DeviceID(rawValue: random.nextUInt64()), knownAnswers: answers)
            )
            .encoded()
        case 4:
            let packet = HandshakePacket(
                sessionID: random.nextUInt64(), sender: DeviceID(rawValue: random.nextUInt64()),
                receiver: receiver,
                noiseMessage: random.bytes(48 + Int(random.uniform(below: 64))))
            return random.uniform(below: 2) == 0
                ? Packet.accept(packet).encoded() : Packet.confirm(packet).encoded()
        case 5:
            let busy = Busy(
                sessionID: random.nextUInt64(), sender: DeviceID(rawValue: random.nextUInt64()),
                receiver: receiver,
                reason: .inSession)
            return Packet.busy(busy).encoded()
        default:
            let ciphertext = random.bytes(WireConstants.tagSize + Int(random.uniform(below: 200)))
            let header = SecurePacket.header(
                sessionID: random.nextUInt64(), packetNumber: random.uniform(below: 1000),
                ciphertextLength: ciphertext.count)
            return header + ciphertext
        }
    }
}

/// A cleartext attacker's place in the room: it hears multicast for it and wakes it at its budget.
struct AttackerSpeaker: DatagramSpeaker {
    let attacker: CleartextAttacker

    var nextDeadline: Instant? { attacker.nextSendAt }

    mutating func receive(_ bytes: [UInt8], from source: PeerAddress, at time: Instant) {
        attacker.heard(bytes, from: source, at: time)
    }

    mutating func handleTimeout(at time: Instant) { attacker.fire(at: time) }

    mutating func pollTransmit() -> OutgoingDatagram? { nil }
}
