import ProfileDropCrypto
import Testing

@testable import ProfileDropCore

extension VirtualRoom {
    /// Runs in 5 ms steps until `condition` holds or `limit` passes; returns whether it held.
    mutating func run(until limit: Instant, stoppingWhen condition: (VirtualRoom) -> Bool) -> Bool {
        while now < limit {
            if condition(self) { return true }
            run(until: now + .milliseconds(5))
        }
        return condition(self)
    }

    /// Whether device `index` reported an event matching `match`.
    func saw(_ index: Int, _ match: (DeviceEvent) -> Bool) -> Bool {
        events[index].contains(where: match)
    }

    /// How the device's exchange sessions ended, in order (the closing one included).
    func sessionOutcomes(_ index: Int) -> [CloseReason] {
        events[index].compactMap {
            switch $0 {
            case .sessionEnded(_, let reason), .closed(let reason): reason
            default: nil
            }
        }
    }
}

/// Pulling the devices apart before the exchange completes cancels it on both sides, and nothing is
/// delivered; a pair held together through noise and loss is never cancelled.
@Suite struct WalkAwayTests {
    static let far = Pose(x: 80, y: 0, heading: 180)

    static func timeouts() -> Timeouts {
        var timeouts = Timeouts()
        // After the cancel the pair retries (and fails: it is far apart); then the devices close.
        timeouts.overall = .seconds(15)
        return timeouts
    }

    @Test func walkingAwayDuringTheTransferCancelsBothAndDeliversNothing() {
        var room = VirtualRoom()
        let (a, b) = Fixtures.facingPair(distance: 7)
        // Bori is small and is verified at once; Kong carries a photo that takes a while.
        room.add(Fixtures.configuration("Bori", seed: 1, timeouts: Self.timeouts()), pose: a, seed: 11)
        room.add(
            Fixtures.configuration("Kong", seed: 2, photoBytes: 262_144, timeouts: Self.timeouts()), pose: b,
            seed: 12)
        let boriVerified = room.run(until: Instant.zero + .seconds(20)) { room in
            room.saw(0) { if case .acknowledged = $0 { true } else { false } }
        }
        #expect(boriVerified, "Kong's device verified Bori's card")
        #expect(!room.saw(1) { if case .acknowledged = $0 { true } else { false } }, "Kong's photo in flight")
        room.act(1) { $0.updatePose(Self.far, at: $1) }
        room.run(until: Instant.zero + .seconds(40))
        for index in 0..<2 {
            #expect(room.sessionOutcomes(index).first == .outOfRange, "device \(index)")
            #expect(room.closeReason(index) == .outOfRange, "device \(index)")
            #expect(room.cards(index).isEmpty, "device \(index)")
        }
    }

    @Test func walkingAwayDuringConsentCancelsBoth() {
        var room = VirtualRoom()
        let (a, b) = Fixtures.facingPair(distance: 8)
        room.add(Fixtures.configuration("Bori", seed: 1, timeouts: Self.timeouts()), pose: a, seed: 11)
        room.add(
            Fixtures.configuration("Kong", consent: .askUser, seed: 2, timeouts: Self.timeouts()), pose: b,
            seed: 12)
        let asked = room.run(until: Instant.zero + .seconds(20)) { room in
            room.saw(1) { if case .consentRequested = $0 { true } else { false } }
        }
        #expect(asked)
        room.run(until: room.now + .milliseconds(300))
        room.act(1) { $0.updatePose(Self.far, at: $1) }
        room.run(until: room.now + .seconds(2))
        // The answer comes too late: the session is gone and nothing is sent.
        room.act(1) { $0.decide(.share, at: $1) }
        room.run(until: Instant.zero + .seconds(40))
        for index in 0..<2 {
            #expect(room.sessionOutcomes(index).first == .outOfRange, "device \(index)")
            #expect(room.cards(index).isEmpty, "device \(index)")
            #expect(!room.saw(index) { if case .exchanging = $0 { true } else { false } }, "device \(index)")
        }
    }

    @Test func walkingAwayAfterTheExchangeCompletedDoesNotCancelIt() {
        var room = VirtualRoom.boriAndKong()
        let delivered = room.run(until: Instant.zero + .seconds(20)) { room in
            !room.cards(0).isEmpty || !room.cards(1).isEmpty
        }
        #expect(delivered)
        // Whoever delivered first is closing as exchanged; its gate no longer matters.
        room.act(1) { $0.updatePose(Self.far, at: $1) }
        room.run(until: Instant.zero + .seconds(30))
        #expect(room.boriAndKongSwappedCards)
    }

    @Test func cardIsDeliveredOnlyAfterTheConfirmationHold() {
        var room = VirtualRoom.boriAndKong()
        let acknowledged = room.run(until: Instant.zero + .seconds(20)) { room in
            room.saw(0) { if case .acknowledged = $0 { true } else { false } }
                && room.saw(1) { if case .acknowledged = $0 { true } else { false } }
        }
        #expect(acknowledged)
        let bothAcknowledgedAt = room.now
        let delivered = room.run(until: Instant.zero + .seconds(20)) { room in
            !room.cards(0).isEmpty && !room.cards(1).isEmpty
        }
        #expect(delivered)
        let hold = ProximityGate.Configuration.default.window
        #expect(room.now - bothAcknowledgedAt >= hold - .milliseconds(50), "held for a gate window")
        #expect(room.now - bothAcknowledgedAt <= hold + .milliseconds(250), "and not much longer")
    }

    /// Pairs held at 6–9 cm, turned up to 15°, under the default noisy measurement model and a
    /// lossy link: the gate's hysteresis keeps every exchange going to the end.
    @Test func heldPairWithNoiseNeverCancels() {
        for seed in UInt64(1)...24 {
            var placement = DeterministicRandom(seed: seed &* 1_000_003)
            let distance = 6 + 3 * placement.unitDouble()
            let turnA = 30 * placement.unitDouble() - 15
            let turnB = 30 * placement.unitDouble() - 15
            var room = VirtualRoom()
            room.lossRate = 0.2
            room.network = DeterministicRandom(seed: seed * 17)
            room.add(
                Fixtures.configuration("Bori", seed: seed, photoBytes: 65_536),
                pose: Pose(x: 0, y: 0, heading: turnA), seed: seed * 7)
            room.add(
                Fixtures.configuration("Kong", seed: seed + 50, photoBytes: 65_536),
                pose: Pose(x: distance, y: 0, heading: 180 + turnB), seed: seed * 11)
            room.run(until: Instant.zero + .seconds(60))
            for index in 0..<2 {
                #expect(room.closeReason(index) == .exchanged, "seed \(seed) device \(index)")
                #expect(room.cards(index).count == 1, "seed \(seed) device \(index)")
                // One gate opening: no session got in range and was then cancelled and retried.
                let openings = room.events[index].filter { if case .inRange = $0 { true } else { false } }
                #expect(openings.count == 1, "seed \(seed) device \(index)")
            }
        }
    }
}
