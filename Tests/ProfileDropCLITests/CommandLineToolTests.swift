import Foundation
import ProfileDropCrypto
import ProfileDropTestSupport
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
        #expect(console.errorLines == ["profiledrop bench: unknown option '--fast'"])
    }

    /// An option another benchmark reads would be ignored by this one: it is refused, before any work.
    @Test func aBenchmarkRefusesTheOptionsOfAnother() {
        for (arguments, option) in [
            (["bench", "handshake", "--runs", "5"], "runs"),
            (["bench", "handshake", "--devices", "2"], "devices"),
            (["bench", "room", "--rounds", "3"], "rounds"), (["bench", "pairing", "--seeds", "2"], "seeds"),
            (["bench", "simulate", "--duration", "60"], "duration"),
            (["bench", "room", "--pairs", "3"], "pairs"),
            (["bench", "room", "--trace", "0"], "trace"), (["bench", "hall", "--runs", "3"], "runs"),
        ] {
            let console = CapturingConsole()
            #expect(CommandLineTool.run(arguments: arguments, console: console) == 2)
            #expect(
                console.errorLines == [
                    "profiledrop bench: --\(option) does not go with bench \(arguments[1])"
                ])
            #expect(console.outputLines.isEmpty)
        }
    }

    @Test func helpListsEveryCommandAndTheExitCodes() {
        let console = CapturingConsole()
        #expect(CommandLineTool.run(arguments: [], console: console) == 0)
        for command in CommandLineTool.subcommands {
            #expect(console.outputLines.contains { $0.hasPrefix("  \(command.name) ") })
        }
        #expect(
            console.outputLines.contains(
                "  2  usage or input error (unknown flag, missing or malformed file)"))
        #expect(console.outputLines.contains { $0.hasPrefix("  6  runtime error") })
        #expect(console.outputLines.last?.hasPrefix("  143  share ended by SIGTERM") == true)
    }

    private func run(_ arguments: [String]) -> (code: Int32, output: [String], errors: [String]) {
        runInProcess(arguments)
    }

    /// Exit codes are listed with the words users read, never the names in the source.
    @Test func exitCodesUseUserFacingSpellings() {
        let help = run(["help"]).output
        #expect(help.contains("  5  out of range"))
        #expect(help.contains("  4  declined"))
        #expect(!help.joined().contains("outOfRange"))
        #expect(!help.joined().contains("runtimeError"))
        let share = run(["help", "share"]).output
        #expect(share.contains("  5  out of range: the devices never held 5-10 cm, facing each other"))
        #expect(share.contains("  0  exchanged"))
    }

    /// `--version`, `-V` and `version` print the same lines: the release, the commit the binary was
    /// built from (as `git rev-parse` reports it for this checkout) and the linked libsodium.
    @Test func versionShowsTheCommitAndLibsodium() throws {
        let expected = run(["version"])
        #expect(expected.code == 0)
        #expect(run(["--version"]).output == expected.output)
        #expect(run(["-V"]).output == expected.output)
        #expect(expected.output.first == "profiledrop \(VersionCommand.release)")
        #expect(expected.output.contains("libsodium: \(Sodium.version)"))
        let commitLine = try #require(expected.output.first { $0.hasPrefix("commit: ") })
        let commit = String(commitLine.dropFirst("commit: ".count))
        #expect(commit == "unknown" || (commit.count == 12 && commit.allSatisfy(\.isHexDigit)))
        // In a git checkout the plugin read HEAD when this was built: HEAD itself in a fresh
        // clone, or a commit HEAD descends from when commits came after an incremental build.
        let root = TestPaths.packageRoot.path
        if try runProgram("/usr/bin/env", ["git", "-C", root, "rev-parse", "HEAD"]).status == 0 {
            let ancestry = try runProgram(
                "/usr/bin/env", ["git", "-C", root, "merge-base", "--is-ancestor", commit, "HEAD"])
            #expect(ancestry.status == 0, "\(commit) is no commit of this checkout's history")
        }
        #expect(run(["version", "extra"]).code == 2)
        #expect(run(["--version", "extra"]).code == 2)
    }

    /// `-h` and `--help` work on every command, wherever they stand before `--`.
    @Test func helpFlagsWorkOnEveryCommand() {
        for command in CommandLineTool.subcommands {
            for flag in ["-h", "--help"] {
                let result = run([command.name, flag])
                #expect(result.code == 0, "\(command.name) \(flag)")
                #expect(result.output.first?.hasPrefix("usage: profiledrop \(command.name)") == true)
                #expect(result.errors.isEmpty)
            }
        }
        #expect(run(["share", "--profile", "x.json", "-h"]).code == 0)
        #expect(run(["-h", "replay"]).output == run(["help", "replay"]).output)
        #expect(run(["help", "help"]).output.first == "usage: profiledrop help [COMMAND]")
        // After `--`, -h is an argument like any other.
        #expect(run(["noise-vectors", "--", "-h"]).code == 2)
    }

    /// Usage lines show the positional arguments; `share` is listed first, its help has examples,
    /// the live session's keys and what each exit code means.
    @Test func usageShowsArgumentsAndShareComesFirst() {
        #expect(run(["help", "replay"]).output.first?.hasPrefix("usage: profiledrop replay CAPTURE") == true)
        #expect(
            run(["help", "noise-vectors"]).output.first
                == "usage: profiledrop noise-vectors FILE... [--verbose]")
        #expect(run(["help", "completion"]).output.first == "usage: profiledrop completion bash|zsh|fish")
        let overview = run([]).output
        let firstCommand = overview.firstIndex(of: "commands:").map { overview[$0 + 1] }
        #expect(firstCommand?.hasPrefix("  share ") == true)
        let share = run(["help", "share"]).output
        #expect(share.first == "usage: profiledrop share --profile FILE [OPTIONS]")
        #expect(share.contains("examples:"))
        #expect(share.contains { $0.hasPrefix("  profiledrop share --profile ") })
        #expect(share.contains("keys (on a terminal):"))
        for key in ["  s ", "  r ", "  d ", "  q ", "  \u{2191} \u{2193} ", "  \u{2190} \u{2192} "] {
            #expect(share.contains { $0.hasPrefix(key) }, "\(key)")
        }
        #expect(share.contains("exit codes:"))
    }

    /// A misspelt command or option names the one meant, and the error has one prefix.
    @Test func typosSuggestTheClosestCommandOrFlag() {
        #expect(
            run(["shar"]).errors == ["profiledrop: unknown command 'shar'; did you mean 'share'?"])
        #expect(run(["shar"]).code == 2)
        #expect(
            run(["help", "simulat"]).errors == [
                "profiledrop: unknown command 'simulat'; did you mean 'simulate'?"
            ])
        #expect(
            run(["share", "--profil", "bori.json"]).errors == [
                "profiledrop share: unknown option '--profil'; did you mean '--profile'?"
            ])
        #expect(
            run(["--versoin"]).errors == [
                "profiledrop: unknown option '--versoin'; did you mean '--version'?"
            ])
        #expect(
            run(["frobnicate"]).errors == [
                "profiledrop: unknown command 'frobnicate'; run 'profiledrop help' for the list"
            ])
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
