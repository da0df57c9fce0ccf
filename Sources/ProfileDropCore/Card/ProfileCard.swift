import ProfileDropCrypto

/// A dog's profile card: what two walkers swap when they hold their phones together.
///
/// Every initializer validates against `Limits`, so a `ProfileCard` value is always well formed,
/// whether it was typed by the user (JSON, see `init(json:photo:)`) or sent by a peer
/// (binary, see `init(decoding:)`).
public struct ProfileCard: Equatable, Sendable {
    /// The dog's sex.
    public enum Sex: String, CaseIterable, Equatable, Sendable {
        case male
        case female
    }

    /// The dog's size class.
    public enum Size: String, CaseIterable, Equatable, Sendable {
        case small
        case medium
        case large
    }

    /// Bounds on every field. Text is measured in characters (extended grapheme clusters), as
    /// people count it, so that a name in any script gets the same room; a ceiling in UTF-8 bytes,
    /// four per character of the limit, bounds what travels (a character built of many scalars
    /// can reach it first).
    public enum Limits {
        /// Dog's name length in characters.
        public static let nameCharacters = 1...40
        /// Dog's name length in UTF-8 bytes, on the wire.
        public static let nameBytes = 1...160
        /// Owner's nickname length in characters.
        public static let ownerCharacters = 1...40
        /// Owner's nickname length in UTF-8 bytes, on the wire.
        public static let ownerBytes = 1...160
        /// Length of each keyword in characters.
        public static let keywordCharacters = 1...24
        /// Length of each keyword in UTF-8 bytes, on the wire.
        public static let keywordBytes = 1...96
        /// Most keywords on one card.
        public static let maximumKeywords = 5
        /// Age in whole years; 30 is beyond any recorded dog.
        public static let age = 0...30
        /// Largest photo: 256 KiB keeps a swap well under a second on a slow link.
        public static let photoBytes = 262_144
    }

    /// An optional photo of the dog, JPEG or PNG, identified by its magic bytes.
    public struct Photo: Equatable, Sendable {
        /// The image format, detected from the data.
        public enum Format: String, CaseIterable, Equatable, Sendable {
            case jpeg
            case png

            /// The usual file extension, without the dot.
            public var fileExtension: String {
                switch self {
                case .jpeg: return "jpg"
                case .png: return "png"
                }
            }

            /// The format whose signature starts `data`, or nil.
            public static func detect(_ data: [UInt8]) -> Format? {
                if data.starts(with: [0xFF, 0xD8, 0xFF]) { return .jpeg }
                if data.starts(with: [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) { return .png }
                return nil
            }
        }

        /// The detected format.
        public let format: Format
        /// The image file's bytes, unchanged.
        public let data: [UInt8]

        /// Wraps image bytes, checking the size limit and the JPEG/PNG signature.
        public init(data: [UInt8]) throws(CardError) {
            guard data.count <= Limits.photoBytes else {
                throw CardError(
                    .photoTooLarge, field: "photo",
                    "photo is \(data.count) bytes; the limit is \(Limits.photoBytes) bytes (256 KiB)")
            }
            guard let format = Format.detect(data) else {
                throw CardError(.photoFormat, field: "photo", "photo is neither JPEG nor PNG")
            }
            self.format = format
            self.data = data
        }

        /// Same format and same bytes, compared in one block: a simulated run checks every delivered
        /// card against the one sent, and a byte-by-byte loop over a 256 KiB photo cost more than the
        /// run's transfer.
        public static func == (lhs: Photo, rhs: Photo) -> Bool {
            lhs.format == rhs.format && lhs.data.hasSameBytes(as: rhs.data)
        }
    }

    /// The dog's name.
    public let name: String
    /// The dog's age in whole years.
    public let age: Int
    /// The dog's sex.
    public let sex: Sex
    /// Whether the dog is neutered or spayed.
    public let neutered: Bool
    /// The dog's size class.
    public let size: Size
    /// Up to five short keywords, in the owner's order.
    public let keywords: [String]
    /// The owner's nickname.
    public let owner: String
    /// The dog's photo, if any.
    public let photo: Photo?

    /// Creates a card, validating every field against `Limits`.
    /// - Throws: ``CardError`` listing every field that is wrong, not only the first.
    public init(
        name: String, age: Int, sex: Sex, neutered: Bool, size: Size, keywords: [String] = [],
        owner: String, photo: Photo? = nil
    ) throws(CardError) {
        let problems = Self.problems(name: name, age: age, keywords: keywords, owner: owner)
        if let error = CardError(combining: problems) { throw error }
        self.name = name
        self.age = age
        self.sex = sex
        self.neutered = neutered
        self.size = size
        self.keywords = keywords
        self.owner = owner
        self.photo = photo
    }

    /// BLAKE2b-256 of `encoded()`: names this exact card in acknowledgements.
    public var digest: [UInt8] { BLAKE2b.hash(encoded(), outputLength: 32) }

