import Foundation
import ProfileDropCardFile
import ProfileDropCore
import Testing

/// A scratch directory removed when the test ends.
private final class TemporaryDirectory {
    let path: String

    init() throws {
        path =
            FileManager.default.temporaryDirectory
            .appendingPathComponent("card-file-tests-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(atPath: path) }

    @discardableResult
    func write(_ name: String, _ bytes: [UInt8]) throws -> String {
        let file = (path as NSString).appendingPathComponent(name)
        try Data(bytes).write(to: URL(fileURLWithPath: file))
        return file
    }

    @discardableResult
    func write(_ name: String, text: String) throws -> String {
        try write(name, Array(text.utf8))
    }
}

private let jpegHeader: [UInt8] = [0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x10, 0x4A, 0x46, 0x49, 0x46]
private let pngHeader: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]

private func jpeg(totalBytes: Int) -> [UInt8] {
    jpegHeader + [UInt8](repeating: 0x5A, count: totalBytes - jpegHeader.count)
}

private let validFields = """
    "name": "Bori", "age": 3, "sex": "female", "neutered": true, "size": "small",
    "keywords": ["calm", "loves fetch"], "owner": "minji"
    """

private func card(photo name: String, in directory: String) throws(CardError) -> ProfileCard {
    try CardFile.card(
        jsonData: Array("{\(validFields), \"photo\": \"\(name)\"}".utf8), baseDirectory: directory)
}

/// Card files on disk and the photos they name (the parsing itself is Core's, in ProfileCardTests).
@Suite("Card file")
struct CardFileTests {
    @Test("A valid card file loads with its photo, resolved next to the JSON")
    func loadsValidFile() throws {
        let directory = try TemporaryDirectory()
        let photo = jpeg(totalBytes: 2048)
        try directory.write("bori.jpg", photo)
        let path = try directory.write("bori.json", text: "{\(validFields), \"photo\": \"bori.jpg\"}")

        let card = try CardFile.load(contentsOf: path)
        #expect(card.name == "Bori")
        #expect(card.age == 3)
        #expect(card.sex == .female)
        #expect(card.neutered)
        #expect(card.size == .small)
        #expect(card.keywords == ["calm", "loves fetch"])
        #expect(card.owner == "minji")
        #expect(card.photo?.format == .jpeg)
        #expect(card.photo?.data == photo)
    }

    @Test("A missing card file is reported with its path")
    func missingFile() {
        #expect {
            _ = try CardFile.load(contentsOf: "/nonexistent/dir/rex.json")
        } throws: { error in
            guard let error = error as? CardError else { return false }
            return error.code == .fileUnreadable && error.diagnostic.contains("rex.json")
                && error.diagnostic.contains("no such file")
        }
    }

