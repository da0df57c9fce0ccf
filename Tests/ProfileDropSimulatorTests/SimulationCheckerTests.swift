import ProfileDropCore
import Testing

@testable import ProfileDropSimulator

/// Hand-built traces of a pair, alice (device 0) and bob (device 1), standing 7 cm apart and facing:
/// a sound exchange to start from, and what a test changes in it to break one invariant.
enum CheckerTrace {
    static func card(_ name: String) -> ProfileCard {
        // Literal fields within the documented limits.
        try! ProfileCard(
            name: name, age: 3, sex: .female, neutered: true, size: .small, keywords: ["calm-natured"],
            owner: "owner-\(name)")
    }

    static let aliceCard = card("Boribori")
    static let bobCard = card("Kongkong")
    static let alicePose = Pose(x: 0, y: 0, heading: 0)
    static let bobPose = Pose(x: 7, y: 0, heading: 180)
    /// When the cards pass, when alice decides, and when bob closes.
    static let cardsPass = Instant.zero + .seconds(1)
    static let aliceCloses = Instant.zero + .seconds(2)
    static let bobCloses = Instant.zero + .seconds(3)
    /// Bytes that carry no card's or name's text.
    static let sealed: [UInt8] = [0x51, 0x0C, 0x7E, 0x22]

    static func scenario(partitions: [Partition] = []) -> Scenario {
        Scenario(
            seed: 1, timeLimit: .seconds(10), faults: NetworkFaults(partitions: partitions),
            devices: [
                .init(name: "alice", pose: alicePose, card: aliceCard),
                .init(name: "bob", pose: bobPose, card: bobCard),
            ])
    }

    /// Bob delivers alice's card (the entry a test may drop).
    static let bobReceives = SimulationTrace.Entry.cardReceived(
        device: 1, card: aliceCard, sender: 0, poses: (bobPose, alicePose), at: cardsPass)
    /// Alice's CLOSE(exchanged), datagram 2, reaches bob (the entry a test may drop).
    static let aliceCloseArrives = SimulationTrace.Entry.delivered(
        number: 2, source: 0, recipient: 1, altered: false)

    /// Both verify and deliver each other's card; alice decides and her CLOSE reaches bob, who
    /// closes too. `bobCloses` replaces bob's own close; nil leaves it out.
    static func exchange(bobCloses outcome: CloseReason? = .exchanged) -> [SimulationTrace.Entry] {
        var trace: [SimulationTrace.Entry] = [
            .sent(device: 0, number: 0, bytes: sealed, at: cardsPass),
            .delivered(number: 0, source: 0, recipient: 1, altered: false),
            .sent(device: 1, number: 1, bytes: sealed, at: cardsPass),
            .delivered(number: 1, source: 1, recipient: 0, altered: false),
            .cardVerified(device: 0, card: bobCard, from: 1),
            .cardVerified(device: 1, card: aliceCard, from: 0),
            .cardReceived(device: 0, card: bobCard, sender: 1, poses: (alicePose, bobPose), at: cardsPass),
            bobReceives,
            .sent(device: 0, number: 2, bytes: sealed, at: aliceCloses),
            .closed(device: 0, outcome: .exchanged, nextDatagram: 3, at: aliceCloses),
            aliceCloseArrives,
        ]
        if let outcome {
            trace += [
                .sent(device: 1, number: 3, bytes: sealed, at: bobCloses),
                .closed(device: 1, outcome: outcome, nextDatagram: 4, at: bobCloses),
            ]
        }
        return trace
    }

    /// The end of a run in which both closed by the bound.
    static let end = SimulationTrace.End(
        time: bobCloses, closeBound: bobCloses + .seconds(1), closedInRoom: [true, true])

    /// What the checker finds in `trace`.
    static func judge(
        _ trace: [SimulationTrace.Entry], end: SimulationTrace.End = end, scenario: Scenario = scenario()
    ) -> SimulationFindings {
        SimulationChecker.judge(trace, end: end, scenario: scenario)
    }

    /// A trace, its end and its scenario, meant to break one invariant.
    struct Breach {
        var trace: [SimulationTrace.Entry]
        var end: SimulationTrace.End = CheckerTrace.end
        var scenario: Scenario = CheckerTrace.scenario()

        /// The invariants the checker reports broken, in order.
        var reported: [SimulationInvariant] {
            CheckerTrace.judge(trace, end: end, scenario: scenario).violations.map(\.invariant)
        }
    }

    /// The invariants `part` judges.
    static func cases(of part: SimulationChecker.Part) -> [SimulationInvariant] {
        SimulationInvariant.allCases.filter { $0.checker == part }
    }
}

@Suite struct SimulationCheckerTests {
    @Test func aSoundExchangeBreaksNothing() {
        let findings = CheckerTrace.judge(CheckerTrace.exchange())
        #expect(findings.violations == [])
        #expect(findings.notes == [])
        #expect(findings.lines == [])
    }

    @Test func everyPartJudgesSomeInvariant() {
        let judged = Set(SimulationInvariant.allCases.map(\.checker))
        #expect(judged == Set(SimulationChecker.Part.allCases))
    }

    @Test func violationsKeepTheOrderOfTheTraceThenTheEnd() {
        // A leak at t=1, a second close at t=3, then at the end a device that never closed.
        var trace = CheckerTrace.exchange(bobCloses: nil)
        trace.insert(
            .sent(device: 1, number: 9, bytes: Array("Kongkong".utf8), at: CheckerTrace.cardsPass), at: 0)
        trace.append(.closed(device: 0, outcome: .outOfRange, nextDatagram: 10, at: CheckerTrace.bobCloses))
        let end = SimulationTrace.End(
            time: CheckerTrace.bobCloses, closeBound: CheckerTrace.bobCloses, closedInRoom: [true, false])
        let findings = CheckerTrace.judge(trace, end: end)
        #expect(findings.violations.map(\.invariant) == [.noPlaintext, .closesOnce, .closes])
        #expect(
            findings.lines == [
                "t=1.000s bob sent bob's card name in the clear", "t=3.000s alice closed twice",
                "bob did not close by t=3.000s (bound t=3.000s)",
            ])
    }

    @Test func violationsPastTheLimitAreCountedNotListed() {
        let leak = SimulationTrace.Entry.sent(
            device: 0, number: 9, bytes: Array("Boribori".utf8), at: CheckerTrace.cardsPass)
        let trace =
            Array(repeating: leak, count: SimulationFindings.maximumListed + 7) + CheckerTrace.exchange()
        let findings = CheckerTrace.judge(trace)
        #expect(findings.violations.count == SimulationFindings.maximumListed)
        #expect(findings.unlisted == 7)
        #expect(findings.lines.count == SimulationFindings.maximumListed + 1)
        #expect(findings.lines.last == "and 7 more violations")
    }
}
