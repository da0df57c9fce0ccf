import ProfileDropCapture
import ProfileDropCore
import ProfileDropSimulator

/// `profiledrop simulate`: devices in a room on a faulty network, in virtual time, from one seed.
enum SimulateCommand: Subcommand {
    static let name = "simulate"
    static let summary =
        "run a scenario, a swarm of random runs, attacks on two victims, or the proximity gate trials in "
        + "virtual time"
    static let parser = ArgumentParser(
        command: name,
        options: [
            Options.seed, Options.swarm, Options.attacks, Options.kinds, Options.runs, Options.gateTrials,
            Options.quiet,
            Options.capture, Options.captureDevice, Options.keylog,
        ])

    /// Every option of `simulate`, declared once.
    enum Options {
        static let seed = Option.unsigned64(
            "seed", valueName: "S", help: "the seed (default: the scenario's, or 1)")
        static let swarm = Flag(
            "swarm", help: "random runs with drawn fault options, checked against the invariants")
        static let attacks = Flag(
            "attacks",
            help:
                "adversaries (man in the middle, code grinder, identity prober; availability attackers) "
                + "against honest victims")
        static let kinds = Option.text(
            "kinds", valueName: "K,K|all",
            help: "--attacks: the kinds to run (default: all but those pending a fix)")
        static let runs = Option.integer(
            "runs", valueName: "R", in: 1...1_000_000,
            help: "swarm runs (default 100), or attack runs over all kinds (default 80)")
        static let gateTrials = Option.integer(
            "gate-trials", in: 1...10_000_000, help: "gate quality: N trials of each kind")
        static let quiet = Flag("quiet", help: "scenario: header and outcome only, no transcript")
        static let capture = Option.text(
            "capture", valueName: "FILE.pcapng",
            help: "scenario: record every device (or --capture-device) for Wireshark and replay")
        static let captureDevice = Option.text(
            "capture-device", valueName: "NAME", help: "record only this device")
        static let keylog = Flag("keylog", help: "with --capture: also record what replay needs")
    }
    static func run(_ arguments: ParsedArguments, console: Console) throws -> ExitCode {
        let seed = arguments.value(Options.seed)
        let modes = [
            arguments.has(Options.swarm), arguments.has(Options.attacks), arguments.has(Options.gateTrials),
            !arguments.positionals.isEmpty,
        ]
        guard modes.filter({ $0 }).count == 1 else {
            throw UsageError("give one of: a scenario file, --swarm, --attacks, or --gate-trials N")
        }
        if arguments.has(Options.kinds) && !arguments.has(Options.attacks) {
            throw UsageError("--kinds goes with --attacks")
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
            let report = Attacks.run(
                runs: arguments.value(Options.runs, default: 80), seed: seed ?? 1, kinds: kinds)
            report.lines.forEach(console.output)
            return report.passed ? .success : .failure
        }
        if arguments.has(Options.swarm) {
            let runs = arguments.value(Options.runs, default: 100)
            let report = Swarm.run(runs: runs, seed: seed ?? 1)
            report.lines.forEach(console.output)
            return report.violations.isEmpty ? .success : .failure
        }
        if let trials = arguments.value(Options.gateTrials) {
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
            try recorder.write(to: path)
        } else {
            guard !arguments.has(Options.captureDevice) && !arguments.has(Options.keylog) else {
                throw UsageError("--capture-device and --keylog go with --capture FILE")
            }
            report = Simulation.run(scenario: scenario, seed: seed, options: options)
        }
        let lines = arguments.has(Options.quiet) ? report.headerLines + report.outcomeLines : report.lines
        lines.forEach(console.output)
        return report.violations.isEmpty ? .success : .failure
    }
}
