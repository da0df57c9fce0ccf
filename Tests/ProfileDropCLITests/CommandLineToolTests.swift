import Testing

@testable import ProfileDropCLI

@Suite struct CommandLineToolTests {
    @Test func unknownCommandIsAUsageError() {
        let console = CapturingConsole()
        #expect(CommandLineTool.run(arguments: ["frobnicate"], console: console) == ExitCode.usage.rawValue)
        #expect(
            console.errorLines == [
                "profiledrop: unknown command 'frobnicate'; run 'profiledrop help' for the list"
            ])
    }

    @Test func unknownFlagIsOneLineAndExitCode2() {
        let console = CapturingConsole()
        #expect(CommandLineTool.run(arguments: ["bench", "handshake", "--fast"], console: console) == 2)
        #expect(console.errorLines == ["profiledrop bench: bench: unknown option '--fast'"])
    }

    @Test func helpListsEveryCommandAndTheExitCodes() {
        let console = CapturingConsole()
        #expect(CommandLineTool.run(arguments: [], console: console) == 0)
        for command in CommandLineTool.subcommands {
            #expect(console.outputLines.contains { $0.hasPrefix("  \(command.name) ") })
        }
        #expect(console.outputLines.last?.contains("2 usage") == true)
    }

    @Test func benchReportsARatioOnItsLastLine() throws {
        let console = CapturingConsole()
        let code = CommandLineTool.run(
            arguments: ["bench", "handshake", "--rounds", "2", "--iterations", "3"], console: console)
        #expect(code == 0)
        func ratio(_ label: String) throws -> Double {
            let line = try #require(console.outputLines.first { $0.hasPrefix(label) })
            return try #require(Double(line.dropFirst(label.count)))
        }
        // A handshake does the floor's X25519 work plus hashing: it cannot be much cheaper.
        #expect(try ratio("handshake/floor: ") > 0.5)
        // Version 2's pairing runs the real steps, which agree on a code, or the command fails.
        #expect(console.outputLines.last?.hasPrefix("v2 pairing/floor: ") == true)
        #expect(try ratio("v2 pairing/floor: ") > 0.5)
    }
}
