import Foundation
import ProfileDrop
import Testing

@testable import ProfileDropCLI
@testable import ProfileDropCore

/// `--save DIR`: checked before anything is exchanged, and never overwriting an earlier card.
@Suite struct CardSaverTests {
    static func temporaryDirectory() throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent(
            "profiledrop-saver-\(UUID().uuidString)"
        ).path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    static func card(photo: [UInt8]?) throws -> ProfileCard {
        try ProfileCard(
            name: "Bori", age: 3, sex: .female, neutered: true, size: .small, keywords: ["calm"],
            owner: "Mina",
            photo: photo.map { try ProfileCard.Photo(data: $0) })
    }

    @Test func aFileOrAnUnwritableDirectoryIsRefusedAtTheStart() throws {
        let directory = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let file = directory + "/not-a-directory"
        try Data("x".utf8).write(to: URL(fileURLWithPath: file))
        #expect(throws: UsageError.self) { try CardSaver.checkDirectory(file) }
        #expect(throws: UsageError.self) { try CardSaver.checkDirectory(file + "/below") }
        if getuid() != 0 {
            let locked = directory + "/locked"
            try FileManager.default.createDirectory(atPath: locked, withIntermediateDirectories: false)
            chmod(locked, 0o500)
            #expect(throws: UsageError.self) { try CardSaver.checkDirectory(locked) }
        }
        // A directory that does not exist yet is created now.
        try CardSaver.checkDirectory(directory + "/new/cards")
        var isDirectory: ObjCBool = false
        #expect(FileManager.default.fileExists(atPath: directory + "/new/cards", isDirectory: &isDirectory))
        #expect(isDirectory.boolValue)
    }

    @Test func aSecondCardOfTheSameNameGetsTheNextFreeName() throws {
        let directory = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let first = try Self.card(photo: [0xFF, 0xD8, 0xFF, 0xE0, 1, 2, 3])
        let second = try Self.card(photo: [0xFF, 0xD8, 0xFF, 0xE0, 9, 9, 9])
        let third = try Self.card(photo: nil)
        #expect(try CardSaver.save(first, in: directory) == directory + "/Bori.json")
        #expect(try CardSaver.save(second, in: directory) == directory + "/Bori-2.json")
        #expect(try CardSaver.save(third, in: directory) == directory + "/Bori-3.json")
        // The first photo is still the first card's.
        #expect(
            try Data(contentsOf: URL(fileURLWithPath: directory + "/Bori.jpg"))
                == Data([0xFF, 0xD8, 0xFF, 0xE0, 1, 2, 3]))
        #expect(
            try Data(contentsOf: URL(fileURLWithPath: directory + "/Bori-2.jpg"))
                == Data([0xFF, 0xD8, 0xFF, 0xE0, 9, 9, 9]))
        let names = try FileManager.default.contentsOfDirectory(atPath: directory).sorted()
        #expect(names == ["Bori-2.jpg", "Bori-2.json", "Bori-3.json", "Bori.jpg", "Bori.json"])
    }

    /// A name held by anything, a link to nowhere included, is never written through: the card
    /// takes the next name, and nothing is left half-written beside it.
    @Test func aNameHeldByALinkIsPassedOver() throws {
        let directory = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try FileManager.default.createSymbolicLink(
            atPath: directory + "/Bori.json", withDestinationPath: directory + "/elsewhere.json")
        let card = try Self.card(photo: [0xFF, 0xD8, 0xFF, 0xE0, 1, 2, 3])
        #expect(try CardSaver.save(card, in: directory) == directory + "/Bori-2.json")
        #expect(!FileManager.default.fileExists(atPath: directory + "/elsewhere.json"))
        let names = try FileManager.default.contentsOfDirectory(atPath: directory).sorted()
        #expect(names == ["Bori-2.jpg", "Bori-2.json", "Bori.json"])
    }

    /// A peer's name never becomes an option-like or hidden file name.
    @Test func stemsNeverStartWithADashOrADot() throws {
        for (name, expected) in [("-rf", "rf"), ("--help me", "help_me"), ("..", "card"), ("_x_", "x")] {
            let card = try ProfileCard(
                name: name, age: 3, sex: .female, neutered: true, size: .small, keywords: ["calm"],
                owner: "Mina")
            #expect(CardSaver.stem(for: card) == expected, "\(name)")
        }
    }
}
