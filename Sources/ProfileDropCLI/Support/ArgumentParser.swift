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

/// How one option is spelled, whether it takes a value, and how that value is read. Commands never
/// build these by hand: they declare each option once as a ``Flag`` or an ``Option``, and look values
/// up through that declaration, so a misspelt name is a compile error rather than a silent nil.
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
    /// Reads a value given on the command line; a flag's is never called.
    var convert: @Sendable (String) throws -> any Sendable = { $0 }

    /// What a shell completes for the value, judged from its value name: a file for `FILE` or
    /// `PATH`, a directory for `DIR`, nothing otherwise.
    var valueCompletion: ValueCompletion {
        switch kind {
        case .flag: return .nothing
        case .single, .repeatable:
            if valueName.contains("DIR") { return .directory }
            if valueName.contains("FILE") || valueName.contains("PATH") { return .file }
            return .nothing
        }
    }

    /// How the option is written in usage and help: `--name`, or `--name VALUE`.
    var spelling: String {
        switch kind {
        case .flag: return "--\(name)"
        case .single, .repeatable: return "--\(name) \(valueName)"
        }
    }
}

/// What a shell completion script offers for a value or an argument.
enum ValueCompletion: Sendable, Equatable {
    /// Nothing: the user types it.
    case nothing
    /// A file name.
    case file
    /// A directory name.
    case directory
    /// One of these words.
    case words([String])
}

/// A declared option of either kind, as the parser and the help text take it.
protocol DeclaredOption: Sendable {
    var spec: OptionSpec { get }
}

/// An option that takes no value: `--name`.
struct Flag: DeclaredOption {
    let spec: OptionSpec

    /// Declares `--name`.
    init(_ name: String, help: String) {
        spec = OptionSpec(name: name, kind: .flag, help: help)
    }
}

/// An option with a value of type `Value`, read and checked as the command line is parsed, so that
/// a malformed value is reported before any rule that combines options.
struct Option<Value: Sendable>: DeclaredOption {
    let spec: OptionSpec

    /// Declares `--name VALUE`; `convert` reads the value or throws a ``UsageError`` that says in
    /// one line why it cannot.
    init(
        _ name: String, valueName: String, repeatable: Bool = false, help: String,
        convert: @escaping @Sendable (String) throws -> Value
    ) {
        spec = OptionSpec(
            name: name, kind: repeatable ? .repeatable : .single, valueName: valueName, help: help,
            convert: { text in try convert(text) })
    }
}

extension Option where Value == String {
    /// A value taken as it is written.
    static func text(_ name: String, valueName: String, repeatable: Bool = false, help: String) -> Self {
        Self(name, valueName: valueName, repeatable: repeatable, help: help) { $0 }
    }
}

extension Option where Value == String {
    /// A file or directory path: anything but the empty string, which names nothing (and would
    /// otherwise fail later, at a write, or be taken as a missing file).
    static func path(_ name: String, valueName: String, help: String) -> Self {
        Self(name, valueName: valueName, help: help) { text in
            guard !text.isEmpty else { throw UsageError("--\(name) needs a file name") }
            return text
        }
    }
}

extension Option where Value == Int {
    /// A whole number within `range`.
    static func integer(_ name: String, valueName: String = "N", in range: ClosedRange<Int>, help: String)
        -> Self
    {
        Self(name, valueName: valueName, help: help) { text in
            guard let number = Int(text), range.contains(number) else {
                throw UsageError(
                    "--\(name) takes a whole number from \(range.lowerBound) to \(range.upperBound), got '\(text)'"
                )
            }
            return number
        }
    }
}

extension Option where Value == UInt64 {
    /// An unsigned 64-bit number (seeds).
    static func unsigned64(_ name: String, valueName: String, help: String) -> Self {
        Self(name, valueName: valueName, help: help) { text in
            guard let number = UInt64(text) else {
                throw UsageError("--\(name) takes a whole number from 0 to \(UInt64.max), got '\(text)'")
            }
            return number
        }
    }
}

/// The result of parsing: values by option, in the order given, and the positional arguments.
struct ParsedArguments {
    private var values: [(name: String, value: (any Sendable)?)] = []
    /// The options of the command that parsed these; looking up any other is our own bug.
    private let declared: [String]
    /// Arguments that were not options, in order.
    var positionals: [String] = []

    fileprivate init(declared: [String]) { self.declared = declared }

    fileprivate mutating func record(_ name: String, _ value: (any Sendable)?) {
        values.append((name, value))
    }

    fileprivate func isGiven(_ name: String) -> Bool { values.contains { $0.name == name } }

    private func given(_ name: String) -> [(any Sendable)?] {
        precondition(declared.contains(name), "--\(name) is not an option of this command")
        return values.filter { $0.name == name }.map(\.value)
    }

