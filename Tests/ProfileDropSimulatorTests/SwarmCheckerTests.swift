import ProfileDropCore
import Testing

@testable import ProfileDropSimulator

@Suite struct SwarmCheckerTests {
    /// The close pair's outcome for `name`: closed with `close`, holding the other's card from
    /// `distance` cm away when it exchanged.
    static func outcome(_ name: String, _ close: CloseReason?, from peer: String, at distance: Double = 7)
        -> SimulationReport.DeviceOutcome
    {
        let exchanged = close == .exchanged
        return SimulationReport.DeviceOutcome(
            name: name, close: close, closedAt: close.map { _ in Instant.zero + .seconds(2) },
            receivedCard: exchanged ? CheckerTrace.card(peer) : nil, receivedFrom: exchanged ? peer : nil,
            receivedAtDistance: exchanged ? distance : nil, cardMatchesSender: exchanged ? true : nil,
            sentDatagrams: 10, sentBytes: 1_000)
    }

    static let exchanged = [
        outcome("alice", .exchanged, from: "bob"), outcome("bob", .exchanged, from: "alice"),
    ]

    /// A breach of each invariant the swarm checker judges: the outcomes and whether the run's
    /// conditions required the exchange.
    static var breaches: [SimulationInvariant: (outcomes: [SimulationReport.DeviceOutcome], expected: Bool)] {
        [
            .noFarExchange: (
                [
                    outcome("alice", .exchanged, from: "bob"),
                    outcome("bob", .exchanged, from: "alice", at: 15.04),
                ],
                false
            ),
            .closePairExchanges: (
                [outcome("alice", .outOfRange, from: "bob"), outcome("bob", nil, from: "alice")], true
            ),
        ]
    }

    @Test(arguments: CheckerTrace.cases(of: .swarm))
    func outcomesThatBreakItAreReportedAsIt(_ invariant: SimulationInvariant) throws {
        let breach = try #require(Self.breaches[invariant], "no outcomes break \(invariant)")
        let violations = SwarmChecker.judge(breach.outcomes, expectsExchange: breach.expected)
        #expect(violations.map(\.invariant) == [invariant])
    }

    @Test func anExpectedExchangeThatHappenedBreaksNothing() {
        #expect(SwarmChecker.judge(Self.exchanged, expectsExchange: true) == [])
    }

    @Test func eachViolationSaysWhatHappened() throws {
        let far = try #require(Self.breaches[.noFarExchange])
        let stuck = try #require(Self.breaches[.closePairExchanges])
        let texts =
            (SwarmChecker.judge(far.outcomes, expectsExchange: far.expected)
            + SwarmChecker.judge(stuck.outcomes, expectsExchange: stuck.expected)).map(\.text)
        #expect(
            texts == [
                "far exchange: bob received alice's card 15.0 cm away (more than 15 cm)",
                "liveness: the close pair both consented but ended alice out-of-range, bob not closed",
            ])
    }
}
