import Foundation
import ProfileDrop
import ProfileDropAdversaries
import ProfileDropCapture
import ProfileDropCore
import ProfileDropJSON
import ProfileDropSimulator

/// `profiledrop simulate`: devices in a room on a faulty network, in virtual time, from one seed.
enum SimulateCommand: Subcommand {
    static let name = "simulate"
    static let summary =
        "run a scenario, a swarm of random runs (or one shard of it), attacks on two victims, or the "
        + "proximity gate trials in virtual time; merge swarm shards"
    static let parser = ArgumentParser(
        command: name,
        options: [
            Options.seed, Options.swarm, Options.shard, Options.summary, Options.merge, Options.attacks,
            Options.kinds, Options.hall, Options.devices, Options.runs, Options.gateTrials, Options.quiet,
            Options.capture, Options.captureDevice, Options.keylog, Options.timeline,
        ])

    /// Every option of `simulate`, declared once.
    enum Options {
        static let seed = Option.unsigned64(
            "seed", valueName: "S", help: "the seed (default: the scenario's, or 1)")
        static let swarm = Flag(
            "swarm", help: "random runs with drawn fault options, checked against the invariants")
        static let shard = Option<SwarmShard>(
            "shard", valueName: "I/K",
            help: "--swarm: only runs I, I+K, I+2K, … of the swarm (1 ≤ I ≤ K); the K shards make the whole"
        ) { text in
            guard let shard = SwarmShard(parsing: text) else {
                throw UsageError(
                    "--shard takes I/K with 1 ≤ I ≤ K ≤ \(SwarmShard.maximumCount), got '\(text)'")
            }
            return shard
        }
        static let summary = Option.path(
            "summary", valueName: "FILE|-",
            help: "--swarm: write the JSON summary (counts, failing runs) to FILE, or print only it with -")
        static let merge = Flag(
            "merge", help: "merge the --summary files of every shard of one swarm (given as arguments)")
        static let attacks = Flag(
            "attacks",
            help:
                "adversaries (man in the middle, accept racer, code grinder, identity prober; availability attackers) "
                + "against honest victims")
        static let kinds = Option.text(
            "kinds", valueName: "K,K|all",
            help: "--attacks: the kinds to run (default: all but those pending a fix)")
        static let hall = Flag(
            "hall",
            help:
                "--attacks: the victims stand in a conference hall of bystanders; same kinds and breach rules"
        )
        static let devices = Option.integer(
            "devices", in: AttackHall.sizes,
            help:
                "--hall: devices in the hall, the victims' place included (default \(AttackHall.defaultDevices))"
        )
        static let runs = Option.integer(
            "runs", valueName: "R", in: 1...1_000_000,
            help:
                "swarm runs (default 100), or attack runs over all kinds (default 80; with --hall, one per kind and users)"
        )
        static let gateTrials = Option.integer(
            "gate-trials", in: 1...10_000_000,
            help:
                "gate quality: N trials of each kind, and N/10 pairs held still for a minute at 6 and at 9 cm"
        )
        static let quiet = Flag("quiet", help: "scenario: header and outcome only, no transcript")
        static let capture = Option.path(
            "capture", valueName: "FILE.pcapng",
            help: "scenario: record every device (or --capture-device) for Wireshark and replay")
        static let captureDevice = Option.text(
            "capture-device", valueName: "NAME", help: "record only this device")
        static let keylog = Flag("keylog", help: "with --capture: also record what replay needs")
        static let timeline = Option.path(
            "timeline", valueName: "OUT.svg",
            help:
                "scenario of up to \(TimelineOutput.maximumDevices) devices: also draw the run as an SVG picture"
        )
    }
    static func run(_ arguments: ParsedArguments, console: Console) throws -> ExitCode {
        HeapTuning.keepFreedMemory()
        let seed = arguments.value(Options.seed)
        let modes = [
            arguments.has(Options.swarm), arguments.has(Options.attacks), arguments.has(Options.gateTrials),
            arguments.has(Options.merge) || !arguments.positionals.isEmpty,
        ]
        guard modes.filter({ $0 }).count == 1 else {
            throw UsageError(
                "give one of: a scenario file, --swarm, --attacks, --gate-trials N, or --merge FILE...")
        }
        if (arguments.has(Options.shard) || arguments.has(Options.summary)) && !arguments.has(Options.swarm) {
            throw UsageError("--shard and --summary go with --swarm")
        }
        // An option of another mode would be ignored without a word: refuse it instead.
        let scenarioRun = !arguments.has(Options.merge) && !arguments.positionals.isEmpty
        let scenarioOptions = [
            arguments.has(Options.quiet), arguments.has(Options.capture),
            arguments.has(Options.captureDevice),
            arguments.has(Options.keylog),
        ]
        if !scenarioRun && scenarioOptions.contains(true) {
            throw UsageError("--quiet, --capture, --capture-device and --keylog go with a scenario file")
        }
        if arguments.has(Options.runs) && !arguments.has(Options.swarm) && !arguments.has(Options.attacks)
            && !arguments.has(Options.merge)
        {
            throw UsageError("--runs goes with --swarm or --attacks")
        }
        if arguments.has(Options.timeline) && (arguments.has(Options.merge) || arguments.positionals.isEmpty)
        {
            throw UsageError("--timeline goes with a scenario file")
        }
        if arguments.has(Options.merge) { return try merge(arguments, console: console) }
        if arguments.has(Options.kinds) && !arguments.has(Options.attacks) {
            throw UsageError("--kinds goes with --attacks")
        }
        if arguments.has(Options.hall) && !arguments.has(Options.attacks) {
            throw UsageError("--hall goes with --attacks")
        }
        if arguments.has(Options.devices) && !arguments.has(Options.hall) {
            throw UsageError("--devices goes with --hall")
        }
        if arguments.has(Options.attacks) {
            var kinds = Attacks.defaultKinds
            if let names = arguments.value(Options.kinds) {
                guard let named = Attacks.kinds(named: names) else {
                    let known = AttackKind.allCases.map(\.rawValue).joined(separator: ", ")
                    throw UsageError("--kinds: give all, default, or names among \(known)")
                }
                kinds = named
            }
            let hall =
                arguments.has(Options.hall)
                ? AttackHall(devices: arguments.value(Options.devices, default: AttackHall.defaultDevices))
                : nil
            // A hall costs far more per run: by default each kind meets each of its users once.
            let runs = arguments.value(
                Options.runs, default: hall == nil ? 80 : Attacks.cells(of: kinds).count)
            let report = Attacks.run(runs: runs, seed: seed ?? 1, kinds: kinds, hall: hall)
            report.lines.forEach(console.output)
            if !report.passed {
                console.error(
                    "profiledrop simulate: \(counted(report.breaches, "breach", plural: "breaches")) and "
                        + "\(counted(report.problems, "run")) that could not test (listed above)")
            }
            return report.passed ? .success : .failure
        }
        if arguments.has(Options.swarm) { return try swarm(arguments, seed: seed ?? 1, console: console) }
        if let trials = arguments.value(Options.gateTrials) {
            let report = GateTrials.run(
                trialsPerKind: trials, seed: seed ?? 1, heldPairs: max(1, trials / 10))
            report.lines.forEach(console.output)
            return .success
        }
        guard arguments.positionals.count == 1 else { throw UsageError("give one scenario file") }
        let timelinePath = arguments.value(Options.timeline)
        if let timelinePath { try OutputFile.checkWritable(timelinePath, option: "--timeline") }
        if let capturePath = arguments.value(Options.capture) {
            try OutputFile.checkWritable(capturePath, option: "--capture")
        }
        let outputs = [("--capture", arguments.value(Options.capture)), ("--timeline", timelinePath)]
            .compactMap { option, path in path.map { (option: option, path: $0) } }
        try OutputFile.checkDistinct(outputs, from: [("the scenario file", arguments.positionals[0])])
        let scenario: Scenario
        do {
            scenario = try Scenario.load(contentsOf: arguments.positionals[0])
        } catch {
            throw UsageError("\(error)")
        }
        if timelinePath != nil && scenario.devices.count > TimelineOutput.maximumDevices {
            throw UsageError(
                "--timeline draws up to \(TimelineOutput.maximumDevices) devices; "
                    + "the scenario has \(scenario.devices.count)")
        }
        let report: SimulationReport
        // A quiet run prints no transcript, so it keeps none: a 200-device room's would take most
        // of its memory.
        let options = SimulationOptions(keepsTranscript: !arguments.has(Options.quiet))
        if let path = arguments.value(Options.capture) {
            let only = arguments.value(Options.captureDevice)
            if let only, !scenario.devices.contains(where: { $0.name == only }) {
                let names = scenario.devices.map(\.name).joined(separator: ", ")
                throw UsageError("--capture-device: the scenario has no device '\(only)' (it has \(names))")
            }
            let recorder = CaptureRecorder(options: CaptureOptions(keylog: arguments.has(Options.keylog)))
            report = Simulation.run(scenario: scenario, seed: seed, options: options) {
                context -> any SansIODevice in
                let device = context.makeCoreDevice()
                guard only == nil || context.spec.name == only else { return device }
                return CapturingDevice(
                    device, name: context.spec.name, recorder: recorder,
                    randomSeedMaterial: context.seedMaterial,
                    staticKey: .seedMaterial(context.staticKeySeedMaterial))
            }
            try OutputFile.replace(path, with: recorder.fileBytes(), secret: arguments.has(Options.keylog))
        } else {
            guard !arguments.has(Options.captureDevice) && !arguments.has(Options.keylog) else {
                throw UsageError("--capture-device and --keylog go with --capture FILE")
            }
            report = Simulation.run(scenario: scenario, seed: seed, options: options)
        }
        if let timelinePath {
            let title = "ProfileDrop simulation: \(TimelineOutput.fileName(arguments.positionals[0]))"
            try TimelineOutput.writeSimulated(
                scenario: scenario, seed: seed, title: title + (seed.map { ", seed \($0)" } ?? ""),
                to: timelinePath)
        }
        let lines = arguments.has(Options.quiet) ? report.headerLines + report.outcomeLines : report.lines
        lines.forEach(console.output)
        if let first = report.violations.first {
            console.error(
                "profiledrop simulate: \(counted(report.violations.count, "violation")); the first: \(first)")
        }
        return report.violations.isEmpty ? .success : .failure
    }