    /// Whether the flag was given.
    func has(_ flag: Flag) -> Bool { !given(flag.spec.name).isEmpty }

    /// Whether the option was given.
    func has<Value>(_ option: Option<Value>) -> Bool { !given(option.spec.name).isEmpty }

    /// Whether the option or flag was given, whatever its kind.
    func has(_ option: any DeclaredOption) -> Bool { !given(option.spec.name).isEmpty }

    /// The option's value (the last one given), or nil when absent.
    func value<Value>(_ option: Option<Value>) -> Value? {
        guard let last = given(option.spec.name).last else { return nil }
        guard let value = last as? Value else {
            preconditionFailure("--\(option.spec.name) holds a value of another type")
        }
        return value
    }

    /// The option's value, or `defaultValue` when absent.
    func value<Value>(_ option: Option<Value>, default defaultValue: Value) -> Value {
        value(option) ?? defaultValue
    }

    /// Every value of a repeatable option, in the order given.
    func allValues<Value>(_ option: Option<Value>) -> [Value] {
        given(option.spec.name).compactMap { $0 as? Value }
    }
}

/// A small, strict parser: unknown options, missing values and repeated single options are errors.
struct ArgumentParser: Sendable {
    var command: String
    var options: [OptionSpec]

    /// A parser for `command` that knows exactly `options`.
    init(command: String, options: [any DeclaredOption]) {
        self.command = command
        self.options = options.map(\.spec)
        let names = self.options.map(\.name)
        precondition(Set(names).count == names.count, "\(command) declares an option twice")
    }

    func parse(_ arguments: [String]) throws -> ParsedArguments {
        var parsed = ParsedArguments(declared: options.map(\.name))
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
                let asLong = "-" + argument
                let hint =
                    options.contains { "--\($0.name)" == asLong.split(separator: "=").first.map(String.init) }
                    ? "; did you mean '\(asLong)'?" : " (options are spelled --name)"
                throw UsageError("unknown option '\(argument)'\(hint)")
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
                let suggestion = Suggestion.closest(to: name, among: options.map(\.name) + ["help"])
                throw UsageError(
                    "unknown option '--\(name)'" + (suggestion.map { "; did you mean '--\($0)'?" } ?? ""))
            }
            switch spec.kind {
            case .flag:
                if inlineValue != nil { throw UsageError("--\(name) takes no value") }
                parsed.record(name, nil)
            case .single, .repeatable:
                if spec.kind == .single && parsed.isGiven(name) {
                    throw UsageError("--\(name) given more than once")
                }
                let value: String
                if let inlineValue {
                    value = inlineValue
                } else {
                    guard index < arguments.count else {
                        throw UsageError("--\(name) needs a value (\(spec.valueName))")
                    }
                    value = arguments[index]
                    index += 1
                }
                parsed.record(name, try spec.convert(value))
            }
        }
        return parsed
    }

    /// One line per option, for `help`, then `-h, --help`.
    var optionSummary: [String] {
        let lines = options.map { spec in
            (spec.kind == .repeatable ? spec.spelling + " (repeatable)" : spec.spelling, spec.help)
        }
        return (lines + [("-h, --help", "show this help")]).map { spelling, help in
            let padding = String(repeating: " ", count: max(1, 32 - spelling.count))
            return "  " + spelling + padding + help
        }
    }
}

/// "Did you mean" for a misspelt command or option.
enum Suggestion {
    /// The candidate closest to `word` within `maximumDistance` edits (insertions, deletions,
    /// substitutions and swaps of neighbours), the first listed on a tie; nil when none is close.
    static func closest(to word: String, among candidates: [String], maximumDistance: Int = 2) -> String? {
        var best: (candidate: String, distance: Int)?
        for candidate in candidates where candidate != word {
            let distance = editDistance(word, candidate)
            if distance <= maximumDistance, distance < best?.distance ?? Int.max {
                best = (candidate, distance)
            }
        }
        return best?.candidate
    }

    /// The optimal string alignment distance between `a` and `b`, in characters.
    static func editDistance(_ a: String, _ b: String) -> Int {
        let a = Array(a)
        let b = Array(b)
        if a.isEmpty || b.isEmpty { return max(a.count, b.count) }
        var table = [[Int]](repeating: [Int](repeating: 0, count: b.count + 1), count: a.count + 1)
        for i in 0...a.count { table[i][0] = i }
        for j in 0...b.count { table[0][j] = j }
        for i in 1...a.count {
            for j in 1...b.count {
                let cost = a[i - 1] == b[j - 1] ? 0 : 1
                var distance = min(table[i - 1][j] + 1, table[i][j - 1] + 1, table[i - 1][j - 1] + cost)
                if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] {
                    distance = min(distance, table[i - 2][j - 2] + 1)
                }
                table[i][j] = distance
            }
        }
        return table[a.count][b.count]
    }
}
