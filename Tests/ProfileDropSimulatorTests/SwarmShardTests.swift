import ProfileDropCore
import Testing

@testable import ProfileDropSimulator

/// A swarm split into shards does exactly the whole swarm's runs, and the shards' summaries merge
/// into the whole swarm's.
@Suite struct SwarmShardTests {
    /// The done criterion of sharding: shards 1/2 and 2/2 of a 40-run swarm, merged, give the whole
    /// swarm's counts, summary line and violations, run for run.
    @Test func twoShardsMergeIntoTheWholeSwarm() throws {
        let whole = Swarm.run(runs: 40, seed: 2026)
        let first = Swarm.run(runs: 40, seed: 2026, shard: try #require(SwarmShard(index: 1, count: 2)))
        let second = Swarm.run(runs: 40, seed: 2026, shard: try #require(SwarmShard(index: 2, count: 2)))
        #expect(first.runs.count == 20 && second.runs.count == 20)
        // Every run has the seed and outcome it has in the whole swarm: shard 1 took the odd runs.
        #expect(first.runs == stride(from: 0, to: 40, by: 2).map { whole.runs[$0] })
        #expect(second.runs == stride(from: 1, to: 40, by: 2).map { whole.runs[$0] })

        let merged = try SwarmSummary.merge([
            ("shard-2", SwarmSummary(report: second)), ("shard-1", SwarmSummary(report: first)),
        ])
        #expect(merged == SwarmSummary(report: whole))
        #expect(merged.summaryLine == whole.lines.last)
        #expect(merged.violations == whole.violations)
        #expect(merged.exchanged == whole.exchangedRuns && merged.aborted == whole.abortedRuns)
    }

    /// Failing runs too: with timers too short for any exchange, liveness fails in many runs, and
    /// the merged shards list the same violations and reproduction commands, in run order, as the
    /// whole swarm prints.
    @Test func failingRunsMergeInRunOrder() throws {
        var impatient = Swarm.timeouts
        impatient.overall = .milliseconds(300)
        func swarm(_ shard: SwarmShard) -> SwarmReport {
            Swarm.run(runs: 12, seed: 77, shard: shard, timeouts: impatient) { $0.makeCoreDevice() }
        }
        let whole = swarm(.whole)
        try #require(whole.violations.count >= 2)
        let shards = try (1...3).map { index in
            let shard = try #require(SwarmShard(index: index, count: 3))
            return ("shard-\(index)", SwarmSummary(report: swarm(shard)))
        }
        let merged = try SwarmSummary.merge(shards)
        #expect(merged == SwarmSummary(report: whole))
        #expect(merged.violations == whole.violations)
        #expect(merged.summaryLine == whole.lines.last)
        // The printed failures are the whole swarm's lines, the run line shortened to its seed.
        let reproduce = { (lines: [String]) in lines.filter { $0.hasPrefix("  reproduce: ") } }
        let violationLines = { (lines: [String]) in lines.filter { $0.hasPrefix("  violation: ") } }
        #expect(reproduce(merged.failureLines) == reproduce(whole.lines))
        #expect(violationLines(merged.failureLines) == violationLines(whole.lines))
        for run in merged.failingRuns {
            #expect(merged.failureLines.contains("run \(run.runNumber)/12 seed=\(run.runSeed)"))
            #expect(whole.lines.contains { $0.hasPrefix("run \(run.runNumber)/12 seed=\(run.runSeed) ") })
        }
    }

    /// Every run lands in exactly one shard, with its own seed, and the shards' sizes differ by one at
    /// most; shards beyond the runs are empty.
    @Test func shardsPartitionTheRunsEvenly() throws {
        for runs in [0, 1, 5, 40] {
            let all = Swarm.runSeeds(seed: 9, count: runs)
            for count in [1, 2, 3, 7, 50] {
                var union: [(index: Int, runSeed: UInt64)] = []
                var sizes: [Int] = []
                for index in 1...count {
                    let shard = try #require(SwarmShard(index: index, count: count))
                    let seeds = Swarm.runSeeds(seed: 9, count: runs, shard: shard)
                    #expect(seeds.count == shard.runCount(inSwarmOf: runs))
                    #expect(seeds.allSatisfy { shard.holds(runNumber: $0.index + 1) })
                    union += seeds
                    sizes.append(seeds.count)
                }
                union.sort { $0.index < $1.index }
                #expect(union.map(\.index) == Array(0..<runs), "\(runs) runs in \(count) shards")
                #expect(union.map(\.runSeed) == all, "\(runs) runs in \(count) shards")
                #expect((sizes.max() ?? 0) - (sizes.min() ?? 0) <= 1)
            }
        }
    }

    @Test func aShardIsReadFromIOverK() {
        #expect(SwarmShard(parsing: "1/2") == SwarmShard(index: 1, count: 2))
        #expect(SwarmShard(parsing: "64/64")?.description == "64/64")
        #expect(SwarmShard(parsing: "1/1") == .whole)
        for bad in [
            "", "1", "0/2", "3/2", "1/0", "-1/2", "+1/2", "1/+2", "1/2/3", " 1/2", "a/b", "1/", "/2",
            "1/1000001", "1/99999999999999999999",
        ] {
            #expect(SwarmShard(parsing: bad) == nil, "\(bad)")
        }
        #expect(SwarmShard(index: 1, count: 1_000_001) == nil)
        #expect(
            SwarmShard(index: 2, count: 3)?.holdingDescription(inSwarmOf: 10)
                == "shard 2/3 holds 3 of the 10 runs: runs 2, 5, 8")
        #expect(
            SwarmShard(index: 4, count: 5)?.holdingDescription(inSwarmOf: 3)
                == "shard 4/5 holds none of the 3 runs")
    }

