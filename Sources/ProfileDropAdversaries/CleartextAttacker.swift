import ProfileDropCore
import ProfileDropCrypto
import ProfileDropSimulator

/// What a cleartext attacker forges.
enum CleartextBehaviour: Sendable, Equatable {
    /// BEACONs carrying a victim's device id and a dead port, from that victim's IP address.
    case hijack
    /// INVITEs of random bytes (random sender, session and Noise message) at each victim, from
    /// random spoofed sources.
    case squat
    /// BEACONs of fresh fake device ids pointing at a dead port, from random spoofed sources.
    case phantoms
    /// BEACONs of a few fake device ids, each from its own spoofed address and dead port, again and
    /// again, so that they are heard for longer than 1.5 s and become established.
    case keptPhantoms
    /// Junk of every kind from 256 ports on each of four spoofed addresses.
    case flood
    /// BEACONs recorded earlier: the victims' own from a previous run (their old ids, from their
    /// real addresses), and this run's from a second or more ago (from the attacker's address).
    case replay
    /// BEACONs of each victim's id from that victim's exact address (IP and port), their sequence
    /// numbers ahead of the latest heard, saying busy and 10 m away: the lies an attacker that can
    /// spoof a neighbour's address can put in its announcements.
    case displace
    /// BEACONs of eight fake ids, all from one address nobody holds (the reflection's target), each
    /// naming its source port and no position, repeated so that they stay in the victims' tables:
    /// every victim that invites one sends its INVITEs to the target (PROTOCOL.md 5,
    /// "Amplification").
    case reflector
    /// BEACONs of a hall's worth of fake ids (``CleartextAttacker/imitatedHall``), each from its own
    /// spoofed address and dead port, each heard by every victim once a second: the pace at which
    /// a hall's devices count towards the settled rate, so that the victims' budget of unknown
    /// sources rises to its ceiling (PROTOCOL.md 7, rule 3) and they parse every phantom.
    case hallImitation
}

/// A cleartext attacker on the LAN: it hears every multicast datagram and sends, at a fixed budget
/// of datagrams per second, forged datagrams from any source address it likes. It holds no key.
///
/// A class, shared by its ``AttackerSpeaker`` in the room (which hears for it and wakes it) and the
/// attack driver (which puts what it forged in flight with ``AttackStage/inject(_:after:meter:)``,
/// since a participant's own sends always carry its own address).
final class CleartextAttacker {
    /// A victim as the attacker sees it: where it is and, once a BEACON showed it, its id.
    struct Target {
        let member: Int
        let address: PeerAddress
        var id: DeviceID?
        /// Its latest BEACON heard, as sent.
        var beacon: [UInt8]?
    }

    /// A recorded BEACON: its bytes, its source and when it was heard.
    struct Recorded {
        let bytes: [UInt8]
        let source: PeerAddress
        let at: Instant
    }

    let behaviour: CleartextBehaviour
    /// The time between two forgeries: 1/budget seconds, rounded up so that no second holds more
    /// than the budget.
    let interval: Duration
    let ownAddress: PeerAddress
    private(set) var targets: [Target]
    private var random: DeterministicRandom
    /// BEACONs of an earlier run, replayed from their original sources.
    private let previousRun: [Recorded]
    /// BEACONs heard in this run.
    private var heard: [Recorded] = []
    private(set) var nextSendAt: Instant?
    /// Forged datagrams the driver has not injected yet.
    var pending: [ForgedDatagram] = []
    /// Datagrams and bytes forged so far.
    private(set) var sentDatagrams = 0
    private(set) var sentBytes = 0
    private var turn = 0
    /// The kept phantoms: their ids, addresses and sequence numbers.
    private var kept: [(id: DeviceID, source: PeerAddress, sequence: UInt32)] = []
    /// Kept phantoms' BEACONs forged so far: each goes to every victim in turn, as multicast would.
    private var keptSent = 0

    /// How many phantoms a keeper keeps alive: few, so that each is heard more often than a real peer
    /// by the time the victims first invite.
    static let keptPhantomCount = 4

