import Foundation
import ProfileDropCore
import ProfileDropJSON

/// Card files and the photos they name, read from disk: the file I/O the sans-IO core leaves out.
/// A relative `photo` path resolves against the directory of the JSON file.
public enum CardFile {
    /// Loads and validates a card file and the photo it names.
    /// - Throws: ``CardError`` with a one-line diagnostic that starts with the file's path: malformed
    ///   JSON as `PATH:LINE:COLUMN: reason`, every other problem of the card (each naming its key)
    ///   after `PATH: `.
    public static func load(contentsOf path: String) throws(CardError) -> ProfileCard {
        let data = try readFile(
            atPath: path, sizeLimit: nil, code: .fileUnreadable, what: "card file \(CardError.quoted(path))")
        let json: JSONValue
        do {
            json = try JSONValue.parse(utf8: data)
        } catch {
            // The compiler's form, which editors and terminals can jump to.
            throw CardError(.invalidJSON, "\(path):\(error.line):\(error.column): \(error.reason)")
        }
        do {
            return try card(json: json, baseDirectory: directory(of: path))
        } catch {
            throw error.locating(in: path)
        }
    }

    /// Parses and validates card JSON text; a `photo` path is resolved against `baseDirectory`.
    public static func card(jsonData: [UInt8], baseDirectory: String) throws(CardError) -> ProfileCard {
        try ProfileCard(jsonData: jsonData) { path throws(CardError) in
            try photo(path, baseDirectory: baseDirectory)
        }
    }

    /// Validates a card object already parsed (a scenario's inline card); a `photo` path is
    /// resolved against `baseDirectory`.
    public static func card(json: JSONValue, baseDirectory: String) throws(CardError) -> ProfileCard {
        try ProfileCard(json: json) { path throws(CardError) in
            try photo(path, baseDirectory: baseDirectory)
        }
    }

    /// The directory a file's relative paths resolve against.
    public static func directory(of path: String) -> String {
        let directory = (path as NSString).deletingLastPathComponent
        return directory.isEmpty ? "." : directory
    }

    /// Reads the photo a card names: `path` as written in the card, absolute or relative to
    /// `baseDirectory`.
    public static func photo(_ path: String, baseDirectory: String) throws(CardError) -> ProfileCard.Photo {
        let resolved = path.hasPrefix("/") ? path : (baseDirectory as NSString).appendingPathComponent(path)
        let what = "photo \(CardError.quoted(path))"
        let data = try readFile(
            atPath: resolved, sizeLimit: ProfileCard.Limits.photoBytes, code: .photoUnreadable, what: what)
        do {
            return try ProfileCard.Photo(data: data)
        } catch {
            // Name the file the user wrote; other photo errors already say what is wrong.
            guard error.code == .photoFormat else { throw error }
            throw CardError(.photoFormat, field: "photo", "\(what) is neither JPEG nor PNG")
        }
    }

    /// Reads a regular file. With `sizeLimit`, a larger file is refused before it is read.
    private static func readFile(
        atPath path: String, sizeLimit: Int?, code: CardError.Code, what: String
    ) throws(CardError) -> [UInt8] {
        let field = code == .photoUnreadable ? "photo" : nil
        do {
            return try InputFile.read(atPath: path, limit: sizeLimit ?? JSONValue.maximumBytes)
        } catch {
            guard case .tooLarge(let limit) = error.reason, sizeLimit != nil else {
                throw CardError(code, field: field, "\(what) cannot be read: \(error.reasonText)")
            }
            // A regular file is refused by its size, before it is read; a pipe once it passes the limit.
            let size = error.size.map { "is \($0) bytes; the limit is" } ?? "is over the limit of"
            throw CardError(.photoTooLarge, field: field, "\(what) \(size) \(limit) bytes (256 KiB)")
        }
    }
}

extension CardError {
    /// The same problems, each prefixed with the card file's `path` (once, for the joined list).
    fileprivate func locating(in path: String) -> CardError {
        switch code {
        case .fileUnreadable, .photoUnreadable, .photoTooLarge, .photoFormat, .invalidJSON:
            // These already name the file they are about.
            guard problems.count > 1 else { return self }
        case .notAnObject, .missingKey, .wrongType, .unknownKey, .invalidValue, .truncated,
            .unsupportedVersion, .malformedEncoding:
            break
        }
        let located = problems.enumerated().map { index, problem in
            CardError(
                problem.code, field: problem.field,
                index == 0 ? "\(path): \(problem.diagnostic)" : problem.diagnostic)
        }
        return CardError(combining: located) ?? self
    }
}
