import ProfileDropCore
import Testing

@testable import ProfileDropSimulator

/// The close rule (PROTOCOL.md 6.7) on the pair's traces: alice decides the exchange, and bob, who
/// verified her card, never delivers it and gives up.
@Suite struct CloseRuleCheckerTests {
    typealias Breach = CheckerTrace.Breach

    /// Alice exchanges; bob does not deliver her card (nor, unless `bobVerifies`, verify it) and
    /// times out; alice's CLOSE reaches him when `closeArrives`.
    static func bobLosesTheCard(bobVerifies: Bool = true, closeArrives: Bool = false) -> [SimulationTrace
        .Entry]
    {
        CheckerTrace.exchange(bobCloses: .timeout(.transfer)).filter { entry in
            switch entry {
            case .cardReceived(let device, _, _, _, _): device == 0
            case .cardVerified(let device, _, _): device == 0 || bobVerifies
            case .delivered(let number, _, _, _): number != 2 || closeArrives
            case .sent, .closed, .livelock: true
            }
        }
    }

    /// The pair's scenario with bob cut off for good from `start`.
    static func bobCutOff(from start: Instant) -> Scenario {
        CheckerTrace.scenario(partitions: [Partition(isolated: [1], start: start, end: nil)])
    }

    /// A breach of each invariant the close-rule checker judges.
    static var breaches: [SimulationInvariant: Breach] {
        [
            .peerVerified: Breach(trace: bobLosesTheCard(bobVerifies: false)),
            .cutExplainsLoss: Breach(trace: bobLosesTheCard()),
            .decisionUnheard: Breach(
                trace: bobLosesTheCard(closeArrives: true),
                scenario: bobCutOff(from: CheckerTrace.aliceCloses)),
            .decidedWhileFresh: Breach(
                trace: bobLosesTheCard(), scenario: bobCutOff(from: CheckerTrace.cardsPass)),
        ]
    }

    @Test(arguments: CheckerTrace.cases(of: .closeRule))
    func aTraceThatBreaksItIsReportedAsIt(_ invariant: SimulationInvariant) throws {
        let breach = try #require(Self.breaches[invariant], "no trace breaks \(invariant)")
        #expect(breach.reported == [invariant])
    }

    @Test func aCutForGoodAsAliceDecidesIsTheTwoGenerals() {
        let findings = CheckerTrace.judge(
            Self.bobLosesTheCard(), scenario: Self.bobCutOff(from: CheckerTrace.aliceCloses))
        #expect(findings.violations == [])
        #expect(
            findings.notes == [
                "alice decided the exchange at t=2.000s; bob, cut off for good from t=2.000s, never learnt it: "
                    + "it verified alice's card but delivered nothing (the two generals' problem, allowed by the "
                    + "close rule)"
            ])
    }

    @Test func aCloseThatWasAlteredOnTheWayDidNotReachBob() {
        var trace = Self.bobLosesTheCard()
        trace.append(.delivered(number: 2, source: 0, recipient: 1, altered: true))
        let findings = CheckerTrace.judge(trace, scenario: Self.bobCutOff(from: CheckerTrace.aliceCloses))
        #expect(findings.violations == [])
        #expect(findings.notes.count == 1)
    }

    @Test func eachViolationSaysWhatExcusedNothing() {
        let lines = [
            SimulationInvariant.peerVerified, .cutExplainsLoss, .decisionUnheard, .decidedWhileFresh,
        ]
        .compactMap { Self.breaches[$0] }.flatMap {
            CheckerTrace.judge($0.trace, scenario: $0.scenario).lines
        }
        let failure = "alice closed as exchanged but bob never received alice's card"
        #expect(
            lines == [
                "\(failure), nor verified it",
                "\(failure), and no partition that never heals separated them",
                "\(failure), though alice's CLOSE(exchanged) reached bob before the cut",
                "\(failure): alice decided at t=2.000s, 1.000s into a cut that never healed, without a fresh "
                    + "measurement of bob",
            ])
    }
}
