import Foundation
import Testing

@testable import ProfileDropCLI

@Suite struct SimulateCommandTests {
    static let scenario = TestPaths.packageRoot.appendingPathComponent("Scenarios/happy-pair.json").path

    func run(_ arguments: [String]) -> (code: Int32, output: [String], errors: [String]) {
        let console = CapturingConsole()
        let code = CommandLineTool.run(arguments: arguments, console: console)
        return (code, console.outputLines, console.errorLines)
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

    @Test func swarmAndGateTrialsEndWithTheirSummaries() {
        let swarm = run(["simulate", "--swarm", "--runs", "3", "--seed", "2"])
        #expect(swarm.code == 0)
        #expect(swarm.output.last?.hasPrefix("swarm: 3 runs, ") == true)
        #expect(swarm.output.last?.hasSuffix(", 0 violations") == true)
        let gate = run(["simulate", "--gate-trials", "200", "--seed", "2"])
        #expect(gate.code == 0)
        #expect(gate.output.contains { $0.contains("false accept rate") })
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
        ]
        for arguments in cases {
            let result = run(arguments)
            #expect(result.code == 2, "\(arguments)")
            #expect(result.errors.count == 1, "\(arguments)")
        }
    }
}