    /// The one line on standard error of a swarm with failing runs: how many, and how to replay the
    /// first. None when the summary alone is the output (`--summary -`): a pod's log, which is both
    /// streams, must stay a summary file that the merge reads, and the summary lists the runs.
    static func failingRunsLine(_ summary: SwarmSummary, printsOnlySummary: Bool = false) -> String? {
        guard let first = summary.failingRuns.first, !printsOnlySummary else { return nil }
        return
            "profiledrop simulate: \(counted(summary.failingRuns.count, "run")) of \(summary.runs) broke an "
            + "invariant (listed above); replay the first with: \(first.reproduceCommand)"
    }

    /// `--swarm`, whole or one `--shard`, with its `--summary` written if asked.
    private static func swarm(_ arguments: ParsedArguments, seed: UInt64, console: Console) throws -> ExitCode
    {
        let runs = arguments.value(Options.runs, default: 100)
        let shard = arguments.value(Options.shard) ?? .whole
        let summaryPath = arguments.value(Options.summary)
        let printsOnlySummary = summaryPath == "-"
        // An unwritable summary file is found before the runs rather than after them. The empty file
        // left behind also tells a merge that this shard never finished.
        if let summaryPath, !printsOnlySummary { try writeSummary("", to: summaryPath) }
        let report = Swarm.run(runs: runs, seed: seed, shard: shard)
        let summary = SwarmSummary(report: report)
        if printsOnlySummary {
            for line in summary.fileText.split(separator: "\n") { console.output(String(line)) }
        } else {
            report.lines.forEach(console.output)
            if let summaryPath { try writeSummary(summary.fileText, to: summaryPath) }
        }
        failingRunsLine(summary, printsOnlySummary: printsOnlySummary).map(console.error)
        return report.violations.isEmpty ? .success : .failure
    }

