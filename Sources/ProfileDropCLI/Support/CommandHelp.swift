/// The usage lines, arguments and help sections of the commands whose files hold only their
/// options and behaviour.
extension ReplayCommand {
    static let synopsis = ["CAPTURE [--device ID] [--json] [--key-file PATH] [--timeline OUT.svg]"]
    static let argumentCompletion = ValueCompletion.file
    static let helpSections = [
        HelpSection(
            title: "examples",
            lines: [
                "profiledrop replay Captures/happy-path.pcapng",
                "profiledrop replay Captures/out-of-range.pcapng --timeline out-of-range.svg",
                "profiledrop replay run.pcapng --device bori --json",
            ])
    ]
    static let exitCodes: [(code: ExitCode, meaning: String)] = [
        (.success, "every datagram identical"), (.failure, "a divergence"),
        (.usage, "usage or input error (no such file, not a capture, no such device)"),
        (.runtimeError, ExitCode.runtimeError.label),
    ]
}

extension SimulateCommand {
    static let synopsis = [
        "SCENARIO.json [--seed S] [--quiet] [--capture FILE.pcapng [--capture-device NAME] [--keylog]] [--timeline OUT.svg]",
        "--swarm [--runs R] [--seed S] [--shard I/K] [--summary FILE|-]",
        "--merge SUMMARY...",
        "--attacks [--kinds K,K|all] [--runs R] [--seed S]",
        "--attacks --hall [--devices N] [--kinds K,K|all] [--runs R] [--seed S]",
        "--gate-trials N [--seed S]",
    ]
    static let argumentCompletion = ValueCompletion.file
    static let helpSections = [
        HelpSection(
            title: "examples",
            lines: [
                "profiledrop simulate Scenarios/crowded-room-20.json",
                "profiledrop simulate Scenarios/lossy-30.json --seed 9 --quiet",
                "profiledrop simulate --swarm --runs 1000 --seed 1",
                "profiledrop simulate --attacks --runs 1000 --seed 1",
                "profiledrop simulate --attacks --hall --seed 1",
                "profiledrop simulate --gate-trials 10000 --seed 1",
            ])
    ]
    static let exitCodes: [(code: ExitCode, meaning: String)] = [
        (.success, ExitCode.success.label), (.failure, "a violation, a breach or an outcome not expected"),
        (.usage, ExitCode.usage.label), (.runtimeError, ExitCode.runtimeError.label),
    ]
}

extension NoiseVectorsCommand {
    static let synopsis = ["FILE... [--verbose]"]
    static let argumentCompletion = ValueCompletion.file
    static let exitCodes: [(code: ExitCode, meaning: String)] = [
        (.success, "every vector passed"), (.failure, "a vector failed"),
        (.usage, "usage or input error (a missing or malformed file)"),
    ]
}

extension BenchCommand {
    static let synopsis = [
        "handshake [--rounds N] [--iterations N]",
        "simulate [--runs N]",
        "pairing [--runs N]",
        "room [--devices N,N] [--seeds K] [--duration S]",
        "hall [--devices N] [--pairs P] [--seeds K] [--duration S] [--trace M]",
    ]
    static let argumentCompletion = ValueCompletion.words([
        "handshake", "simulate", "pairing", "room", "hall",
    ])
    static let exitCodes: [(code: ExitCode, meaning: String)] = [
        (.success, ExitCode.success.label),
        (.failure, "a run failed (room, hall: a pair that never exchanged, or a violation)"),
        (.usage, ExitCode.usage.label), (.runtimeError, ExitCode.runtimeError.label),
    ]
}

extension PeersCommand {
    static let synopsis = [
        "[--json] [--known-peers PATH] [--key-file PATH]",
        "forget SELECTOR [--known-peers PATH] [--key-file PATH]",
    ]
    static let argumentCompletion = ValueCompletion.words(["forget"])
}

extension IdentityCommand {
    static let synopsis = ["[--key-file PATH]"]
}
