/// `profiledrop help [COMMAND]`: the command list, or one command's help.
enum HelpCommand: Subcommand {
    static let name = "help"
    static let summary = "show the command list, or one command's usage, options and exit codes"
    static let parser = ArgumentParser(command: name, options: [])
    static let synopsis = ["[COMMAND]"]
    static var argumentCompletion: ValueCompletion { .words(CommandLineTool.subcommands.map { $0.name }) }
    static let exitCodes: [(code: ExitCode, meaning: String)] = [
        (.success, ExitCode.success.label), (.usage, "no such command"),
    ]

    static func run(_ arguments: ParsedArguments, console: Console) throws -> ExitCode {
        guard arguments.positionals.count <= 1 else { throw UsageError("takes at most one COMMAND") }
        return HelpText.show(topic: arguments.positionals.first, console: console)
    }
}
