import ProfileDropCore
import Testing

@testable import ProfileDropSimulator

/// Swarm runs with the real protocol core.
@Suite struct SwarmTests {
    @Test func fiftyRunsHoldEveryInvariant() {
        let report = Swarm.run(runs: 50, seed: 2026)
        #expect(report.violations == [])
        #expect(report.runs.count == 50)
        #expect(report.lines[1] == "swarm: each run draws \(SwarmPlan.drawnOptions)")
        #expect(
            report.lines.first
                == "swarm: seed=2026 runs=50 close-bound=\(Instant.zero + Swarm.timeouts.closeBound)")
        #expect(
            report.lines.last
                == "swarm: 50 runs, \(report.exchangedRuns) exchanged, \(report.abortedRuns) aborted, "
                + "0 violations"
        )
        // Liveness was actually exercised, and so were runs that must not exchange.
        #expect(report.runs.filter(\.expectedExchange).count > 20)
        #expect(report.runs.filter { $0.expectedExchange && !$0.pairExchanged }.isEmpty)
        #expect(report.abortedRuns > 0)
    }

    @Test func aRunReplaysFromItsSeedAlone() {
        let swarm = Swarm.run(runs: 4, seed: 99, transcripts: true)
        let third = swarm.runs[2]
        let replay = Swarm.run(runs: 1, seed: third.runSeed)
        #expect(replay.runs == [third])
        // The replay's transcript is the one the swarm printed for that run.
        let printed = swarm.lines.drop { !$0.hasPrefix("run 3/4 ") }.dropFirst().prefix { $0.hasPrefix("  ") }
        let replayed = replay.lines.dropFirst(3).prefix { $0.hasPrefix("  ") }
        #expect(Array(printed) == Array(replayed))
        #expect(!printed.isEmpty)
    }
}
