/// Bad input from outside (flags, files): reported as one line with exit code 2.
protocol InputError: Error, CustomStringConvertible {}

/// A command-line error: the user asked for something malformed. Reported as one line, exit code 2.
public struct UsageError: InputError, Equatable {
    /// The one-line explanation.
    public var message: String

    /// A usage error explained by `message`.
    public init(_ message: String) { self.message = message }

    /// The message itself.
    public var description: String { message }
}

/// How one option is spelled and whether it takes a value.
struct OptionSpec: Sendable {
    enum Kind: Sendable {
        /// `--name` alone.
        case flag
        /// `--name VALUE` or `--name=VALUE`, at most once.
        case single
        /// `--name VALUE`, any number of times.
        case repeatable
    }

    var name: String
    var kind: Kind
    var valueName: String = "VALUE"
    var help: String
}

/// The result of parsing: options by name, in the order given, and the positional arguments.
struct ParsedArguments {
    private var values: [(name: String, value: String?)] = []
    /// Arguments that were not options, in order.
    var positionals: [String] = []

    fileprivate mutating func record(_ name: String, _ value: String?) { values.append((name, value)) }

    func has(_ name: String) -> Bool { values.contains { $0.name == name } }

    func value(_ name: String) -> String? { values.last { $0.name == name }?.value }

    func allValues(_ name: String) -> [String] { values.filter { $0.name == name }.compactMap(\.value) }

    /// An integer option within `range`, or `defaultValue` when absent.
    func integer(_ name: String, default defaultValue: Int, in range: ClosedRange<Int>) throws -> Int {
        guard let text = value(name) else { return defaultValue }
        guard let number = Int(text), range.contains(number) else {
            throw UsageError(
                "--\(name) takes a whole number from \(range.lowerBound) to \(range.upperBound), got '\(text)'"
            )
        }
        return number
    }

    /// An unsigned 64-bit option (seeds), or nil when absent.
    func unsigned64(_ name: String) throws -> UInt64? {
        guard let text = value(name) else { return nil }
        guard let number = UInt64(text) else {
            throw UsageError("--\(name) takes a whole number from 0 to \(UInt64.max), got '\(text)'")
        }
        return number
    }
}

/// A small, strict parser: unknown options, missing values and repeated single options are errors.
struct ArgumentParser: Sendable {
    var command: String
    var options: [OptionSpec]

    func parse(_ arguments: [String]) throws -> ParsedArguments {
        var parsed = ParsedArguments()
        var index = 0
        var optionsEnded = false
        while index < arguments.count {
            let argument = arguments[index]
            index += 1
            if optionsEnded || !argument.hasPrefix("-") || argument == "-" {
                parsed.positionals.append(argument)
                continue
            }
            if argument == "--" {
                optionsEnded = true
                continue
            }
            guard argument.hasPrefix("--") else {
                throw UsageError("\(command): unknown option '\(argument)' (options are spelled --name)")
            }
            let body = argument.dropFirst(2)
            let name: String
            var inlineValue: String?
            if let equals = body.firstIndex(of: "=") {
                name = String(body[..<equals])
                inlineValue = String(body[body.index(after: equals)...])
            } else {
                name = String(body)
            }
            guard let spec = options.first(where: { $0.name == name }) else {
                throw UsageError("\(command): unknown option '--\(name)'")
            }
            switch spec.kind {
            case .flag:
                if inlineValue != nil { throw UsageError("\(command): --\(name) takes no value") }
                parsed.record(name, nil)
            case .single, .repeatable:
                if spec.kind == .single && parsed.has(name) {
                    throw UsageError("\(command): --\(name) given more than once")
                }
                let value: String
                if let inlineValue {
                    value = inlineValue
                } else {
                    guard index < arguments.count else {
                        throw UsageError("\(command): --\(name) needs a value (\(spec.valueName))")
                    }
                    value = arguments[index]
                    index += 1
                }
                parsed.record(name, value)
            }
        }
        return parsed
    }

    /// One line per option, for `help`.
    var optionSummary: [String] {
        options.map { spec in
            let spelling: String
            switch spec.kind {
            case .flag: spelling = "--\(spec.name)"
            case .single: spelling = "--\(spec.name) \(spec.valueName)"
            case .repeatable: spelling = "--\(spec.name) \(spec.valueName) (repeatable)"
            }
            let padding = String(repeating: " ", count: max(1, 32 - spelling.count))
            return "  " + spelling + padding + spec.help
        }
    }
}
