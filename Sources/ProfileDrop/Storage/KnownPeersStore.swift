import ProfileDropCore
import ProfileDropCrypto
import ProfileDropJSON

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Errors reading or writing the known-peers file, or choosing a peer in it. Each describes itself
/// in one line, naming the file (and the line, for a malformed one).
@_spi(Storage) public struct KnownPeersStoreError: Error, CustomStringConvertible {
    /// The one-line explanation.
    @_spi(Storage) public var description: String
}

/// The peers this device exchanged with before, with its user's consent: like ssh's `known_hosts`,
/// a file beside the static key (`known-peers`, mode 0600, since it holds the pairs' secret bond
/// keys).
///
/// The file is UTF-8 text. Lines starting with `#` and blank lines are ignored; every other line is
/// one peer, its fields separated by single spaces:
///
///     v2 <resolving key: 64 hex digits> <bond key: 64 hex digits> <name: a JSON string>
///
/// for example `v2 0f1e…3c 9a8b…01 "Rex (Sam)"`. A name has no control characters (Unicode Cc) and at
/// most 400 UTF-8 bytes (a card's name and owner, 160 bytes each, and the parentheses); no two lines hold the same resolving key. The tool writes the file (lower-case
/// hex, LF line endings, a comment header), so reading is strict, except that it also accepts
/// upper-case hex and CRLF line endings; every error names `PATH:LINE`. A peer is shown by its
/// ``fingerprint(_:)``, never by its bond key.
@_spi(Storage) public enum KnownPeersStore {
    /// The file name, in the directory of the static key file.
    package static let fileName = "known-peers"
    /// The longest name, in UTF-8 bytes: room for `NAME (OWNER)` at the card's byte ceilings.
    package static let maximumNameBytes = 400
    /// The largest file read, so that a wrong path cannot make us read a huge file.
    package static let maximumFileBytes = 4 << 20
    private static let keyLength = 32

    /// The known-peers file beside the static key file at `keyFilePath`, by default
    /// `$XDG_CONFIG_HOME/profiledrop/known-peers`.
    @_spi(Storage) public static func defaultPath(keyFilePath: String) -> String {
        OutputFile.directoryPrefix(of: keyFilePath) + fileName
    }

    // MARK: Reading

    /// The peers in the file at `path`, in file order; an empty list when there is no such file.
    /// - Throws: ``KnownPeersStoreError`` when the file cannot be read, is readable by group or
    ///   others, or holds a malformed line.
    @_spi(Storage) public static func load(at path: String) throws -> [KnownPeer] {
        guard let contents = try readPrivateFile(path) else { return [] }
        return try peers(fromFileContents: contents, path: path)
    }

