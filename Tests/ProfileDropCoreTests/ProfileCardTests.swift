import Foundation
import ProfileDropCrypto
import ProfileDropJSON
import ProfileDropTestSupport
import Testing

@testable import FuzzSupport
@testable import ProfileDropCore

private let jpegHeader: [UInt8] = [0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x10, 0x4A, 0x46, 0x49, 0x46]
private let pngHeader: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]

private func jpeg(totalBytes: Int) -> [UInt8] {
    jpegHeader + [UInt8](repeating: 0x5A, count: totalBytes - jpegHeader.count)
}

private func cardJSON(replacing key: String? = nil, with value: String? = nil, adding extra: String? = nil)
    -> String
{
    var fields: [(String, String)] = [
        ("name", "\"Bori\""), ("age", "3"), ("sex", "\"female\""), ("neutered", "true"),
        ("size", "\"small\""),
        ("keywords", "[\"calm\", \"loves fetch\"]"), ("owner", "\"minji\""),
    ]
    if let key {
        fields.removeAll { $0.0 == key }
        if let value { fields.append((key, value)) }
    }
    var body = fields.map { "\"\($0.0)\": \($0.1)" }
    if let extra { body.append(extra) }
    return "{" + body.joined(separator: ", ") + "}"
}

/// Parses card JSON whose photos are `photos` in memory; another photo name is unreadable.
private func parse(_ json: String, photos: [String: [UInt8]] = [:]) throws(CardError) -> ProfileCard {
    try parse(Array(json.utf8), photos: photos)
}

private func parse(_ json: [UInt8], photos: [String: [UInt8]] = [:]) throws(CardError) -> ProfileCard {
    try ProfileCard(jsonData: json) { name throws(CardError) in
        guard let data = photos[name] else {
            throw CardError(.photoUnreadable, field: "photo", "photo \(name) is not in the test's set")
        }
        return try ProfileCard.Photo(data: data)
    }
}

private func sampleCard(photo: [UInt8]? = nil) throws -> ProfileCard {
    try ProfileCard(
        name: "Bori", age: 3, sex: .female, neutered: true, size: .small, keywords: ["calm", "loves fetch"],
        owner: "minji", photo: try photo.map { try ProfileCard.Photo(data: $0) })
}

@Suite("Profile card")
struct ProfileCardTests {
    // MARK: Reading card JSON

    @Test("Keywords and photo are optional; the photo is read under the name the card gives")
    func optionalFields() throws {
        let bare = try parse(cardJSON(replacing: "keywords"))
        #expect(bare.keywords.isEmpty)
        #expect(bare.photo == nil)

        let card = try parse(
            cardJSON(adding: "\"photo\": \"dog.png\""), photos: ["dog.png": pngHeader + [1, 2, 3]])
        #expect(card.photo?.format == .png)
        #expect(card.photo?.data == pngHeader + [1, 2, 3])
    }

