import Foundation
import ProfileDropCore

#if canImport(Glibc)
    import Glibc
#endif

/// Writes a received card for `--save DIR`: `<name>.json` in the users' own format and, when the
/// card has one, `<name>.jpg` or `<name>.png` beside it.
enum CardSaver {
    struct SaveError: Error, CustomStringConvertible {
        var description: String
    }

    /// The card's file stem: the dog's name with everything but letters, digits, `-` and `_`
    /// replaced, since the name comes from the peer and must never become a path.
    static func stem(for card: ProfileCard) -> String {
        let safe = card.name.unicodeScalars.map { scalar -> Character in
            scalar.properties.isAlphabetic || ("0"..."9").contains(scalar) || scalar == "-" || scalar == "_"
                ? Character(scalar) : "_"
        }
        let text = String(safe).trimmingCharacters(in: CharacterSet(charactersIn: "_"))
        return text.isEmpty ? "card" : String(text.prefix(40))
    }

    /// Checks, before anything is exchanged, that `directory` can take a card: it exists as a
    /// directory we may write into, or it can be created. A card that arrives must never be lost
    /// to a bad `--save`, with the peer told it was exchanged.
    /// - Throws: ``UsageError`` naming the problem, in one line.
    static func checkDirectory(_ directory: String) throws {
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory) {
            guard isDirectory.boolValue else {
                throw UsageError("--save: '\(directory)' is not a directory")
            }
            guard access(directory, W_OK | X_OK) == 0 else {
                throw UsageError("--save: cannot write into '\(directory)' (permission denied)")
            }
            return
        }
        // Created now, as it would be on arrival: what cannot be created fails before any exchange.
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        } catch {
            throw UsageError("--save: cannot create '\(directory)': \(error.localizedDescription)")
        }
    }

    /// The first stem free in `directory`: `stem`, then `stem-2`, `stem-3`…, so that a second card
    /// with the same name (and its photo) never overwrites the first.
    static func freeStem(_ stem: String, in directory: String, photoExtension: String?) -> String {
        let manager = FileManager.default
        func isFree(_ candidate: String) -> Bool {
            let base = URL(fileURLWithPath: directory)
            let names = ["\(candidate).json"] + (photoExtension.map { ["\(candidate).\($0)"] } ?? [])
            return names.allSatisfy { !manager.fileExists(atPath: base.appendingPathComponent($0).path) }
        }
        if isFree(stem) { return stem }
        var number = 2
        while !isFree("\(stem)-\(number)") { number += 1 }
        return "\(stem)-\(number)"
    }

    /// Writes the files under a free stem and returns the path of the JSON file.
    @discardableResult
    static func save(_ card: ProfileCard, in directory: String) throws -> String {
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            let stem = freeStem(
                stem(for: card), in: directory, photoExtension: card.photo?.format.fileExtension)
            var photoName: String?
            if let photo = card.photo {
                let name = "\(stem).\(photo.format.fileExtension)"
                try Data(photo.data).write(
                    to: URL(fileURLWithPath: directory).appendingPathComponent(name),
                    options: .withoutOverwriting)
                photoName = name
            }
            let path = URL(fileURLWithPath: directory).appendingPathComponent("\(stem).json")
            do {
                try Data(card.jsonData(photoFileName: photoName)).write(
                    to: path, options: .withoutOverwriting)
            } catch {
                // No photo left behind without the card that names it.
                if let photoName {
                    try? FileManager.default.removeItem(
                        at: URL(fileURLWithPath: directory).appendingPathComponent(photoName))
                }
                throw error
            }
            return path.path
        } catch {
            throw SaveError(
                description: "cannot save the received card in \(directory): \(error.localizedDescription)")
        }
    }
}