    /// The peers in `contents`, the text of the file at `path` (named in errors).
    @_spi(Storage) public static func peers(fromFileContents contents: [UInt8], path: String) throws
        -> [KnownPeer]
    {
        var lines = contents.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false)
        if lines.last?.isEmpty == true { lines.removeLast() }  // the final newline ends a line
        var peers: [KnownPeer] = []
        var lineOfKey: [[UInt8]: Int] = [:]
        for (index, rawLine) in lines.enumerated() {
            let number = index + 1
            var bytes = rawLine
            if bytes.last == UInt8(ascii: "\r") { bytes.removeLast() }
            guard String(validating: bytes, as: UTF8.self) != nil else {
                throw lineError(path, number, "not valid UTF-8")
            }
            if bytes.first == UInt8(ascii: "#") || bytes.allSatisfy({ $0 == 0x20 || $0 == 0x09 }) { continue }
            let peer = try parsePeer(bytes, path: path, line: number)
            if let first = lineOfKey[peer.resolvingKey] {
                throw lineError(path, number, "the same resolving key as line \(first)")
            }
            lineOfKey[peer.resolvingKey] = number
            peers.append(peer)
        }
        return peers
    }

    /// One peer line, in valid UTF-8. Fields are split as bytes: as characters, a space or quote
    /// followed by a combining mark would be one character. Errors never quote the line, since it
    /// holds a secret key.
    private static func parsePeer(_ line: ArraySlice<UInt8>, path: String, line number: Int) throws
        -> KnownPeer
    {
        let fields = line.split(separator: 0x20, maxSplits: 3, omittingEmptySubsequences: false)
        let layout = "expected 'v2 RESOLVING-KEY BOND-KEY NAME' separated by single spaces"
        guard fields[0].elementsEqual("v2".utf8) else {
            let version = fields[0]
            if version.first == UInt8(ascii: "v"), (2...8).contains(version.count),
                version.dropFirst().allSatisfy({ (0x30...0x39).contains($0) })
            {
                let text = String(decoding: version, as: UTF8.self)
                throw lineError(path, number, "unsupported version '\(text)'; this profiledrop reads v2")
            }
            throw lineError(path, number, "not a peer line (\(layout); comments start with '#')")
        }
        guard fields.count == 4 else { throw lineError(path, number, layout) }
        guard let resolvingKey = key(fields[1]) else {
            throw lineError(path, number, "the resolving key is not 64 hex digits")
        }
        guard let bondKey = key(fields[2]) else {
            throw lineError(path, number, "the bond key is not 64 hex digits")
        }
        // The whole field is the string: JSON would also take white space or other values around it.
        let nameField = fields[3]
        guard nameField.count >= 2, nameField.first == UInt8(ascii: "\""),
            nameField.last == UInt8(ascii: "\"")
        else {
            throw lineError(path, number, "the name is not a JSON string in double quotes")
        }
        let value: JSONValue
        do {
            value = try JSONValue.parse(utf8: Array(nameField))
        } catch {
            throw lineError(path, number, "the name is not a JSON string: \(error.reason)")
        }
        guard case .string(let name) = value else {
            throw lineError(path, number, "the name is not a JSON string")
        }
        if let problem = nameProblem(name) { throw lineError(path, number, "the name \(problem)") }
        return KnownPeer(resolvingKey: resolvingKey, bondKey: bondKey, name: name)
    }

    private static func key(_ field: ArraySlice<UInt8>) -> [UInt8]? {
        guard field.count == 2 * keyLength else { return nil }
        return Hex.decode(String(decoding: field, as: UTF8.self))
    }

    /// What is wrong with `name`, or nil when it may be stored.
    @_spi(Storage) public static func nameProblem(_ name: String) -> String? {
        // Names are printed as they are: a control character could rewrite the user's terminal.
        if name.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) {
            return "has a control character"
        }
        if let invisible = name.unicodeScalars.first(where: \.isInvisibleInText) {
            return "has an invisible character, U+\(String(invisible.value, radix: 16, uppercase: true))"
        }
        let length = name.utf8.count
        if length > maximumNameBytes { return "is \(length) UTF-8 bytes, more than \(maximumNameBytes)" }
        return nil
    }

    private static func lineError(_ path: String, _ line: Int, _ message: String) -> KnownPeersStoreError {
        KnownPeersStoreError(description: "\(path):\(line): \(message)")
    }

    // MARK: Writing

    /// Replaces the file at `path` with `peers`, atomically: a temporary file of mode 0600 in the
    /// same directory, synced, then renamed over it. Missing directories are created with mode 0700.
    /// - Throws: ``KnownPeersStoreError`` for a peer the file cannot hold (a key that is not 32
    ///   bytes, a name ``load(at:)`` would refuse, a resolving key given twice) or a failed write.
    @_spi(Storage) public static func save(_ peers: [KnownPeer], at path: String) throws {
        try check(peers, path: path)
        // Failing to create or write is a runtime error (exit 6), not a bad file. Through a new
        // 0600 file and a rename: a reader sees the old list or the new one.
        try OutputFile.createDirectories(for: path)
        try OutputFile.replace(path, with: fileContents(peers), secret: true)
    }

    /// Adds `peer`, or, when a peer with its resolving key is known under the same bond, renames that
    /// one in place; the other peers keep their order. Creates the file when there is none.
    /// - Throws: ``KnownPeersStoreError`` when a peer with its resolving key is known under another
    ///   bond: a resolving key is held by every device its owner bonded with, so a new bond under a
    ///   known one is an impostor's (PROTOCOL.md 6.5), and the known peer is kept.
    @_spi(Storage) public static func remember(_ peer: KnownPeer, at path: String) throws {
        try check([peer], path: path)
        let path = try writableTarget(path)
        try OutputFile.createDirectories(for: path)
        try withDirectoryLocked(for: path) {
            var peers = try load(at: path)
            if let index = peers.firstIndex(where: { $0.resolvingKey == peer.resolvingKey }) {
                guard peers[index].bondKey == peer.bondKey else {
                    throw KnownPeersStoreError(
                        description:
                            "\(path) already holds known peer \(fingerprint(peers[index])) "
                            + "(\u{201C}\(peers[index].name)\u{201D}) under another bond; kept it, and did not "
                            + "remember \u{201C}\(peer.name)\u{201D}, which named its identity")
                }
                peers[index] = peer
            } else {
                peers.append(peer)
            }
            try save(peers, at: path)
        }
    }

    /// Removes the peer that `selector` picks: its 1-based number in the list, its fingerprint (in
    /// full, or the first 4 or more hex digits, with or without the dashes) or its exact name.
    /// - Returns: the removed peers (one).
    /// - Throws: ``KnownPeersStoreError`` when nothing matches, or when the selector matches more
    ///   than one peer in any of these ways; the error says which numbers to pick from.
    @discardableResult
    @_spi(Storage) public static func forget(_ selector: String, at path: String) throws -> [KnownPeer] {
        let path = try writableTarget(path)
        return try withDirectoryLocked(for: path) {
            var peers = try load(at: path)
            let matches = indices(matching: selector, in: peers)
            guard let first = matches.first else {
                throw KnownPeersStoreError(
                    description:
                        "no known peer matches '\(selector)' in \(path) (give a number, fingerprint or name from 'profiledrop peers')"
                )
            }
            // Whichever way a selector matched, removing one of several would be a guess.
            guard matches.count == 1 else {
                let numbers = matches.map { String($0 + 1) }
                throw KnownPeersStoreError(
                    description:
                        "'\(selector)' matches peers \(numbers.joined(separator: ", ")) in \(path); pick one by number, e.g. 'profiledrop peers forget \(numbers[0])'"
                )
            }
            let removed = [peers.remove(at: first)]
            try save(peers, at: path)
            return removed
        }
    }

    /// Indices of the peers `selector` picks as a number, a fingerprint or a name, in list order.
    @_spi(Storage) public static func indices(matching selector: String, in peers: [KnownPeer]) -> [Int] {
        var matches: Set<Int> = []
        if selector.allSatisfy({ $0.isASCII && $0.isNumber }), let number = Int(selector),
            peers.indices.contains(number - 1)
        {
            matches.insert(number - 1)
        }
        let digits = selector.lowercased().filter { $0 != "-" }
        if digits.count >= 4, digits.allSatisfy(\.isHexDigit), digits.allSatisfy(\.isASCII) {
            for (index, peer) in peers.enumerated() {
                if fingerprint(peer).filter({ $0 != "-" }).hasPrefix(digits) { matches.insert(index) }
            }
        }
        for (index, peer) in peers.enumerated() where peer.name == selector { matches.insert(index) }
        return matches.sorted()
    }

    /// How a peer is shown: the first 8 bytes of BLAKE2b-256 of its resolving key, as 16 lower-case
    /// hex digits in groups of four (`xxxx-xxxx-xxxx-xxxx`).
    @_spi(Storage) public static func fingerprint(_ peer: KnownPeer) -> String {
        let digits = Array(Hex.encode(BLAKE2b.hash(peer.resolvingKey, outputLength: 32).prefix(8)))
        return stride(from: 0, to: digits.count, by: 4).map { String(digits[$0..<$0 + 4]) }
            .joined(separator: "-")
    }

    /// The file's text for `peers`: a comment header, then one line per peer.
    @_spi(Storage) public static func fileContents(_ peers: [KnownPeer]) -> [UInt8] {
        var text = "# profiledrop known peers. Holds secret bond keys: keep it mode 0600.\n"
        text += "# v2 <resolving key, 64 hex> <bond key, 64 hex> <name, JSON string>\n"
        for peer in peers {
            text +=
                "v2 \(hex(peer.resolvingKey)) \(hex(peer.bondKey)) \(JSONValue.string(peer.name).serialized)\n"
        }
        return Array(text.utf8)
    }

    /// Refuses what ``load(at:)`` would not read back. `KnownPeer`'s fields are mutable, so key
    /// lengths are checked here too.
    private static func check(_ peers: [KnownPeer], path: String) throws {
        var seen: Set<[UInt8]> = []
        for (index, peer) in peers.enumerated() {
            let which = peers.count == 1 ? "the peer" : "peer \(index + 1)"
            func refuse(_ problem: String) -> KnownPeersStoreError {
                KnownPeersStoreError(description: "cannot save \(path): \(which) \(problem)")
            }
            guard peer.resolvingKey.count == keyLength, peer.bondKey.count == keyLength else {
                throw refuse("has a key that is not \(keyLength) bytes")
            }
            if let problem = nameProblem(peer.name) { throw refuse("has a name that \(problem)") }
            guard seen.insert(peer.resolvingKey).inserted else {
                throw refuse("has the resolving key of an earlier peer")
            }
        }
    }

    // MARK: Files

    /// The file's bytes, or nil when it does not exist. Refuses a file that group or others can
    /// access in any way, since it holds secret keys.
    private static func readPrivateFile(_ path: String) throws -> [UInt8]? {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        if descriptor < 0 {
            if errno == ENOENT { return nil }
            throw KnownPeersStoreError(description: "cannot read \(path): \(systemError())")
        }
        defer { close(descriptor) }
        // The mode of the file opened, not of whatever the path names a moment later.
        var info = stat()
        guard fstat(descriptor, &info) == 0 else {
            throw KnownPeersStoreError(description: "cannot read \(path): \(systemError())")
        }
        guard info.st_mode & S_IFMT == S_IFREG else {
            throw KnownPeersStoreError(description: "\(path) is not a regular file")
        }
        guard info.st_mode & 0o077 == 0 else {
            let mode = String(info.st_mode & 0o777, radix: 8)
            throw KnownPeersStoreError(
                description:
                    "\(path) has permissions \(mode), but it holds secret keys; run 'chmod 600 \(path)'")
        }
        guard info.st_size <= maximumFileBytes else {
            throw KnownPeersStoreError(
                description:
                    "\(path) is larger than \(maximumFileBytes >> 20) MiB; it is not a known-peers file")
        }
        do {
            return try InputFile.read(descriptor: descriptor, path: path, limit: maximumFileBytes)
        } catch {
            guard case .tooLarge = error.reason else {
                throw KnownPeersStoreError(description: "cannot read \(path): \(error.reasonText)")
            }
            throw KnownPeersStoreError(description: "\(path) grew while it was read; try again")
        }
    }

    /// The file an update writes: `path`, or the file its symbolic link names, so that the lock is
    /// taken in the directory the file is replaced in, whichever name each process uses.
    private static func writableTarget(_ path: String) throws -> String {
        do {
            return try OutputFile.target(of: path)
        } catch {
            throw KnownPeersStoreError(description: error.description)
        }
    }

    /// Runs `body` holding an exclusive lock on the file's directory, so that two processes updating
    /// the file (two `share` runs with key files in one directory) do not lose each other's peer.
    /// Without the directory there is no file to update, and `body` runs unlocked.
    private static func withDirectoryLocked<Result>(for path: String, _ body: () throws -> Result) throws
        -> Result
    {
        let directory = OutputFile.directoryPrefix(of: path)
        let descriptor = open(directory.isEmpty ? "." : directory, O_RDONLY | O_CLOEXEC)
        if descriptor < 0 {
            if errno == ENOENT { return try body() }
            throw KnownPeersStoreError(description: "cannot open the directory of \(path): \(systemError())")
        }
        defer { close(descriptor) }
        while flock(descriptor, LOCK_EX) != 0 {
            guard errno == EINTR else {
                throw KnownPeersStoreError(
                    description: "cannot lock the directory of \(path): \(systemError())")
            }
        }
        return try body()
    }
}
