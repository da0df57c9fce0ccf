/// The binary card carried inside the encrypted channel.
///
/// Layout, version 1 (all integers big-endian, every string UTF-8 without terminator):
///
/// | size      | field                                                          |
/// |-----------|----------------------------------------------------------------|
/// | 1         | version = 1                                                    |
/// | 1 + n     | name: length n (1...160), then n bytes (1 to 40 characters)    |
/// | 1         | age in years (0...30)                                          |
/// | 1         | sex: 0 = male, 1 = female                                      |
/// | 1         | neutered: 0 = no, 1 = yes                                      |
/// | 1         | size: 0 = small, 1 = medium, 2 = large                         |
/// | 1         | keyword count k (0...5)                                        |
/// | k × (1+m) | each keyword: length m (1...96), then m bytes (1 to 24 chars)  |
/// | 1 + n     | owner: length n (1...160), then n bytes (1 to 40 characters)   |
/// | 1         | photo: 0 = none, 1 = JPEG, 2 = PNG                             |
/// | 4 + p     | only if a photo: length p (1...262144), then p bytes           |
///
/// Nothing may follow. Decoding applies the same checks as loading a card file (lengths in
/// characters and bytes, ranges, no control or format characters, valid UTF-8) and also requires
/// the photo's magic bytes to match its tag. The largest card is 262,962 bytes
/// (`ProfileCard.maximumEncodedLength`).
extension ProfileCard {
    /// The version byte this implementation writes and reads.
    public static let encodingVersion: UInt8 = 1

    /// The longest possible encoding, for sizing buffers and rejecting oversized frames early.
    public static let maximumEncodedLength =
        1 + (1 + Limits.nameBytes.upperBound) + 4 + 1
        + Limits.maximumKeywords * (1 + Limits.keywordBytes.upperBound)
        + (1 + Limits.ownerBytes.upperBound) + 1 + 4 + Limits.photoBytes

    /// The binary encoding described on this extension.
    public func encoded() -> [UInt8] {
        // Reserved before the first byte: an array literal would be allocated, then grown.
        var bytes: [UInt8] = []
        bytes.reserveCapacity(64 + (photo?.data.count ?? 0))
        bytes.append(Self.encodingVersion)
        Self.appendShortString(name, to: &bytes)
        bytes.append(UInt8(age))
        bytes.append(Self.sexCode(sex))
        bytes.append(neutered ? 1 : 0)
        bytes.append(Self.sizeCode(size))
        bytes.append(UInt8(keywords.count))
        for keyword in keywords { Self.appendShortString(keyword, to: &bytes) }
        Self.appendShortString(owner, to: &bytes)
        if let photo {
            bytes.append(Self.photoCode(photo.format))
            let length = UInt32(photo.data.count)
            for shift in stride(from: 24, through: 0, by: -8) {
                bytes.append(UInt8(truncatingIfNeeded: length >> shift))
            }
            bytes.append(contentsOf: photo.data)
        } else {
            bytes.append(0)
        }
        return bytes
    }

