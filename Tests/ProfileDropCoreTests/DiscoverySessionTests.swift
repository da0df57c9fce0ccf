import ProfileDropCrypto
import ProfileDropSimulator
import Testing

@testable import ProfileDropCore

@Suite struct DiscoverySessionTests {
    /// A lone device in a ``Room``, driven by its own deadlines, with everything it sends recorded
    /// and datagrams put in flight to it from any address.
    struct Lone {
        var room = Room(keepsEventLog: true)
        var sent: [(time: Instant, packet: Packet)] = []

        var device: Device {
            guard let device = room.device(0) as? Device else { preconditionFailure("the lone device") }
            return device
        }
        var events: [DeviceEvent] { room.eventLog[0] }

        init(timeouts: Timeouts = Timeouts(), seed: UInt64 = 3, unsolicitedPerSecond: Int = 1000) {
            var configuration = Fixtures.configuration("Bori", seed: seed, timeouts: timeouts)
            configuration.limits.unsolicitedPerSecond = unsolicitedPerSecond
            let address = PeerAddress(10, 0, 0, 1, port: 4000)
            room.add(
                Device(
                    configuration: configuration, random: DeterministicRandom(seed: seed), now: .zero,
                    localAddress: address),
                at: address)
            room.flush(0)
            recordSent()
        }

        /// Keeps what the device sent in the room's last step, stamped with the device's clock.
        mutating func recordSent() {
            for datagram in room.lastSent {
                if let packet = try? Packet(datagram: datagram.bytes) { sent.append((device.now, packet)) }
            }
        }

        mutating func run(until end: Instant) {
            while room.step(notAfter: end) != nil { recordSent() }
        }

        /// Gives the device inputs directly, then records what it sent.
        mutating func act(_ input: (inout any SansIODevice) -> Void) {
            room.withDevice(0) { device, _ in input(&device) }
            recordSent()
        }

        /// Runs the device's deadlines up to `time`, then has `packet` arrive from `source`.
        mutating func deliver(_ packet: Packet, from source: PeerAddress, at time: Instant) {
            run(until: time)
            room.inject(packet.encoded(), from: source, to: 0, after: time - room.now)
            _ = room.step(notAfter: time)
            recordSent()
        }

        var beaconTimes: [Instant] {
            sent.compactMap { if case .beacon = $0.packet { $0.time } else { nil } }
        }
    }