    static let failing = SwarmSummary(
        seed: 18_000_000_000_000_000_001, runs: 10, shard: SwarmShard(index: 2, count: 3)!, exchanged: 2,
        aborted: 1,
        failingRuns: [
            .init(
                runNumber: 2, runSeed: 17_000_000_000_000_000_003,
                violations: ["liveness: a", "far exchange: b"]),
            .init(runNumber: 8, runSeed: 5, violations: ["liveness: c"]),
        ])

    @Test func aSummaryFileReadsBackAsWritten() throws {
        let text = Self.failing.fileText
        #expect(text.hasPrefix("{\n  \"format\" : \"\(SwarmSummary.formatName)\",\n"))
        // Seeds beyond 2^53 survive: JSON numbers would round them.
        #expect(text.contains("\"seed\" : \"18000000000000000001\""))
        #expect(text.contains("\"reproduce\" : \"profiledrop simulate --swarm --runs 1 --seed 5\""))
        #expect(try SwarmSummary(fileText: text) == Self.failing)
        #expect(Self.failing.violations.count == 3)
        #expect(Self.failing.summaryLine == "swarm: 3 runs, 2 exchanged, 1 aborted, 3 violations")
    }

    @Test func aMalformedSummaryFileIsRefusedWithItsReason() {
        let text = Self.failing.fileText
        let cases: [(String, String)] = [
            ("", "the file is empty"),
            ("{", "invalid JSON at line 1"),
            ("[]", "not a swarm summary"),
            ("{\"seed\": \"1\"}", "not a swarm summary"),
            (text.replacingOccurrences(of: "\"shardRuns\" : 3", with: "\"shardRuns\" : 4"), "shardRuns:"),
            (text.replacingOccurrences(of: "\"aborted\" : 1", with: "\"aborted\" : 0"), "do not add up"),
            (
                text.replacingOccurrences(of: "\"violations\" : 3", with: "\"violations\" : 2"),
                "violations: 2,"
            ),
            (text.replacingOccurrences(of: "\"run\" : 8", with: "\"run\" : 7"), "not in shard 2/3"),
            (text.replacingOccurrences(of: "\"run\" : 8", with: "\"run\" : 2"), "increasing order"),
            (text.replacingOccurrences(of: "--seed 5", with: "--seed 6"), "failing[1].reproduce"),
            (text.replacingOccurrences(of: "\"seed\" : \"5\"", with: "\"seed\" : 5"), "failing[1].seed"),
            (text.replacingOccurrences(of: "\"shard\" : \"2/3\"", with: "\"shard\" : \"4/3\""), "shard:"),
            (
                text.replacingOccurrences(of: "\"runs\" : 10", with: "\"runs\" : 10, \"extra\" : 1"),
                "unknown key"
            ),
        ]
        for (input, expected) in cases {
            do {
                _ = try SwarmSummary(fileText: input)
                Issue.record("read despite: \(expected)")
            } catch {
                #expect(error.reason.contains(expected), "\(error.reason)")
                #expect(!error.reason.contains("\n"))
            }
        }
    }

    @Test func summariesOfAnotherSwarmOrAMissingShardDoNotMerge() throws {
        func part(_ index: Int, of count: Int, seed: UInt64 = 1, runs: Int = 10) throws -> SwarmSummary {
            let shard = try #require(SwarmShard(index: index, count: count))
            let held = shard.runCount(inSwarmOf: runs)
            return SwarmSummary(
                seed: seed, runs: runs, shard: shard, exchanged: held, aborted: 0, failingRuns: [])
        }
        let cases: [([(name: String, summary: SwarmSummary)], String)] = [
            ([], "no summaries"),
            (
                [("a", try part(1, of: 2)), ("b", try part(2, of: 2, seed: 2))],
                "b is from the swarm seed=2 runs=10"
            ),
            ([("a", try part(1, of: 2)), ("b", try part(2, of: 2, runs: 11))], "runs=11, but a is from"),
            ([("a", try part(1, of: 2)), ("b", try part(2, of: 3))], "split two ways"),
            ([("a", try part(1, of: 2)), ("b", try part(1, of: 2))], "a and b are both shard 1/2"),
            ([("a", try part(1, of: 3))], "missing shards 2/3, 3/3 (2 of 3)"),
            (
                [("a", try part(2, of: 30))],
                "missing shards 1/30, 3/30, 4/30, 5/30, 6/30, 7/30, 8/30, 9/30, 10/30, 11/30, … (29 of 30)"
            ),
        ]
        for (shards, expected) in cases {
            do {
                _ = try SwarmSummary.merge(shards)
                Issue.record("merged despite: \(expected)")
            } catch {
                #expect(error.reason.contains(expected), "\(error.reason)")
            }
        }
        // Shards beyond the runs are empty, and still needed: a merge counts shards, not runs.
        let merged = try SwarmSummary.merge((1...4).map { ("\($0)", try part($0, of: 4, runs: 2)) })
        #expect(merged.summaryLine == "swarm: 2 runs, 2 exchanged, 0 aborted, 0 violations")
    }
}
