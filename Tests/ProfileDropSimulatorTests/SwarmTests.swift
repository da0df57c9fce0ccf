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

    /// A room of six at 28 % loss with corruption: the close pair invite each other while still
    /// walking in, the far abort ends that session out of range, and bystanders (one a phantom id
    /// from a corrupted beacon) stay untried or busy. The pair must still meet and exchange.
    @Test func aPairThatFailedWhileWalkingInStillExchanges() {
        let seed: UInt64 = 17_731_604_043_324_887_944
        let plan = SwarmPlan(runSeed: seed, timeouts: Swarm.timeouts)
        #expect(plan.expectsExchange)
        #expect(plan.scenario.devices.count == 6)
        let report = Swarm.run(runs: 1, seed: seed)
        #expect(report.violations == [])
        #expect(report.runs.first?.pairExchanged == true)
        // The scenario is the one described: the first session between the pair fails early.
        let transcript = report.lines.joined(separator: "\n")
        #expect(transcript.contains("dev0 -> session with dev1 ended: out of range"))
        #expect(transcript.contains("dev0 -> closed: exchanged"))
        #expect(transcript.contains("dev1 -> closed: exchanged"))
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
