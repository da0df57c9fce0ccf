import Foundation

/// The card file users write, e.g.
/// `{"name": "Bori", "age": 3, "sex": "female", "neutered": true, "size": "small",
///   "keywords": ["calm", "loves fetch"], "owner": "minji", "photo": "bori.jpg"}`.
///
/// `keywords` and `photo` are optional; every other key is required and no other key is allowed.
/// `photo` is a path, relative to the directory of the JSON file unless it is absolute.
extension ProfileCard {
    /// The keys a card file may hold, in the order they are checked and written.
    public static let jsonKeys = ["name", "age", "sex", "neutered", "size", "keywords", "owner", "photo"]
    private static let requiredJSONKeys = ["name", "age", "sex", "neutered", "size", "owner"]

    /// Loads and validates a card file and the photo it names.
    public static func load(contentsOf path: String) throws(CardError) -> ProfileCard {
        let data = try readFile(
            atPath: path, sizeLimit: nil, code: .fileUnreadable, what: "card file \(CardError.quoted(path))")
        let directory = (path as NSString).deletingLastPathComponent
        return try ProfileCard(jsonData: data, baseDirectory: directory.isEmpty ? "." : directory)
    }

    /// Parses and validates card JSON; a `photo` path is resolved against `baseDirectory`.
    public init(jsonData: [UInt8], baseDirectory: String) throws(CardError) {
        let parsed: Any
        do {
            parsed = try JSONSerialization.jsonObject(with: Data(jsonData), options: [.fragmentsAllowed])
        } catch {
            throw CardError(
                .invalidJSON, "card is not valid JSON: \(Self.describeJSONError(error, in: jsonData))")
        }
        guard let object = parsed as? [String: Any] else {
            throw CardError(
                .notAnObject,
                "card must be a JSON object at the top level, found \(Self.jsonTypeName(parsed))")
        }
        // Sorted so that the reported key does not depend on dictionary order.
        if let unknown = object.keys.sorted().first(where: { !Self.jsonKeys.contains($0) }) {
            throw CardError(
                .unknownKey, field: unknown,
                "unknown key \(CardError.quoted(unknown)) (allowed: \(Self.jsonKeys.joined(separator: ", ")))"
            )
        }
        if let missing = Self.requiredJSONKeys.first(where: { object[$0] == nil }) {
            throw CardError(.missingKey, field: missing, "missing required key \"\(missing)\"")
        }
        let fields = JSONFields(object: object)
        let name = try fields.string("name")
        let age = try fields.integer("age")
        let sex = try fields.enumeration("sex", Sex.self)
        let neutered = try fields.bool("neutered")
        let size = try fields.enumeration("size", Size.self)
        let keywords = try fields.optionalStringArray("keywords") ?? []
        let owner = try fields.string("owner")
        let photoPath = try fields.optionalString("photo")
        // Field values are checked before the photo is read, so a typo is reported first.
        _ = try ProfileCard(
            name: name, age: age, sex: sex, neutered: neutered, size: size, keywords: keywords, owner: owner)
        let photo = try photoPath.map { path throws(CardError) in
            try Self.loadPhoto(path: path, baseDirectory: baseDirectory)
        }
        try self.init(
            name: name, age: age, sex: sex, neutered: neutered, size: size, keywords: keywords, owner: owner,
            photo: photo)
    }

    /// The card as a JSON object in the users' format, for `JSONSerialization`. `photoFileName` is
    /// written as `photo` (the caller saves `photo.data` under that name); nil leaves `photo` out.
    public func jsonObject(photoFileName: String?) -> [String: Any] {
        var object: [String: Any] = [
            "name": name, "age": age, "sex": sex.rawValue, "neutered": neutered, "size": size.rawValue,
            "keywords": keywords, "owner": owner,
        ]
        if let photoFileName { object["photo"] = photoFileName }
        return object
    }

    /// The card as pretty-printed JSON with sorted keys and a final newline: the same card always
    /// gives the same bytes, and `init(jsonData:baseDirectory:)` reads them back.
    public func jsonData(photoFileName: String?) -> [UInt8] {
        let options: JSONSerialization.WritingOptions = [
            .prettyPrinted, .sortedKeys, .withoutEscapingSlashes,
        ]
        // Only strings, integers, booleans and string arrays: serialization cannot fail.
        let data = try! JSONSerialization.data(
            withJSONObject: jsonObject(photoFileName: photoFileName), options: options)
        return [UInt8](data) + [0x0A]
    }

    // MARK: - Reading files

    private static func loadPhoto(path: String, baseDirectory: String) throws(CardError) -> Photo {
        let resolved = path.hasPrefix("/") ? path : (baseDirectory as NSString).appendingPathComponent(path)
        let what = "photo \(CardError.quoted(path))"
        let data = try readFile(
            atPath: resolved, sizeLimit: Limits.photoBytes, code: .photoUnreadable, what: what)
        do {
            return try Photo(data: data)
        } catch {
            // Name the file the user wrote; other photo errors already say what is wrong.
            guard error.code == .photoFormat else { throw error }
            throw CardError(.photoFormat, field: "photo", "\(what) is neither JPEG nor PNG")
        }
    }

