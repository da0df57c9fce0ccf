import ProfileDropJSON
import Testing

/// `JSONObject`: members by key, the object check and the allowed keys.
struct JSONObjectTests {
    @Test func findsMembersByKeyInDocumentOrder() throws {
        let value = try JSONValue.parse(#"{"b": 1, "a": "x"}"#)
        let object = try JSONObject(value, allowedKeys: ["a", "b", "c"])
        #expect(object.members.map(\.key) == ["b", "a"])
        #expect(object["a"] == .string("x"))
        #expect(object["b"] == .number(1))
        // Allowed but absent.
        #expect(object["c"] == nil)
    }

    @Test func refusesAnotherTypeAndTheFirstUnknownKey() throws {
        #expect(throws: JSONObject.Mismatch.notAnObject(found: "an array")) {
            try JSONObject(try JSONValue.parse("[1]"), allowedKeys: [])
        }
        #expect(throws: JSONObject.Mismatch.unknownKey("y")) {
            try JSONObject(try JSONValue.parse(#"{"a": 1, "y": 2, "z": 3}"#), allowedKeys: ["a"])
        }
        let empty = try JSONObject(try JSONValue.parse("{}"), allowedKeys: [])
        #expect(empty.members.isEmpty)
    }
}