    @Test func beaconsBackOffToTheCapWithJitter() {
        var lone = Lone()
        lone.run(until: Instant.zero + .seconds(30))
        let times = lone.beaconTimes
        #expect(times.first.map { $0 <= Instant.zero + .milliseconds(100) } ?? false)
        let gaps = zip(times.dropFirst(), times).map { ($0 - $1).secondsDouble }
        #expect(gaps.count >= 8)
        for (index, expected) in [0.25, 0.5, 1, 2, 4, 4, 4].enumerated() {
            #expect(abs(gaps[index] - expected) <= expected * 0.1 + 1e-6, "gap \(index) = \(gaps[index])")
        }
        #expect(!lone.beaconTimes.isEmpty && lone.sent.allSatisfy { $0.packet.encoded().count <= 1200 })
        // Browse queries back off too.
        let queries = lone.sent.filter { if case .query = $0.packet { true } else { false } }.map(\.time)
        let queryGaps = zip(queries.dropFirst(), queries).map { ($0 - $1).secondsDouble }
        #expect(
            queryGaps.prefix(4).enumerated().allSatisfy {
                abs($1 - [1.0, 2, 4, 8][$0]) <= [1.0, 2, 4, 8][$0] * 0.1
            })
    }

    @Test func queriesAreAnsweredAfterARandomDelayUnlessSuppressed() {
        var lone = Lone()
        let asker = PeerAddress(10, 0, 0, 9, port: 4000)
        let askerID = DeviceID(rawValue: 99)
        lone.run(until: Instant.zero + .seconds(10))
        let before = lone.beaconTimes.count
        // Known answer: we are listed, so we stay quiet.
        let askedAt = Instant.zero + .milliseconds(10_500)
        lone.deliver(
            .query(Query(deviceID: askerID, knownAnswers: [lone.device.deviceID])), from: asker, at: askedAt)
        lone.run(until: askedAt + .milliseconds(200))
        #expect(lone.beaconTimes.count == before)
        // Not listed: one answer 20–120 ms later, however many queries arrive meanwhile.
        for offset in [0, 5, 10] {
            lone.deliver(
                .query(Query(deviceID: DeviceID(rawValue: 100 + UInt64(offset)), knownAnswers: [])),
                from: asker,
                at: askedAt + .milliseconds(300 + offset))
        }
        lone.run(until: askedAt + .milliseconds(600))
        let answers = lone.beaconTimes.filter { $0 > askedAt + .milliseconds(300) }
        #expect(answers.count == 1)
        if let answer = answers.first {
            let delay = answer - (askedAt + .milliseconds(300))
            #expect(delay >= .milliseconds(20) && delay <= .milliseconds(120))
        }
        // A beacon went out under a second ago: a new query is not answered.
        lone.deliver(
            .query(Query(deviceID: askerID, knownAnswers: [])), from: asker, at: askedAt + .milliseconds(700))
        lone.run(until: askedAt + .milliseconds(900))
        #expect(lone.beaconTimes.filter { $0 > askedAt + .milliseconds(300) }.count == 1)
    }

    @Test func peerTableIsBoundedAndForgetsSilentPeers() {
        var lone = Lone()
        for index in 0..<100 {
            let beacon = Beacon(deviceID: DeviceID(rawValue: 1000 + UInt64(index)), port: 4000, busy: true)
            lone.deliver(
                .beacon(beacon), from: PeerAddress(10, 0, 1, UInt8(index), port: 4000),
                at: Instant.zero + .milliseconds(index))
        }
        #expect(lone.device.snapshot.peersSeen == 32)
        #expect(lone.events.filter { if case .peerFound = $0 { true } else { false } }.count == 100)
        lone.run(until: Instant.zero + .seconds(16))
        #expect(lone.device.snapshot.peersSeen == 0)
    }

    @Test func ownMulticastIsIgnoredQuietly() {
        var lone = Lone()
        guard let own = lone.sent.first?.packet ?? nil else {
            lone.run(until: Instant.zero + .seconds(1))
            return
        }
        lone.deliver(own, from: lone.device.localAddress, at: Instant.zero + .milliseconds(200))
        #expect(lone.device.counters.rejected(.ownDatagram) == 1)
        #expect(lone.device.snapshot.peersSeen == 0)
        #expect(!lone.events.contains { if case .datagramRejected = $0 { true } else { false } })
    }

    @Test func vanishedPeerEndsTheHandshakeAfterBoundedRetries() {
        var lone = Lone()
        let ghost = PeerAddress(10, 0, 0, 7, port: 4000)
        lone.deliver(
            .beacon(Beacon(deviceID: DeviceID(rawValue: 5), port: 4000, busy: false)), from: ghost, at: .zero)
        // 0.25 + 0.5 + 1 + 2 s of retransmissions, then 4 s for the last: over by about 8.1 s, and the
        // back-off (4 s ± 20 %) keeps the next attempt beyond 11 s.
        lone.run(until: Instant.zero + .seconds(11))
        let invites = lone.sent.filter { if case .invite = $0.packet { true } else { false } }.map(\.time)
        #expect(invites.count == 5)
        let gaps = zip(invites.dropFirst(), invites).map { ($0 - $1).secondsDouble }
        #expect(gaps == [0.25, 0.5, 1, 2])
        let ended = lone.events.compactMap {
            if case .sessionEnded(_, let reason) = $0 { reason } else { nil }
        }
        #expect(ended == [.timeout(.handshake)])
        #expect(lone.device.counters.handshakeRetransmissions == 4)
    }

    @Test func floodFromOneSourceIsRateLimitedAndBounded() {
        var lone = Lone(unsolicitedPerSecond: 20)
        let attacker = PeerAddress(10, 0, 0, 66, port: 9)
        var random = DeterministicRandom(seed: 8)
        lone.act { device in
            for index in 0..<2000 {
                let time = Instant.zero + .milliseconds(index / 4)
                let beacon = Beacon(deviceID: DeviceID(rawValue: random.nextUInt64()), port: 9, busy: false)
                device.handleDatagram(beacon.encodedPacket, from: attacker, at: time)
                device.handleDatagram(random.bytes(Int(random.uniform(below: 300))), from: attacker, at: time)
            }
        }
        #expect(lone.device.counters.rejected(.rateLimited) > 1500)
        #expect(lone.device.snapshot.peersSeen <= 32)
        #expect(lone.device.counters.datagramsReceived == 4000)
        #expect(lone.device.counters.datagramsRejected + lone.device.counters.datagramsAccepted == 4000)
        // A genuine peer from another address is still heard.
        lone.deliver(
            .beacon(Beacon(deviceID: DeviceID(rawValue: 1), port: 4000, busy: true)),
            from: PeerAddress(10, 0, 0, 2, port: 4000),
            at: Instant.zero + .milliseconds(600))
        #expect(lone.events.contains(.peerFound(DeviceID(rawValue: 1))))
    }

    /// BUSY(2) "we failed with you, and someone else is untried" only counts peers we would
    /// invite instead right now. A close pair whose first session failed while they walked in
    /// must not keep refusing each other because of a busy bystander or a phantom id from a
    /// corrupted beacon, neither of which the refusing device could invite.
    @Test func refusesARetriedPeerOnlyForAnUntriedPeerItCouldInviteNow() {
        var context = SessionContext(
            configuration: Fixtures.configuration("Bori", seed: 3), deviceID: DeviceID(rawValue: 99),
            random: DeterministicRandom(seed: 3), now: .zero, pose: Pose(x: 0, y: 0, heading: 0))
        var discovery = DiscoverySession(deviceID: DeviceID(rawValue: 99), port: 4000, context: &context)
        let partner = DeviceID(rawValue: 1)
        let bystander = DeviceID(rawValue: 2)
        let phantom = DeviceID(rawValue: 3)
        func hear(_ id: DeviceID, busy: Bool, at time: Instant) {
            context.now = time
            discovery.receive(
                Beacon(deviceID: id, port: 4000, busy: busy),
                from: PeerAddress(10, 0, 0, UInt8(id.rawValue), port: 4000), context: &context)
        }
        hear(partner, busy: false, at: .zero)
        hear(bystander, busy: false, at: .zero)
        // The first session with the partner ended out of range (the far abort while walking in).
        context.now = Instant.zero + .milliseconds(700)
        discovery.sessionFailed(with: partner, context: &context)
        #expect(discovery.prefersNotToAccept(partner, now: context.now), "backing off from it")
        // Back-off over: an untried bystander we could invite right now is preferred.
        let later = Instant.zero + .seconds(6)
        hear(bystander, busy: false, at: later)
        #expect(discovery.prefersNotToAccept(partner, now: later))
        // The bystander is busy with someone else: we would not invite it, so we take the partner.
        hear(bystander, busy: true, at: later)
        #expect(!discovery.prefersNotToAccept(partner, now: later))
        // Likewise once it answered BUSY to us, until its short back-off ends.
        hear(bystander, busy: false, at: later)
        context.now = later
        discovery.peerBusy(bystander, context: &context)
        #expect(!discovery.prefersNotToAccept(partner, now: later))
        #expect(discovery.prefersNotToAccept(partner, now: later + .seconds(2)))
        // A phantom id that never answers counts only until its handshake timed out once.
        hear(phantom, busy: false, at: later + .seconds(2))
        context.now = later + .seconds(2)
        discovery.sessionFailed(with: bystander, context: &context)
        #expect(discovery.prefersNotToAccept(partner, now: context.now))
        context.now = later + .seconds(10)
        discovery.sessionFailed(with: phantom, context: &context)
        #expect(!discovery.prefersNotToAccept(partner, now: context.now))
        // The partner with more failures than every candidate is still refused.
        discovery.sessionFailed(with: partner, context: &context)
        context.now = context.now + .seconds(30)
        hear(bystander, busy: false, at: context.now)
        hear(partner, busy: false, at: context.now)
        #expect(discovery.prefersNotToAccept(partner, now: context.now))
    }
}

extension Beacon {
    fileprivate var encodedPacket: [UInt8] { Packet.beacon(self).encoded() }
}
