import ProfileDropCrypto
import Testing

@testable import ProfileDropCore

/// Discovery's announcer alone: BEACONs on their doubling schedule, QUERYs with the ids already
/// known, delayed answers with suppression, and the extra BEACON after a move.
@Suite struct AnnouncerTests {
    static let me = DeviceID(rawValue: 42)

    static func context(seed: UInt64 = 5) -> SessionContext {
        SessionContext(
            configuration: Fixtures.configuration("Bori", seed: 5), deviceID: me,
            random: DeterministicRandom(seed: seed), measurementNoise: DeterministicRandom(seed: 5),
            now: .zero,
            pose: Pose(x: 0, y: 0, heading: 0))
    }

    static func announcer(reach: Double = 50) -> Announcer {
        Announcer(
            deviceID: me, port: 4000, announceAt: .zero + .milliseconds(10),
            queryAt: .zero + .milliseconds(60),
            sequence: 7, pose: Pose(x: 0, y: 0, heading: 0), reach: reach)
    }

    /// Runs the announcer's timers at each deadline until `end`; returns what it sent, with times.
    static func run(
        _ announcer: inout Announcer, until end: Instant, busy: Bool = false, context: inout SessionContext,
        known: [DeviceID] = []
    ) -> [(time: Instant, packet: Packet)] {
        var sent: [(time: Instant, packet: Packet)] = []
        while announcer.nextDeadline <= end {
            context.now = announcer.nextDeadline
            announcer.runTimers(busy: busy, quiet: busy, knownAnswers: { known }, context: &context)
            while let datagram = context.outbox.pop() {
                if let packet = try? Packet(datagram: datagram.bytes) { sent.append((context.now, packet)) }
            }
        }
        return sent
    }

    @Test func beaconsDoubleTheirIntervalAndCountTheirSequence() {
        var context = Self.context()
        var announcer = Self.announcer()
        let sent = Self.run(&announcer, until: .zero + .seconds(10), context: &context)
        let beacons: [(Instant, UInt32)] = sent.compactMap {
            if case .beacon(let beacon) = $0.packet { ($0.time, beacon.sequence) } else { nil }
        }
        #expect(beacons.first?.0 == .zero + .milliseconds(10))
        #expect(beacons.map(\.1) == Array(7..<UInt32(7 + beacons.count)))
        let gaps = zip(beacons.dropFirst(), beacons).map { ($0.0 - $1.0).secondsDouble }
        #expect(gaps.count >= 3)
        // Each gap about twice the one before (±10 % jitter each), up to the cap.
        #expect(gaps[1] > gaps[0] * 1.5 && gaps[2] > gaps[1] * 1.5, "\(gaps)")
    }

    @Test func aQueryListsTheKnownIdsAndABusyDeviceSendsNone() {
        var context = Self.context()
        var announcer = Self.announcer()
        let known = [DeviceID(rawValue: 3), DeviceID(rawValue: 9)]
        let sent = Self.run(&announcer, until: .zero + .seconds(1), context: &context, known: known)
        let queries = sent.compactMap { if case .query(let query) = $0.packet { query } else { nil } }
        #expect(!queries.isEmpty && queries.allSatisfy { $0.knownAnswers == known && $0.deviceID == Self.me })
        var busyContext = Self.context()
        var busy = Self.announcer()
        let busySent = Self.run(&busy, until: .zero + .seconds(1), busy: true, context: &busyContext)
        #expect(!busySent.contains { if case .query = $0.packet { true } else { false } })
        #expect(busySent.contains { if case .beacon(let beacon) = $0.packet { beacon.busy } else { false } })
    }

    @Test func aQueryIsAnsweredLaterUnlessItListsUsIsFarOrABeaconJustWent() {
        var context = Self.context()
        var announcer = Self.announcer()
        _ = Self.run(&announcer, until: .zero + .milliseconds(10), context: &context)
        // A beacon just went out: no answer.
        announcer.receive(
            Query(deviceID: DeviceID(rawValue: 5), position: nil, knownAnswers: []), context: &context)
        #expect(announcer.answerAt == nil)
        context.now = .zero + .seconds(2)
        announcer.receive(
            Query(deviceID: DeviceID(rawValue: 5), position: nil, knownAnswers: [Self.me]), context: &context)
        #expect(announcer.answerAt == nil, "it lists us")
        announcer.receive(
            Query(
                deviceID: DeviceID(rawValue: 5), position: PositionHint(Pose(x: 80, y: 0, heading: 0)),
                knownAnswers: []),
            context: &context)
        #expect(announcer.answerAt == nil, "too far to pair")
        announcer.receive(
            Query(deviceID: DeviceID(rawValue: 5), position: nil, knownAnswers: []), context: &context)
        let due = announcer.answerAt
        #expect(due.map { $0 > context.now } == true, "an answer is scheduled, later than now")
    }

    @Test func movingFiveCentimetresAnnouncesAgainHalfASecondAfterTheLastBeacon() {
        var context = Self.context()
        var announcer = Self.announcer()
        _ = Self.run(&announcer, until: .zero + .milliseconds(10), context: &context)
        announcer.moved(to: Pose(x: 4, y: 0, heading: 0), announcing: true, context: context)
        #expect(announcer.motionAnnounceAt == nil, "4 cm is under the step")
        announcer.moved(to: Pose(x: 6, y: 0, heading: 0), announcing: false, context: context)
        #expect(announcer.motionAnnounceAt == nil, "a closed discovery does not announce")
        #expect(announcer.pose.x == 6)
        announcer.moved(to: Pose(x: 6, y: 0, heading: 0), announcing: true, context: context)
        #expect(announcer.motionAnnounceAt == Instant.zero + .milliseconds(10) + Announcer.motionAnnounceGap)
    }

    /// A device walking steadily announces on its schedule and after every 5 cm, but never sends
    /// two BEACONs within 100 ms: they could arrive in the other order and make its address look
    /// contested. The skipped one's schedule goes on, and the sequence numbers stay contiguous.
    @Test(arguments: 1...12 as ClosedRange<UInt64>)
    func aWalkingDeviceNeverSendsTwoBeaconsWithinAHundredMilliseconds(seed: UInt64) {
        var context = Self.context(seed: seed)
        var announcer = Self.announcer()
        var beacons: [(time: Instant, sequence: UInt32)] = []
        var x = 0.0
        // 1 cm every 13 ms, about 77 cm/s, for 20 s.
        while context.now < .zero + .seconds(20) {
            let step = context.now + .milliseconds(13)
            for sent in Self.run(&announcer, until: step, context: &context) {
                if case .beacon(let beacon) = sent.packet { beacons.append((sent.time, beacon.sequence)) }
            }
            context.now = step
            x += 1
            announcer.moved(to: Pose(x: x, y: 0, heading: 0), announcing: true, context: context)
        }
        let gaps = zip(beacons.dropFirst(), beacons).map { $0.0.time - $0.1.time }
        #expect(beacons.count > 30, "moving announces about every half second")
        #expect(gaps.allSatisfy { $0 >= .milliseconds(100) }, "\(gaps.filter { $0 < .milliseconds(100) })")
        #expect(beacons.map(\.sequence) == Array(7..<UInt32(7 + beacons.count)))
    }
}