    @Test("Photos are equal when their format and every byte are")
    func photoEquality() throws {
        let jpeg: [UInt8] = [0xFF, 0xD8, 0xFF] + (0..<1001).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        let same = try ProfileCard.Photo(data: jpeg)
        #expect(try ProfileCard.Photo(data: jpeg) == same)
        var lastByte = jpeg
        lastByte[lastByte.count - 1] ^= 1
        #expect(try ProfileCard.Photo(data: lastByte) != same)
        #expect(try ProfileCard.Photo(data: Array(jpeg.dropLast())) != same)
        let png: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]
        #expect(try ProfileCard.Photo(data: png) != ProfileCard.Photo(data: png + [0]))
        #expect(try ProfileCard.Photo(data: png) == ProfileCard.Photo(data: png))
    }

    @Test("The photo is read only once every other field is valid")
    func photoIsReadLast() {
        var asked: [String] = []
        #expect(throws: CardError.self) {
            _ = try ProfileCard(
                jsonData: Array(cardJSON(replacing: "age", with: "31", adding: "\"photo\": \"a.jpg\"").utf8)
            ) { name throws(CardError) in
                asked.append(name)
                return try ProfileCard.Photo(data: jpegHeader)
            }
        }
        #expect(asked.isEmpty)
    }

    @Test("A parsed object reads as its text does")
    func parsedObject() throws {
        let text = cardJSON(adding: "\"photo\": \"p.png\"")
        let value = try JSONValue.parse(text)
        let card = try ProfileCard(json: value) { _ throws(CardError) in
            try ProfileCard.Photo(data: pngHeader)
        }
        #expect(card == (try parse(text, photos: ["p.png": pngHeader])))
    }

    struct BadCard: CustomTestStringConvertible, Sendable {
        let json: String
        let code: CardError.Code
        let field: String?
        let mentions: [String]
        var testDescription: String { json }
    }

    static let badCards: [BadCard] = [
        BadCard(
            json: "{\"name\": }", code: .invalidJSON, field: nil, mentions: ["not valid JSON", "line 1"]),
        BadCard(json: "[1, 2]", code: .notAnObject, field: nil, mentions: ["top level", "an array"]),
        BadCard(json: "\"Bori\"", code: .notAnObject, field: nil, mentions: ["a string"]),
        BadCard(json: cardJSON(replacing: "name"), code: .missingKey, field: "name", mentions: ["\"name\""]),
        BadCard(
            json: cardJSON(replacing: "owner"), code: .missingKey, field: "owner", mentions: ["\"owner\""]),
        BadCard(
            json: cardJSON(adding: "\"colour\": \"brown\""), code: .unknownKey, field: "colour",
            mentions: ["unknown key \"colour\"", "allowed"]),
        BadCard(
            json: cardJSON(replacing: "neutered", with: "1"), code: .wrongType, field: "neutered",
            mentions: ["\"neutered\"", "true or false", "a number"]),
        BadCard(
            json: cardJSON(replacing: "neutered", with: "\"yes\""), code: .wrongType, field: "neutered",
            mentions: ["a string"]),
        BadCard(
            json: cardJSON(replacing: "age", with: "true"), code: .wrongType, field: "age",
            mentions: ["\"age\"", "an integer", "a boolean"]),
        BadCard(
            json: cardJSON(replacing: "age", with: "3.5"), code: .wrongType, field: "age",
            mentions: ["an integer", "3.5"]),
        BadCard(
            json: cardJSON(replacing: "age", with: "\"3\""), code: .wrongType, field: "age",
            mentions: ["a string"]),
        BadCard(
            json: cardJSON(replacing: "age", with: "31"), code: .invalidValue, field: "age",
            mentions: ["0 to 30"]),
        BadCard(
            json: cardJSON(replacing: "age", with: "-1"), code: .invalidValue, field: "age",
            mentions: ["-1"]),
        BadCard(
            json: cardJSON(replacing: "age", with: "1e300"), code: .invalidValue, field: "age",
            mentions: ["0 to 30"]),
        BadCard(
            json: cardJSON(replacing: "name", with: "null"), code: .wrongType, field: "name",
            mentions: ["a string", "null"]),
        BadCard(
            json: cardJSON(replacing: "name", with: "\"\""), code: .invalidValue, field: "name",
            mentions: ["1 to 40 characters", "found 0"]),
        BadCard(
            json: cardJSON(replacing: "name", with: "\"\(String(repeating: "b", count: 41))\""),
            code: .invalidValue,
            field: "name", mentions: ["found 41"]),
        // 41 Hangul syllables: 41 characters (123 UTF-8 bytes).
        BadCard(
            json: cardJSON(replacing: "name", with: "\"\(String(repeating: "\u{BCF4}", count: 41))\""),
            code: .invalidValue, field: "name", mentions: ["1 to 40 characters", "found 41"]),
        // One character of 200 bytes: an "e" with 100 combining acute accents.
        BadCard(
            json: cardJSON(
                replacing: "name", with: "\"e\(String(repeating: "\u{301}", count: 100))\""),
            code: .invalidValue, field: "name", mentions: ["at most 160 UTF-8 bytes", "found 201"]),
        // Bidi controls and zero-width characters (Unicode Cf) could disguise a name.
        BadCard(
            json: cardJSON(replacing: "name", with: "\"\u{202E}iroB\""), code: .invalidValue, field: "name",
            mentions: ["invisible formatting characters", "U+202E"]),
        BadCard(
            json: cardJSON(replacing: "owner", with: "\"min\u{200B}ji\""), code: .invalidValue,
            field: "owner", mentions: ["\"owner\"", "U+200B"]),
        BadCard(
            json: cardJSON(replacing: "keywords", with: "[\"calm\", \"\u{2066}x\"]"), code: .invalidValue,
            field: "keywords", mentions: ["item 2", "U+2066"]),
        // Fillers and other default-ignorable code points show nothing: "Max" padded with them
        // would pass for "Max".
        BadCard(
            json: cardJSON(replacing: "name", with: "\"Max\u{3164}\""), code: .invalidValue, field: "name",
            mentions: ["invisible formatting characters", "U+3164"]),
        BadCard(
            json: cardJSON(replacing: "name", with: "\"\u{FFA0}Max\""), code: .invalidValue, field: "name",
            mentions: ["U+FFA0"]),
        BadCard(
            json: cardJSON(replacing: "owner", with: "\"joon\u{115F}\""), code: .invalidValue, field: "owner",
            mentions: ["U+115F"]),
        BadCard(
            json: cardJSON(replacing: "keywords", with: "[\"calm\u{FE0F}\"]"), code: .invalidValue,
            field: "keywords", mentions: ["item 1", "U+FE0F"]),
        BadCard(
            json: cardJSON(replacing: "name", with: "\"Max\u{2800}\""), code: .invalidValue, field: "name",
            mentions: ["U+2800"]),
        BadCard(
            json: cardJSON(replacing: "name", with: "\"Bo\\nri\""), code: .invalidValue, field: "name",
            mentions: ["control characters"]),
        // DEL and the C1 controls (U+0080 to U+009F) are control characters too.
        BadCard(
            json: cardJSON(replacing: "name", with: "\"Bo\\u007fri\""), code: .invalidValue, field: "name",
            mentions: ["control characters"]),
        BadCard(
            json: cardJSON(replacing: "owner", with: "\"min\\u0085ji\""), code: .invalidValue, field: "owner",
            mentions: ["control characters"]),
        // A control character is reported even behind a format character.
        BadCard(
            json: cardJSON(replacing: "name", with: "\"\u{200B}Bo\\nri\""), code: .invalidValue,
            field: "name",
            mentions: ["control characters"]),
        BadCard(
            json: cardJSON(replacing: "owner", with: "\"\(String(repeating: "m", count: 41))\""),
            code: .invalidValue, field: "owner", mentions: ["\"owner\"", "found 41"]),
        BadCard(
            json: cardJSON(replacing: "sex", with: "\"boy\""), code: .invalidValue, field: "sex",
            mentions: ["male, female", "\"boy\""]),
        BadCard(
            json: cardJSON(replacing: "size", with: "\"huge\""), code: .invalidValue, field: "size",
            mentions: ["small, medium, large", "\"huge\""]),
        BadCard(
            json: cardJSON(replacing: "keywords", with: "[\"a\", \"b\", \"c\", \"d\", \"e\", \"f\"]"),
            code: .invalidValue, field: "keywords", mentions: ["at most 5", "found 6"]),
        BadCard(
            json: cardJSON(
                replacing: "keywords", with: "[\"calm\", \"\(String(repeating: "k", count: 25))\"]"),
            code: .invalidValue, field: "keywords", mentions: ["item 2", "1 to 24 characters", "found 25"]),
        BadCard(
            json: cardJSON(replacing: "keywords", with: "[\"calm\", \"\"]"), code: .invalidValue,
            field: "keywords",
            mentions: ["item 2", "found 0"]),
        BadCard(
            json: cardJSON(replacing: "keywords", with: "\"calm\""), code: .wrongType, field: "keywords",
            mentions: ["an array of strings"]),
        BadCard(
            json: cardJSON(replacing: "keywords", with: "[\"calm\", 7]"), code: .wrongType, field: "keywords",
            mentions: ["item 2", "a string", "a number"]),
        BadCard(
            json: cardJSON(adding: "\"photo\": 12"), code: .wrongType, field: "photo",
            mentions: ["\"photo\"", "a string"]),
    ]

    @Test("Each malformed card names its key in a one-line diagnostic", arguments: badCards)
    func rejectsBadCard(_ bad: BadCard) {
        do {
            let card = try parse(bad.json)
            Issue.record("accepted \(card)")
        } catch {
            #expect(error.code == bad.code, "\(error.diagnostic)")
            #expect(error.field == bad.field, "\(error.diagnostic)")
            for text in bad.mentions {
                #expect(error.diagnostic.contains(text), "\(error.diagnostic) should mention \(text)")
            }
            #expect(!error.diagnostic.contains("\n"))
            #expect(error.description == error.diagnostic)
        }
    }

    @Test("Names are counted in characters: 14 Korean syllables (42 UTF-8 bytes) are a valid name")
    func namesCountCharacters() throws {
        let korean = String(repeating: "\u{BCF4}\u{B9AC}", count: 7)
        #expect(korean.count == 14 && korean.utf8.count == 42)
        let card = try parse(cardJSON(replacing: "name", with: "\"\(korean)\""))
        #expect(card.name == korean)
        #expect(try ProfileCard(decoding: card.encoded()) == card)
        let forty = String(repeating: "\u{BCF4}", count: 40)
        #expect(try parse(cardJSON(replacing: "owner", with: "\"\(forty)\"")).owner == forty)
    }

    @Test("Every problem of a card is reported, each naming its key, on one line")
    func everyProblemIsReported() {
        let json = cardJSON(replacing: "age", with: "31", adding: "\"colour\": \"brown\"")
            .replacingOccurrences(of: "\"small\"", with: "\"huge\"")
            .replacingOccurrences(of: "\"minji\"", with: "\"\"")
        do {
            _ = try parse(json)
            Issue.record("accepted a card with four problems")
        } catch {
            #expect(error.problems.map(\.field) == ["colour", "age", "size", "owner"])
            #expect(error.code == .unknownKey && error.field == "colour")
            for problem in error.problems {
                #expect(error.diagnostic.contains(problem.diagnostic))
            }
            #expect(error.diagnostic.contains("\"age\" must be from 0 to 30"))
            #expect(error.diagnostic.contains("\"owner\" must be 1 to 40 characters"))
            #expect(!error.diagnostic.contains("\n"))
        }
        do {
            _ = try parse(
                cardJSON(replacing: "name", adding: "\"x\": 1").replacingOccurrences(
                    of: "\"owner\"", with: "\"y\""))
            Issue.record("accepted a card with missing keys")
        } catch {
            #expect(error.problems.map(\.code) == [.unknownKey, .unknownKey, .missingKey, .missingKey])
            #expect(error.problems.map(\.field) == ["x", "y", "name", "owner"])
        }
    }

    @Test("A peer's card with a bidi control, zero-width character or filler is refused, never trapped on")
    func wireRefusesFormatCharacters() throws {
        let good = try sampleCard().encoded()
        // The name "Bori" is bytes 2...5; U+202E is E2 80 AE, U+200B is E2 80 8B, and U+3164 HANGUL
        // FILLER, which is not a format character but shows nothing, is E3 85 A4.
        for formatCharacter: [UInt8] in [[0xE2, 0x80, 0xAE], [0xE2, 0x80, 0x8B], [0xE3, 0x85, 0xA4]] {
            let bytes = [good[0], 4 + 3] + formatCharacter + Array(good[2...])
            do {
                _ = try ProfileCard(decoding: bytes)
                Issue.record("accepted a name with a format character")
            } catch {
                #expect(error.code == .invalidValue)
                #expect(error.field == "name")
                #expect(error.diagnostic.contains("invisible formatting characters"))
            }
        }
        // The wire takes what the file format takes: 40 characters of up to 4 bytes each.
        let longest = String(repeating: "\u{1F415}", count: 40)
        let card = try ProfileCard(
            name: longest, age: 3, sex: .female, neutered: true, size: .small, owner: longest)
        #expect(try ProfileCard(decoding: card.encoded()) == card)
    }

    /// The device, not only the decoder: a peer's card whose name starts with U+202E (right-to-left
    /// override) ends the session as `card-invalid`, and no card is delivered.
    @Test("A device refuses a peer's card with a bidi control in its name")
    func deviceRefusesAPeerCardWithABidiControl() throws {
        let honest = DeviceFuzz.card("Kong", photoBytes: 1500).encoded()
        #expect(honest[1] == 4 && Array(honest[2...5]) == Array("Kong".utf8))
        let disguised = [honest[0], 7, 0xE2, 0x80, 0xAE] + Array(honest[2...])
        var run = ScriptedPeerRun(
            configuration: Fixtures.configuration("Bori", consent: .share, seed: 1), peerCardBytes: disguised)
        run.run(until: .zero + .seconds(60)) { $0.closed != nil }
        let reason = try #require(run.endedSessions.first?.reason ?? run.closed?.reason)
        guard case .error(let error) = reason else {
            Issue.record("the session ended as \(reason)")
            return
        }
        #expect(error.code == .cardInvalid, "\(error)")
        #expect("\(error)".contains("invisible formatting characters"))
        #expect(!run.events.contains { if case .cardVerified = $0.event { true } else { false } })
    }

    @Test("Whole numbers written with a fraction are integers; booleans are never numbers")
    func numberEdgeCases() throws {
        #expect(try parse(cardJSON(replacing: "age", with: "3.0")).age == 3)
        #expect(try parse(cardJSON(replacing: "neutered", with: "false")).neutered == false)
        for (key, value) in [("neutered", "0"), ("age", "false"), ("neutered", "null")] {
            #expect(throws: CardError.self) { _ = try parse(cardJSON(replacing: key, with: value)) }
        }
    }

    @Test("Invalid JSON is located by line and column")
    func jsonErrorLocation() {
        #expect {
            _ = try parse("{\n  \"name\": \"Bori\",\n  \"age\" 3\n}")
        } throws: { error in
            guard let error = error as? CardError else { return false }
            return error.code == .invalidJSON && error.diagnostic.contains("line 3")
        }
    }

    @Test("Diagnostics quoting outside text stay on one line")
    func diagnosticsAreOneLine() {
        do {
            _ = try parse(cardJSON(adding: "\"bad\\nkey\": 1"))
            Issue.record("accepted an unknown key")
        } catch {
            #expect(error.code == .unknownKey)
            #expect(error.field == "bad\nkey")
            #expect(!error.diagnostic.contains("\n"))
            #expect(error.diagnostic.contains("bad\\nkey"))
        }
        #expect(CardError(.invalidValue, "a\nb\r\nc").diagnostic == "a b  c")
    }

    // MARK: Writing card files

    @Test("A card written as JSON loads back equal, with true/false and integers kept as such")
    func jsonRoundTrip() throws {
        let original = try sampleCard(photo: pngHeader + [0, 1, 2, 3])
        let photoName = "bori.\(try #require(original.photo).format.fileExtension)"
        let json = original.jsonData(photoFileName: photoName)

        let text = try #require(String(validating: json, as: UTF8.self))
        #expect(text.contains("\"neutered\" : true"))
        #expect(text.contains("\"age\" : 3"))
        #expect(text.hasSuffix("}\n"))
        #expect(try parse(json, photos: [photoName: try #require(original.photo).data]) == original)
        #expect(original.jsonData(photoFileName: photoName) == json)

        let withoutPhoto = try sampleCard()
        guard case .object(let members) = withoutPhoto.json(photoFileName: nil) else {
            Issue.record("a card's JSON is not an object")
            return
        }
        #expect(!members.contains { $0.key == "photo" })
        #expect(try parse(withoutPhoto.jsonData(photoFileName: nil)) == withoutPhoto)
    }

    /// The bytes earlier versions wrote through Foundation's `JSONSerialization` (pretty-printed,
    /// sorted keys, slashes unescaped), so saved cards stay byte for byte.
    @Test("Card JSON is laid out as earlier versions wrote it")
    func jsonLayout() throws {
        let full = try sampleCard(photo: pngHeader)
        #expect(
            String(decoding: full.jsonData(photoFileName: "bori.png"), as: UTF8.self) == """
                {
                  "age" : 3,
                  "keywords" : [
                    "calm",
                    "loves fetch"
                  ],
                  "name" : "Bori",
                  "neutered" : true,
                  "owner" : "minji",
                  "photo" : "bori.png",
                  "sex" : "female",
                  "size" : "small"
                }

                """)
        let bare = try ProfileCard(
            name: "Cafe\u{301} \"Bo\"", age: 0, sex: .male, neutered: false, size: .large, keywords: [],
            owner: "ü/x")
        #expect(
            String(decoding: bare.jsonData(photoFileName: nil), as: UTF8.self) == """
                {
                  "age" : 0,
                  "keywords" : [

                  ],
                  "name" : "Cafe\u{301} \\"Bo\\"",
                  "neutered" : false,
                  "owner" : "ü/x",
                  "sex" : "male",
                  "size" : "large"
                }

                """)
    }

    /// Whatever card JSON loads writes JSON that loads back to the same card, byte for byte in
    /// its binary encoding (Swift's `==` on strings would let a different normalization pass), and
    /// writing is a fixed point. Strings with escapes and decomposed accents are among the inputs.
    @Test("Card JSON that loads writes back as a fixed point that loads to the same bytes")
    func jsonMutationsRoundTrip() throws {
        let seeds = [
            try sampleCard(),
            try ProfileCard(
                name: "Cafe\u{301} \"Bo\"", age: 0, sex: .male, neutered: false, size: .large,
                keywords: ["a/b \\ c", "탐험을 좋아함"], owner: "ü"),
        ].map { $0.jsonData(photoFileName: nil) }
        var mutations = ByteMutations(seed: 0x150A)
        var accepted = 0
        for round in 0..<2000 {
            let json = mutations.mutate(seeds[round % seeds.count])
            guard let card = try? parse(json) else { continue }
            accepted += 1
            let written = card.jsonData(photoFileName: nil)
            let again = try parse(written)
            #expect(again.encoded() == card.encoded(), "\(String(decoding: json, as: UTF8.self))")
            #expect(again.jsonData(photoFileName: nil) == written)
        }
        #expect(accepted > 0)
    }

    // MARK: Binary encoding

    @Test("Binary round trip, with and without a photo")
    func binaryRoundTrip() throws {
        for photo in [nil, jpeg(totalBytes: 300), pngHeader + [7, 7]] {
            let card = try sampleCard(photo: photo)
            let bytes = card.encoded()
            #expect(bytes.first == ProfileCard.encodingVersion)
            #expect(try ProfileCard(decoding: bytes) == card)
            #expect(try ProfileCard(decoding: bytes[...]) == card)
        }
    }

    @Test("The encoding follows the documented layout")
    func binaryLayout() throws {
        let card = try ProfileCard(
            name: "Bo", age: 3, sex: .female, neutered: true, size: .large, keywords: ["ab"], owner: "m",
            photo: try ProfileCard.Photo(data: [0xFF, 0xD8, 0xFF]))
        let expected: [UInt8] = [
            1,  // version
            2, 0x42, 0x6F,  // "Bo"
            3, 1, 1, 2,  // age, female, neutered, large
            1, 2, 0x61, 0x62,  // one keyword "ab"
            1, 0x6D,  // "m"
            1, 0, 0, 0, 3, 0xFF, 0xD8, 0xFF,  // JPEG, 3 bytes
        ]
        #expect(card.encoded() == expected)
    }

    @Test("The largest card encodes to exactly maximumEncodedLength bytes")
    func maximumLength() throws {
        // Characters of four UTF-8 bytes fill the byte ceilings.
        let card = try ProfileCard(
            name: String(repeating: "\u{1F415}", count: 40), age: 30, sex: .male, neutered: false,
            size: .medium, keywords: Array(repeating: String(repeating: "\u{1F9B4}", count: 24), count: 5),
            owner: String(repeating: "\u{1F464}", count: 40),
            photo: try ProfileCard.Photo(data: jpeg(totalBytes: ProfileCard.Limits.photoBytes)))
        #expect(card.encoded().count == ProfileCard.maximumEncodedLength)
        #expect(ProfileCard.maximumEncodedLength == 262_962)
        #expect(try ProfileCard(decoding: card.encoded()) == card)
    }

    @Test("The digest is BLAKE2b-256 of the encoding and tells cards apart")
    func digest() throws {
        let card = try sampleCard()
        #expect(card.digest == BLAKE2b.hash(card.encoded(), outputLength: 32))
        #expect(card.digest.count == 32)
        #expect(try sampleCard().digest == card.digest)
        #expect(try sampleCard(photo: pngHeader).digest != card.digest)
    }

    @Test("Every truncation of an encoding is rejected")
    func truncations() throws {
        for card in [try sampleCard(), try sampleCard(photo: jpeg(totalBytes: 64))] {
            let bytes = card.encoded()
            for length in 0..<bytes.count {
                #expect(throws: CardError.self) { _ = try ProfileCard(decoding: bytes.prefix(length)) }
            }
        }
    }

    @Test("Specific malformed encodings are rejected with their own codes")
    func malformedEncodings() throws {
        let good = try sampleCard(photo: jpeg(totalBytes: 16)).encoded()
        // Offsets in `good`: version 0, name 1...5, age 6, sex 7, neutered 8, size 9, keyword count 10.
        let photoTag = good.count - 16 - 5
        func mutated(_ change: (inout [UInt8]) -> Void) -> [UInt8] {
            var bytes = good
            change(&bytes)
            return bytes
        }
        let cases: [([UInt8], CardError.Code, String?)] = [
            (mutated { $0[0] = 2 }, .unsupportedVersion, "version"),
            (good + [0], .malformedEncoding, nil),
            (mutated { $0[6] = 31 }, .invalidValue, "age"),
            (mutated { $0[7] = 2 }, .malformedEncoding, "sex"),
            (mutated { $0[8] = 2 }, .malformedEncoding, "neutered"),
            (mutated { $0[9] = 3 }, .malformedEncoding, "size"),
            (mutated { $0[10] = 6 }, .malformedEncoding, "keywords"),
            (mutated { $0[1] = 0 }, .invalidValue, "name"),
            (mutated { $0[2] = 0xC3 }, .malformedEncoding, "name"),  // a lead byte followed by ASCII
            (mutated { $0[2] = 0x07 }, .invalidValue, "name"),  // BEL
            (mutated { $0[photoTag] = 2 }, .photoFormat, "photo"),  // says PNG, holds JPEG
            (mutated { $0[photoTag] = 3 }, .malformedEncoding, "photo"),
            (mutated { $0[photoTag + 1] = 0x7F }, .photoTooLarge, "photo"),  // 2 GiB declared
            (mutated { $0[photoTag + 4] = 0 }, .photoTooLarge, "photo"),  // zero length
        ]
        for (bytes, code, field) in cases {
            do {
                _ = try ProfileCard(decoding: bytes)
                Issue.record("accepted a malformed card expecting \(code)")
            } catch {
                #expect(error.code == code, "\(error.diagnostic)")
                #expect(error.field == field, "\(error.diagnostic)")
            }
        }
    }

    @Test("Random mutations either fail cleanly or decode to a card that re-encodes identically")
    func randomMutations() throws {
        var mutations = ByteMutations(seed: 0xCA4D)
        let good = try sampleCard(photo: pngHeader + [1, 2, 3, 4]).encoded()
        let accepted = mutations.accepted(
            rounds: 3000, of: [good], decode: { try? ProfileCard(decoding: $0) },
            check: {
                card, bytes, _ in #expect(card.encoded() == bytes)
            })
        // Most single-byte changes hit text or the photo body and stay valid; most others fail.
        #expect(accepted > 0 && accepted < 3000)
        var random = DeterministicRandom(seed: 0xCA4E)
        for length in [0, 1, 5, 40, 300] {
            #expect(throws: CardError.self) { _ = try ProfileCard(decoding: random.bytes(length)) }
        }
    }

    @Test("The one-line summary shows every field")
    func summary() throws {
        let summary = try sampleCard(photo: pngHeader).summary
        for part in ["Bori", "3 y", "female", "neutered", "small", "minji", "calm, loves fetch", "PNG"] {
            #expect(summary.contains(part), "\(summary)")
        }
    }
}
