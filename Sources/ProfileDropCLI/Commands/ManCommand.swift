/// `profiledrop man`: the manual page (roff), generated from the declarations help uses. The
/// repository keeps it as `profiledrop.1`.
enum ManCommand: Subcommand {
    static let name = "man"
    static let summary = "print the manual page (roff); read it with: profiledrop man | man -l -"
    static let parser = ArgumentParser(command: name, options: [])
    static let exitCodes: [(code: ExitCode, meaning: String)] = [
        (.success, ExitCode.success.label), (.usage, ExitCode.usage.label),
    ]

    static func run(_ arguments: ParsedArguments, console: Console) throws -> ExitCode {
        guard arguments.positionals.isEmpty else { throw UsageError("takes no arguments") }
        console.outputText(ManPage.render())
        return .success
    }
}
