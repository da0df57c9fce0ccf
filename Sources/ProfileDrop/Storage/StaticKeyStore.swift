import ProfileDropCrypto
import ProfileDropJSON

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Errors reading or creating the device's static key file. Each describes itself in one line.
@_spi(Storage) public struct StaticKeyStoreError: Error, CustomStringConvertible {
    /// The one-line explanation, naming the file.
    @_spi(Storage) public var description: String
}

/// The device's long-term Noise static key: generated on first use and kept in a file of mode 0600.
///
/// The default location is `$XDG_CONFIG_HOME/profiledrop/static-key`, or `~/.config/profiledrop/static-key`
/// when `XDG_CONFIG_HOME` is unset; `--key-file` overrides it. The file holds the 32-byte private key
/// as 64 lowercase hex digits and a newline. A key file is the user's own, sometimes written by hand,
/// so reading is lenient where the key stays unambiguous: either case, and white space around the
/// digits. What is read is the key; writing it gives the canonical form.
@_spi(Storage) public enum StaticKeyStore {
    /// The file name inside the configuration directory.
    package static let fileName = "static-key"
    /// A key file is 64 hex digits and a line end; anything much larger is not one.
    package static let maximumFileBytes = 256

    /// The default path, from the environment.
    @_spi(Storage) public static func defaultPath() throws -> String {
        if let config = environment("XDG_CONFIG_HOME"), !config.isEmpty {
            return config + "/profiledrop/" + fileName
        }
        guard let home = environment("HOME"), !home.isEmpty else {
            throw StaticKeyStoreError(
                description: "neither XDG_CONFIG_HOME nor HOME is set; pass --key-file PATH")
        }
        return home + "/.config/profiledrop/" + fileName
    }

    /// Loads the key at `path`, creating it (and its directory, mode 0700) when it does not exist.
    /// - Returns: the key, and whether it was created by this call.
    @_spi(Storage) public static func loadOrCreate(at path: String) throws
        -> (key: X25519.PrivateKey, created: Bool)
    {
        if let existing = try load(at: path) { return (existing, false) }
        // Failing to create or write is a runtime error (exit 6), not a bad file.
        try OutputFile.createDirectories(for: path)
        var random = SystemRandom()
        let key = X25519.PrivateKey(using: &random)
        // Written whole beside it, then linked to its name: a process that starts at the same
        // moment finds no file or the whole key, never an empty one, and the first to link wins.
        let created = try OutputFile.create(path, with: fileContents(key), secret: true)
        if !created, let raced = try load(at: path) { return (raced, false) }
        guard created else {
            throw StaticKeyStoreError(description: "cannot create \(path): it appeared and vanished")
        }
        return (key, true)
    }

    /// Loads the key at `path`, or returns nil when there is no such file.
    @_spi(Storage) public static func load(at path: String) throws -> X25519.PrivateKey? {
        var info = stat()
        if stat(path, &info) != 0 {
            if errno == ENOENT {
                // A link to nowhere is no missing file: creating one would fail on its name.
                if lstat(path, &info) == 0 {
                    throw StaticKeyStoreError(
                        description:
                            "\(path) is a symbolic link to nothing; remove it or name another key file")
                }
                return nil
            }
            throw StaticKeyStoreError(description: "cannot read \(path): \(systemError())")
        }
        guard info.st_mode & S_IFMT != S_IFDIR else {
            throw StaticKeyStoreError(
                description: "\(path) is a directory; --key-file names the key file itself, "
                    + "for example \(path.hasSuffix("/") ? path : path + "/")key")
        }
        guard info.st_mode & S_IFMT == S_IFREG else {
            throw StaticKeyStoreError(description: "\(path) is not a regular file")
        }
        // Like ssh, refuse a private key that others could read.
        guard info.st_mode & 0o077 == 0 else {
            let mode = String(info.st_mode & 0o777, radix: 8)
            throw StaticKeyStoreError(
                description: "\(path) has permissions \(mode), which others can read; run 'chmod 600 \(path)'"
            )
        }
        let contents: [UInt8]
        do {
            contents = try InputFile.read(atPath: path, limit: Self.maximumFileBytes)
        } catch {
            guard case .tooLarge = error.reason else {
                throw StaticKeyStoreError(description: "cannot read \(path): \(error.reasonText)")
            }
            throw StaticKeyStoreError(
                description:
                    "\(path) is larger than \(Self.maximumFileBytes) bytes; it does not hold a static key")
        }
        guard let key = key(fromFileContents: contents) else {
            throw StaticKeyStoreError(
                description: "\(path) does not hold a static key (64 hex digits expected)")
        }
        return key
    }

    /// The key file's contents for `key`: 64 lowercase hex digits and a newline.
    @_spi(Storage) public static func fileContents(_ key: X25519.PrivateKey) -> [UInt8] {
        Array((hex(key.rawRepresentation) + "\n").utf8)
    }

    /// The key in `contents`: 64 hex digits in either case, with white space around them; nil for
    /// anything else.
    @_spi(Storage) public static func key(fromFileContents contents: [UInt8]) -> X25519.PrivateKey? {
        let text = String(decoding: contents, as: UTF8.self).trimmingWhitespace()
        guard let bytes = Hex.decode(text), bytes.count == X25519.keyLength else { return nil }
        return try? X25519.PrivateKey(rawRepresentation: bytes)
    }
}

package func environment(_ name: String) -> String? {
    guard let value = getenv(name) else { return nil }
    return String(cString: value)
}

package func systemError() -> String { String(cString: strerror(errno)) }

package func hex(_ bytes: [UInt8]) -> String { Hex.encode(bytes) }

extension String {
    package func trimmingWhitespace() -> String {
        // "\r\n" is one Character, so compare by property rather than against single scalars.
        let isSpace: (Character) -> Bool = { $0.isWhitespace }
        guard let start = firstIndex(where: { !isSpace($0) }), let end = lastIndex(where: { !isSpace($0) })
        else {
            return ""
        }
        return String(self[start...end])
    }
}