    /// Decodes and validates a card sent by a peer. Never traps: every malformed input throws.
    public init(decoding bytes: some Collection<UInt8>) throws(CardError) {
        var reader = WireReader(bytes: Array(bytes))
        let version = try reader.byte("version")
        guard version == Self.encodingVersion else {
            throw CardError(
                .unsupportedVersion, field: "version",
                "card encoding version \(version) is not supported (expected \(Self.encodingVersion))")
        }
        let name = try reader.shortString("name", .name)
        let age = Int(try reader.byte("age"))
        guard Limits.age.contains(age) else {
            throw CardError(.invalidValue, field: "age", "card age \(age) is outside \(Limits.age)")
        }
        let sex: Sex
        switch try reader.byte("sex") {
        case 0: sex = .male
        case 1: sex = .female
        case let other: throw Self.badTag("sex", other)
        }
        let neutered: Bool
        switch try reader.byte("neutered") {
        case 0: neutered = false
        case 1: neutered = true
        case let other: throw Self.badTag("neutered", other)
        }
        let size: Size
        switch try reader.byte("size") {
        case 0: size = .small
        case 1: size = .medium
        case 2: size = .large
        case let other: throw Self.badTag("size", other)
        }
        let keywordCount = Int(try reader.byte("keywords"))
        guard keywordCount <= Limits.maximumKeywords else {
            throw CardError(
                .malformedEncoding, field: "keywords",
                "card has \(keywordCount) keywords; at most \(Limits.maximumKeywords) are allowed")
        }
        var keywords: [String] = []
        for _ in 0..<keywordCount {
            keywords.append(try reader.shortString("keywords", .keyword))
        }
        let owner = try reader.shortString("owner", .owner)
        let photo: Photo?
        switch try reader.byte("photo") {
        case 0:
            photo = nil
        case let tag where tag == Self.photoCode(.jpeg) || tag == Self.photoCode(.png):
            let length = Int(try reader.uint32("photo"))
            guard (1...Limits.photoBytes).contains(length) else {
                throw CardError(
                    .photoTooLarge, field: "photo",
                    "card photo length \(length) is outside 1...\(Limits.photoBytes) bytes")
            }
            let decoded = try Photo(data: try reader.bytes(length, "photo"))
            guard Self.photoCode(decoded.format) == tag else {
                throw CardError(
                    .photoFormat, field: "photo", "card photo data does not match its format tag \(tag)")
            }
            photo = decoded
        case let other:
            throw Self.badTag("photo", other)
        }
        guard reader.remaining == 0 else {
            throw CardError(.malformedEncoding, "card has \(reader.remaining) unexpected bytes after its end")
        }
        try self.init(
            name: name, age: age, sex: sex, neutered: neutered, size: size, keywords: keywords, owner: owner,
            photo: photo)
    }

    private static func sexCode(_ sex: Sex) -> UInt8 {
        switch sex {
        case .male: return 0
        case .female: return 1
        }
    }

    private static func sizeCode(_ size: Size) -> UInt8 {
        switch size {
        case .small: return 0
        case .medium: return 1
        case .large: return 2
        }
    }

    private static func photoCode(_ format: Photo.Format) -> UInt8 {
        switch format {
        case .jpeg: return 1
        case .png: return 2
        }
    }

    private static func badTag(_ field: String, _ value: UInt8) -> CardError {
        CardError(.malformedEncoding, field: field, "card field \"\(field)\" has invalid value \(value)")
    }

    /// Strings are validated at construction to at most 160 bytes, so the length fits a byte.
    private static func appendShortString(_ text: String, to bytes: inout [UInt8]) {
        // Its UTF-8 view appended as it is: no array of it first.
        bytes.append(UInt8(text.utf8.count))
        bytes.append(contentsOf: text.utf8)
    }

    /// Checked big-endian reads over peer bytes.
    private struct WireReader {
        let bytes: [UInt8]
        var offset = 0

        var remaining: Int { bytes.count - offset }

        private func truncated(_ field: String, needed: Int) -> CardError {
            CardError(
                .truncated, field: field,
                "card ends inside field \"\(field)\": \(needed) bytes needed at offset \(offset), "
                    + "\(remaining) left")
        }

        mutating func byte(_ field: String) throws(CardError) -> UInt8 {
            guard remaining >= 1 else { throw truncated(field, needed: 1) }
            defer { offset += 1 }
            return bytes[offset]
        }

        mutating func uint32(_ field: String) throws(CardError) -> UInt32 {
            let raw = try self.bytes(4, field)
            return raw.reduce(0) { ($0 << 8) | UInt32($1) }
        }

        mutating func bytes(_ count: Int, _ field: String) throws(CardError) -> [UInt8] {
            guard count >= 0, remaining >= count else { throw truncated(field, needed: count) }
            defer { offset += count }
            return Array(bytes[offset..<(offset + count)])
        }

        /// A length-prefixed string, checked as soon as it is read so the first bad field is named.
        mutating func shortString(_ field: String, _ limits: ProfileCard.TextLimits) throws(CardError)
            -> String
        {
            let length = Int(try byte(field))
            let raw = try bytes(length, field)
            // Decoding replaces each invalid sequence with U+FFFD, whose encoding is valid itself,
            // so the bytes come back unchanged exactly when they were valid UTF-8. This is
            // `String(validating:as:)` without its generic metadata lookups, for every card field.
            let text = String(decoding: raw, as: UTF8.self)
            guard text.utf8.elementsEqual(raw) else {
                throw CardError(
                    .malformedEncoding, field: field, "card field \"\(field)\" is not valid UTF-8")
            }
            if let problem = ProfileCard.textProblem(text, field: field, limits) { throw problem }
            return text
        }
    }
}