    /// A replayed BEACON must be at least this old.
    static let replayAge: Duration = .seconds(1)

    init(
        behaviour: CleartextBehaviour, budget: Int, targets: [Target], ownAddress: PeerAddress,
        seedMaterial: [UInt8], previousRun: [Recorded] = [], startAt: Instant
    ) {
        precondition(budget > 0, "a budget of at least one datagram a second")
        interval = .nanoseconds((1_000_000_000 + Int64(budget) - 1) / Int64(budget))
        self.behaviour = behaviour
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
        if let index = targets.firstIndex(where: { $0.address == source }) {
            if targets[index].id == nil { targets[index].id = beacon.deviceID }
            targets[index].beacon = bytes
        }
        if behaviour == .replay && heard.count < 256 {
            heard.append(Recorded(bytes: bytes, source: source, at: time))
        }
    }

    /// Forges what is due at `time`, one datagram per ``interval``.
    func fire(at time: Instant) {
        guard var due = nextSendAt else { return }
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

    private func forge(at time: Instant) -> ForgedDatagram? {
        let victim = targets[turn % targets.count]
        let other = targets[(turn + 1) % targets.count]
        turn += 1
        switch behaviour {
        case .hijack:
            // The other victim's BEACON with a dead port (the source port too), from the other
            // victim's own IP address, its sequence number (where the layout has one) ahead.
            guard let heard = other.beacon, victim.id != nil else { return nil }
            let port = deadPort()
            return ForgedDatagram(
                bytes: forgedBeacon(from: heard, port: port, ahead: true),
                source: PeerAddress(ipv4: other.address.ipv4, port: port), recipient: victim.member)
        case .squat:
            guard let id = victim.id else { return nil }
            let invite = HandshakePacket(
                sessionID: random.nextUInt64(), sender: DeviceID(rawValue: random.nextUInt64()), receiver: id,
                noiseMessage: random.bytes(X25519.keyLength))
            return ForgedDatagram(
                bytes: Packet.invite(invite).encoded(), source: spoofed(), recipient: victim.member)
        case .phantoms:
            // A fresh id, from the port it names, as a real device's BEACON comes.
            guard let heard = targets.lazy.compactMap(\.beacon).first else { return nil }
            let port = deadPort()
            return ForgedDatagram(
                bytes: forgedBeacon(from: heard, id: DeviceID(rawValue: random.nextUInt64()), port: port),
                source: spoofed(port: port), recipient: victim.member)
        case .keptPhantoms:
            // Each phantom claims to stand where one victim stands, in turn, so that to each victim
            // half of them are nearer than its partner and the rest as near.
            let heardBeacons = targets.compactMap(\.beacon)
            guard !heardBeacons.isEmpty else { return nil }
            if kept.count < Self.keptPhantomCount {
                let port = deadPort()
                kept.append((DeviceID(rawValue: random.nextUInt64()), spoofed(port: port), 1))
            }
            let (recipient, index) = nextKeptBeacon()
            let heard = heardBeacons[index % heardBeacons.count]
            let bytes = forgedBeacon(
                from: heard, id: kept[index].id, port: kept[index].source.port, sequence: kept[index].sequence
            )
            return ForgedDatagram(bytes: bytes, source: kept[index].source, recipient: recipient.member)
        case .reflector:
            if kept.isEmpty {
                for _ in 0..<Self.reflectedPhantomCount {
                    kept.append((DeviceID(rawValue: random.nextUInt64()), Self.reflectionTarget, 0))
                }
            }
            let (recipient, index) = nextKeptBeacon()
            let beacon = Beacon(
                deviceID: kept[index].id, port: kept[index].source.port, busy: false,
                sequence: kept[index].sequence)
            return ForgedDatagram(
                bytes: Packet.beacon(beacon).encoded(), source: kept[index].source,
                recipient: recipient.member)
        case .hallImitation:
            // Claims a victim's own position, as the kept phantoms do, so that the phantoms rank
            // as near as the partner.
            guard let heard = targets.lazy.compactMap(\.beacon).first else { return nil }
            if kept.isEmpty {
                for index in 0..<Self.imitatedHall {
                    let address = PeerAddress(ipv4: Self.spoofedBase + UInt32(index), port: deadPort())
                    kept.append((DeviceID(rawValue: random.nextUInt64()), address, 0))
                }
            }
            let (recipient, index) = nextKeptBeacon()
            let bytes = forgedBeacon(
                from: heard, id: kept[index].id, port: kept[index].source.port, sequence: kept[index].sequence
            )
            return ForgedDatagram(bytes: bytes, source: kept[index].source, recipient: recipient.member)
        case .flood:
            let source = PeerAddress(
                ipv4: Self.spoofedBase + 0x100 + UInt32(sentDatagrams / 256 % 4),
                port: 40_000 + UInt16(sentDatagrams % 256))
            return ForgedDatagram(bytes: junk(for: victim), source: source, recipient: victim.member)
        case .displace:
            guard let heard = other.beacon, victim.id != nil,
                case .beacon(var beacon)? = try? Packet(datagram: heard)
            else { return nil }
            beacon.sequence = beacon.sequence &+ 1 &+ UInt32(random.uniform(below: 64))
            beacon.busy = true
            beacon.position = PositionHint(
                x: (beacon.position?.x ?? 0) &+ 1_000, y: beacon.position?.y ?? 0)
            return ForgedDatagram(
                bytes: Packet.beacon(beacon).encoded(), source: other.address, recipient: victim.member)
        case .replay:
            // Alternately an old run's BEACON from its real source, and one of this run's from our own
            // address.
            if turn % 2 == 1, !previousRun.isEmpty {
                let old = previousRun[Int(random.uniform(below: UInt64(previousRun.count)))]
                guard old.source != victim.address else { return nil }
                return ForgedDatagram(bytes: old.bytes, source: old.source, recipient: victim.member)
            }
            let old = heard.filter { $0.at + Self.replayAge <= time && $0.source != victim.address }
            guard !old.isEmpty else { return nil }
            let pick = old[Int(random.uniform(below: UInt64(old.count)))]
            return ForgedDatagram(bytes: pick.bytes, source: ownAddress, recipient: victim.member)
        }
    }

    /// The next kept phantom's BEACON and who hears it: every victim hears each BEACON (one datagram
    /// each), then the next phantom speaks, its sequence number one higher.
    private func nextKeptBeacon() -> (recipient: Target, index: Int) {
        let recipient = targets[keptSent % targets.count]
        let index = keptSent / targets.count % kept.count
        if keptSent % targets.count == 0 { kept[index].sequence &+= 1 }
        keptSent += 1
        return (recipient, index)
    }

    /// The reflector's phantoms: as many as the kit used.
    static let reflectedPhantomCount = 8
    /// The address the reflector makes the victims send to: in ``spoofedBase``'s range.
    static let reflectionTarget = PeerAddress(ipv4: spoofedBase + 0x3FF, port: 40_000)

    /// The hall imitator's phantoms, each at its own address of ``spoofedBase``'s range.
    static let imitatedHall = 1000

    /// 10.0.200.0/22: addresses nobody in the room holds.
    static let spoofedBase: UInt32 = 0x0A00_C800

    /// A random address of ``spoofedBase``'s range, with `port` or a random one.
    private func spoofed(port: UInt16? = nil) -> PeerAddress {
        let ipv4 = Self.spoofedBase + UInt32(random.uniform(below: 256))
        return PeerAddress(ipv4: ipv4, port: port ?? 1024 + UInt16(random.uniform(below: 60_000)))
    }

    /// A BEACON made from one a victim sent, on the wire: the header, then the device id (8 bytes),
    /// the port (2) and the flags (1), then whatever the layout adds (a sequence number of 4 bytes,
    /// then the sender's position hint). Forging from what was heard fits whichever layout the
    /// victims speak, and claims the victim's own position, near both victims, so that the forged
    /// peers rank as near as they can. With `id` the id is replaced; with `ahead` a sequence number is moved ahead of the
    /// heard one by 1 to 64, else it is drawn at random; `sequence` replaces either (after the same
    /// draws, so that a forger's later draws do not move).
    private func forgedBeacon(
        from heard: [UInt8], id: DeviceID? = nil, port: UInt16, ahead: Bool = false,
        sequence given: UInt32? = nil
    ) -> [UInt8] {
        var bytes = heard
        let idAt = WireConstants.headerSize
        if let id {
            for index in 0..<8 {
                bytes[idAt + index] = UInt8(truncatingIfNeeded: id.rawValue >> (56 - 8 * index))
            }
        }
        bytes[idAt + 8] = UInt8(port >> 8)
        bytes[idAt + 9] = UInt8(truncatingIfNeeded: port)
        bytes[idAt + 10] &= 0xFE  // not busy; a position hint, if heard, stays: the forger claims to be there
        let sequenceAt = idAt + 11
        if bytes.count >= sequenceAt + 4 {
            var sequence: UInt32 = 0
            for byte in bytes[sequenceAt..<(sequenceAt + 4)] { sequence = sequence << 8 | UInt32(byte) }
            sequence =
                ahead
                ? sequence &+ 1 &+ UInt32(random.uniform(below: 64)) : UInt32(random.uniform(below: 1 << 31))
            sequence = given ?? sequence
            for index in 0..<4 {
                bytes[sequenceAt + index] = UInt8(truncatingIfNeeded: sequence >> (24 - 8 * index))
            }
        }
        return bytes
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
        switch JunkShape.allCases[Int(random.uniform(below: UInt64(JunkShape.allCases.count)))] {
        case .garbage:
            return random.bytes(1 + Int(random.uniform(below: UInt64(WireConstants.maxDatagramSize))))
        case .header:
            let type = UInt8(1 + random.uniform(below: 7))
            return [0x50, 0x44, WireConstants.version, type] + random.bytes(Int(random.uniform(below: 12)))
        case .otherVersionBeacon:
            // Another version's BEACON (a fresh id), where a victim's BEACON gives the layout.
            guard let heard = targets.lazy.compactMap(\.beacon).first else { return random.bytes(19) }
            var beacon = forgedBeacon(
                from: heard, id: DeviceID(rawValue: random.nextUInt64()), port: deadPort())
            beacon[2] = random.uniform(below: 2) == 0 ? 2 : 4
            return beacon
        case .query:
            let answers = (0..<random.uniform(below: 8)).map { _ in DeviceID(rawValue: random.nextUInt64()) }
            return Packet.query(
                Query(deviceID: DeviceID(rawValue: random.nextUInt64()), knownAnswers: answers)
            )
            .encoded()
        case .handshake:
            let packet = HandshakePacket(
                sessionID: random.nextUInt64(), sender: DeviceID(rawValue: random.nextUInt64()),
                receiver: receiver,
                noiseMessage: random.bytes(48 + Int(random.uniform(below: 64))))
            return random.uniform(below: 2) == 0
                ? Packet.accept(packet).encoded() : Packet.confirm(packet).encoded()
        case .busy:
            let busy = Busy(
                sessionID: random.nextUInt64(), sender: DeviceID(rawValue: random.nextUInt64()),
                receiver: receiver,
                reason: .inSession)
            return Packet.busy(busy).encoded()
        case .secure:
            let ciphertext = random.bytes(WireConstants.tagSize + Int(random.uniform(below: 200)))
            let header = SecurePacket.header(
                sessionID: random.nextUInt64(), packetNumber: random.uniform(below: 1000),
                ciphertextLength: ciphertext.count)
            return header + ciphertext
        }
    }
}

/// The shapes of junk a flooder draws from, in turn of the draw.
private enum JunkShape: CaseIterable {
    /// Random bytes.
    case garbage
    /// A header of a random type with a short random body.
    case header
    /// Another version's BEACON.
    case otherVersionBeacon
    /// A QUERY from a fresh id.
    case query
    /// An ACCEPT or CONFIRM of a session nobody has.
    case handshake
    /// A BUSY of a session nobody has.
    case busy
    /// A SECURE packet of a session nobody has.
    case secure
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
