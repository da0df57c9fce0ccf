import Foundation
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

    @Test func refusesAKeyOthersCanRead() throws {
        let directory = try TestPaths.temporaryDirectory()
        let path = directory.appendingPathComponent("static-key").path
        _ = try StaticKeyStore.loadOrCreate(at: path)
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: path)
        #expect(throws: StaticKeyStoreError.self) { try StaticKeyStore.load(at: path) }
    }

    @Test func refusesMalformedContent() throws {
        let directory = try TestPaths.temporaryDirectory()
        let path = directory.appendingPathComponent("static-key").path
        try "not a key\n".write(toFile: path, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: path)
        #expect(throws: StaticKeyStoreError.self) { try StaticKeyStore.load(at: path) }
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
}
