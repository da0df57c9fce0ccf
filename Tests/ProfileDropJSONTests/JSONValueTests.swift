import ProfileDropJSON
import ProfileDropTestSupport
import Testing

@Suite struct JSONValueTests {
    /// A document shaped like a scenario file: nested objects and arrays, numbers, strings.
    static let scenarioLike = """
        {"seed": 7, "timeLimit": 12.5,
         "devices": [{"name": "a", "pose": {"x": 0, "y": 0, "heading": 0}, "motion": [],
                      "card": {"name": "Bori", "age": 3, "keywords": ["calm", "fetch"], "neutered": true}},
                     {"name": "b", "pose": {"x": 7.25, "y": -0.5, "heading": 180}, "photoBytes": null}],
         "faults": {"loss": 0.1, "partitions": [{"devices": ["a"], "start": 1, "end": 2}]}}
        """

    @Test func wholeNumbersAreCheckedAgainstTheRangeTheyAreAskedFor() {
        let range = 0...(1 << 53)
        #expect(JSONValue.number(9_007_199_254_740_991).wholeNumber(in: range) == 9_007_199_254_740_991)
        #expect(JSONValue.number(9_007_199_254_740_992).wholeNumber(in: range) == 1 << 53)
        #expect(JSONValue.number(1e19).wholeNumber(in: range) == nil)
        #expect(JSONValue.number(-1).wholeNumber(in: range) == nil)
        #expect(JSONValue.number(2.5).wholeNumber(in: range) == nil)
        #expect(JSONValue.string("3").wholeNumber(in: range) == nil)
        #expect(JSONValue.number(-1e300).wholeNumber(in: Int.min...Int.max) == nil)
        // 2^63 is one past Int.max: refused, not converted.
        #expect(JSONValue.number(9_223_372_036_854_775_808).wholeNumber(in: Int.min...Int.max) == nil)
    }

    @Test func parsesAndSerializesInDocumentOrder() throws {
        let value = try JSONValue.parse(#" {"b": [1, 2.5, -3e2, true, null], "a": "x\"\u00e9\ud83d\ude00"} "#)
        #expect(
            value
                == .object([
                    (key: "b", value: .array([.number(1), .number(2.5), .number(-300), .bool(true), .null])),
                    (key: "a", value: .string("x\"é😀")),
                ]))
        #expect(value.serialized == #"{"b":[1,2.5,-300,true,null],"a":"x\"é😀"}"#)
    }

    @Test(arguments: ["", "{", "[1,]", "01", "\"abc", "{\"a\" 1}", "tru", "1 2", "\"\\x\"", "\"\\ud800\""])
    func rejectsMalformedJSON(text: String) {
        #expect(throws: JSONParseError.self) { try JSONValue.parse(text) }
    }

    // MARK: Parse, then serialize: the same value

    /// Values at the edges: signed zeros, the integer/exponent switch at 1e15, the extremes of
    /// Double, control characters, escapes, scalars beyond the BMP, decomposed accents, the
    /// deepest nesting the parser takes.
    static let edgeValues: [JSONValue] = {
        let numbers: [Double] = [
            0, -0.0, 1, -1, 1e15 - 1, 1e15, -1e15, 9_007_199_254_740_994, .greatestFiniteMagnitude,
            -.greatestFiniteMagnitude, .leastNonzeroMagnitude, -.leastNormalMagnitude, 0.1, 1.0 / 3, 1e-7,
        ]
        let strings = [
            "", "\u{0}\u{1}\u{1F}\u{7F}", "\"\\/\n\r\t\u{8}\u{C}", "\u{2028}\u{FEFF}", "😀\u{10FFFF}",
            "e\u{301}", "é",
        ]
        var deepest = JSONValue.null
        for _ in 0..<63 { deepest = .array([deepest]) }
        return numbers.map(JSONValue.number) + strings.map(JSONValue.string) + [
            .bool(true), .bool(false), .null, .array([]), .object([]), deepest,
            .object([
                (key: "", value: .array(numbers.map(JSONValue.number))),
                (
                    key: "e\u{301}",
                    value: .object(
                        strings.enumerated().map { (key: "k\($0.offset)", value: .string($0.element)) })
                ),
            ]),
        ]
    }()

