import ProfileDropCrypto
import ProfileDropSimulator
import Testing

@testable import ProfileDropCore

/// A ``Device`` that checks itself on every input, before the room drains it: bounded queues and
/// tables, counters that add up, every rejection counted, every undecodable datagram rejected for
/// the reason decoding gives, nothing undecodable or oversized sent, no deadline it never moves past.
struct CheckedDevice: SansIODevice {
    var device: Device
    let index: Int
    /// Broken rules, one line each.
    var problems: [String] = []
    /// Whether the device kept asking to be woken at one instant (a driver would spin).
    var spins = false
    /// Events taken early, to check a rejection against the counters; handed on in order.
    private var taken: [DeviceEvent] = []
    private var timeouts: (time: Instant, calls: Int) = (.zero, 0)

    init(_ device: Device, index: Int) {
        self.device = device
        self.index = index
    }

    var deviceID: DeviceID { device.deviceID }
    var nextDeadline: Instant? { device.nextDeadline }
    var isClosed: Bool { device.isClosed }

    mutating func handleDatagram(_ bytes: [UInt8], from source: PeerAddress, at time: Instant) {
        let before = device.counters
        device.handleDatagram(bytes, from: source, at: time)
        let after = device.counters
        var rejection: ProtocolError?
        while let event = device.pollEvent() {
            if case .datagramRejected(let error) = event { rejection = error }
            taken.append(event)
        }
        if let rejection, after.rejected(rejection.code) != before.rejected(rejection.code) + 1 {
            problems.append("rejection \(rejection) not counted")
        }
        do {
            _ = try Packet(datagram: bytes)
        } catch {
            if rejection?.code != error.code && error.code != .ownDatagram {
                problems.append(
                    "undecodable datagram rejected as \(String(describing: rejection)), not \(error)")
            }
        }
        checkBounds()
    }

    mutating func handleTimeout(at time: Instant) {
        timeouts = timeouts.time == time ? (time, timeouts.calls + 1) : (time, 1)
        if timeouts.calls > 3, let deadline = device.nextDeadline {
            problems.append("device \(index) spins on deadline \(deadline) at \(time)")
            spins = true
        }
        device.handleTimeout(at: time)
        checkBounds()
    }

    mutating func updatePose(_ pose: Pose, at time: Instant) {
        device.updatePose(pose, at: time)
        checkBounds()
    }

    mutating func decide(_ decision: ConsentDecision, at time: Instant) {
        device.decide(decision, at: time)
        checkBounds()
    }

    mutating func decide(_ decision: ConsentDecision, for peer: DeviceID, at time: Instant) {
        device.decide(decision, for: peer, at: time)
        checkBounds()
    }

    mutating func cancel(at time: Instant) {
        device.cancel(at: time)
        checkBounds()
    }

    mutating func pollTransmit() -> OutgoingDatagram? {
        guard let datagram = device.pollTransmit() else { return nil }
        if datagram.bytes.count > WireConstants.maxDatagramSize { problems.append("oversized datagram") }
        if (try? Packet(datagram: datagram.bytes)) == nil { problems.append("device \(index) sent garbage") }
        return datagram
    }

    mutating func pollEvent() -> DeviceEvent? {
        taken.isEmpty ? device.pollEvent() : taken.removeFirst()
    }

    /// The bounds, checked after an input and before its outputs are drained.
    private mutating func checkBounds() {
        if device.context.outbox.count > 256 {
            problems.append("device \(index): outbox \(device.context.outbox.count)")
        }
        if device.context.events.count > 256 {
            problems.append("device \(index): events \(device.context.events.count)")
        }
        if device.lingering.count > Device.maxLingering {
            problems.append("device \(index): lingering sessions")
        }
        if device.discovery.peerCount > device.configuration.limits.maxPeers {
            problems.append("device \(index): peer table over its limit")
        }
        let counters = device.counters
        if counters.datagramsReceived != counters.datagramsAccepted + counters.datagramsRejected {
            problems.append("device \(index): counters do not add up")
        }
    }
}

/// Two real devices in a ``Room`` whose hook corrupts their traffic on purpose: it flips bits,
/// truncates, extends, splices, duplicates, delays, drops and replays datagrams, and injects
/// datagrams of another honest run and stray ones from strangers. Devices come from fixed seeds, so a
/// run follows the honest run until its first corruption and every run is reproducible.
struct CorruptingNetwork {
    /// What can happen to a datagram in flight.
    enum Mutation: CaseIterable {
        case flipBits, truncate, extend, splice, duplicate, reorder, drop, replayRecorded, garbage
    }

    /// The room's hook: every copy arrives after 3 ms, unless it is corrupted at the mutation rate.
    struct Corrupter: DatagramHook {
        var random: DeterministicRandom
        var mutationRate: Double
        /// Datagrams of another honest run (other keys and sessions).
        var recorded: [[UInt8]]
        /// Every datagram the devices sent in this run.
        var recording: [[UInt8]] = []
        var mutations = 0

