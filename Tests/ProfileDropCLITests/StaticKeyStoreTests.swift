import Foundation
@_spi(Storage) import ProfileDrop
import ProfileDropCrypto
import ProfileDropTestSupport
import Testing

@testable import ProfileDropCLI

@Suite struct StaticKeyStoreTests {
    @Test func createsOnFirstUseWithMode0600AndReloadsTheSameKey() throws {
        let directory = try TestPaths.temporaryDirectory()
        let path = directory.appendingPathComponent("nested/dir/static-key").path
        let (created, wasCreated) = try StaticKeyStore.loadOrCreate(at: path)
        #expect(wasCreated)
        let attributes = try FileManager.default.attributesOfItem(atPath: path)
        #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o600)
        let (loaded, createdAgain) = try StaticKeyStore.loadOrCreate(at: path)
        #expect(!createdAgain)
        #expect(loaded.publicKey == created.publicKey)
    }

    /// A key file name that is a link to nowhere says so, rather than failing to create the file.
    @Test func aLinkToNowhereIsNamedAsSuch() throws {
        let directory = try TestPaths.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("key").path
        try FileManager.default.createSymbolicLink(
            atPath: path, withDestinationPath: directory.appendingPathComponent("nowhere").path)
        do {
            _ = try StaticKeyStore.loadOrCreate(at: path)
            Issue.record("a dangling link was taken")
        } catch {
            #expect("\(error)".contains("is a symbolic link to nothing"), "\(error)")
        }
    }