    /// `--merge FILE...`: the whole swarm's failing runs and summary line from its shards' summaries.
    private static func merge(_ arguments: ParsedArguments, console: Console) throws -> ExitCode {
        guard !arguments.has(Options.seed) && !arguments.has(Options.runs) else {
            throw UsageError(
                "--merge takes the seed and runs from the summary files, not from --seed or --runs")
        }
        guard !arguments.positionals.isEmpty else {
            throw UsageError(
                "--merge needs the summary file of every shard (written by --swarm --summary FILE)")
        }
        var shards: [(name: String, summary: SwarmSummary)] = []
        for path in arguments.positionals {
            let bytes: [UInt8]
            do {
                bytes = try InputFile.read(atPath: path, limit: JSONValue.maximumBytes)
            } catch {
                throw UsageError("\(error)")
            }
            do {
                shards.append((path, try SwarmSummary(fileText: String(decoding: bytes, as: UTF8.self))))
            } catch {
                throw UsageError("\(path): \(error)")
            }
        }
        let merged: SwarmSummary
        do {
            merged = try SwarmSummary.merge(shards)
        } catch {
            throw UsageError("\(error)")
        }
        console.output(
            "swarm: seed=\(merged.seed) runs=\(merged.runs) merged from \(shards.count) shard summar"
                + (shards.count == 1 ? "y" : "ies"))
        merged.failureLines.forEach(console.output)
        console.output(merged.summaryLine)
        failingRunsLine(merged).map(console.error)
        return merged.failingRuns.isEmpty ? .success : .failure
    }

    /// Writes a summary file whole (through a temporary file and a rename), so that a merge never
    /// reads half of one.
    private static func writeSummary(_ text: String, to path: String) throws(SummaryWriteError) {
        do {
            try OutputFile.replace(path, with: Array(text.utf8), secret: false)
        } catch {
            throw SummaryWriteError(path: path, reason: error.reason)
        }
    }
}

/// A `--summary` file that could not be written: a runtime error (exit 6), since the command line
/// itself was fine.
struct SummaryWriteError: Error, CustomStringConvertible {
    var path: String
    var reason: String

    var description: String { "cannot write the summary \(path): \(reason)" }
}