    @Test("Invalid JSON in a file is reported as FILE:LINE:COLUMN: reason")
    func invalidJSONFile() throws {
        let directory = try TemporaryDirectory()
        let path = try directory.write("bad.json", text: "{\n  \"name\": \"Bori\",\n  \"age\" 3\n}")
        #expect(throws: CardError(.invalidJSON, "\(path):3:9: expected ':'")) {
            _ = try CardFile.load(contentsOf: path)
        }
        let bori = try directory.write(
            "bori.json", text: "{\n  \"name\": \"Bori\",\n  \"age\": 3, \"sex\" : \"female\" \"size\": 1\n}")
        #expect(throws: CardError(.invalidJSON, "\(bori):3:30: expected ',' or '}'")) {
            _ = try CardFile.load(contentsOf: bori)
        }
    }

    @Test("Every problem of a card file is reported after the file's name, each naming its key")
    func everyProblemNamesTheFile() throws {
        let directory = try TemporaryDirectory()
        let path = try directory.write(
            "rex.json",
            text: """
                {"name": "\u{202E}Rex", "age": 31, "sex": "boy", "neutered": true, "size": "small",
                 "owner": "", "colour": 1}
                """)
        do {
            _ = try CardFile.load(contentsOf: path)
            Issue.record("accepted a card with five problems")
        } catch {
            #expect(error.problems.map(\.field) == ["colour", "name", "age", "sex", "owner"])
            #expect(error.diagnostic.hasPrefix("\(path): unknown key \"colour\""))
            #expect(
                error.diagnostic.contains("; key \"name\" must not contain invisible formatting characters"))
            #expect(error.diagnostic.contains("; key \"owner\" must be 1 to 40 characters, found 0"))
            #expect(!error.diagnostic.contains("\n"))
        }
    }

    @Test("A 14-character Korean name (42 UTF-8 bytes) loads")
    func koreanNameLoads() throws {
        let directory = try TemporaryDirectory()
        let name =
            "\u{BCF4}\u{B9AC}\u{CD08}\u{CF54}\u{BC14}\u{B2D0}\u{B77C}\u{D478}\u{B4E4}\u{C2DC}\u{BC14}\u{AC1C}\u{C9C4}\u{B3D7}"
        #expect(name.count == 14 && name.utf8.count == 42)
        let path = try directory.write(
            "bori.json",
            text: """
                {"name": "\(name)", "age": 3, "sex": "female", "neutered": true, "size": "small", "owner": "\u{BBFC}\u{C9C0}"}
                """)
        #expect(try CardFile.load(contentsOf: path).name == name)
    }

    @Test("Photo problems: missing, a directory, not JPEG/PNG, empty")
    func photoErrors() throws {
        let directory = try TemporaryDirectory()
        try FileManager.default.createDirectory(
            atPath: (directory.path as NSString).appendingPathComponent("album"),
            withIntermediateDirectories: true)
        try directory.write("dog.gif", Array("GIF89a".utf8) + [0, 0, 0])
        try directory.write("empty.jpg", [])

        let cases: [(String, CardError.Code, String)] = [
            ("nope.jpg", .photoUnreadable, "no such file"),
            ("album", .photoUnreadable, "directory"),
            ("dog.gif", .photoFormat, "neither JPEG nor PNG"),
            ("empty.jpg", .photoFormat, "neither JPEG nor PNG"),
        ]
        for (name, code, text) in cases {
            do {
                _ = try card(photo: name, in: directory.path)
                Issue.record("accepted photo \(name)")
            } catch {
                #expect(error.code == code, "\(error.diagnostic)")
                #expect(error.field == "photo")
                #expect(error.diagnostic.contains(name), "\(error.diagnostic)")
                #expect(error.diagnostic.contains(text), "\(error.diagnostic)")
            }
        }
    }

    @Test("Photos up to 256 KiB are accepted, one byte more is refused with both sizes named")
    func photoSizeLimit() throws {
        let directory = try TemporaryDirectory()
        try directory.write("max.jpg", jpeg(totalBytes: ProfileCard.Limits.photoBytes))
        try directory.write("big.jpg", jpeg(totalBytes: ProfileCard.Limits.photoBytes + 1))

        #expect(try card(photo: "max.jpg", in: directory.path).photo?.data.count == 262_144)
        do {
            _ = try card(photo: "big.jpg", in: directory.path)
            Issue.record("accepted an oversized photo")
        } catch {
            #expect(error.code == .photoTooLarge)
            #expect(error.diagnostic.contains("262145"), "\(error.diagnostic)")
            #expect(error.diagnostic.contains("262144"), "\(error.diagnostic)")
        }
    }

    @Test("Absolute photo paths are used as they are; PNG photos are recognized")
    func absolutePhotoPath() throws {
        let directory = try TemporaryDirectory()
        let photoPath = try directory.write("abs.png", pngHeader + [9])
        #expect(try card(photo: photoPath, in: "/somewhere/else").photo?.format == .png)
    }

    @Test("A card saved with its photo loads back equal")
    func savedCardLoadsBack() throws {
        let directory = try TemporaryDirectory()
        let original = try ProfileCard(
            name: "Bori", age: 3, sex: .female, neutered: true, size: .small, keywords: ["calm"],
            owner: "minji", photo: try ProfileCard.Photo(data: pngHeader + [0, 1, 2, 3]))
        let photo = try #require(original.photo)
        let photoName = "bori.\(photo.format.fileExtension)"
        try directory.write(photoName, photo.data)
        let path = try directory.write("bori.json", original.jsonData(photoFileName: photoName))
        #expect(try CardFile.load(contentsOf: path) == original)
        #expect(CardFile.directory(of: "bori.json") == ".")
        #expect(CardFile.directory(of: "/a/b/bori.json") == "/a/b")
    }
}
