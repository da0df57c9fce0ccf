import Foundation
@_spi(Storage) import ProfileDrop
import ProfileDropCore
import ProfileDropCrypto
import ProfileDropJSON
import Testing

@testable import ProfileDropCLI

@Suite struct PeersCommandTests {
    static let peers = [
        KnownPeersStoreTests.peer(1, name: "Rex (Sam)"), KnownPeersStoreTests.peer(2, name: "Bori (Jiwoo)"),
        KnownPeersStoreTests.peer(3, name: "Max (Lee)"),
    ]

    /// Runs `profiledrop` with `arguments` and returns its exit code and console.
    static func run(_ arguments: [String]) -> (code: Int32, console: CapturingConsole) {
        let console = CapturingConsole()
        return (CommandLineTool.run(arguments: arguments, console: console), console)
    }

    /// A known-peers file holding `peers`, in a fresh directory.
    static func file(_ peers: [KnownPeer] = Self.peers) throws -> String {
        let path = try TestPaths.temporaryDirectory().appendingPathComponent("known-peers").path
        try KnownPeersStore.save(peers, at: path)
        return path
    }

    @Test func listsNumberFingerprintAndNameOneLineEach() throws {
        let path = try Self.file()
        let (code, console) = Self.run(["peers", "--known-peers", path])
        #expect(code == 0)
        #expect(
            console.outputLines
                == Self.peers.enumerated().map { index, peer in
                    "\(index + 1)  \(KnownPeersStore.fingerprint(peer))  \(peer.name)"
                })
        #expect(console.errorLines.isEmpty)
    }

    @Test func numbersAreRightAlignedPastNine() throws {
        let peers = (1...10).map { KnownPeersStoreTests.peer($0) }
        let (_, console) = Self.run(["peers", "--known-peers", try Self.file(peers)])
        #expect(console.outputLines.first?.hasPrefix(" 1  ") == true)
        #expect(console.outputLines.last?.hasPrefix("10  ") == true)
    }

    @Test func jsonListsOneObjectPerLine() throws {
        let path = try Self.file()
        let (code, console) = Self.run(["peers", "--json", "--known-peers", path])
        #expect(code == 0)
        #expect(console.outputLines.count == Self.peers.count)
        #expect(
            console.outputLines.first
                == "{\"number\":1,\"fingerprint\":\"\(KnownPeersStore.fingerprint(Self.peers[0]))\",\"name\":\"Rex (Sam)\"}"
        )
        for (index, line) in console.outputLines.enumerated() {
            let value = try JSONValue.parse(line)
            guard case .object(let members) = value else {
                Issue.record("not an object: \(line)")
                continue
            }
            #expect(members.map(\.key) == ["number", "fingerprint", "name"])
            #expect(members[0].value == .integer(index + 1))
            #expect(members[2].value == .string(Self.peers[index].name))
        }
    }

    @Test func anEmptyOrMissingFileSaysSo() throws {
        let directory = try TestPaths.temporaryDirectory()
        let path = directory.appendingPathComponent("known-peers").path
        let (code, console) = Self.run(["peers", "--known-peers", path])
        #expect(code == 0)
        #expect(console.outputLines == ["no known peers (\(path))"])
        try KnownPeersStore.save([], at: path)
        #expect(
            Self.run(["peers", "--known-peers", path]).console.outputLines == ["no known peers (\(path))"])
        // JSON lines for no peers: no lines.
        #expect(Self.run(["peers", "--json", "--known-peers", path]).console.outputLines == [])
    }

    @Test func theFileIsBesideTheKeyFileByDefault() throws {
        let directory = try TestPaths.temporaryDirectory()
        let keyFile = directory.appendingPathComponent("bori.key").path
        try KnownPeersStore.save(Self.peers, at: directory.appendingPathComponent("known-peers").path)
        let (code, console) = Self.run(["peers", "--key-file", keyFile])
        #expect(code == 0)
        #expect(console.outputLines.count == 3)
        // Listing needs no static key, and does not create one.
        #expect(!FileManager.default.fileExists(atPath: keyFile))
        // --known-peers wins over --key-file.
        let other = directory.appendingPathComponent("other").path
        #expect(
            Self.run(["peers", "--key-file", keyFile, "--known-peers", other]).console.outputLines == [
                "no known peers (\(other))"
            ])
    }

    @Test func forgetPrintsEachRemovedPeerAndTheListNoLongerHasIt() throws {
        let path = try Self.file()
        let fingerprint = KnownPeersStore.fingerprint(Self.peers[1])
        let (code, console) = Self.run([
            "peers", "forget", String(fingerprint.prefix(4)), "--known-peers", path,
        ])
        #expect(code == 0)
        #expect(console.outputLines == ["forgot Bori (Jiwoo) (\(fingerprint))"])
        #expect(try KnownPeersStore.load(at: path) == [Self.peers[0], Self.peers[2]])
        // Options may come before the selector too.
        let byName = Self.run(["peers", "--known-peers", path, "forget", "Max (Lee)"])
        #expect(byName.code == 0)
        #expect(try KnownPeersStore.load(at: path) == [Self.peers[0]])
        #expect(Self.run(["peers", "forget", "1", "--known-peers", path]).code == 0)
        #expect(try KnownPeersStore.load(at: path) == [])
    }

    /// A name that looks like an option is given after `--`.
    @Test func aSelectorStartingWithADashFollowsDoubleDash() throws {
        let path = try Self.file([KnownPeersStoreTests.peer(1, name: "--odd")])
        let (code, console) = Self.run(["peers", "forget", "--known-peers", path, "--", "--odd"])
        #expect(code == 0)
        #expect(console.outputLines.first?.hasPrefix("forgot --odd (") == true)
    }

    @Test func badInputIsAUsageErrorInOneLine() throws {
        let path = try Self.file([Self.peers[0], KnownPeersStoreTests.peer(9, name: "Rex (Sam)")])
        let usage = PeersCommand.usage
        let cases: [([String], String)] = [
            (["peers", "forget", "--known-peers", path], "forget needs a SELECTOR; \(usage)"),
            (["peers", "forget", "1", "2", "--known-peers", path], "forget takes one SELECTOR; \(usage)"),
            (["peers", "list", "--known-peers", path], "unknown argument 'list'; \(usage)"),
            (
                ["peers", "forget", "1", "--json", "--known-peers", path],
                "--json is for the list, not for forget"
            ),
            (
                ["peers", "forget", "Rex (Sam)", "--known-peers", path],
                "'Rex (Sam)' matches peers 1, 2 in \(path); pick one by number, e.g. 'profiledrop peers forget 1'"
            ),
            (
                ["peers", "forget", "Nobody", "--known-peers", path],
                "no known peer matches 'Nobody' in \(path) (give a number, fingerprint or name from 'profiledrop peers')"
            ),
            (["peers", "--verbose"], "unknown option '--verbose'"),
        ]
        for (arguments, message) in cases {
            let (code, console) = Self.run(arguments)
            #expect(code == ExitCode.usage.rawValue, "\(arguments)")
            #expect(console.errorLines == ["profiledrop peers: \(message)"], "\(arguments)")
            // Asked for JSON lines, the command writes its error as one too; otherwise nothing.
            if arguments.contains("--json") {
                #expect(
                    console.outputLines.count == 1 && console.outputLines[0].contains(#""event":"error""#))
            } else {
                #expect(console.outputLines.isEmpty, "\(arguments)")
            }
        }
        #expect(try KnownPeersStore.load(at: path).count == 2)
    }

    @Test func aFileOthersCanReadIsRefusedWithTheFix() throws {
        let path = try Self.file()
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: path)
        for arguments in [["peers"], ["peers", "forget", "1"]] {
            let (code, console) = Self.run(arguments + ["--known-peers", path])
            #expect(code == ExitCode.usage.rawValue)
            #expect(
                console.errorLines == [
                    "profiledrop peers: \(path) has permissions 644, but it holds secret keys; run 'chmod 600 \(path)'"
                ])
        }
    }

    /// The bond key is the pair's secret: no output of `peers`, in any mode, shows any of its digits
    /// in a row long enough to matter, nor does an error about a malformed line.
    @Test func theBondKeyNeverAppearsInOutput() throws {
        let path = try Self.file()
        var lines: [String] = []
        for arguments in [
            ["peers"], ["peers", "--json"], ["peers", "forget", "2"], ["peers", "forget", "Nobody"],
        ] {
            let console = Self.run(arguments + ["--known-peers", path]).console
            lines += console.outputLines + console.errorLines
        }
        let resolving = Hex.encode(Self.peers[0].resolvingKey)
        let bond = Hex.encode(Self.peers[0].bondKey)
        try KnownPeersStoreTests.write("v2 \(resolving) \(bond) \"\\q\"\n", to: path)
        let console = Self.run(["peers", "--known-peers", path]).console
        #expect(console.errorLines.count == 1)
        lines += console.outputLines + console.errorLines
        #expect(lines.count >= 6)
        let secrets = Self.peers.map { Hex.encode($0.bondKey) }
        for line in lines {
            for secret in secrets {
                for start in stride(from: 0, to: secret.count - 8, by: 4) {
                    let digits = secret.dropFirst(start).prefix(8)
                    #expect(!line.lowercased().contains(digits), "\(line)")
                }
            }
        }
    }
}
