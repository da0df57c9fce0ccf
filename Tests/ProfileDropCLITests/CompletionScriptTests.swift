import Foundation
import ProfileDropTestSupport
import Testing

@testable import ProfileDropCLI

/// The first of `paths` that is an executable, or nil when the shell is not installed.
func installedShell(_ paths: String...) -> String? {
    paths.first { FileManager.default.isExecutableFile(atPath: $0) }
}

/// `profiledrop completion bash|zsh|fish`: scripts generated from the parser's declarations, checked
/// by the shells themselves.
@Suite struct CompletionScriptTests {
    func script(_ shell: String) throws -> String {
        let console = CapturingConsole()
        #expect(CommandLineTool.run(arguments: ["completion", shell], console: console) == 0)
        let directory = try TestPaths.temporaryDirectory()
        let path = directory.appendingPathComponent("profiledrop.\(shell)").path
        try (console.outputLines.joined(separator: "\n") + "\n").write(
            toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    /// The words bash offers for the command line `words`, completing the last one.
    func bashCompletions(_ words: [String]) throws -> [String] {
        let path = try script("bash")
        let quoted = words.map { "'\($0)'" }.joined(separator: " ")
        let program =
            "source '\(path)'; COMP_WORDS=(\(quoted)); COMP_CWORD=\(words.count - 1); _profiledrop; "
            + "printf '%s\\n' \"${COMPREPLY[@]}\""
        let result = try runProgram("/bin/bash", ["--norc", "-c", program])
        #expect(result.status == 0, "\(result.errors)")
        return result.output.split(separator: "\n").map(String.init)
    }

    @Test func bashAcceptsTheScript() throws {
        let bash = try #require(installedShell("/bin/bash", "/usr/bin/bash"))
        let result = try runProgram(bash, ["-n", try script("bash")])
        #expect(result.status == 0, "\(result.errors)")
    }

    @Test func bashCompletesCommandsFlagsAndArguments() throws {
        #expect(try bashCompletions(["profiledrop", "sh"]) == ["share"])
        #expect(try bashCompletions(["profiledrop", "--vers"]) == ["--version"])
        #expect(try bashCompletions(["profiledrop", "share", "--prof"]) == ["--profile"])
        #expect(try bashCompletions(["profiledrop", "share", "--rec"]) == ["--receive-only"])
        #expect(try bashCompletions(["profiledrop", "simulate", "--gate"]) == ["--gate-trials"])
        #expect(try bashCompletions(["profiledrop", "bench", "ro"]) == ["room"])
        #expect(try bashCompletions(["profiledrop", "completion", ""]) == ["bash", "zsh", "fish"])
        #expect(try bashCompletions(["profiledrop", "help", "rep"]) == ["replay"])
        // A value: files for --profile, nothing for --timeout.
        let examples = TestPaths.packageRoot.appendingPathComponent("Examples/bo").path
        #expect(
            try bashCompletions(["profiledrop", "share", "--profile", examples]).contains {
                $0.hasSuffix("bori.json")
            })
        #expect(try bashCompletions(["profiledrop", "share", "--timeout", ""]).isEmpty)
    }

    @Test func zshScriptIsValid() throws {
        let text = try String(contentsOfFile: try script("zsh"), encoding: .utf8)
        #expect(text.hasPrefix("#compdef profiledrop\n"))
        for command in CommandLineTool.subcommands {
            #expect(text.contains("        \(command.name))\n"), "\(command.name)")
        }
        #expect(text.contains("'--profile=[the card to share (JSON)]:FILE:_files'"))
        #expect(text.contains("'*--interface=["))
        guard let zsh = installedShell("/usr/bin/zsh", "/bin/zsh") else {
            print("zsh is not installed: checked the script's structure only")
            return
        }
        let path = try script("zsh")
        let result = try runProgram(zsh, ["-n", path])
        #expect(result.status == 0, "\(result.errors)")
        // Sourced after compinit, the script registers its function for profiledrop.
        let registered = try runProgram(
            zsh,
            [
                "-f", "-c",
                "autoload -U compinit; compinit -u -D; source '\(path)'; print -r -- ${_comps[profiledrop]}",
            ])
        #expect(registered.output == "_profiledrop\n", "\(registered.errors)")
    }

    @Test func fishCompletesCommandsAndFlags() throws {
        let path = try script("fish")
        let text = try String(contentsOfFile: path, encoding: .utf8)
        #expect(text.contains("complete -c profiledrop -n __fish_use_subcommand -a share -d "))
        #expect(
            text.contains(
                "complete -c profiledrop -n '__fish_seen_subcommand_from share' -l profile -r -F -d "))
        guard let fish = installedShell("/usr/bin/fish", "/bin/fish") else {
            print("fish is not installed: checked the script's structure only")
            return
        }
        #expect(try runProgram(fish, ["--no-execute", path]).status == 0)
        func completions(_ line: String) throws -> [String] {
            let result = try runProgram(
                fish, ["--no-config", "-c", "source '\(path)'; complete -C '\(line)'"])
            #expect(result.status == 0, "\(result.errors)")
            return result.output.split(separator: "\n").map { String($0.split(separator: "\t").first ?? "") }
        }
        #expect(try completions("profiledrop sha") == ["share"])
        #expect(try completions("profiledrop share --prof") == ["--profile"])
    }

    @Test func unknownShellIsAUsageError() {
        let console = CapturingConsole()
        #expect(CommandLineTool.run(arguments: ["completion", "tcsh"], console: console) == 2)
        #expect(
            console.errorLines == [
                "profiledrop completion: no completion for 'tcsh'; shells: bash, zsh, fish"
            ])
        #expect(CommandLineTool.run(arguments: ["completion"], console: CapturingConsole()) == 2)
    }
}