        mutating func sending(
            _ datagram: OutgoingDatagram, from source: Int, number: UInt64, at time: Instant
        ) {
            recording.append(datagram.bytes)
        }

        mutating func route(_ copy: InFlightDatagram) -> DatagramVerdict {
            var bytes = copy.bytes
            var delay: Duration = .milliseconds(3)
            let now = copy.sentAt
            guard random.unitDouble() < mutationRate else { return .deliver }
            mutations += 1
            var arrivals: [Arrival] = []
            let all = Mutation.allCases
            switch all[Int(random.uniform(below: UInt64(all.count)))] {
            case .flipBits:
                for _ in 0...random.uniform(below: 3) where !bytes.isEmpty {
                    bytes[Int(random.uniform(below: UInt64(bytes.count)))] ^=
                        1 << UInt8(random.uniform(below: 8))
                }
            case .truncate:
                bytes = Array(bytes.prefix(Int(random.uniform(below: UInt64(bytes.count + 1)))))
            case .extend:
                bytes += random.bytes(1 + Int(random.uniform(below: 40)))
            case .splice:
                let other = pick()
                bytes =
                    Array(bytes.prefix(Int(random.uniform(below: UInt64(bytes.count + 1)))))
                    + Array(other.suffix(Int(random.uniform(below: UInt64(other.count + 1)))))
            case .duplicate:
                arrivals.append(Arrival(copy, at: now + .milliseconds(Int64(random.uniform(below: 400)))))
            case .reorder:
                delay = .milliseconds(Int64(5 + random.uniform(below: 300)))
            case .drop:
                return .drop
            case .replayRecorded:
                arrivals.append(
                    Arrival(copy, at: now + .milliseconds(Int64(random.uniform(below: 50))), bytes: pick()))
            case .garbage:
                let stranger = PeerAddress(10, 0, 9, UInt8(random.uniform(below: 200)), port: 6000)
                let junk =
                    [0x50, 0x44, 0x01, UInt8(1 + random.uniform(below: 7))]
                    + random.bytes(Int(random.uniform(below: 80)))
                arrivals.append(Arrival(copy, at: now + .milliseconds(1), bytes: junk, from: stranger))
            }
            arrivals.append(Arrival(copy, at: now + delay, bytes: bytes))
            return .arrivals(arrivals)
        }

        /// A datagram seen on this wire earlier (a true replay: a packet from the future of the live
        /// session would be a forgery no attacker can make), or now and then one of another run.
        private mutating func pick() -> [UInt8] {
            let pool = recorded.isEmpty || random.uniform(below: 4) != 0 ? recording : recorded
            return pool.isEmpty ? [] : pool[Int(random.uniform(below: UInt64(pool.count)))]
        }
    }

    static let cards = [
        SessionFuzzTests.card("Bori", photoBytes: 2600), SessionFuzzTests.card("Kong", photoBytes: 900),
    ]
    static func address(_ index: Int) -> PeerAddress { PeerAddress(10, 0, 0, UInt8(index + 1), port: 5000) }

    var room: Room
    /// Problems the driver found (the devices keep their own).
    private var ownProblems: [String] = []

    var devices: [CheckedDevice] { (0..<room.count).compactMap { room.device($0) as? CheckedDevice } }
    private var corrupter: Corrupter? { room.hook as? Corrupter }
    /// Every datagram the devices sent in this run.
    var recording: [[UInt8]] { corrupter?.recording ?? [] }
    var mutations: Int { corrupter?.mutations ?? 0 }
    var problems: [String] {
        var problems = ownProblems + devices.flatMap(\.problems)
        for (index, events) in room.eventLog.enumerated() {
            let closes = events.filter { if case .closed = $0 { true } else { false } }.count
            if closes > 1 { problems.append("device \(index) closed twice") }
        }
        return problems
    }
    var cardsReceived: [[ProfileCard]] {
        room.eventLog.map { $0.compactMap { if case .cardReceived(let card, _) = $0 { card } else { nil } } }
    }
    var closeReasons: [CloseReason?] {
        room.eventLog.map {
            $0.lazy.compactMap { if case .closed(let reason) = $0 { reason } else { nil } }.first
        }
    }

