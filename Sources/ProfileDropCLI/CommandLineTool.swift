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
    /// Its options, for parsing and for help.
    static var parser: ArgumentParser { get }
    /// Runs it. Throws ``UsageError`` for bad input (exit 2); other thrown errors are runtime errors.
    static func run(_ arguments: ParsedArguments, console: Console) throws -> ExitCode
}

/// The `profiledrop` command line: dispatches to subcommands and maps errors to exit codes.
public enum CommandLineTool {
    static let subcommands: [any Subcommand.Type] = [
        NoiseVectorsCommand.self,
        BenchCommand.self,
        IdentityCommand.self,
        InterfacesCommand.self,
        PeersCommand.self,
        ReplayCommand.self,
        ShareCommand.self,
        SimulateCommand.self,
    ]

    /// Runs `profiledrop` with `arguments` (without the program name) and returns the exit code.
    public static func run(arguments: [String], console: Console = StandardConsole()) -> Int32 {
        guard let first = arguments.first, first != "help", first != "--help", first != "-h" else {
            let topic = arguments.count > 1 ? arguments[1] : nil
            return printHelp(topic: topic, console: console).rawValue
        }
        guard let command = subcommands.first(where: { $0.name == first }) else {
            console.error("profiledrop: unknown command '\(first)'; run 'profiledrop help' for the list")
            return ExitCode.usage.rawValue
        }
        let rest = Array(arguments.dropFirst())
        if rest.contains("--help") { return printHelp(topic: first, console: console).rawValue }
        do {
            let parsed = try command.parser.parse(rest)
            return try command.run(parsed, console: console).rawValue
        } catch let error as any InputError {
            console.error("profiledrop \(command.name): \(error)")
            return ExitCode.usage.rawValue
        } catch {
            console.error("profiledrop \(command.name): \(error)")
            return ExitCode.runtimeError.rawValue
        }
    }

    private static func printHelp(topic: String?, console: Console) -> ExitCode {
        if let topic {
            guard let command = subcommands.first(where: { $0.name == topic }) else {
                console.error("profiledrop: unknown command '\(topic)'; run 'profiledrop help' for the list")
                return .usage
            }
            console.output("profiledrop \(command.name): \(command.summary)")
            command.parser.optionSummary.forEach(console.output)
            return .success
        }
        console.output("usage: profiledrop COMMAND [OPTIONS]")
        console.output("commands:")
        for command in subcommands {
            let padding = String(repeating: " ", count: max(1, 16 - command.name.count))
            console.output("  \(command.name)\(padding)\(command.summary)")
        }
        console.output(
            "exit codes: " + ExitCode.allCases.map { "\($0.rawValue) \($0)" }.joined(separator: ", "))
        return .success
    }
}

/// Ends the process with `code`. Output is unbuffered, so nothing is left to flush.
public func exitProcess(_ code: Int32) -> Never {
    exit(code)
}
