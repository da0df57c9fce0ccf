import ProfileDropCapture
import ProfileDropCore
import ProfileDropSimulator

/// `profiledrop simulate`: devices in a room on a faulty network, in virtual time, from one seed.
enum SimulateCommand: Subcommand {
    static let name = "simulate"
    static let summary =
        "run a scenario, a swarm of random runs, or the proximity gate trials in virtual time"
    static let parser = ArgumentParser(
        command: name,
        options: [
            OptionSpec(
                name: "seed", kind: .single, valueName: "S", help: "the seed (default: the scenario's, or 1)"),
            OptionSpec(
                name: "swarm", kind: .flag,
                help: "random runs with drawn fault options, checked against the invariants"),
            OptionSpec(name: "runs", kind: .single, valueName: "R", help: "swarm runs (default 100)"),
            OptionSpec(
                name: "gate-trials", kind: .single, valueName: "N",
                help: "gate quality: N trials of each kind"),
            OptionSpec(name: "quiet", kind: .flag, help: "scenario: header and outcome only, no transcript"),
            OptionSpec(
                name: "capture", kind: .single, valueName: "FILE.pcapng",
                help: "scenario: record every device (or --capture-device) for Wireshark and replay"),
            OptionSpec(
                name: "capture-device", kind: .single, valueName: "NAME", help: "record only this device"),
            OptionSpec(name: "keylog", kind: .flag, help: "with --capture: also record what replay needs"),
        ]
    )

    static func run(_ arguments: ParsedArguments, console: Console) throws -> ExitCode {
        let seed = try arguments.unsigned64("seed")
        let modes = [arguments.has("swarm"), arguments.has("gate-trials"), !arguments.positionals.isEmpty]
        guard modes.filter({ $0 }).count == 1 else {
            throw UsageError("give one of: a scenario file, --swarm, or --gate-trials N")
        }
        if arguments.has("swarm") {
            let runs = try arguments.integer("runs", default: 100, in: 1...1_000_000)
            let report = Swarm.run(runs: runs, seed: seed ?? 1)
            report.lines.forEach(console.output)
            return report.violations.isEmpty ? .success : .failure
        }
        if arguments.value("gate-trials") != nil {
            let trials = try arguments.integer("gate-trials", default: 10_000, in: 1...10_000_000)
            let report = GateTrials.run(trialsPerKind: trials, seed: seed ?? 1)
            report.lines.forEach(console.output)
            return .success
        }
        guard arguments.positionals.count == 1 else { throw UsageError("give one scenario file") }
        let scenario: Scenario
        do {
            scenario = try Scenario.load(contentsOf: arguments.positionals[0])
        } catch {
            throw UsageError("\(error)")
        }
        let report: SimulationReport
        if let path = arguments.value("capture") {
            let only = arguments.value("capture-device")
            if let only, !scenario.devices.contains(where: { $0.name == only }) {
                let names = scenario.devices.map(\.name).joined(separator: ", ")
                throw UsageError("--capture-device: the scenario has no device '\(only)' (it has \(names))")
            }
            let recorder = CaptureRecorder(options: CaptureOptions(keylog: arguments.has("keylog")))
            report = Simulation.run(scenario: scenario, seed: seed) { context -> any SansIODevice in
                let device = context.makeCoreDevice()
                guard only == nil || context.spec.name == only else { return device }
                return SeededCapturingDevice(
                    device, name: context.spec.name, recorder: recorder,
                    randomSeedMaterial: context.seedMaterial,
                    staticKey: .seedMaterial(context.staticKeySeedMaterial))
            }
            try recorder.write(to: path)
        } else {
            guard !arguments.has("capture-device") && !arguments.has("keylog") else {
                throw UsageError("--capture-device and --keylog go with --capture FILE")
            }
            report = Simulation.run(scenario: scenario, seed: seed)
        }
        let lines = arguments.has("quiet") ? report.headerLines + report.outcomeLines : report.lines
        lines.forEach(console.output)
        return report.violations.isEmpty ? .success : .failure
    }
}