    /// - Parameters:
    ///   - deviceSeed: fixes both devices' identities, keys and sessions.
    ///   - recorded: datagrams of another honest run, injected as stale cross-session traffic.
    init(seed: UInt64, deviceSeed: UInt64 = 0, mutationRate: Double, recorded: [[UInt8]]) {
        let corrupter = Corrupter(
            random: DeterministicRandom(seed: seed), mutationRate: mutationRate, recorded: recorded)
        room = Room(latency: .milliseconds(3), hook: corrupter, keepsEventLog: true)
        var timeouts = Timeouts()
        timeouts.overall = .seconds(40)
        let poses = [Pose(x: 0, y: 0, heading: 0), Pose(x: 7, y: 0, heading: 180)]
        for index in 0..<2 {
            var keys = DeterministicRandom(seed: 0x5E55 + UInt64(index) + deviceSeed * 16)
            let configuration = DeviceConfiguration(
                card: Self.cards[index], consent: .share, staticKey: X25519.PrivateKey(using: &keys),
                timeouts: timeouts)
            let device = Device(
                configuration: configuration,
                random: DeterministicRandom(seed: 0xF0 + UInt64(index) + deviceSeed * 16),
                now: .zero, localAddress: Self.address(index))
            room.add(CheckedDevice(device, index: index), at: Self.address(index))
        }
        for index in 0..<2 { room.updatePose(poses[index], of: index) }
    }

    /// Runs until nothing is due or `end`, recording a problem when a device keeps a deadline it
    /// never moves past (a driver would spin).
    mutating func run(until end: Instant) {
        var steps = 0
        while steps < 200_000 {
            steps += 1
            guard let step = room.step(notAfter: end) else { return }
            if case .timeout(let member) = step, (room.device(member) as? CheckedDevice)?.spins == true {
                return
            }
        }
        ownProblems.append("no end after \(steps) steps")
    }
}

@Suite struct SessionFuzzTests {
    static func card(_ name: String, photoBytes: Int) -> ProfileCard {
        var random = DeterministicRandom(seed: UInt64(photoBytes))
        let photo = try? ProfileCard.Photo(data: [0xFF, 0xD8, 0xFF, 0xE0] + random.bytes(photoBytes - 4))
        guard
            let card = try? ProfileCard(
                name: name, age: 5, sex: .female, neutered: true, size: .small, keywords: ["nap"], owner: "o",
                photo: photo)
        else { preconditionFailure("fixture card is valid") }
        return card
    }

    /// An uncorrupted run; with another `deviceSeed` its datagrams are the stale traffic injected.
    static func honestRun(deviceSeed: UInt64 = 0) -> CorruptingNetwork {
        var network = CorruptingNetwork(seed: 0, deviceSeed: deviceSeed, mutationRate: 0, recorded: [])
        network.run(until: Instant.zero + .seconds(60))
        return network
    }

    /// Checks one corrupted run: everything bounded and typed (collected while running), both
    /// devices closed with a reason by their deadline, and an exchange is only ever reported when
    /// the peer really holds our card.
    static func check(_ network: CorruptingNetwork, label: String) -> Bool {
        #expect(network.problems.isEmpty, "\(label): \(network.problems.prefix(3))")
        for index in 0..<2 {
            let device = network.devices[index]
            #expect(
                device.isClosed && network.closeReasons[index] != nil, "\(label): device \(index) still open")
            #expect(device.nextDeadline == nil, "\(label): device \(index) still has a deadline")
            for card in network.cardsReceived[index] {
                #expect(
                    card == CorruptingNetwork.cards[1 - index],
                    "\(label): device \(index) accepted a wrong card")
            }
            if network.closeReasons[index] == .exchanged {
                #expect(
                    network.cardsReceived[1 - index] == [CorruptingNetwork.cards[index]],
                    "\(label): device \(index) closed exchanged but its peer lacks its card")
            }
        }
        return network.closeReasons.allSatisfy { $0 == .exchanged }
    }

    @Test func honestRunExchangesBothCards() {
        let network = Self.honestRun()
        #expect(Self.check(network, label: "honest"))
        #expect(network.recording.count > 20)
    }

    /// Seeded runs at four corruption rates; each must end cleanly, and light corruption must
    /// mostly still exchange (loss and corruption cost retransmissions, not the outcome).
    @Test(arguments: [0.02, 0.05, 0.15, 0.4])
    func corruptedRunsEndCleanly(rate: Double) {
        let runs = Self.runsPerRate
        let recorded = Self.honestRun(deviceSeed: 1).recording
        var exchanged = 0
        var mutations = 0
        for seed in 1...runs {
            var network = CorruptingNetwork(
                seed: UInt64(seed) &* 0x9E37_79B9 ^ UInt64(rate * 1000), mutationRate: rate,
                recorded: recorded)
            network.run(until: Instant.zero + Self.runLimit)
            mutations += network.mutations
            if Self.check(network, label: "rate \(rate) seed \(seed)") { exchanged += 1 }
        }
        #expect(mutations > 0)
        if rate <= 0.05 { #expect(exchanged * 2 >= runs, "only \(exchanged) of \(runs) runs exchanged") }
    }

    static let runsPerRate = 500

    /// Every wait of a session that starts just before the 40 s overall timeout, added up
    /// (handshake, ranging, consent, transfer, close, drain), with a margin: a device may take this
    /// long, never longer.
    static let runLimit: Duration = .seconds(240)
}
