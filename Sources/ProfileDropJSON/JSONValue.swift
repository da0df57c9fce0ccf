/// A parsed JSON value whose objects keep their keys in document order, so that nothing downstream
/// depends on hash order. The project's one JSON reader and writer: scenarios, card files and the
/// command line's `--json` lines.
public indirect enum JSONValue: Equatable, Sendable {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case array([JSONValue])
    case object([(key: String, value: JSONValue)])

    /// A whole number. JSON numbers are doubles here, exact up to 2^53 in magnitude.
    public static func integer(_ value: Int) -> JSONValue {
        precondition(value.magnitude <= 1 << 53, "\(value) has no exact JSON number here")
        return .number(Double(value))
    }

    public static func == (lhs: JSONValue, rhs: JSONValue) -> Bool {
        switch (lhs, rhs) {
        case (.null, .null): return true
        case (.bool(let a), .bool(let b)): return a == b
        case (.number(let a), .number(let b)): return a == b
        case (.string(let a), .string(let b)): return a == b
        case (.array(let a), .array(let b)): return a == b
        case (.object(let a), .object(let b)):
            return a.count == b.count && zip(a, b).allSatisfy { $0.key == $1.key && $0.value == $1.value }
        case (.null, _), (.bool, _), (.number, _), (.string, _), (.array, _), (.object, _): return false
        }
    }

    /// The JSON type name, for diagnostics.
    public var typeName: String {
        switch self {
        case .null: return "null"
        case .bool: return "a boolean"
        case .number: return "a number"
        case .string: return "a string"
        case .array: return "an array"
        case .object: return "an object"
        }
    }

    /// The value as a whole number within `range`, or nil when it is anything else: a fraction, a
    /// number no `Int` holds, or another type.
    public func wholeNumber(in range: ClosedRange<Int>) -> Int? {
        guard case .number(let number) = self, let whole = Int(exactly: number), range.contains(whole)
        else { return nil }
        return whole
    }

    /// How ``serialized(_:)`` lays out text.
    public struct Format: Sendable, Equatable {
        /// One member or item per line, indented by two spaces, `"key" : value`: the layout
        /// Foundation's `JSONSerialization` writes with `.prettyPrinted`, including its blank line
        /// inside an empty array or object, so that files written before stay byte for byte.
        public var pretty: Bool
        /// Object keys in Unicode scalar order rather than stored order.
        public var sortedKeys: Bool

        /// Creates a format.
        public init(pretty: Bool, sortedKeys: Bool) {
            self.pretty = pretty
            self.sortedKeys = sortedKeys
        }

        /// One line, keys in stored order.
        public static let compact = Format(pretty: false, sortedKeys: false)
        /// Indented, keys sorted: the same value always gives the same bytes.
        public static let prettySorted = Format(pretty: true, sortedKeys: true)
    }

    /// Compact JSON text for this value (keys in stored order). Parsing the text gives back the
    /// same value, every number to the bit (−0 included); numbers must be finite, as every parsed
    /// number is.
    public var serialized: String { serialized(.compact) }

    /// JSON text for this value in `format`; it parses back to the same value (with sorted keys,
    /// to the same members in sorted order).
    public func serialized(_ format: Format) -> String {
        var out = ""
        write(to: &out, format: format, indent: 0)
        return out
    }

    private func write(to out: inout String, format: Format, indent: Int) {
        switch self {
        case .null: out += "null"
        case .bool(let value): out += value ? "true" : "false"
        case .number(let value): out += Self.numberText(value)
        case .string(let value): Self.quote(value, into: &out)
        case .array(let items):
            Self.writeContainer(items, open: "[", close: "]", to: &out, format: format, indent: indent) {
                item, out, indent in item.write(to: &out, format: format, indent: indent)
            }
        case .object(let members):
            let ordered =
                format.sortedKeys
                ? members.sorted { $0.key.unicodeScalars.lexicographicallyPrecedes($1.key.unicodeScalars) }
                : members
            Self.writeContainer(ordered, open: "{", close: "}", to: &out, format: format, indent: indent) {
                member, out, indent in
                Self.quote(member.key, into: &out)
                out += format.pretty ? " : " : ":"
                member.value.write(to: &out, format: format, indent: indent)
            }
        }
    }

    private static func writeContainer<Element>(
        _ elements: [Element], open: String, close: String, to out: inout String, format: Format, indent: Int,
        writeElement: (Element, inout String, Int) -> Void
    ) {
        out += open
        guard format.pretty else {
            for (index, element) in elements.enumerated() {
                if index > 0 { out += "," }
                writeElement(element, &out, indent)
            }
            out += close
            return
        }
        let inner = String(repeating: " ", count: 2 * (indent + 1))
        out += "\n"
        for (index, element) in elements.enumerated() {
            if index > 0 { out += ",\n" }
            out += inner
            writeElement(element, &out, indent + 1)
        }
        out += "\n" + String(repeating: " ", count: 2 * indent) + close
    }

    private static func numberText(_ value: Double) -> String {
        precondition(value.isFinite, "JSON has no text for \(value)")
        // Int64 has no negative zero; "-0" keeps the sign that the parser read.
        if value == 0 && value.sign == .minus { return "-0" }
        if value == value.rounded() && abs(value) < 1e15 { return String(Int64(value)) }
        // The shortest text that reads back as the same double.
        return "\(value)"
    }

    private static func quote(_ text: String, into out: inout String) {
        out += "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case "\u{8}": out += "\\b"
            case "\u{C}": out += "\\f"
            default:
                if scalar.value < 0x20 {
                    let hex = String(scalar.value, radix: 16)
                    out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        out += "\""
    }

    /// The deepest nesting of arrays and objects the parser takes.
    public static let maximumDepth = 64
    /// The longest text the parser takes, in UTF-8 bytes.
    public static let maximumBytes = 16 * 1024 * 1024

    /// Parses JSON text (RFC 8259). Duplicate keys are rejected, since silently keeping one of them
    /// would hide a mistake in a hand-written file.
    /// - Throws: ``JSONParseError`` with the line and column of the problem.
    public static func parse(_ text: String) throws(JSONParseError) -> JSONValue {
        try parse(utf8: Array(text.utf8))
    }

    /// Parses JSON text given as UTF-8 bytes; invalid UTF-8 in a string is an error.
    /// - Throws: ``JSONParseError`` with the line and column of the problem.
    public static func parse(utf8 bytes: [UInt8]) throws(JSONParseError) -> JSONValue {
        guard bytes.count <= maximumBytes else {
            throw JSONParseError(
                line: 1, column: 1,
                reason: "text of \(bytes.count) bytes is over the \(maximumBytes)-byte limit")
        }
        var parser = JSONParser(bytes: bytes)
        parser.skipWhitespace()
        let value = try parser.parseValue(depth: 0)
        parser.skipWhitespace()
        guard parser.atEnd else { throw parser.error("unexpected text after the JSON value") }
        return value
    }
}

/// Why JSON text could not be parsed, with a 1-based line and column. Only the parser makes one,
/// so it has no public initializer.
public struct JSONParseError: Error, Equatable, Sendable, CustomStringConvertible {
    /// 1-based line of the problem.
    public let line: Int
    /// 1-based column (in Unicode scalars) of the problem.
    public let column: Int
    /// What is wrong.
    public let reason: String

    public var description: String { "line \(line), column \(column): \(reason)" }
}

private struct JSONParser {
    let bytes: [UInt8]
    var position = 0
    static let maximumDepth = JSONValue.maximumDepth

    var atEnd: Bool { position >= bytes.count }

    func error(_ reason: String) -> JSONParseError {
        var line = 1
        var column = 1
        for byte in bytes[..<min(position, bytes.count)] {
            if byte == UInt8(ascii: "\n") {
                line += 1
                column = 1
            } else if byte & 0xC0 != 0x80 {
                column += 1  // Count scalars, not UTF-8 continuation bytes.
            }
        }
        return JSONParseError(line: line, column: column, reason: reason)
    }

    mutating func skipWhitespace() {
        while position < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[position]) { position += 1 }
    }

    mutating func parseValue(depth: Int) throws(JSONParseError) -> JSONValue {
        guard depth < Self.maximumDepth else { throw error("nesting deeper than \(Self.maximumDepth)") }
        guard position < bytes.count else { throw error("unexpected end of input") }
        switch bytes[position] {
        case UInt8(ascii: "{"): return try parseObject(depth: depth)
        case UInt8(ascii: "["): return try parseArray(depth: depth)
        case UInt8(ascii: "\""): return .string(try parseString())
        case UInt8(ascii: "t"): return try parseLiteral("true", .bool(true))
        case UInt8(ascii: "f"): return try parseLiteral("false", .bool(false))
        case UInt8(ascii: "n"): return try parseLiteral("null", .null)
        default: return .number(try parseNumber())
        }
    }

    mutating func parseLiteral(_ word: String, _ value: JSONValue) throws(JSONParseError) -> JSONValue {
        let expected = Array(word.utf8)
        guard bytes.count - position >= expected.count,
            Array(bytes[position..<(position + expected.count)]) == expected
        else { throw error("invalid literal") }
        position += expected.count
        return value
    }

    mutating func parseObject(depth: Int) throws(JSONParseError) -> JSONValue {
        position += 1
        var members: [(key: String, value: JSONValue)] = []
        var seen: Set<String> = []
        skipWhitespace()
        if position < bytes.count, bytes[position] == UInt8(ascii: "}") {
            position += 1
            return .object(members)
        }
        while true {
            skipWhitespace()
            guard position < bytes.count, bytes[position] == UInt8(ascii: "\"") else {
                throw error("expected a quoted key")
            }
            let keyStart = position
            let key = try parseString()
            if !seen.insert(key).inserted {
                position = keyStart
                throw error("duplicate key \"\(key)\"")
            }
            skipWhitespace()
            try expect(":")
            skipWhitespace()
            members.append((key, try parseValue(depth: depth + 1)))
            skipWhitespace()
            guard position < bytes.count else { throw error("unexpected end of input in an object") }
            if bytes[position] == UInt8(ascii: ",") {
                position += 1
                continue
            }
            guard bytes[position] == UInt8(ascii: "}") else { throw error("expected ',' or '}'") }
            position += 1
            return .object(members)
        }
    }

    mutating func parseArray(depth: Int) throws(JSONParseError) -> JSONValue {
        position += 1
        var items: [JSONValue] = []
        skipWhitespace()
        if position < bytes.count, bytes[position] == UInt8(ascii: "]") {
            position += 1
            return .array(items)
        }
        while true {
            skipWhitespace()
            items.append(try parseValue(depth: depth + 1))
            skipWhitespace()
            guard position < bytes.count else { throw error("unexpected end of input in an array") }
            if bytes[position] == UInt8(ascii: ",") {
                position += 1
                continue
            }
            guard bytes[position] == UInt8(ascii: "]") else { throw error("expected ',' or ']'") }
            position += 1
            return .array(items)
        }
    }

    mutating func expect(_ character: Unicode.Scalar) throws(JSONParseError) {
        guard position < bytes.count, bytes[position] == UInt8(ascii: character) else {
            throw error("expected '\(character)'")
        }
        position += 1
    }

    mutating func parseString() throws(JSONParseError) -> String {
        position += 1
        var scalars = String.UnicodeScalarView()
        var raw: [UInt8] = []
        func flush() throws(JSONParseError) {
            guard !raw.isEmpty else { return }
            guard let text = String(validating: raw, as: UTF8.self) else {
                throw error("invalid UTF-8 in a string")
            }
            scalars.append(contentsOf: text.unicodeScalars)
            raw.removeAll()
        }
        while true {
            guard position < bytes.count else { throw error("unterminated string") }
            let byte = bytes[position]
            if byte == UInt8(ascii: "\"") {
                try flush()
                position += 1
                return String(scalars)
            }
            if byte < 0x20 { throw error("control character in a string") }
            if byte != UInt8(ascii: "\\") {
                raw.append(byte)
                position += 1
                continue
            }
            try flush()
            position += 1
            guard position < bytes.count else { throw error("unterminated escape") }
            let escape = bytes[position]
            position += 1
            switch escape {
            case UInt8(ascii: "\""): scalars.append("\"")
            case UInt8(ascii: "\\"): scalars.append("\\")
            case UInt8(ascii: "/"): scalars.append("/")
            case UInt8(ascii: "b"): scalars.append("\u{08}")
            case UInt8(ascii: "f"): scalars.append("\u{0C}")
            case UInt8(ascii: "n"): scalars.append("\n")
            case UInt8(ascii: "r"): scalars.append("\r")
            case UInt8(ascii: "t"): scalars.append("\t")
            case UInt8(ascii: "u"):
                var code = try parseHex4()
                if (0xD800..<0xDC00).contains(code) {
                    guard bytes.count - position >= 2, bytes[position] == UInt8(ascii: "\\"),
                        bytes[position + 1] == UInt8(ascii: "u")
                    else { throw error("unpaired surrogate") }
                    position += 2
                    let low = try parseHex4()
                    guard (0xDC00..<0xE000).contains(low) else { throw error("unpaired surrogate") }
                    code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
                }
                guard let scalar = Unicode.Scalar(code) else { throw error("invalid \\u escape") }
                scalars.append(scalar)
            default: throw error("invalid escape")
            }
        }
    }

    mutating func parseHex4() throws(JSONParseError) -> UInt32 {
        guard bytes.count - position >= 4 else { throw error("short \\u escape") }
        var value: UInt32 = 0
        for _ in 0..<4 {
            guard let digit = Self.hexDigit(bytes[position]) else { throw error("invalid \\u escape") }
            value = value * 16 + digit
            position += 1
        }
        return value
    }

    static func hexDigit(_ byte: UInt8) -> UInt32? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return UInt32(byte - UInt8(ascii: "0"))
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return UInt32(byte - UInt8(ascii: "a") + 10)
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return UInt32(byte - UInt8(ascii: "A") + 10)
        default: return nil
        }
    }

    mutating func parseNumber() throws(JSONParseError) -> Double {
        let start = position
        func digits() -> Int {
            let from = position
            while position < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[position]) {
                position += 1
            }
            return position - from
        }
        if position < bytes.count, bytes[position] == UInt8(ascii: "-") { position += 1 }
        let integerDigits = digits()
        guard integerDigits > 0 else {
            position = start
            throw error("unexpected character")
        }
        if integerDigits > 1, bytes[position - integerDigits] == UInt8(ascii: "0") {
            throw error("leading zero in a number")
        }
        if position < bytes.count, bytes[position] == UInt8(ascii: ".") {
            position += 1
            guard digits() > 0 else { throw error("digits expected after '.'") }
        }
        if position < bytes.count,
            bytes[position] == UInt8(ascii: "e") || bytes[position] == UInt8(ascii: "E")
        {
            position += 1
            if position < bytes.count,
                bytes[position] == UInt8(ascii: "+") || bytes[position] == UInt8(ascii: "-")
            {
                position += 1
            }
            guard digits() > 0 else { throw error("digits expected in the exponent") }
        }
        let text = String(decoding: bytes[start..<position], as: UTF8.self)
        guard let value = Double(text), value.isFinite else {
            position = start
            throw error("number out of range")
        }
        return value
    }
}