    /// Reads a regular file. With `sizeLimit`, a larger file is refused before it is read.
    private static func readFile(
        atPath path: String, sizeLimit: Int?, code: CardError.Code, what: String
    ) throws(CardError) -> [UInt8] {
        let field = code == .photoUnreadable ? "photo" : nil
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
            throw CardError(code, field: field, "\(what) cannot be read: no such file")
        }
        guard !isDirectory.boolValue else {
            throw CardError(code, field: field, "\(what) cannot be read: it is a directory")
        }
        if let sizeLimit,
            let attributes = try? FileManager.default.attributesOfItem(atPath: path),
            let size = (attributes[.size] as? NSNumber)?.intValue, size > sizeLimit
        {
            throw CardError(
                .photoTooLarge, field: field,
                "\(what) is \(size) bytes; the limit is \(sizeLimit) bytes (256 KiB)")
        }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw CardError(code, field: field, "\(what) cannot be read: permission denied or I/O error")
        }
        if let sizeLimit, data.count > sizeLimit {
            throw CardError(
                .photoTooLarge, field: field,
                "\(what) is \(data.count) bytes; the limit is \(sizeLimit) bytes (256 KiB)")
        }
        return [UInt8](data)
    }

    // MARK: - JSON diagnostics

    /// Foundation reports "around character N" (a byte offset); add the line and column.
    private static func describeJSONError(_ error: any Error, in data: [UInt8]) -> String {
        let debug = (error as NSError).userInfo[NSDebugDescriptionErrorKey] as? String
        guard var text = debug, !text.isEmpty else { return "malformed JSON" }
        if text.hasSuffix(".") { text.removeLast() }
        let marker = "around character "
        guard let range = text.range(of: marker),
            let offset = Int(text[range.upperBound...].prefix(while: { $0.isNumber }))
        else { return text }
        var line = 1
        var column = 1
        for byte in data.prefix(offset) {
            if byte == 0x0A {
                line += 1
                column = 1
            } else if byte & 0xC0 != 0x80 {
                column += 1  // Count characters, not UTF-8 continuation bytes.
            }
        }
        return "\(text) (line \(line), column \(column))"
    }

    fileprivate static func jsonTypeName(_ value: Any) -> String {
        switch value {
        case is NSNull: return "null"
        case is String: return "a string"
        case is [Any]: return "an array"
        case is [String: Any]: return "an object"
        case let number as NSNumber: return JSONFields.isBoolean(number) ? "a boolean" : "a number"
        default: return "an unexpected value"
        }
    }
}

/// Typed, by-hand access to the fields of a parsed card object, naming the key on every error.
private struct JSONFields {
    let object: [String: Any]

    /// `JSONSerialization` gives booleans as `NSNumber` too; they are a distinct class on every
    /// platform (`__NSCFBoolean`), which is how `true` is told from `1`.
    private static let booleanClass = ObjectIdentifier(type(of: NSNumber(value: true)))

    static func isBoolean(_ number: NSNumber) -> Bool {
        ObjectIdentifier(type(of: number)) == booleanClass
    }

    private func wrongType(_ key: String, expected: String, found value: Any) -> CardError {
        CardError(
            .wrongType, field: key,
            "key \"\(key)\" must be \(expected), found \(ProfileCard.jsonTypeName(value))")
    }

    func string(_ key: String) throws(CardError) -> String {
        let value = object[key] ?? NSNull()
        guard let string = value as? String else { throw wrongType(key, expected: "a string", found: value) }
        return string
    }

    func optionalString(_ key: String) throws(CardError) -> String? {
        guard object[key] != nil else { return nil }
        return try string(key)
    }

    func bool(_ key: String) throws(CardError) -> Bool {
        let value = object[key] ?? NSNull()
        guard let number = value as? NSNumber, !(value is String), Self.isBoolean(number) else {
            throw wrongType(key, expected: "true or false", found: value)
        }
        return number.boolValue
    }

    /// A whole number; `3.0` is accepted, `3.5` and `true` are not.
    func integer(_ key: String) throws(CardError) -> Int {
        let value = object[key] ?? NSNull()
        guard let number = value as? NSNumber, !(value is String), !Self.isBoolean(number) else {
            throw wrongType(key, expected: "an integer", found: value)
        }
        let double = number.doubleValue
        guard double.isFinite, double.rounded() == double else {
            throw CardError(.wrongType, field: key, "key \"\(key)\" must be an integer, found \(double)")
        }
        // Anything this far out is rejected by the range check with its own message.
        guard let integer = Int(exactly: Swift.min(Swift.max(double, -1e15), 1e15)) else {
            throw wrongType(key, expected: "an integer", found: value)
        }
        return integer
    }

    func enumeration<Value: RawRepresentable & CaseIterable>(
        _ key: String, _: Value.Type
    ) throws(CardError) -> Value where Value.RawValue == String {
        let text = try string(key)
        guard let value = Value(rawValue: text) else {
            let allowed = Value.allCases.map(\.rawValue).joined(separator: ", ")
            throw CardError(
                .invalidValue, field: key,
                "key \"\(key)\" must be one of \(allowed); found \(CardError.quoted(text))")
        }
        return value
    }

    func optionalStringArray(_ key: String) throws(CardError) -> [String]? {
        guard let value = object[key] else { return nil }
        guard let array = value as? [Any] else {
            throw wrongType(key, expected: "an array of strings", found: value)
        }
        var strings: [String] = []
        for (index, element) in array.enumerated() {
            guard let string = element as? String else {
                let found = ProfileCard.jsonTypeName(element)
                throw CardError(
                    .wrongType, field: key,
                    "key \"\(key)\" item \(index + 1) must be a string, found \(found)")
            }
            strings.append(string)
        }
        return strings
    }
}
