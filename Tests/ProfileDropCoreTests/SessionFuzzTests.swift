import ProfileDropCrypto
import Testing

@testable import ProfileDropCore

/// Two real devices in virtual time on a network that corrupts their traffic on purpose: it flips
/// bits, truncates, extends, splices, duplicates, delays, drops and replays datagrams, and injects
/// datagrams of another honest run and stray ones from strangers. Devices come from fixed seeds, so a
/// run follows the honest run until its first corruption and every run is reproducible.
struct CorruptingNetwork {
    struct Delivery {
        var at: Instant
        var order: Int
        var target: Int
        var source: PeerAddress
        var bytes: [UInt8]
    }

    /// What can happen to a datagram in flight.
    enum Mutation: CaseIterable {
        case flipBits, truncate, extend, splice, duplicate, reorder, drop, replayRecorded, garbage
    }

    static let cards = [
        SessionFuzzTests.card("Bori", photoBytes: 2600), SessionFuzzTests.card("Kong", photoBytes: 900),
    ]
    static func address(_ index: Int) -> PeerAddress { PeerAddress(10, 0, 0, UInt8(index + 1), port: 5000) }

    var devices: [Device] = []
    var cardsReceived: [[ProfileCard]] = [[], []]
    var closeReasons: [CloseReason?] = [nil, nil]
    var now = Instant.zero
    var queue: [Delivery] = []
    var order = 0
    var random: DeterministicRandom
    var mutationRate: Double
    /// Datagrams of another honest run (other keys and sessions).
    var recorded: [[UInt8]]
    /// Every datagram the devices sent in this run.
    var recording: [[UInt8]] = []
    var mutations = 0
    var problems: [String] = []

    /// - Parameters:
    ///   - deviceSeed: fixes both devices' identities, keys and sessions.
    ///   - recorded: datagrams of another honest run, injected as stale cross-session traffic.
    init(seed: UInt64, deviceSeed: UInt64 = 0, mutationRate: Double, recorded: [[UInt8]]) {
        random = DeterministicRandom(seed: seed)
        self.mutationRate = mutationRate
        self.recorded = recorded
        var timeouts = Timeouts()
        timeouts.overall = .seconds(40)
        let poses = [Pose(x: 0, y: 0, heading: 0), Pose(x: 7, y: 0, heading: 180)]
        for index in 0..<2 {
            var keys = DeterministicRandom(seed: 0x5E55 + UInt64(index) + deviceSeed * 16)
            let configuration = DeviceConfiguration(
                card: Self.cards[index], consent: .share, staticKey: X25519.PrivateKey(using: &keys),
                timeouts: timeouts)
            var device = Device(
                configuration: configuration,
                random: DeterministicRandom(seed: 0xF0 + UInt64(index) + deviceSeed * 16),
                now: .zero, localAddress: Self.address(index))
            device.updatePose(poses[index], at: .zero)
            devices.append(device)
        }
        for index in 0..<2 { flush(index) }
    }

    /// Drains one device, checking its bounds before the queues empty.
    mutating func flush(_ index: Int) {
        let device = devices[index]
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
        while let event = devices[index].pollEvent() { record(event, index) }
        while let datagram = devices[index].pollTransmit() {
            if datagram.bytes.count > WireConstants.maxDatagramSize { problems.append("oversized datagram") }
            if (try? Packet(datagram: datagram.bytes)) == nil {
                problems.append("device \(index) sent garbage")
            }
            recording.append(datagram.bytes)
            switch datagram.destination {
            case .multicast: send(datagram.bytes, from: index, to: 1 - index)
            case .unicast(let address):
                if address == Self.address(1 - index) { send(datagram.bytes, from: index, to: 1 - index) }
            }
        }
    }

    private mutating func record(_ event: DeviceEvent, _ index: Int) {
        switch event {
        case .cardReceived(let card): cardsReceived[index].append(card)
        case .closed(let reason):
            if closeReasons[index] != nil { problems.append("device \(index) closed twice") }
            closeReasons[index] = reason
        case .advertising, .peerFound, .peerBusy, .connecting, .secured, .ranging, .inRange,
            .consentRequested, .exchanging, .cardVerified, .acknowledged, .sessionEnded, .datagramRejected:
            break
        }
    }

