/// A JSON object of known keys, its members found by key: what the readers of our JSON files
/// (scenarios, swarm summaries) share. Each reader words its own errors from a ``Mismatch``, with
/// the location it is reading.
public struct JSONObject: Sendable {
    /// Why a value is not an object of the allowed keys.
    public enum Mismatch: Error, Equatable, Sendable {
        /// The value is of another type, named as ``JSONValue/typeName`` names it.
        case notAnObject(found: String)
        /// The first key, in the document's order, that is not allowed.
        case unknownKey(String)
    }

    /// The members, in the document's order.
    public let members: [(key: String, value: JSONValue)]

    /// The members of `value`, which must be an object whose keys are all in `allowedKeys`.
    public init(_ value: JSONValue, allowedKeys: [String]) throws(Mismatch) {
        guard case .object(let members) = value else { throw .notAnObject(found: value.typeName) }
        if let unknown = members.first(where: { !allowedKeys.contains($0.key) }) {
            throw .unknownKey(unknown.key)
        }
        self.members = members
    }

    /// The value of `key`, or nil when the object has none. (``JSONValue/parse(_:)`` refuses a
    /// repeated key.)
    public subscript(key: String) -> JSONValue? { members.first { $0.key == key }?.value }
}
