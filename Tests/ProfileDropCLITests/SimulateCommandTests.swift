import Foundation
import ProfileDropCapture
import ProfileDropSimulator
import Testing

@testable import ProfileDropCLI

@Suite struct SimulateCommandTests {
    static let scenario = TestPaths.packageRoot.appendingPathComponent("Scenarios/happy-pair.json").path

    func run(_ arguments: [String]) -> (code: Int32, output: [String], errors: [String]) {
        runInProcess(arguments)
    }

    @Test func aScenarioPrintsSeedFirstAndSummaryLastAndRepeatsByteForByte() {
        let first = run(["simulate", Self.scenario, "--seed", "5"])
        let second = run(["simulate", Self.scenario, "--seed", "5"])
        #expect(first.code == 0)
        #expect(first.output.first?.hasPrefix("simulate: seed=5 ") == true)
        #expect(first.output.last?.hasPrefix("summary: 2 devices, 2 exchanged") == true)
        #expect(first.output == second.output)
    }

    @Test func aCapturedScenarioReplaysIdentically() throws {
        let directory = try TestPaths.temporaryDirectory()
        let capture = directory.appendingPathComponent("run.pcapng").path
        let simulated = run(["simulate", Self.scenario, "--quiet", "--capture", capture, "--keylog"])
        #expect(simulated.code == 0)
        let replayed = run(["replay", capture])
        #expect(replayed.code == 0, "\(replayed.errors)")
        #expect(replayed.output.last?.hasSuffix(" datagrams, identical") == true)

        let one = directory.appendingPathComponent("one.pcapng").path
        #expect(
            run([
                "simulate", Self.scenario, "--quiet", "--capture", one, "--capture-device", "bob", "--keylog",
            ]).code == 0)
        let single = run(["replay", one])
        #expect(single.code == 0)
        #expect(single.output.allSatisfy { !$0.contains(" alice ") })
    }

    /// A capture's file is checked before the run, like the timeline's; with its keylog it holds
    /// secrets, so only its owner can read it.
    @Test func aCaptureIsCheckedFirstAndAKeylogOneIsPrivate() throws {
        let directory = try TestPaths.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let refused = run([
            "simulate", Self.scenario, "--quiet", "--capture",
            directory.appendingPathComponent("no/run.pcapng").path,
        ])
        #expect(refused.code == 2)
        #expect(refused.output.isEmpty, "the run went ahead")
        #expect(
            refused.errors.count == 1 && refused.errors.first?.contains("--capture") == true,
            "\(refused.errors)")
        let capture = directory.appendingPathComponent("run.pcapng").path
        let written = run(["simulate", Self.scenario, "--quiet", "--capture", capture, "--keylog"])
        #expect(written.code == 0, "\(written.errors)")
        let mode = try FileManager.default.attributesOfItem(atPath: capture)[.posixPermissions] as? NSNumber
        #expect(mode?.intValue == 0o600)
    }

    /// `--timeline OUT.svg` draws the scenario's run (the same run as the transcript: it is
    /// deterministic), beside a capture or without one; it goes with a scenario only.
    @Test func aScenarioRunIsDrawnWithTimeline() throws {
        let directory = try TestPaths.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let picture = directory.appendingPathComponent("run.svg").path
        let capture = directory.appendingPathComponent("run.pcapng").path
        let result = run(["simulate", Self.scenario, "--quiet", "--seed", "3", "--timeline", picture])
        #expect(result.code == 0, "\(result.errors)")
        let svg = try String(contentsOfFile: picture, encoding: .utf8)
        #expect(svg.contains(">ProfileDrop simulation: happy-pair.json, seed 3</text>"))
        #expect(svg.contains("> exchanged</tspan>"))
        #expect(svg.contains("<rect class=\"gate-open\""))
        // With a capture too (without its keylog): the picture is the same, the capture as asked.
        let again = directory.appendingPathComponent("again.svg").path
        let captured = run([
            "simulate", Self.scenario, "--quiet", "--seed", "3", "--capture", capture, "--timeline", again,
        ])
        #expect(captured.code == 0)
        #expect(try String(contentsOfFile: again, encoding: .utf8) == svg)
        let file = try CaptureFile.read(path: capture)
        #expect(!file.hasKeylog)
        #expect(
            svg.components(separatedBy: "<g class=\"datagram ").count - 1
                == file.devices.map(\.outbound.count).reduce(0, +))

        let crowded = TestPaths.packageRoot.appendingPathComponent("Scenarios/crowded-room-20.json").path
        for arguments in [
            ["simulate", Self.scenario, "--timeline", directory.path],
            ["simulate", Self.scenario, "--timeline", directory.appendingPathComponent("no/run.svg").path],
            ["simulate", "--swarm", "--runs", "1", "--timeline", picture],
            ["simulate", "--gate-trials", "10", "--timeline", picture],
            ["simulate", crowded, "--timeline", picture],
        ] {
            let refused = run(arguments)
            #expect(refused.code == 2, "\(arguments)")
            #expect(refused.errors.count == 1, "\(arguments)")
            #expect(refused.output.isEmpty, "\(arguments)")
        }
    }

    /// A picture that cannot be written whole is a runtime error, and the file that was there stays.
    @Test func aTimelineThatCannotBeWrittenLeavesTheFileThatWasThere() throws {
        let directory = try TestPaths.temporaryDirectory()
        let picture = directory.appendingPathComponent("keep.svg").path
        try "ORIGINAL\n".write(toFile: picture, atomically: true, encoding: .utf8)
        // Files are limited to 16 KiB (the picture is about 50 KiB), and the signal that limit sends
        // is ignored, so that the write fails instead of the process.
        let limited = ["/bin/sh", "-c", "trap '' XFSZ; ulimit -f 32; exec \"$0\" \"$@\""]
        let result = try ToolProcess(
            ["simulate", Self.scenario, "--quiet", "--timeline", picture], prefix: limited
        )
        .finish()
        #expect(result.code == 6, "\(result.errors)")
        #expect(result.errors.count == 1 && result.errors.first?.contains("cannot write \(picture)") == true)
        #expect(try String(contentsOfFile: picture, encoding: .utf8) == "ORIGINAL\n")
    }

    /// A scenario or summary file far over the JSON limit is refused by its size, before it is read.
    @Test func anOversizedInputFileIsRefusedBeforeItIsRead() throws {
        let directory = try TestPaths.temporaryDirectory()
        let huge = directory.appendingPathComponent("huge.json").path
        // Sparse: 64 GiB that takes no disk, and would take minutes and all memory to read.
        #expect(FileManager.default.createFile(atPath: huge, contents: nil))
        let handle = try #require(FileHandle(forWritingAtPath: huge))
        try handle.truncate(atOffset: 64 << 30)
        try handle.close()
        let tooLarge = "it is larger than 16 MiB, the limit for this file"
        for (arguments, expected) in [
            (["simulate", huge], "\(huge): cannot read the scenario file: \(tooLarge)"),
            (["simulate", "--merge", huge], "\(huge): \(tooLarge)"),
        ] {
            let result = run(arguments)
            #expect(result.code == 2, "\(arguments)")
            #expect(
                result.errors.count == 1 && result.errors.first?.hasSuffix(expected) == true,
                "\(result.errors)")
        }
    }

    @Test func swarmAndGateTrialsEndWithTheirSummaries() {
        let swarm = run(["simulate", "--swarm", "--runs", "3", "--seed", "2"])
        #expect(swarm.code == 0)
        #expect(swarm.output.last?.hasPrefix("swarm: 3 runs, ") == true)
        #expect(swarm.output.last?.hasSuffix(", 0 violations") == true)
        let gate = run(["simulate", "--gate-trials", "200", "--seed", "2"])
        #expect(gate.code == 0)
        #expect(gate.output.contains { $0.contains("false accept rate") })
        #expect(gate.output.contains { $0.contains("held 9 cm  20 pairs x 60 s") })
    }

    @Test func badInputIsOneLineAndExitCode2() {
        let cases: [[String]] = [
            ["simulate"],
            ["simulate", "/nonexistent/scenario.json"],
            ["simulate", Self.scenario, "--swarm"],
            ["simulate", Self.scenario, "--capture-device", "bob"],
            ["simulate", Self.scenario, "--capture", "/tmp/x.pcapng", "--capture-device", "nobody"],
            ["simulate", "--swarm", "--runs", "0"],
            ["simulate", "--gate-trials", "ten"],
            ["simulate", "--swarm", "--shard", "0/2"],
            ["simulate", "--swarm", "--shard", "3/2"],
            ["simulate", "--swarm", "--shard", "1/0"],
            ["simulate", "--swarm", "--shard", "half"],
            ["simulate", "--shard", "1/2", "--gate-trials", "10"],
            ["simulate", Self.scenario, "--summary", "/tmp/summary.json"],
            ["simulate", "--merge"],
            ["simulate", "--merge", "--swarm", "/tmp/a.json"],
            ["simulate", "--merge", "--seed", "1", "/tmp/a.json"],
            ["simulate", "--merge", "/nonexistent/shard-1.json"],
            // An option of another mode, which would be ignored.
            ["simulate", "--swarm", "--runs", "1", "--capture", "/tmp/x.pcapng"],
            ["simulate", "--gate-trials", "1", "--keylog"],
            ["simulate", "--attacks", "--runs", "1", "--quiet"],
            ["simulate", Self.scenario, "--runs", "3"],
            ["simulate", "--gate-trials", "2", "--runs", "2"],
            ["simulate", "--swarm", "--runs", "1", "--hall"],
            ["simulate", "--attacks", "--runs", "1", "--devices", "60"],
            ["simulate", "--attacks", "--hall", "--devices", "7"],
            ["simulate", "--attacks", "--hall", "--devices", "1001"],
            // A path option given the empty string names no file.
            ["simulate", "--swarm", "--runs", "1", "--summary", ""],
            ["simulate", Self.scenario, "--capture", ""],
            ["identity", "--key-file", ""],
            ["peers", "--known-peers", ""],
            ["replay", "/nonexistent.pcapng", "--timeline", ""],
        ]
        for arguments in cases {
            let result = run(arguments)
            #expect(result.code == 2, "\(arguments)")
            #expect(result.errors.count == 1, "\(arguments)")
        }
    }

    /// Two outputs on one file, or an output over the file read, would silently lose one of them.
    @Test func outputsThatNameTheSameFileAsAnotherOrTheInputAreRefused() throws {
        let directory = try TestPaths.temporaryDirectory()
        let scenario = directory.appendingPathComponent("pair.json").path
        try FileManager.default.copyItem(atPath: Self.scenario, toPath: scenario)
        try FileManager.default.createSymbolicLink(
            atPath: directory.appendingPathComponent("cards").path,
            withDestinationPath: TestPaths.packageRoot.appendingPathComponent("Scenarios/cards").path)
        let original = try String(contentsOfFile: scenario, encoding: .utf8)
        let same = directory.appendingPathComponent("same.out").path
        let link = directory.appendingPathComponent("link.json").path
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: scenario)
        for (arguments, expected) in [
            (
                ["simulate", scenario, "--capture", same, "--timeline", same],
                "--timeline \(same) names the same file as --capture"
            ),
            (
                ["simulate", scenario, "--capture", scenario],
                "--capture \(scenario) names the same file as the scenario file"
            ),
            (
                ["simulate", scenario, "--timeline", link],
                "--timeline \(link) names the same file as the scenario file"
            ),
        ] {
            let result = run(arguments)
            #expect(result.code == 2, "\(arguments)")
            #expect(
                result.errors.count == 1 && result.errors.first?.hasSuffix(expected) == true,
                "\(result.errors)")
        }
        let capture = directory.appendingPathComponent("happy.pcapng").path
        try FileManager.default.copyItem(
            atPath: TestPaths.packageRoot.appendingPathComponent("Captures/happy-path.pcapng").path,
            toPath: capture)
        let replay = run(["replay", capture, "--timeline", capture])
        #expect(replay.code == 2)
        #expect(
            replay.errors.first?.hasSuffix("--timeline \(capture) names the same file as the capture") == true
        )
        #expect(try CaptureFile.read(path: capture).devices.count == 2)
        #expect(try String(contentsOfFile: scenario, encoding: .utf8) == original)
        #expect(!FileManager.default.fileExists(atPath: same))
        // Distinct files still work.
        let result = run([
            "simulate", scenario, "--quiet", "--capture", directory.appendingPathComponent("run.pcapng").path,
            "--timeline", same,
        ])
        #expect(result.code == 0, "\(result.errors)")
    }

    /// The done criterion of sharding, on the real command: `--shard 1/2` and `--shard 2/2` with
    /// `--summary`, merged, print the whole swarm's summary line; between them the shards printed
    /// every run line of the whole swarm exactly once.
    @Test func twoShardsMergeIntoTheWholeSwarmsSummary() throws {
        let directory = try TestPaths.temporaryDirectory()
        let swarm = ["simulate", "--swarm", "--runs", "40", "--seed", "31"]
        let whole = run(swarm)
        let paths = ["1", "2"].map { directory.appendingPathComponent("shard-\($0).json").path }
        let first = run(swarm + ["--shard", "1/2", "--summary", paths[0]])
        let second = run(swarm + ["--shard", "2/2", "--summary", paths[1]])
        #expect(first.code == 0 && second.code == 0)
        #expect(first.output.first?.hasPrefix("swarm: seed=31 runs=40 shard=1/2 close-bound=") == true)
        #expect(first.output.contains("swarm: shard 1/2 holds 20 of the 40 runs: runs 1, 3, 5, …"))
        #expect(second.output.contains("swarm: shard 2/2 holds 20 of the 40 runs: runs 2, 4, 6, …"))
        let runLines = { (lines: [String]) in lines.filter { $0.hasPrefix("run ") } }
        #expect(runLines(first.output).count == 20)
        #expect(Set(runLines(first.output + second.output)) == Set(runLines(whole.output)))
        #expect(runLines(whole.output).count == 40)

        // The files are given in any order.
        let merged = run(["simulate", "--merge", paths[1], paths[0]])
        #expect(merged.code == whole.code)
        #expect(merged.errors == [])
        #expect(merged.output.first == "swarm: seed=31 runs=40 merged from 2 shard summaries")
        #expect(merged.output.last == whole.output.last)
        let failures = { (lines: [String]) in
            lines.filter { $0.hasPrefix("  violation: ") || $0.hasPrefix("  reproduce: ") }
        }
        #expect(failures(merged.output) == failures(whole.output))

        // Without one of them the merge names the missing shard.
        let incomplete = run(["simulate", "--merge", paths[0]])
        #expect(incomplete.code == 2)
        #expect(
            incomplete.errors == [
                "profiledrop simulate: missing shard 2/2 (1 of 2) of the swarm seed=31 runs=40"
            ])
    }

    /// A merge whose shards found violations lists each failing run with its violations and the
    /// command that replays it, in run order, and exits 1.
    @Test func aMergeWithViolationsListsTheFailingRunsAndExits1() throws {
        let directory = try TestPaths.temporaryDirectory()
        func write(_ summary: SwarmSummary) throws -> String {
            let path = directory.appendingPathComponent("shard-\(summary.shard.index).json").path
            try summary.fileText.write(toFile: path, atomically: true, encoding: .utf8)
            return path
        }
        let shards = try (1...2).map { try #require(SwarmShard(index: $0, count: 2)) }
        let first = try write(
            SwarmSummary(
                seed: 8, runs: 5, shard: shards[0], exchanged: 2, aborted: 1,
                failingRuns: [.init(runNumber: 5, runSeed: 99, violations: ["liveness: late"])]))
        let second = try write(
            SwarmSummary(
                seed: 8, runs: 5, shard: shards[1], exchanged: 1, aborted: 1,
                failingRuns: [
                    .init(runNumber: 2, runSeed: 12_345_678_901_234_567_890, violations: ["far exchange: x"])
                ]))
        let merged = run(["simulate", "--merge", first, second])
        #expect(merged.code == 1)
        #expect(
            merged.output == [
                "swarm: seed=8 runs=5 merged from 2 shard summaries",
                "run 2/5 seed=12345678901234567890",
                "  violation: far exchange: x",
                "  reproduce: profiledrop simulate --swarm --runs 1 --seed 12345678901234567890",
                "run 5/5 seed=99",
                "  violation: liveness: late",
                "  reproduce: profiledrop simulate --swarm --runs 1 --seed 99",
                "swarm: 5 runs, 3 exchanged, 2 aborted, 2 violations",
            ])
        // Standard error says it in one line, with the first failing run's command.
        #expect(
            merged.errors == [
                "profiledrop simulate: 2 runs of 5 broke an invariant (listed above); replay the first with: "
                    + "profiledrop simulate --swarm --runs 1 --seed 12345678901234567890"
            ])
    }

    /// A swarm with failing runs says so on standard error in one line, except with `--summary -`,
    /// whose output is the summary alone: a pod's log holds both streams, and the merge must read it.
    @Test func aFailingSwarmsErrorLineIsLeftOutOfAPrintedSummary() throws {
        let summary = SwarmSummary(
            seed: 8, runs: 5, shard: .whole, exchanged: 2, aborted: 2,
            failingRuns: [.init(runNumber: 5, runSeed: 99, violations: ["liveness: late"])])
        #expect(
            SimulateCommand.failingRunsLine(summary)
                == "profiledrop simulate: 1 run of 5 broke an invariant (listed above); replay the first with: "
                + "profiledrop simulate --swarm --runs 1 --seed 99")
        #expect(SimulateCommand.failingRunsLine(summary, printsOnlySummary: true) == nil)
        // The summary's own text still names the run and how to replay it.
        #expect(summary.fileText.contains("99"))
    }

    /// `--summary -` prints the summary alone, which a merge reads like a file: the way to collect
    /// shards from the logs of machines that share no volume.
    @Test func aSummaryOnStandardOutputIsTheFileAlone() throws {
        let printed = run(["simulate", "--swarm", "--runs", "3", "--seed", "4", "--summary", "-"])
        #expect(printed.code == 0)
        let summary = try SwarmSummary(fileText: printed.output.joined(separator: "\n"))
        #expect(summary.seed == 4 && summary.runs == 3 && summary.shard == .whole && summary.shardRuns == 3)
        let path = try TestPaths.temporaryDirectory().appendingPathComponent("whole.json").path
        try printed.output.joined(separator: "\n").write(toFile: path, atomically: true, encoding: .utf8)
        let merged = run(["simulate", "--merge", path])
        #expect(merged.code == 0)
        #expect(merged.output.last == summary.summaryLine)
    }

    /// Every problem with the files to merge is one line naming the file, with exit code 2; a
    /// summary that cannot be written is found before any run, with exit code 6.
    @Test func badSummaryFilesAreOneLineErrors() throws {
        let directory = try TestPaths.temporaryDirectory()
        func file(_ name: String, _ text: String) throws -> String {
            let path = directory.appendingPathComponent(name).path
            try text.write(toFile: path, atomically: true, encoding: .utf8)
            return path
        }
        let whole = SwarmSummary(seed: 3, runs: 2, shard: .whole, exchanged: 2, aborted: 0, failingRuns: [])
        let good = try file("good.json", whole.fileText)
        var other = whole
        other.seed = 4
        let cases: [([String], String)] = [
            ([try file("empty.json", "")], "empty.json: the file is empty (did its shard finish?)"),
            (
                [try file("bad.json", "{\"format\": ")],
                "bad.json: not a swarm summary: invalid JSON at line 1"
            ),
            ([try file("scenario.json", "{\"devices\": []}")], "scenario.json: not a swarm summary"),
            ([good, good], "are both shard 1/1"),
            ([good, try file("other.json", other.fileText)], "other.json is from the swarm seed=4 runs=2"),
            ([directory.appendingPathComponent("absent.json").path], "absent.json: no such file"),
        ]
        for (files, expected) in cases {
            let result = run(["simulate", "--merge"] + files)
            #expect(result.code == 2, "\(expected)")
            #expect(
                result.errors.count == 1 && result.errors.first?.contains(expected) == true,
                "\(result.errors)")
        }
        let unwritable = directory.appendingPathComponent("no-such-directory/shard.json").path
        let result = run(["simulate", "--swarm", "--runs", "1000", "--summary", unwritable])
        #expect(result.code == 6)
        #expect(result.output == [])
        #expect(result.errors.count == 1 && result.errors.first?.contains("cannot write the summary") == true)
    }
}