    private mutating func enqueue(_ bytes: [UInt8], from source: PeerAddress, to target: Int, delay: Duration)
    {
        order += 1
        queue.append(Delivery(at: now + delay, order: order, target: target, source: source, bytes: bytes))
    }

    /// Puts a datagram on the wire, maybe corrupting it first.
    mutating func send(_ original: [UInt8], from index: Int, to target: Int) {
        var bytes = original
        var delay: Duration = .milliseconds(3)
        let source = Self.address(index)
        guard random.unitDouble() < mutationRate else {
            enqueue(bytes, from: source, to: target, delay: delay)
            return
        }
        mutations += 1
        let all = Mutation.allCases
        switch all[Int(random.uniform(below: UInt64(all.count)))] {
        case .flipBits:
            for _ in 0...random.uniform(below: 3) where !bytes.isEmpty {
                bytes[Int(random.uniform(below: UInt64(bytes.count)))] ^= 1 << UInt8(random.uniform(below: 8))
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
            enqueue(bytes, from: source, to: target, delay: .milliseconds(Int64(random.uniform(below: 400))))
        case .reorder:
            delay = .milliseconds(Int64(5 + random.uniform(below: 300)))
        case .drop:
            return
        case .replayRecorded:
            enqueue(pick(), from: source, to: target, delay: .milliseconds(Int64(random.uniform(below: 50))))
        case .garbage:
            let stranger = PeerAddress(10, 0, 9, UInt8(random.uniform(below: 200)), port: 6000)
            let junk =
                [0x50, 0x44, 0x01, UInt8(1 + random.uniform(below: 7))]
                + random.bytes(Int(random.uniform(below: 80)))
            enqueue(junk, from: stranger, to: target, delay: .milliseconds(1))
        }
        enqueue(bytes, from: source, to: target, delay: delay)
    }

    /// A datagram seen on this wire earlier (a true replay: a packet from the future of the live
    /// session would be a forgery no attacker can make), or now and then one of another run.
    private mutating func pick() -> [UInt8] {
        let pool = recorded.isEmpty || random.uniform(below: 4) != 0 ? recording : recorded
        return pool.isEmpty ? [] : pool[Int(random.uniform(below: UInt64(pool.count)))]
    }

    /// Runs until nothing is due or `end`, recording a problem when a device keeps a deadline it
    /// never moves past (a driver would spin).
    mutating func run(until end: Instant) {
        var steps = 0
        while steps < 200_000 {
            steps += 1
            let next = queue.min { ($0.at, $0.order) < ($1.at, $1.order) }
            var time = next?.at
            for device in devices {
                if let deadline = device.nextDeadline, time.map({ deadline < $0 }) ?? true { time = deadline }
            }
            guard let time, time <= end else { return }
            now = max(now, time)
            if let next, next.at <= now {
                queue.removeAll { $0.order == next.order }
                deliver(next)
                continue
            }
            for index in devices.indices {
                var calls = 0
                while let deadline = devices[index].nextDeadline, deadline <= now {
                    calls += 1
                    if calls > 3 {
                        problems.append("device \(index) spins on deadline \(deadline) at \(now)")
                        return
                    }
                    devices[index].handleTimeout(at: now)
                    flush(index)
                }
            }
        }
        problems.append("no end after \(steps) steps")
    }

    private mutating func deliver(_ delivery: Delivery) {
        let index = delivery.target
        let before = devices[index].counters
        devices[index].handleDatagram(delivery.bytes, from: delivery.source, at: now)
        let after = devices[index].counters
        var rejection: ProtocolError?
        var events: [DeviceEvent] = []
        while let event = devices[index].pollEvent() {
            if case .datagramRejected(let error) = event { rejection = error }
            events.append(event)
        }
        if let rejection, after.rejected(rejection.code) != before.rejected(rejection.code) + 1 {
            problems.append("rejection \(rejection) not counted")
        }
        do {
            _ = try Packet(datagram: delivery.bytes)
        } catch {
            if rejection?.code != error.code && error.code != .ownDatagram {
                problems.append(
                    "undecodable datagram rejected as \(String(describing: rejection)), not \(error)")
            }
        }
        for event in events { record(event, index) }
        flush(index)
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
