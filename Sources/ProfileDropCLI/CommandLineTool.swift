import ProfileDropJSON

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// One `profiledrop` subcommand.
protocol Subcommand: Sendable {
    /// The word that selects it.
    static var name: String { get }
    /// One line for the command list.
    static var summary: String { get }
    /// Its options, for parsing, help, completion and the man page.
    static var parser: ArgumentParser { get }
    /// What follows the command's name, one alternative per element (e.g. `CAPTURE [OPTIONS]`).
    static var synopsis: [String] { get }
    /// What a shell completes for its positional arguments.
    static var argumentCompletion: ValueCompletion { get }
    /// Sections of `help COMMAND` and the man page after the options: examples, keys.
    static var helpSections: [HelpSection] { get }
    /// The exit codes it uses, each with what it means for this command.
    static var exitCodes: [(code: ExitCode, meaning: String)] { get }
    /// Runs it. Throws ``UsageError`` for bad input (exit 2); other thrown errors are runtime errors.
    static func run(_ arguments: ParsedArguments, console: Console) throws -> ExitCode
}

extension Subcommand {
    static var synopsis: [String] { parser.options.isEmpty ? [""] : ["[OPTIONS]"] }
    static var argumentCompletion: ValueCompletion { .nothing }
    static var helpSections: [HelpSection] { [] }
    static var exitCodes: [(code: ExitCode, meaning: String)] {
        [
            (.success, ExitCode.success.label), (.usage, ExitCode.usage.label),
            (.runtimeError, ExitCode.runtimeError.label),
        ]
    }
}

/// A titled block of help text: the title, then lines shown indented.
struct HelpSection: Sendable {
    /// The heading, e.g. `examples`.
    var title: String
    /// The lines under it, without indentation.
    var lines: [String]
}

/// The `profiledrop` command line: dispatches to subcommands and maps errors to exit codes.
public enum CommandLineTool {
    /// Every command, in the order help lists them: the main job first.
    static let subcommands: [any Subcommand.Type] = [
        ShareCommand.self,
        PeersCommand.self,
        IdentityCommand.self,
        InterfacesCommand.self,
        SimulateCommand.self,
        ReplayCommand.self,
        NoiseVectorsCommand.self,
        BenchCommand.self,
        VersionCommand.self,
        CompletionCommand.self,
        ManCommand.self,
        HelpCommand.self,
    ]

    /// The options accepted before any command.
    static let globalOptions: [(spellings: [String], help: String)] = [
        (["-h", "--help"], "show help (with a command: that command's help)"),
        (["-V", "--version"], "show the version, the git commit and the libsodium version"),
    ]

    /// Runs `profiledrop` with `arguments` (without the program name) and returns the exit code.
    public static func run(arguments: [String], console: Console = StandardConsole()) -> Int32 {
        let code = runCommand(arguments: arguments, console: console)
        // Output that could not be written (a reader that went away, a full disk) is lost: say so,
        // and a run that would have succeeded fails.
        guard let failure = console.outputFailure else { return code }
        let name = arguments.first.map { subcommand(named: $0) != nil ? " \($0)" : "" } ?? ""
        console.error("profiledrop\(name): cannot write the output: \(failure)")
        return code == ExitCode.success.rawValue ? ExitCode.runtimeError.rawValue : code
    }

    private static func runCommand(arguments: [String], console: Console) -> Int32 {
        guard let first = arguments.first else { return HelpText.overview(console: console).rawValue }
        if first == "--help" || first == "-h" {
            return HelpText.show(topic: arguments.dropFirst().first, console: console).rawValue
        }
        if first == "--version" || first == "-V" {
            guard arguments.count == 1 else {
                console.error("profiledrop: \(first) takes no arguments")
                return ExitCode.usage.rawValue
            }
            return VersionCommand.printVersion(console: console).rawValue
        }
        guard let command = subcommand(named: first) else {
            console.error(unknownCommandMessage(first))
            return ExitCode.usage.rawValue
        }
        let rest = Array(arguments.dropFirst())
        // `-h` or `--help` anywhere before `--` asks for the command's help, whatever else is given.
        if rest.prefix(while: { $0 != "--" }).contains(where: { $0 == "--help" || $0 == "-h" }) {
            return HelpText.show(topic: first, console: console).rawValue
        }
        // A command asked for JSON lines reports its errors as one too, on standard output where
        // the reader of its lines looks, besides the line on standard error.
        let wantsJSON =
            command.parser.options.contains { $0.name == "json" }
            && rest.prefix(while: { $0 != "--" }).contains("--json")
        let code: ExitCode
        let message: String
        do {
            let parsed = try command.parser.parse(rest)
            return try command.run(parsed, console: console).rawValue
        } catch let error as any InputError {
            (code, message) = (.usage, "profiledrop \(command.name): \(error)")
        } catch {
            (code, message) = (.runtimeError, "profiledrop \(command.name): \(error)")
        }
        console.error(message)
        if wantsJSON { console.output(errorLine(message, code: code)) }
        return code.rawValue
    }

    /// The `--json` line of an error: `{"v":1,"ts":…,"event":"error","exit_code":2,"message":…}`.
    static func errorLine(_ message: String, code: ExitCode) -> String {
        ShareDisplay.jsonLine(
            [
                ("event", .string("error")), ("exit_code", .integer(Int(code.rawValue))),
                ("message", .string(message)),
            ],
            timestamp: ShareDisplay.wallClockTimestamp())
    }

    /// The command called `name`, if any.
    static func subcommand(named name: String) -> (any Subcommand.Type)? {
        subcommands.first { $0.name == name }
    }

    /// One line for a word that names no command, with the closest command when one is near.
    static func unknownCommandMessage(_ word: String) -> String {
        if let suggestion = Suggestion.closest(to: word, among: subcommands.map { $0.name }) {
            return "profiledrop: unknown command '\(word)'; did you mean '\(suggestion)'?"
        }
        if word.hasPrefix("-") {
            let spellings = globalOptions.flatMap { $0.spellings }
            if let suggestion = Suggestion.closest(to: word, among: spellings) {
                return "profiledrop: unknown option '\(word)'; did you mean '\(suggestion)'?"
            }
            return "profiledrop: unknown option '\(word)'; run 'profiledrop help' for the list"
        }
        return "profiledrop: unknown command '\(word)'; run 'profiledrop help' for the list"
    }
}

/// Ends the process with `code`. Output is unbuffered, so nothing is left to flush.
public func exitProcess(_ code: Int32) -> Never {
    exit(code)
}
