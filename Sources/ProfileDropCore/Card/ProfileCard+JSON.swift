import ProfileDropJSON

/// The card file users write, e.g.
/// `{"name": "Bori", "age": 3, "sex": "female", "neutered": true, "size": "small",
///   "keywords": ["calm", "loves fetch"], "owner": "minji", "photo": "bori.jpg"}`.
///
/// `keywords` and `photo` are optional; every other key is required and no other key is allowed.
/// `photo` names a file; reading it is the caller's (ProfileDropCardFile resolves it against the
/// card file's directory), which keeps the core free of file I/O.
extension ProfileCard {
    /// The keys a card file may hold, in the order they are checked and written.
    public static let jsonKeys = ["name", "age", "sex", "neutered", "size", "keywords", "owner", "photo"]
    private static let requiredJSONKeys = ["name", "age", "sex", "neutered", "size", "owner"]

    /// Parses and validates card JSON text; see ``init(json:photo:)``.
    public init(
        jsonData: [UInt8], photo readPhoto: (String) throws(CardError) -> Photo
    ) throws(CardError) {
        let value: JSONValue
        do {
            value = try JSONValue.parse(utf8: jsonData)
        } catch {
            throw CardError(.invalidJSON, "card is not valid JSON: \(error)")
        }
        try self.init(json: value, photo: readPhoto)
    }

    /// Validates a card file's JSON object. `readPhoto` is called with the `photo` value, once
    /// every other field is valid, so that a typo is reported before a missing photo.
    public init(json: JSONValue, photo readPhoto: (String) throws(CardError) -> Photo) throws(CardError) {
        guard case .object(let members) = json else {
            throw CardError(
                .notAnObject, "card must be a JSON object at the top level, found \(json.typeName)")
        }
        // Sorted so that the reported key does not depend on the order in the file.
        if let unknown = members.map(\.key).sorted().first(where: { !Self.jsonKeys.contains($0) }) {
            throw CardError(
                .unknownKey, field: unknown,
                "unknown key \(CardError.quoted(unknown)) (allowed: \(Self.jsonKeys.joined(separator: ", ")))"
            )
        }
        let fields = JSONFields(members: members)
        if let missing = Self.requiredJSONKeys.first(where: { fields[$0] == nil }) {
            throw CardError(.missingKey, field: missing, "missing required key \"\(missing)\"")
        }
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
        let photo = try photoPath.map(readPhoto)
        try self.init(
            name: name, age: age, sex: sex, neutered: neutered, size: size, keywords: keywords, owner: owner,
            photo: photo)
    }

    /// The card as a JSON object in the users' format. `photoFileName` is written as `photo` (the
    /// caller saves `photo.data` under that name); nil leaves `photo` out.
    public func json(photoFileName: String?) -> JSONValue {
        var members: [(key: String, value: JSONValue)] = [
            ("name", .string(name)), ("age", .integer(age)), ("sex", .string(sex.rawValue)),
            ("neutered", .bool(neutered)), ("size", .string(size.rawValue)),
            ("keywords", .array(keywords.map(JSONValue.string))), ("owner", .string(owner)),
        ]
        if let photoFileName { members.append(("photo", .string(photoFileName))) }
        return .object(members)
    }

    /// The card as pretty-printed JSON with sorted keys and a final newline: the same card always
    /// gives the same bytes (the bytes earlier versions wrote with Foundation), and
    /// ``init(jsonData:photo:)`` reads them back.
    public func jsonData(photoFileName: String?) -> [UInt8] {
        Array(json(photoFileName: photoFileName).serialized(.prettySorted).utf8) + [0x0A]
    }
}

/// Typed, by-hand access to the members of a parsed card object, naming the key on every error.
private struct JSONFields {
    let members: [(key: String, value: JSONValue)]

    subscript(key: String) -> JSONValue? { members.first { $0.key == key }?.value }

    private func wrongType(_ key: String, expected: String, found value: JSONValue) -> CardError {
        CardError(.wrongType, field: key, "key \"\(key)\" must be \(expected), found \(value.typeName)")
    }

    func string(_ key: String) throws(CardError) -> String {
        let value = self[key] ?? .null
        guard case .string(let string) = value else {
            throw wrongType(key, expected: "a string", found: value)
        }
        return string
    }

    func optionalString(_ key: String) throws(CardError) -> String? {
        guard self[key] != nil else { return nil }
        return try string(key)
    }

    func bool(_ key: String) throws(CardError) -> Bool {
        let value = self[key] ?? .null
        guard case .bool(let bool) = value else {
            throw wrongType(key, expected: "true or false", found: value)
        }
        return bool
    }

    /// A whole number; `3.0` is accepted, `3.5` and `true` are not.
    func integer(_ key: String) throws(CardError) -> Int {
        let value = self[key] ?? .null
        guard case .number(let double) = value else {
            throw wrongType(key, expected: "an integer", found: value)
        }
        guard double.rounded() == double else {
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
        guard let value = self[key] else { return nil }
        guard case .array(let items) = value else {
            throw wrongType(key, expected: "an array of strings", found: value)
        }
        var strings: [String] = []
        for (index, item) in items.enumerated() {
            guard case .string(let string) = item else {
                throw CardError(
                    .wrongType, field: key,
                    "key \"\(key)\" item \(index + 1) must be a string, found \(item.typeName)")
            }
            strings.append(string)
        }
        return strings
    }
}