    @Test func refusesAKeyOthersCanRead() throws {
        let directory = try TestPaths.temporaryDirectory()
        let path = directory.appendingPathComponent("static-key").path
        _ = try StaticKeyStore.loadOrCreate(at: path)
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: path)
        #expect(throws: StaticKeyStoreError.self) { try StaticKeyStore.load(at: path) }
    }

    /// A directory given as the key file is named as one; the permission advice (`chmod 600`) would
    /// be wrong for it.
    @Test func aDirectoryIsNotAKeyFile() throws {
        let directory = try TestPaths.temporaryDirectory()
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: directory.path)
        let console = CapturingConsole()
        let code = CommandLineTool.run(
            arguments: ["identity", "--key-file", directory.path], console: console)
        #expect(code == ExitCode.usage.rawValue)
        #expect(
            console.errorLines == [
                "profiledrop identity: \(directory.path) is a directory; --key-file names the key file "
                    + "itself, for example \(directory.path)/key"
            ])
        #expect(console.errorLines.allSatisfy { !$0.contains("chmod") })
    }

    @Test func refusesMalformedContent() throws {
        let directory = try TestPaths.temporaryDirectory()
        let path = directory.appendingPathComponent("static-key").path
        try "not a key\n".write(toFile: path, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: path)
        #expect(throws: StaticKeyStoreError.self) { try StaticKeyStore.load(at: path) }
        // A key followed by 300 blank lines: too long to be a key file, and said so.
        let key = String(repeating: "ab", count: 32) + "\n"
        try (key + String(repeating: "\n", count: 300)).write(
            toFile: path, atomically: false, encoding: .utf8)
        let error = #expect(throws: StaticKeyStoreError.self) { try StaticKeyStore.load(at: path) }
        #expect(error?.description == "\(path) is larger than 256 bytes; it does not hold a static key")
    }

    @Test func identityCommandUsesTheKeyFileFlag() throws {
        let directory = try TestPaths.temporaryDirectory()
        let path = directory.appendingPathComponent("id").path
        let first = CapturingConsole()
        #expect(CommandLineTool.run(arguments: ["identity", "--key-file", path], console: first) == 0)
        let second = CapturingConsole()
        #expect(CommandLineTool.run(arguments: ["identity", "--key-file", path], console: second) == 0)
        #expect(first.outputLines.first == second.outputLines.first)
        #expect(first.outputLines.last?.hasSuffix("(created, mode 0600)") == true)
        #expect(second.outputLines.last == "key file: \(path)")
    }

    // MARK: Read, then write: the same bytes

    /// Keys at the edges (all-zero and all-ones scalars, which X25519 clamps but the file keeps)
    /// and a random one.
    static func keys() throws -> [X25519.PrivateKey] {
        var random = DeterministicRandom(seed: 0x57A7)
        return [
            try X25519.PrivateKey(rawRepresentation: [UInt8](repeating: 0, count: 32)),
            try X25519.PrivateKey(rawRepresentation: [UInt8](repeating: 0xFF, count: 32)),
            X25519.PrivateKey(using: &random),
        ]
    }

    @Test func keyFilesReadAndWriteBackToTheSameBytes() throws {
        let directory = try TestPaths.temporaryDirectory()
        for (index, key) in try Self.keys().enumerated() {
            let contents = StaticKeyStore.fileContents(key)
            #expect(contents.count == 65 && contents.last == 0x0A)
            let read = try #require(StaticKeyStore.key(fromFileContents: contents))
            #expect(read.rawRepresentation == key.rawRepresentation)
            #expect(StaticKeyStore.fileContents(read) == contents)
            // The same through a real file, as `share` and `replay` read it.
            let path = directory.appendingPathComponent("key\(index)").path
            try Data(contents).write(to: URL(fileURLWithPath: path))
            try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: path)
            #expect(try StaticKeyStore.load(at: path)?.rawRepresentation == key.rawRepresentation)
        }
    }

    /// Mutations of key files: each one that reads holds a key whose canonical file reads back as
    /// the same key and writes the same bytes again (a fixed point). Key files are read leniently
    /// (case, surrounding white space), so the key, not the file's spelling, is what round-trips.
    @Test func mutatedKeyFilesThatReadWriteBackToAFixedPoint() throws {
        let seeds = try Self.keys().map(StaticKeyStore.fileContents)
        var mutations = ByteMutations(seed: 0x4E11)
        let alphabet = Array("0123456789abcdefABCDEF \n".utf8)
        var accepted = 0
        for round in 0..<5_000 {
            let bytes = mutations.mutate(seeds[round % seeds.count], alphabet: alphabet)
            guard let key = StaticKeyStore.key(fromFileContents: bytes) else { continue }
            accepted += 1
            let canonical = StaticKeyStore.fileContents(key)
            let again = try #require(StaticKeyStore.key(fromFileContents: canonical))
            #expect(again.rawRepresentation == key.rawRepresentation, "round \(round)")
            #expect(StaticKeyStore.fileContents(again) == canonical)
        }
        #expect(accepted > 100)
    }

    /// Hand-written spellings of a key (upper case, no newline, CRLF, spaces) read as that key;
    /// anything that is not 64 hex digits is refused with the one-line error.
    @Test func keySpellingsReadLenientlyAndOthersAreRefused() throws {
        let directory = try TestPaths.temporaryDirectory()
        let key = try Self.keys()[2]
        let digits = Hex.encode(key.rawRepresentation)
        let readable = [
            digits.uppercased() + "\n", digits, digits + "\r\n", " " + digits + "\n", digits + " \n",
            digits + "\n\n", "\n" + digits + "\n",
        ]
        let refused = [
            String(digits.dropLast(2)) + "\n", digits + "00\n", String(digits.dropLast()) + "g\n", "",
            String(digits.prefix(32)) + " " + String(digits.dropFirst(32)),
        ]
        for (index, spelling) in (readable + refused).enumerated() {
            let path = directory.appendingPathComponent("key\(index)").path
            try Data(spelling.utf8).write(to: URL(fileURLWithPath: path))
            try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: path)
            if index < readable.count {
                #expect(try StaticKeyStore.load(at: path)?.rawRepresentation == key.rawRepresentation)
                continue
            }
            do {
                _ = try StaticKeyStore.load(at: path)
                Issue.record("spelling \(index) was read")
            } catch let error as StaticKeyStoreError {
                #expect(error.description == "\(path) does not hold a static key (64 hex digits expected)")
            }
        }
    }
}
