import ProfileDropCore
import Testing

@testable import ProfileDropSimulator

@Suite struct CloseCheckerTests {
    typealias Breach = CheckerTrace.Breach

    /// The end of the pair's run with the close bound at `bound` and the room holding bob closed or not.
    static func end(bound: Instant = CheckerTrace.end.closeBound, bobClosed: Bool = true)
        -> SimulationTrace.End
    {
        SimulationTrace.End(time: CheckerTrace.bobCloses, closeBound: bound, closedInRoom: [true, bobClosed])
    }

    /// A breach of each invariant the close checker judges.
    static var breaches: [SimulationInvariant: Breach] {
        let exchange = CheckerTrace.exchange()
        return [
            .noLivelock: Breach(trace: exchange + [.livelock(events: 100_000, at: CheckerTrace.bobCloses)]),
            .closesOnce: Breach(
                trace: exchange + [
                    .closed(device: 1, outcome: .outOfRange, nextDatagram: 5, at: CheckerTrace.bobCloses)
                ]),
            // Alice closes as exchanged holding no card; bob, who never got hers, gives up.
            .exchangedWithACard: Breach(
                trace: CheckerTrace.exchange(bobCloses: .timeout(.transfer)).filter {
                    if case .cardReceived = $0 { false } else { true }
                }),
            .closesInTime: Breach(trace: exchange, end: end(bound: CheckerTrace.aliceCloses)),
            .closeReported: Breach(trace: CheckerTrace.exchange(bobCloses: nil), end: end(bobClosed: true)),
            .closes: Breach(trace: CheckerTrace.exchange(bobCloses: nil), end: end(bobClosed: false)),
        ]
    }

    @Test(arguments: CheckerTrace.cases(of: .close))
    func aTraceThatBreaksItIsReportedAsIt(_ invariant: SimulationInvariant) throws {
        let breach = try #require(Self.breaches[invariant], "no trace breaks \(invariant)")
        #expect(breach.reported == [invariant])
    }

    @Test func eachViolationSaysWhoAndWhen() {
        let order: [SimulationInvariant] = [
            .closes, .closeReported, .closesInTime, .closesOnce, .exchangedWithACard, .noLivelock,
        ]
        let lines = order.compactMap { Self.breaches[$0] }.flatMap {
            CheckerTrace.judge($0.trace, end: $0.end).lines
        }
        #expect(
            lines == [
                "bob did not close by t=3.000s (bound t=4.000s)",
                "bob is closed but never reported how",
                "bob closed at t=3.000s, after the bound t=2.000s",
                "t=3.000s bob closed twice",
                "t=2.000s alice closed as exchanged without a card",
                "t=3.000s livelock: more than 100000 events at one instant",
            ])
    }

    @Test func closingAtTheBoundIsInTime() {
        let findings = CheckerTrace.judge(
            CheckerTrace.exchange(), end: Self.end(bound: CheckerTrace.bobCloses))
        #expect(findings.violations == [])
    }
}
