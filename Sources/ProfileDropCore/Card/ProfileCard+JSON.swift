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

    /// Validates a card file's JSON object. Every problem is reported, each naming its key: unknown
    /// and missing keys, values of the wrong type or out of range. `readPhoto` is called with the
    /// `photo` value once every other field is valid, so that a typo is reported before a missing
    /// photo.
    public init(json: JSONValue, photo readPhoto: (String) throws(CardError) -> Photo) throws(CardError) {
        guard case .object(let members) = json else {
            throw CardError(
                .notAnObject, "card must be a JSON object at the top level, found \(json.typeName)")
        }
        var problems: [CardError] = []
        // Sorted so that the report does not depend on the order in the file.
        for unknown in members.map(\.key).sorted() where !Self.jsonKeys.contains(unknown) {
            problems.append(
                CardError(
                    .unknownKey, field: unknown,
                    "unknown key \(CardError.quoted(unknown)) (allowed: \(Self.jsonKeys.joined(separator: ", ")))"
                ))
        }
        let fields = JSONFields(members: members)
        for missing in Self.requiredJSONKeys where fields[missing] == nil {
            problems.append(CardError(.missingKey, field: missing, "missing required key \"\(missing)\""))
        }
        /// The value `read` returns when `key` is present and well typed; a problem otherwise.
        func read<Value>(_ key: String, _ read: (String) throws(CardError) -> Value) -> Value? {
            guard fields[key] != nil else { return nil }
            do {
                return try read(key)
            } catch {
                problems.append(error)
                return nil
            }
        }
        let name = read("name", fields.string)
        let age = read("age", fields.integer)
        let sex = read("sex") { key throws(CardError) in try fields.enumeration(key, Sex.self) }
        let neutered = read("neutered", fields.bool)
        let size = read("size") { key throws(CardError) in try fields.enumeration(key, Size.self) }
        let keywords = read("keywords", fields.stringArray)
        let owner = read("owner", fields.string)
        let photoPath = read("photo", fields.string)
        problems += Self.problems(name: name, age: age, keywords: keywords, owner: owner)
        // Unknown keys first, then in the order of the format.
        let order = { (problem: CardError) in problem.field.flatMap { Self.jsonKeys.firstIndex(of: $0) } ?? -1
        }
        problems = problems.enumerated().sorted {
            (order($0.element), $0.offset) < (order($1.element), $1.offset)
        }
        .map(\.element)
        if let error = CardError(combining: problems) { throw error }
        guard let name, let age, let sex, let neutered, let size, let owner else {
            preconditionFailure("a required key is missing without a problem reported")
        }
        // Field values are checked before the photo is read, so a typo is reported first.
        let photo = try photoPath.map(readPhoto)
        try self.init(
            name: name, age: age, sex: sex, neutered: neutered, size: size, keywords: keywords ?? [],
            owner: owner, photo: photo)
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

    func stringArray(_ key: String) throws(CardError) -> [String] {
        let value = self[key] ?? .null
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