    @Test func edgeValuesSerializeToTextThatParsesBackBitForBit() throws {
        for value in Self.edgeValues {
            let text = value.serialized
            let parsed = try JSONValue.parse(text)
            #expect(identical(parsed, value), "\(text)")
            #expect(Array(parsed.serialized.utf8) == Array(text.utf8))
        }
        // One level deeper than the edge is refused, so a parsed value is never too deep to parse again.
        #expect(throws: JSONParseError.self) {
            try JSONValue.parse(String(repeating: "[", count: 65) + String(repeating: "]", count: 65))
        }
    }

    /// Mutations of JSON documents: whatever parses serializes to text that parses back to the same
    /// value, bit for bit, and serializing that is a fixed point.
    @Test func mutatedDocumentsParseToAFixedPoint() throws {
        let seeds = [
            #"{"a": [-0, 0.1, 1e300, -5e-324, 12345678901234567890, "\u0000\ud83d\ude00\"\\\/é", true, false, null, {}], "": []}"#,
            Self.scenarioLike,
        ].map { Array($0.utf8) }
        var mutations = ByteMutations(seed: 0x750A)
        var accepted = 0
        for round in 0..<6_000 {
            let bytes = mutations.mutate(seeds[round % seeds.count])
            guard let text = String(validating: bytes, as: UTF8.self),
                let value = try? JSONValue.parse(text)
            else { continue }
            accepted += 1
            let serialized = value.serialized
            let again = try JSONValue.parse(serialized)
            #expect(identical(again, value), "round \(round): \(text)")
            #expect(Array(again.serialized.utf8) == Array(serialized.utf8), "round \(round)")
        }
        #expect(accepted > 500)
    }

    // MARK: Errors

    @Test func errorsNameLineAndColumnInCharacters() {
        #expect {
            try JSONValue.parse("{\n  \"é\": [1,\n  \"ü\" 2]}")
        } throws: { error in
            guard let error = error as? JSONParseError else { return false }
            return error.line == 3 && error.column == 7 && error.description.hasPrefix("line 3, column 7: ")
        }
    }

    @Test func duplicateKeysAreRefusedAtTheSecondKey() {
        let error = #expect(throws: JSONParseError.self) { try JSONValue.parse("{\"a\": 1,\n \"a\": 2}") }
        #expect(error?.description == "line 2, column 2: duplicate key \"a\"")
        // Nested objects have keys of their own.
        #expect(throws: Never.self) { try JSONValue.parse(#"{"a": {"a": 1}}"#) }
    }

    @Test func textOverTheSizeLimitIsRefusedBeforeParsing() {
        let big = [UInt8](repeating: 0x20, count: JSONValue.maximumBytes + 1)
        #expect {
            try JSONValue.parse(utf8: big)
        } throws: { error in
            (error as? JSONParseError)?.reason.contains("\(JSONValue.maximumBytes)-byte limit") == true
        }
        #expect(throws: JSONParseError.self) { try JSONValue.parse(utf8: [0x22, 0xC3, 0x28, 0x22]) }
    }

    // MARK: Formats

    @Test func prettySortedLayoutIsFoundations() {
        let value = JSONValue.object([
            (key: "b", value: .array([.string("x/y"), .integer(-3)])), (key: "a", value: .bool(true)),
            (key: "e", value: .array([])), (key: "d", value: .object([])),
            (key: "c", value: .object([(key: "z", value: .null), (key: "y", value: .number(0.5))])),
        ])
        let expected = """
            {
              "a" : true,
              "b" : [
                "x/y",
                -3
              ],
              "c" : {
                "y" : 0.5,
                "z" : null
              },
              "d" : {

              },
              "e" : [

              ]
            }
            """
        #expect(value.serialized(.prettySorted) == expected)
        #expect(
            value.serialized(JSONValue.Format(pretty: false, sortedKeys: true)).hasPrefix(#"{"a":true,"b""#))
        #expect(value.serialized == value.serialized(.compact))
        #expect(JSONValue.string("\u{8}\u{C}\u{1}").serialized == #""\b\f\u0001""#)
    }

    @Test func sortedKeysFollowUnicodeScalarOrder() throws {
        let value = try JSONValue.parse(#"{"é": 1, "z": 2, "B": 3, "a": 4, "10": 5, "9": 6}"#)
        #expect(
            value.serialized(JSONValue.Format(pretty: false, sortedKeys: true))
                == #"{"10":5,"9":6,"B":3,"a":4,"z":2,"é":1}"#)
    }
}

/// Whether two values are the same to the bit: numbers by bit pattern, strings and keys by Unicode
/// scalars (`==` would take -0 for 0 and a decomposed accent for a composed one).
func identical(_ first: JSONValue, _ second: JSONValue) -> Bool {
    switch (first, second) {
    case (.null, .null): return true
    case (.bool(let a), .bool(let b)): return a == b
    case (.number(let a), .number(let b)): return a.bitPattern == b.bitPattern
    case (.string(let a), .string(let b)): return a.unicodeScalars.elementsEqual(b.unicodeScalars)
    case (.array(let a), .array(let b)): return a.count == b.count && zip(a, b).allSatisfy(identical)
    case (.object(let a), .object(let b)):
        return a.count == b.count
            && zip(a, b).allSatisfy {
                $0.key.unicodeScalars.elementsEqual($1.key.unicodeScalars) && identical($0.value, $1.value)
            }
    case (.null, _), (.bool, _), (.number, _), (.string, _), (.array, _), (.object, _): return false
    }
}
