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

    /// Bounds on every field. Strings are measured in UTF-8 bytes because that is what travels.
    public enum Limits {
        /// Dog's name length in UTF-8 bytes.
        public static let nameBytes = 1...40
        /// Owner's nickname length in UTF-8 bytes.
        public static let ownerBytes = 1...40
        /// Length of each keyword in UTF-8 bytes.
        public static let keywordBytes = 1...24
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

        /// Same format and same bytes. Compared eight bytes at a time: a simulated run checks every
        /// delivered card against the one sent, and a byte-by-byte loop over a 256 KiB photo cost
        /// more than the run's transfer.
        public static func == (lhs: Photo, rhs: Photo) -> Bool {
            guard lhs.format == rhs.format, lhs.data.count == rhs.data.count else { return false }
            return lhs.data.withUnsafeBytes { left in
                rhs.data.withUnsafeBytes { right in
                    let count = left.count
                    var offset = 0
                    while offset + 8 <= count {
                        guard
                            left.loadUnaligned(fromByteOffset: offset, as: UInt64.self)
                                == right.loadUnaligned(fromByteOffset: offset, as: UInt64.self)
                        else { return false }
                        offset += 8
                    }
                    while offset < count {
                        guard left[offset] == right[offset] else { return false }
                        offset += 1
                    }
                    return true
                }
            }
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
    public init(
        name: String, age: Int, sex: Sex, neutered: Bool, size: Size, keywords: [String] = [],
        owner: String, photo: Photo? = nil
    ) throws(CardError) {
        try Self.validateText(name, field: "name", bytes: Limits.nameBytes)
        guard Limits.age.contains(age) else {
            throw CardError(
                .invalidValue, field: "age",
                "key \"age\" must be from \(Limits.age.lowerBound) to \(Limits.age.upperBound), found \(age)")
        }
        guard keywords.count <= Limits.maximumKeywords else {
            throw CardError(
                .invalidValue, field: "keywords",
                "key \"keywords\" holds at most \(Limits.maximumKeywords) keywords, found \(keywords.count)")
        }
        for (index, keyword) in keywords.enumerated() {
            try Self.validateText(keyword, field: "keywords", item: index + 1, bytes: Limits.keywordBytes)
        }
        try Self.validateText(owner, field: "owner", bytes: Limits.ownerBytes)
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

    /// Checks a text field: length in UTF-8 bytes and no control characters (they would let a peer
    /// rewrite the terminal that shows the card).
    static func validateText(
        _ text: String, field: String, item: Int? = nil, bytes limit: ClosedRange<Int>
    ) throws(CardError) {
        let what = item.map { "key \"\(field)\" item \($0)" } ?? "key \"\(field)\""
        let length = text.utf8.count
        guard limit.contains(length) else {
            throw CardError(
                .invalidValue, field: field,
                "\(what) must be \(limit.lowerBound) to \(limit.upperBound) UTF-8 bytes, found \(length)")
        }
        if text.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) {
            throw CardError(
                .invalidValue, field: field,
                "\(what) must not contain control characters: \(CardError.quoted(text))")
        }
    }
}
