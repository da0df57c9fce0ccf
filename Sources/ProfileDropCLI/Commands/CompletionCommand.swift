/// `profiledrop completion bash|zsh|fish`: a completion script for the shell, generated from the
/// option declarations the parser uses.
enum CompletionCommand: Subcommand {
    static let name = "completion"
    static let summary = "print a completion script for bash, zsh or fish"
    static let parser = ArgumentParser(command: name, options: [])
    static let synopsis = ["bash|zsh|fish"]
    static let argumentCompletion = ValueCompletion.words(CompletionScript.Shell.allCases.map(\.rawValue))
    static let helpSections = [
        HelpSection(
            title: "examples",
            lines: [
                "profiledrop completion bash > /etc/bash_completion.d/profiledrop",
                "source <(profiledrop completion bash)          # this bash session only",
                "profiledrop completion zsh > ~/.zfunc/_profiledrop   # a directory in $fpath",
                "profiledrop completion fish > ~/.config/fish/completions/profiledrop.fish",
            ])
    ]
    static let exitCodes: [(code: ExitCode, meaning: String)] = [
        (.success, ExitCode.success.label), (.usage, "no shell, or one not supported"),
    ]

    static func run(_ arguments: ParsedArguments, console: Console) throws -> ExitCode {
        let shells = CompletionScript.Shell.allCases.map(\.rawValue).joined(separator: ", ")
        guard arguments.positionals.count == 1, let word = arguments.positionals.first else {
            throw UsageError("takes one shell: \(shells)")
        }
        guard let shell = CompletionScript.Shell(rawValue: word) else {
            throw UsageError("no completion for '\(word)'; shells: \(shells)")
        }
        console.outputText(CompletionScript.script(for: shell))
        return .success
    }
}
