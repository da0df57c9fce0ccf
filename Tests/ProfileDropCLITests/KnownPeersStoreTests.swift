import Foundation
@_spi(Storage) import ProfileDrop
import ProfileDropCore
import ProfileDropCrypto
import Synchronization
import Testing

@testable import ProfileDropCLI

@Suite struct KnownPeersStoreTests {
    /// A peer whose keys are patterns of `seed`, so that every test peer differs from the others.
    static func peer(_ seed: UInt8, name: String? = nil) -> KnownPeer {
        KnownPeer(
            resolvingKey: (0..<32).map { UInt8($0) &+ seed },
            bondKey: (0..<32).map { 0xB0 ^ (UInt8($0) &* 7 &+ seed) },
            name: name ?? "Dog \(seed) (Owner \(seed))")
    }

    static func temporaryPath(_ relative: String = "known-peers") throws -> String {
        try TestPaths.temporaryDirectory().appendingPathComponent(relative).path
    }

    /// Writes `text` as the file at `path`, mode 0600, as the tool would have left it.
    static func write(_ text: String, to path: String) throws {
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: path)
    }

    static func mode(_ path: String) throws -> Int? {
        (try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? NSNumber)?.intValue
    }

    static func message(_ body: () throws -> Void) -> String? {
        do {
            try body()
            return nil
        } catch let error as KnownPeersStoreError {
            return error.description
        } catch {
            return "unexpected \(error)"
        }
    }

    @Test func defaultPathIsBesideTheKeyFile() {
        #expect(
            KnownPeersStore.defaultPath(keyFilePath: "/home/u/.config/profiledrop/static-key")
                == "/home/u/.config/profiledrop/known-peers")
        #expect(KnownPeersStore.defaultPath(keyFilePath: "keys/bori.key") == "keys/known-peers")
        #expect(KnownPeersStore.defaultPath(keyFilePath: "bori.key") == "known-peers")
        #expect(KnownPeersStore.defaultPath(keyFilePath: "/\u{301}x/key") == "/\u{301}x/known-peers")
    }

    @Test func fingerprintIsTheFirstEightBytesOfBLAKE2b256InGroups() {
        // Python: hashlib.blake2b(bytes(range(32)), digest_size=32).hexdigest()[:16]
        #expect(KnownPeersStore.fingerprint(Self.peer(0)) == "cb2f-5160-fc1f-7e05")
        let ones = KnownPeer(
            resolvingKey: [UInt8](repeating: 1, count: 32), bondKey: Self.peer(0).bondKey, name: "")
        #expect(KnownPeersStore.fingerprint(ones) == "f40c-eaf8-6e57-7692")
    }

    @Test func missingFileIsAnEmptyList() throws {
        #expect(try KnownPeersStore.load(at: Self.temporaryPath()) == [])
    }

    @Test func savedPeersLoadBackInOrderAndTheFileIsCanonical() throws {
        let path = try Self.temporaryPath()
        let peers = [
            Self.peer(1), Self.peer(2, name: "Rex \"the dog\" \\ (Sam)"),
            Self.peer(3, name: "Bori 🐶 (Jiwoo)"),
            Self.peer(4, name: ""), Self.peer(5, name: String(repeating: "é", count: 100)),
        ]
        try KnownPeersStore.save(peers, at: path)
        #expect(try KnownPeersStore.load(at: path) == peers)
        let text = try String(contentsOfFile: path, encoding: .utf8)
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        #expect(lines.first?.hasPrefix("#") == true && lines.last == "")
        let line = try #require(lines.first { $0.hasPrefix("v2 ") })
        #expect(
            line
                == "v2 \(Hex.encode(peers[0].resolvingKey)) \(Hex.encode(peers[0].bondKey)) \"Dog 1 (Owner 1)\""
        )
        #expect(text.contains(#" "Rex \"the dog\" \\ (Sam)""#))
        // Saving what was read writes the same bytes.
        try KnownPeersStore.save(try KnownPeersStore.load(at: path), at: path)
        #expect(try String(contentsOfFile: path, encoding: .utf8) == text)
    }

    /// Names that split or quote badly as characters rather than bytes: combining marks after the
    /// opening quote or a space, quotes and backslashes, a flag (two scalars, one character), a line
    /// separator, comment and record lookalikes. (Joined emoji hold U+200D, which names refuse.)
    @Test func awkwardNamesLoadBackUnchanged() throws {
        let path = try Self.temporaryPath()
        let names = [
            "\u{301}abc", "a\u{301}", "\"\u{301}", " \u{301}", "\\", "\"", "🇰🇷", " spaced  out ", "#hash",
            "v2 \(Hex.encode(Self.peer(1).resolvingKey))", "\u{2028}",
            String(repeating: "界", count: 66),
        ]
        let peers = names.enumerated().map { Self.peer(UInt8($0), name: $1) }
        try KnownPeersStore.save(peers, at: path)
        #expect(try KnownPeersStore.load(at: path) == peers)
    }

    @Test func createdFileIsMode0600InDirectoriesOfMode0700AndNoTemporaryFileStays() throws {
        let root = try TestPaths.temporaryDirectory()
        let path = root.appendingPathComponent("config/profiledrop/known-peers").path
        try KnownPeersStore.remember(Self.peer(1), at: path)
        #expect(try Self.mode(path) == 0o600)
        #expect(try Self.mode(root.appendingPathComponent("config").path) == 0o700)
        #expect(try Self.mode(root.appendingPathComponent("config/profiledrop").path) == 0o700)
        try KnownPeersStore.remember(Self.peer(2), at: path)
        #expect(try Self.mode(path) == 0o600)
        let entries = try FileManager.default.contentsOfDirectory(
            atPath: root.appendingPathComponent("config/profiledrop").path)
        #expect(entries == ["known-peers"])
        // Directory names are split as bytes: "/" then a combining mark is still a separator.
        let odd = root.appendingPathComponent("\u{301}a/\u{301}b/known-peers").path
        try KnownPeersStore.remember(Self.peer(1), at: odd)
        #expect(try KnownPeersStore.load(at: odd) == [Self.peer(1)])
        #expect(try Self.mode(root.appendingPathComponent("\u{301}a/\u{301}b").path) == 0o700)
    }

    /// A known peer met again is renamed in place (its bond unchanged); a new resolving key is
    /// appended.
    @Test func rememberRenamesAKnownPeerInPlaceAndAppendsANewOne() throws {
        let path = try Self.temporaryPath()
        for seed: UInt8 in [1, 2, 3] { try KnownPeersStore.remember(Self.peer(seed), at: path) }
        let renamed = Self.peer(2, name: "Rex (Sam)")
        try KnownPeersStore.remember(renamed, at: path)
        #expect(try KnownPeersStore.load(at: path) == [Self.peer(1), renamed, Self.peer(3)])
        try KnownPeersStore.remember(Self.peer(4), at: path)
        #expect(try KnownPeersStore.load(at: path) == [Self.peer(1), renamed, Self.peer(3), Self.peer(4)])
    }

    /// A new bond under a known peer's resolving key, which every device that peer bonded with
    /// holds, is an impostor's: the known peer is kept, and the error names both.
    @Test func aNewBondUnderAKnownResolvingKeyIsRefusedAndTheKnownPeerKept() throws {
        let path = try Self.temporaryPath()
        for seed: UInt8 in [1, 2] { try KnownPeersStore.remember(Self.peer(seed), at: path) }
        var impostor = Self.peer(2, name: "Mallory (Eve)")
        impostor.bondKey = [UInt8](repeating: 0x42, count: 32)
        let message = Self.message { try KnownPeersStore.remember(impostor, at: path) }
        #expect(
            message
                == "\(path) already holds known peer \(KnownPeersStore.fingerprint(Self.peer(2))) "
                + "(\u{201C}Dog 2 (Owner 2)\u{201D}) under another bond; kept it, and did not remember "
                + "\u{201C}Mallory (Eve)\u{201D}, which named its identity")
        #expect(try KnownPeersStore.load(at: path) == [Self.peer(1), Self.peer(2)])
    }

    /// Processes updating the file at once (two `share` runs with key files in one directory) keep
    /// every peer: each update holds the directory's lock.
    @Test func concurrentRemembersLoseNoPeer() throws {
        let path = try Self.temporaryPath()
        let failures = Mutex(0)
        DispatchQueue.concurrentPerform(iterations: 16) { index in
            do {
                try KnownPeersStore.remember(Self.peer(UInt8(index)), at: path)
            } catch {
                failures.withLock { $0 += 1 }
            }
        }
        #expect(failures.withLock { $0 } == 0)
        #expect(
            Set(try KnownPeersStore.load(at: path).map(\.name)) == Set((0..<16).map { Self.peer($0).name }))
    }

    @Test func forgetByNumberFingerprintOrNameRemovesThatPeerOnly() throws {
        let path = try Self.temporaryPath()
        let peers = (1...4).map { Self.peer($0) }
        let selectors = [
            "2",  // a list number
            String(KnownPeersStore.fingerprint(peers[2]).prefix(4)),  // four hex digits
            KnownPeersStore.fingerprint(peers[2]).uppercased(),  // in full, either case
            String(KnownPeersStore.fingerprint(peers[2]).filter { $0 != "-" }.prefix(9)),  // without dashes
            "Dog 4 (Owner 4)",  // the exact name
        ]
        let removedIndex = [1, 2, 2, 2, 3]
        for (selector, index) in zip(selectors, removedIndex) {
            try KnownPeersStore.save(peers, at: path)
            #expect(try KnownPeersStore.forget(selector, at: path) == [peers[index]], "\(selector)")
            var remaining = peers
            remaining.remove(at: index)
            #expect(try KnownPeersStore.load(at: path) == remaining, "\(selector)")
        }
    }

    @Test func aSelectorMatchingSeveralPeersIsAnErrorNamingTheNumbersAndRemovesNothing() throws {
        let path = try Self.temporaryPath()
        let peers = [Self.peer(1, name: "Rex (Sam)"), Self.peer(2), Self.peer(3, name: "Rex (Sam)")]
        try KnownPeersStore.save(peers, at: path)
        #expect(
            Self.message { try KnownPeersStore.forget("Rex (Sam)", at: path) }
                == "'Rex (Sam)' matches peers 1, 3 in \(path); pick one by number, e.g. 'profiledrop peers forget 1'"
        )
        // A name that is also a list number is ambiguous too, rather than a guess either way.
        try KnownPeersStore.save([Self.peer(1), Self.peer(2, name: "1")], at: path)
        #expect(
            Self.message { try KnownPeersStore.forget("1", at: path) }?.hasPrefix("'1' matches peers 1, 2")
                == true)
        #expect(try KnownPeersStore.load(at: path) == [Self.peer(1), Self.peer(2, name: "1")])
    }

    @Test func aSelectorMatchingNothingIsAnError() throws {
        let path = try Self.temporaryPath()
        try KnownPeersStore.save([Self.peer(1)], at: path)
        let fingerprint = KnownPeersStore.fingerprint(Self.peer(1))
        let otherDigits = fingerprint.first == "0" ? "1111" : "0000"
        for selector in [
            "2", "0", "Dog 1", "dog 1 (owner 1)", String(fingerprint.prefix(3)), otherDigits, "",
        ] {
            #expect(
                Self.message { try KnownPeersStore.forget(selector, at: path) }
                    == "no known peer matches '\(selector)' in \(path) (give a number, fingerprint or name from 'profiledrop peers')"
            )
        }
        #expect(try KnownPeersStore.load(at: path) == [Self.peer(1)])
        // No file, nothing to forget; nothing is created either.
        let missing = try Self.temporaryPath("absent/known-peers")
        #expect(
            Self.message { try KnownPeersStore.forget("1", at: missing) }?.hasPrefix("no known peer") == true)
        #expect(!FileManager.default.fileExists(atPath: missing))
    }

    @Test func refusesAFileGroupOrOthersCanAccess() throws {
        let path = try Self.temporaryPath()
        try KnownPeersStore.save([Self.peer(1)], at: path)
        for mode in [0o644, 0o640, 0o604, 0o610, 0o601] {
            try FileManager.default.setAttributes([.posixPermissions: mode], ofItemAtPath: path)
            let expected =
                "\(path) has permissions \(String(mode, radix: 8)), but it holds secret keys; run 'chmod 600 \(path)'"
            #expect(Self.message { _ = try KnownPeersStore.load(at: path) } == expected)
            #expect(Self.message { try KnownPeersStore.remember(Self.peer(2), at: path) } == expected)
        }
        try FileManager.default.setAttributes([.posixPermissions: 0o400], ofItemAtPath: path)
        #expect(try KnownPeersStore.load(at: path) == [Self.peer(1)])
    }

    @Test func readsCRLFLineEndingsUpperCaseHexCommentsAndBlankLines() throws {
        let path = try Self.temporaryPath()
        let peer = Self.peer(7, name: "Max (Lee)")
        let text =
            "# a comment\r\n\r\n  \r\nv2 \(Hex.encode(peer.resolvingKey).uppercased()) "
            + "\(Hex.encode(peer.bondKey).uppercased()) \"Max (Lee)\"\r\n#last"
        try Self.write(text, to: path)
        #expect(try KnownPeersStore.load(at: path) == [peer])
        // Without a final newline, the last peer line still counts.
        try Self.write(String(text.dropLast("\r\n#last".count)), to: path)
        #expect(try KnownPeersStore.load(at: path) == [peer])
    }

    static let resolving = Hex.encode(peer(1).resolvingKey)
    static let bond = Hex.encode(peer(1).bondKey)

    /// Each malformed third line (after a comment and a good peer), and the error it gives.
    static let malformedLines: [(line: String, message: String)] = [
        ("v3 \(resolving) \(bond) \"A\"", "unsupported version 'v3'; this profiledrop reads v2"),
        (
            "\(resolving) \(bond) \"A\"",
            "not a peer line (expected 'v2 RESOLVING-KEY BOND-KEY NAME' separated by single spaces; comments start with '#')"
        ),
        (
            " # indented",
            "not a peer line (expected 'v2 RESOLVING-KEY BOND-KEY NAME' separated by single spaces; comments start with '#')"
        ),
        ("v2 \(resolving) \(bond)", "expected 'v2 RESOLVING-KEY BOND-KEY NAME' separated by single spaces"),
        ("v2  \(resolving) \(bond) \"A\"", "the resolving key is not 64 hex digits"),
        ("v2 \(resolving.dropLast(2)) \(bond) \"A\"", "the resolving key is not 64 hex digits"),
        ("v2 \(resolving.dropLast())g \(bond) \"A\"", "the resolving key is not 64 hex digits"),
        ("v2 \(resolving) \(bond)00 \"A\"", "the bond key is not 64 hex digits"),
        (
            "v2\t\(resolving) \(bond) \"A\"",
            "not a peer line (expected 'v2 RESOLVING-KEY BOND-KEY NAME' separated by single spaces; comments start with '#')"
        ),
        ("v2 \(resolving) \(bond) A", "the name is not a JSON string in double quotes"),
        ("v2 \(resolving) \(bond) \"A\" ", "the name is not a JSON string in double quotes"),
        ("v2 \(resolving) \(bond)  \"A\"", "the name is not a JSON string in double quotes"),
        (
            "v2 \(resolving) \(bond) \"A\" \"B\"",
            "the name is not a JSON string: unexpected text after the JSON value"
        ),
        ("v2 \(resolving) \(bond) \"\\q\"", "the name is not a JSON string: invalid escape"),
        (
            "v2 \(resolving) \(bond) \"A\u{1}\"",
            "the name is not a JSON string: control character in a string"
        ),
        ("v2 \(resolving) \(bond) \"A\\u0007\"", "the name has a control character"),
        ("v2 \(resolving) \(bond) \"A\\u0085\"", "the name has a control character"),
        // A filler pads a name so that it passes for another ("Max" and "Max\u{3164}").
        ("v2 \(resolving) \(bond) \"Max\u{3164}\"", "the name has an invisible character, U+3164"),
        ("v2 \(resolving) \(bond) \"Max\\u200b\"", "the name has an invisible character, U+200B"),
        (
            "v2 \(resolving) \(bond) \"\(String(repeating: "x", count: 401))\"",
            "the name is 401 UTF-8 bytes, more than 400"
        ),
        (
            "v2 \(Hex.encode(peer(1).resolvingKey).uppercased()) \(bond) \"A\"",
            "the same resolving key as line 2"
        ),
    ]

    @Test func everyMalformedLineIsAnErrorNamingPathAndLine() throws {
        let path = try Self.temporaryPath()
        for (line, message) in Self.malformedLines {
            try Self.write("# peers\nv2 \(Self.resolving) \(Self.bond) \"Good\"\n\(line)\n", to: path)
            let error = Self.message { _ = try KnownPeersStore.load(at: path) }
            #expect(error == "\(path):3: \(message)", "\(line)")
            // Errors never quote the line, which holds the bond key.
            #expect(error?.contains(Self.bond.prefix(16)) == false)
        }
    }

    @Test func invalidUTF8IsAnErrorNamingTheLine() throws {
        let path = try Self.temporaryPath()
        var bytes = Array("#\nv2 \(Self.resolving) \(Self.bond) \"".utf8)
        bytes += [0xC3, 0x28, UInt8(ascii: "\""), UInt8(ascii: "\n")]
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: path)
        #expect(Self.message { _ = try KnownPeersStore.load(at: path) } == "\(path):2: not valid UTF-8")
    }

    @Test func saveRefusesWhatLoadWouldNotReadBack() throws {
        let path = try Self.temporaryPath()
        var shortKey = Self.peer(1)
        shortKey.bondKey.removeLast()
        let cases: [([KnownPeer], String)] = [
            ([Self.peer(1, name: "Rex\n(Sam)")], "the peer has a name that has a control character"),
            (
                [Self.peer(1, name: String(repeating: "é", count: 201))],
                "the peer has a name that is 402 UTF-8 bytes, more than 400"
            ),
            ([shortKey], "the peer has a key that is not 32 bytes"),
            (
                [Self.peer(1), Self.peer(2), Self.peer(1, name: "again")],
                "peer 3 has the resolving key of an earlier peer"
            ),
        ]
        for (peers, problem) in cases {
            #expect(
                Self.message { try KnownPeersStore.save(peers, at: path) }
                    == "cannot save \(path): \(problem)")
        }
        #expect(
            Self.message { try KnownPeersStore.remember(shortKey, at: path) }
                == "cannot save \(path): the peer has a key that is not 32 bytes")
        #expect(!FileManager.default.fileExists(atPath: path))
    }

    @Test func aDirectoryInsteadOfAFileIsAnError() throws {
        let path = try Self.temporaryPath()
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
        #expect(Self.message { _ = try KnownPeersStore.load(at: path) } == "\(path) is not a regular file")
    }
}
