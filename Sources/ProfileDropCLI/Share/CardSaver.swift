import Foundation
import ProfileDropCore

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

    /// Writes the files and returns the path of the JSON file.
    @discardableResult
    static func save(_ card: ProfileCard, in directory: String) throws -> String {
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            let stem = stem(for: card)
            var photoName: String?
            if let photo = card.photo {
                let name = "\(stem).\(photo.format.fileExtension)"
                try Data(photo.data).write(to: URL(fileURLWithPath: directory).appendingPathComponent(name))
                photoName = name
            }
            let path = URL(fileURLWithPath: directory).appendingPathComponent("\(stem).json")
            try Data(card.jsonData(photoFileName: photoName)).write(to: path)
            return path.path
        } catch {
            throw SaveError(
                description: "cannot save the received card in \(directory): \(error.localizedDescription)")
        }
    }
}
