import Foundation
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

    /// Runs the swarm run of `runSeed` alone and checks what every liveness regression needs: a
    /// room of `devices` whose close pair is expected to exchange, and does, with no violation.
    static func pairExchanges(runSeed: UInt64, devices: Int) -> SwarmReport {
        let plan = SwarmPlan(runSeed: runSeed, timeouts: Swarm.timeouts)
        #expect(plan.expectsExchange)
        #expect(plan.scenario.devices.count == devices)
        let report = Swarm.run(runs: 1, seed: runSeed)
        #expect(report.violations == [])
        #expect(report.runs.first?.pairExchanged == true)
        return report
    }

    /// A room whose close pair invite each other while still walking in: the far abort ends that
    /// session out of range, and bystanders stay untried or busy. The pair must still meet and
    /// exchange. (Found at 28 % loss with seed 17731604043324887944, which since BEACON's sequence
    /// number no longer fails the pair's first session; it still exchanges, and is kept for that.)
    /// Protocol changes move every run's timing, so the scenario is searched for among the runs of
    /// a fixed swarm seed rather than pinned to one run.
    @Test func aPairThatFailedWhileWalkingInStillExchanges() {
        _ = Self.pairExchanges(runSeed: 17_731_604_043_324_887_944, devices: 6)
        var found = 0
        for runSeed in Swarm.runSeeds(seed: 1, count: 60) {
            let plan = SwarmPlan(runSeed: runSeed, timeouts: Swarm.timeouts)
            guard plan.expectsExchange, plan.scenario.devices.count >= 3 else { continue }
            let report = Swarm.run(runs: 1, seed: runSeed, transcripts: true)
            let transcript = report.lines.joined(separator: "\n")
            guard transcript.contains("dev0 -> session with dev1 ended: out of range") else { continue }
            found += 1
            #expect(report.violations == [], "seed \(runSeed)")
            #expect(report.runs.first?.pairExchanged == true, "seed \(runSeed)")
            if found == 2 { break }
        }
        #expect(found > 0)
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

    /// Found at 10,000 runs (swarm seed 20261130). dev1 was cut off for good 21 ms after it held
    /// dev0's verified card and dev0's acknowledgement of its own. dev0 decided 0.95 s into the cut,
    /// on an open gate resting on samples from before it, and delivered; dev1 never learnt it. Now a
    /// side decides only at a round that measured the peer, so neither decides blind.
    ///
    /// Version 2's verification round trip moved the transfer, so the run's cut is swept over the
    /// second after the cards were verified: whenever both verified before the cut and neither had
    /// decided, neither delivers.
    @Test func aPairCutOffDuringTheHoldDecidesNothingBlind() throws {
        let seed: UInt64 = 4_350_983_861_080_526_028
        let plan = SwarmPlan(runSeed: seed, timeouts: Swarm.timeouts)
        let cut = try #require(plan.scenario.faults.permanentCut(between: 0, 1))
        var cutDuringHold = 0
        for offset in stride(from: 0, through: 1000, by: 50) {
            var scenario = plan.scenario
            let start = Instant.zero + .milliseconds(2450 + offset)
            scenario.faults.partitions = scenario.faults.partitions.map {
                $0 == cut ? Partition(isolated: $0.isolated, start: start, end: nil) : $0
            }
            let report = Simulation.run(
                scenario: scenario, seed: seed, options: SimulationOptions(closeBound: plan.closeBound))
            #expect(report.violations == [], "cut at \(start)")
            let text = report.transcript.joined(separator: "\n")
            let bothVerified =
                text.contains("dev0 -> card verified") && text.contains("dev1 -> card verified")
            if bothVerified && !text.contains("closed: exchanged") {
                cutDuringHold += 1
                #expect(!text.contains("card received"), "cut at \(start)")
            }
        }
        #expect(cutDuringHold > 0)
    }

    /// Found at 10,000 runs (swarm seed 20261130). Three devices at 28 % loss, the pair walking in:
    /// CONFIRM was lost in two of the pair's sessions, which failed while only the responder's
    /// backed-off ACCEPT retransmissions prompted it again, and the growing back-offs outlasted the
    /// 60 s limit. The initiator now repeats CONFIRM with every ranging round until it hears the
    /// responder.
    @Test func aPairOnALossyLinkExchangesDespiteLostConfirms() {
        _ = Self.pairExchanges(runSeed: 11_424_253_438_291_351_437, devices: 3)
    }

    /// Every stored swarm case (SwarmCases/*.case, written by scripts/swarm.sh) replays without a
    /// violation.
    @Test(arguments: SwarmCase.stored())
    func storedCaseHoldsEveryInvariant(_ stored: SwarmCase) throws {
        let seed = try #require(stored.seed, "\(stored.name) holds no '\(SwarmCase.commandPrefix)N' line")
        let report = Swarm.run(runs: 1, seed: seed)
        #expect(report.violations == [], "\(stored.name): \(report.violations)")
    }

    @Test func storedCasesAreFound() {
        let cases = SwarmCase.stored()
        #expect(cases.count >= 2, "no stored swarm cases under \(SwarmCase.directory.path)")
        #expect(cases.contains { $0.seed == 4_350_983_861_080_526_028 })
    }
}

/// One stored swarm run: a file under SwarmCases holding, after `#` comment lines, the command that
/// replays it (`profiledrop simulate --swarm --runs 1 --seed N`).
struct SwarmCase: Sendable, CustomStringConvertible {
    static let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("SwarmCases")
    static let commandPrefix = "profiledrop simulate --swarm --runs 1 --seed "

    /// The file's name.
    let name: String
    /// The run's seed, or nil when the file holds no replay command.
    let seed: UInt64?

    var description: String { name }

    /// The stored cases, sorted by file name.
    static func stored() -> [SwarmCase] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
        return names.filter { $0.hasSuffix(".case") }.sorted().map { name in
            let text =
                (try? String(contentsOf: directory.appendingPathComponent(name), encoding: .utf8)) ?? ""
            let command = text.split(separator: "\n").first { $0.hasPrefix(commandPrefix) }
            return SwarmCase(name: name, seed: command.flatMap { UInt64($0.dropFirst(commandPrefix.count)) })
        }
    }
}
