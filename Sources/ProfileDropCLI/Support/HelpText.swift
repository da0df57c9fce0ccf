/// `profiledrop help`, `profiledrop help COMMAND` and `COMMAND --help`, from the commands'
/// declarations.
enum HelpText {
    /// The overview for `topic` nil, else the help of the command `topic`.
    static func show(topic: String?, console: Console) -> ExitCode {
        guard let topic else { return overview(console: console) }
        guard let command = CommandLineTool.subcommand(named: topic) else {
            console.error(CommandLineTool.unknownCommandMessage(topic))
            return .usage
        }
        lines(for: command).forEach(console.output)
        return .success
    }

    /// The command list, the global options and every exit code.
    @discardableResult
    static func overview(console: Console) -> ExitCode {
        console.output("usage: profiledrop COMMAND [OPTIONS]")
        console.output("       profiledrop help COMMAND   (or: profiledrop COMMAND --help)")
        console.output("       profiledrop --version")
        console.output("")
        console.output("commands:")
        for command in CommandLineTool.subcommands {
            console.output("  \(command.name.padded(to: 15)) \(command.summary)")
        }
        console.output("")
        console.output("options:")
        for option in CommandLineTool.globalOptions {
            console.output("  \(option.spellings.joined(separator: ", ").padded(to: 15)) \(option.help)")
        }
        console.output("")
        console.output("exit codes:")
        for code in ExitCode.allCases { console.output("  " + ExitCode.line(code, code.label)) }
        return .success
    }

    /// The usage lines of `command`: one per alternative of its synopsis.
    static func usageLines(for command: any Subcommand.Type) -> [String] {
        command.synopsis.enumerated().map { index, synopsis in
            let invocation = "profiledrop \(command.name)" + (synopsis.isEmpty ? "" : " \(synopsis)")
            return (index == 0 ? "usage: " : "       ") + invocation
        }
    }

    /// The help of one command: usage, summary, options, its sections, exit codes.
    static func lines(for command: any Subcommand.Type) -> [String] {
        var lines = usageLines(for: command)
        lines += ["", command.summary, "", "options:"]
        lines += command.parser.optionSummary
        for section in command.helpSections {
            lines += ["", "\(section.title):"] + section.lines.map { "  " + $0 }
        }
        lines += ["", "exit codes:"]
        lines += command.exitCodes.map { "  " + ExitCode.line($0.code, $0.meaning) }
        return lines
    }
}
