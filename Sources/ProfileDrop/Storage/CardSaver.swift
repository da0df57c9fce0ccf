import Foundation
import ProfileDropCore

#if canImport(Glibc)
    import Glibc
#endif

/// Writes a received card for `--save DIR`: `<name>.json` in the users' own format and, when the
/// card has one, `<name>.jpg` or `<name>.png` beside it.
package enum CardSaver {
    package struct SaveError: Error, CustomStringConvertible {
        package var description: String
    }

    /// The card's file stem: the dog's name with everything but letters, digits, `-` and `_`
    /// replaced, since the name comes from the peer and must never become a path, and without
    /// leading or trailing `-` and `_`.
    package static func stem(for card: ProfileCard) -> String {
        let safe = card.name.unicodeScalars.map { scalar -> Character in
            scalar.properties.isAlphabetic || ("0"..."9").contains(scalar) || scalar == "-" || scalar == "_"
                ? Character(scalar) : "_"
        }
        // Never a leading `-`, which a command given the file name would take for an option.
        let text = String(safe).trimmingCharacters(in: CharacterSet(charactersIn: "_-"))
        return text.isEmpty ? "card" : String(text.prefix(40))
    }

    /// What stands in the way of saving cards into `directory`, checked before anything is
    /// exchanged: nil when it exists as a directory we may write into, or could be created (it is
    /// created now, as it would be on arrival); otherwise the problem in one line. A card that
    /// arrives must never be lost to a bad directory, with the peer told it was exchanged.
    package static func directoryProblem(_ directory: String) -> String? {
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory) {
            guard isDirectory.boolValue else { return "--save: '\(directory)' is not a directory" }
            guard access(directory, W_OK | X_OK) == 0 else {
                return "--save: cannot write into '\(directory)' (permission denied)"
            }
            return nil
        }
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        } catch {
            return "--save: cannot create '\(directory)': \(error.localizedDescription)"
        }
        return nil
    }

    /// Writes the files under the first free stem, `stem`, then `stem-2`, `stem-3`…, so that a
    /// second card with the same name (and its photo) never overwrites the first, and returns the
    /// path of the JSON file. Each name is claimed by linking a file written whole to it, so two
    /// processes saving into one directory at once each take their own, and a full disk leaves no
    /// part of a file.
    @discardableResult
    package static func save(_ card: ProfileCard, in directory: String) throws -> String {
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        } catch {
            throw SaveError(
                description: "cannot save the received card in \(directory): \(error.localizedDescription)")
        }
        let base = stem(for: card)
        let folder = directory.hasSuffix("/") ? directory : directory + "/"
        do {
            for number in 1...10_000 {
                let stem = number == 1 ? base : "\(base)-\(number)"
                var photoName: String?
                if let photo = card.photo {
                    let name = "\(stem).\(photo.format.fileExtension)"
                    guard try OutputFile.create(folder + name, with: photo.data, secret: false) else {
                        continue
                    }
                    photoName = name
                }
                let path = folder + "\(stem).json"
                let created: Bool
                do {
                    created = try OutputFile.create(
                        path, with: card.jsonData(photoFileName: photoName), secret: false)
                } catch {
                    if let photoName { unlink(folder + photoName) }
                    throw error
                }
                guard created else {
                    // No photo left behind without the card that names it.
                    if let photoName { unlink(folder + photoName) }
                    continue
                }
                return path
            }
            throw SaveError(
                description: "cannot save the received card in \(directory): 10,000 cards named \(base)")
        } catch let error as SaveError {
            throw error
        } catch {
            throw SaveError(description: "cannot save the received card in \(directory): \(error)")
        }
    }
}