    /// A one-line human summary, e.g. `Bori, 3 y, female, neutered, small; owner minji; calm, loves fetch`.
    public var summary: String {
        var parts = [
            "\(name), \(age) y, \(sex.rawValue), \(neutered ? "neutered" : "not neutered"), \(size.rawValue)",
            "owner \(owner)",
        ]
        if !keywords.isEmpty { parts.append(keywords.joined(separator: ", ")) }
        if let photo { parts.append("photo \(photo.format.rawValue.uppercased()) \(photo.data.count) bytes") }
        return parts.joined(separator: "; ")
    }

    /// What is wrong with the given fields, in the order of the card; a nil field is not checked.
    static func problems(name: String?, age: Int?, keywords: [String]?, owner: String?) -> [CardError] {
        var problems: [CardError] = []
        if let name { problems += textProblem(name, field: "name", .name).map { [$0] } ?? [] }
        if let age, !Limits.age.contains(age) {
            problems.append(
                CardError(
                    .invalidValue, field: "age",
                    "key \"age\" must be from \(Limits.age.lowerBound) to \(Limits.age.upperBound), found \(age)"
                ))
        }
        if let keywords {
            if keywords.count > Limits.maximumKeywords {
                problems.append(
                    CardError(
                        .invalidValue, field: "keywords",
                        "key \"keywords\" holds at most \(Limits.maximumKeywords) keywords, found \(keywords.count)"
                    ))
            }
            for (index, keyword) in keywords.enumerated() {
                if let problem = textProblem(keyword, field: "keywords", item: index + 1, .keyword) {
                    problems.append(problem)
                }
            }
        }
        if let owner { problems += textProblem(owner, field: "owner", .owner).map { [$0] } ?? [] }
        return problems
    }

    /// The limits of one kind of text field.
    struct TextLimits {
        var characters: ClosedRange<Int>
        var bytes: ClosedRange<Int>

        static let name = TextLimits(characters: Limits.nameCharacters, bytes: Limits.nameBytes)
        static let owner = TextLimits(characters: Limits.ownerCharacters, bytes: Limits.ownerBytes)
        static let keyword = TextLimits(characters: Limits.keywordCharacters, bytes: Limits.keywordBytes)
    }

    /// What is wrong with a text field, or nil: its length in characters, then in UTF-8 bytes;
    /// control characters (Unicode Cc) and invisible ones (``Unicode/Scalar/isInvisibleInText``),
    /// which would let a peer rewrite or disguise what the terminal shows.
    static func textProblem(_ text: String, field: String, item: Int? = nil, _ limits: TextLimits)
        -> CardError?
    {
        // Built only for a diagnostic: cards are checked on every decode.
        var what: String { item.map { "key \"\(field)\" item \($0)" } ?? "key \"\(field)\"" }
        let characters = text.count
        guard limits.characters.contains(characters) else {
            return CardError(
                .invalidValue, field: field,
                "\(what) must be \(limits.characters.lowerBound) to \(limits.characters.upperBound) characters, "
                    + "found \(characters)")
        }
        let bytes = text.utf8.count
        guard limits.bytes.contains(bytes) else {
            return CardError(
                .invalidValue, field: field,
                "\(what) must be at most \(limits.bytes.upperBound) UTF-8 bytes, found \(bytes)")
        }
        // One pass; ASCII is decided without a Unicode property lookup (its only Cc are 0x00-0x1F and
        // 0x7F, and it has no Cf). A control character anywhere is reported before a format one.
        var hasControl = false
        var firstFormat: Unicode.Scalar?
        for scalar in text.unicodeScalars {
            if scalar.isASCII {
                if scalar.value < 0x20 || scalar.value == 0x7F { hasControl = true }
                continue
            }
            if scalar.properties.generalCategory == .control {
                hasControl = true
            } else if firstFormat == nil, scalar.isInvisibleInText {
                firstFormat = scalar
            }
        }
        if hasControl {
            return CardError(
                .invalidValue, field: field,
                "\(what) must not contain control characters: \(CardError.quoted(text))")
        }
        if let format = firstFormat {
            let codePoint = String(format.value, radix: 16, uppercase: true)
            let padded = String(repeating: "0", count: max(0, 4 - codePoint.count)) + codePoint
            return CardError(
                .invalidValue, field: field,
                "\(what) must not contain invisible formatting characters (bidi controls, zero-width "
                    + "characters, fillers), found U+\(padded)")
        }
        return nil
    }
}

extension Unicode.Scalar {
    /// Whether the scalar shows nothing of its own, so that a name holding it could pass for
    /// another: format characters (Unicode Cf: bidi controls, zero-width characters), every
    /// Default_Ignorable_Code_Point (the Hangul and halfwidth fillers, variation selectors, the
    /// combining grapheme joiner among them), and U+2800 BRAILLE PATTERN BLANK, which fonts draw
    /// as a blank. Card text fields and known-peer names refuse them (PROTOCOL.md 3.4).
    public var isInvisibleInText: Bool {
        if isASCII { return false }
        let properties = self.properties
        return properties.generalCategory == .format || properties.isDefaultIgnorableCodePoint
            || value == 0x2800
    }
}
