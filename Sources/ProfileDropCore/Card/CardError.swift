/// Why a profile card was rejected: a card file the user wrote, or a card a peer sent.
///
/// The diagnostic is one line and names the key or field concerned, so that the command line can
/// print it as it is after the file name.
public struct CardError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The kind of problem, stable for tests and for mapping to exit codes.
    public enum Code: String, Equatable, Sendable {
        /// The card file is missing or cannot be read.
        case fileUnreadable
        /// The card file is not valid JSON.
        case invalidJSON
        /// The JSON top level is not an object.
        case notAnObject
        /// A required key is absent.
        case missingKey
        /// A key holds a value of the wrong JSON type.
        case wrongType
        /// The JSON object has a key the format does not define.
        case unknownKey
        /// A value has the right type but is out of range (length, count, number or enumeration).
        case invalidValue
        /// The photo file is missing or cannot be read.
        case photoUnreadable
        /// The photo is larger than `ProfileCard.Limits.photoBytes`.
        case photoTooLarge
        /// The photo is neither JPEG nor PNG.
        case photoFormat
        /// A binary card ended before a field was complete.
        case truncated
        /// A binary card has a version byte this implementation does not speak.
        case unsupportedVersion
        /// A binary card is malformed in any other way (bad tag, bad UTF-8, trailing bytes).
        case malformedEncoding
    }

    /// The kind of problem.
    public let code: Code
    /// The JSON key or binary field concerned, when there is one.
    public let field: String?
    /// A one-line explanation for people: for several problems, each one's, joined by "; ".
    public let diagnostic: String
    /// Every problem found, in the order of the card; just this error when it is the only one.
    public var problems: [CardError] { parts.isEmpty ? [self] : parts }
    /// Every problem, when several were found; empty for one.
    private let parts: [CardError]

    /// Creates an error. Line breaks in `diagnostic` (which may quote outside input) become spaces,
    /// so the diagnostic is always one line.
    public init(_ code: Code, field: String? = nil, _ diagnostic: String) {
        self.code = code
        self.field = field
        var oneLine = String.UnicodeScalarView()
        for scalar in diagnostic.unicodeScalars {
            oneLine.append(Self.lineBreaks.contains(scalar.value) ? " " : scalar)
        }
        self.diagnostic = String(oneLine)
        self.parts = []
    }

    /// One error for all of `problems`: nil when there are none; the code and field are the first
    /// problem's, the diagnostic lists every one.
    public init?(combining problems: [CardError]) {
        let flattened = problems.flatMap(\.problems)
        guard let first = flattened.first else { return nil }
        self.code = first.code
        self.field = first.field
        self.diagnostic = flattened.map(\.diagnostic).joined(separator: "; ")
        self.parts = flattened.count > 1 ? flattened : []
    }

    private static let lineBreaks: [UInt32] = [0x0A, 0x0B, 0x0C, 0x0D, 0x85, 0x2028, 0x2029]

    /// Quotes outside text for a diagnostic: escaped like a Swift string literal (so control
    /// characters stay visible) and shortened to `limit` characters.
    public static func quoted(_ text: String, limit: Int = 48) -> String {
        let escaped = text.debugDescription
        guard escaped.count > limit + 2 else { return escaped }
        return String(escaped.prefix(limit)) + "...\""
    }

    public var description: String { diagnostic }
}
