import Foundation
import Testing

@testable import ProfileDropCLI

/// Two real `profiledrop share` processes. Every run passes `--interface lo` (or runs inside network
/// namespaces the test creates) and its own discovery port, so that parallel tests never meet.
@Suite struct ShareCommandTests {
    static let bori = """
        {"name": "Bori", "age": 3, "sex": "female", "neutered": true, "size": "small",
         "keywords": ["calm", "loves fetch"], "owner": "minji"}
        """
    static let max = """
        {"name": "Max", "age": 5, "sex": "male", "neutered": false, "size": "large",
         "keywords": ["energetic"], "owner": "joon"}
        """

    struct Pair {
        var first: (code: Int32, output: [String], errors: [String])
        var second: (code: Int32, output: [String], errors: [String])
    }

    /// Runs two devices with the given extra arguments and waits for both.
    func runPair(
        first: [String], second: [String], timeout: Int = 20, prefixes: ([String], [String]) = ([], []),
        interface: String = "lo", keyDirectory: URL? = nil
    ) throws -> Pair {
        let directory = try keyDirectory ?? TestPaths.temporaryDirectory()
        let boriFile = directory.appendingPathComponent("bori.json").path
        let maxFile = directory.appendingPathComponent("max.json").path
        try Self.bori.write(toFile: boriFile, atomically: true, encoding: .utf8)
        try Self.max.write(toFile: maxFile, atomically: true, encoding: .utf8)
        let port = String(freeUDPPort())
        func arguments(_ card: String, _ key: String, _ extra: [String]) -> [String] {
            [
                "share", "--profile", card, "--interface", interface, "--port", port, "--json",
                "--key-file", directory.appendingPathComponent(key).path, "--timeout", String(timeout),
            ] + extra
        }
        let a = try ToolProcess(arguments(boriFile, "a.key", first), prefix: prefixes.0)
        let b = try ToolProcess(arguments(maxFile, "b.key", second), prefix: prefixes.1)
        return Pair(first: a.finish(), second: b.finish())
    }

    func lastJSON(_ lines: [String]) throws -> [String: Any] {
        let last = try #require(lines.last)
        return try #require(try JSONSerialization.jsonObject(with: Data(last.utf8)) as? [String: Any])
    }

    @Test func twoProcessesOnLoopbackExchangeCards() throws {
        let pair = try runPair(first: [], second: [])
        #expect(pair.first.code == 0, "first: \(pair.first.errors)")
        #expect(pair.second.code == 0, "second: \(pair.second.errors)")
        let first = try lastJSON(pair.first.output)
        let second = try lastJSON(pair.second.output)
        #expect(first["event"] as? String == "closed")
        #expect(first["reason"] as? String == "exchanged")
        #expect((first["card"] as? [String: Any])?["name"] as? String == "Max")
        #expect((second["card"] as? [String: Any])?["name"] as? String == "Bori")
        // Both screens show the same verification code.
        #expect(first["code"] as? String != nil)
        #expect(first["code"] as? String == second["code"] as? String)
        // Every line is a full snapshot.
        for line in pair.first.output {
            let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
            #expect(object?["stage"] != nil && object?["progress"] != nil)
        }
    }

    @Test(arguments: [
        ("in range", "0,0,0", "7,0,180", ExitCode.success),
        ("too far", "0,0,0", "20,0,180", ExitCode.outOfRange),
        ("too close", "0,0,0", "3,0,180", ExitCode.outOfRange),
        ("misaligned", "0,0,0", "7,0,90", ExitCode.outOfRange),
    ])
    func explicitPoses(label: String, firstPose: String, secondPose: String, expected: ExitCode) throws {
        let pair = try runPair(
            first: ["--pose", firstPose, "--still"], second: ["--pose", secondPose, "--still"],
            timeout: expected == .success ? 20 : 8)
        #expect(pair.first.code == expected.rawValue, "\(label) first: \(pair.first.output.suffix(2))")
        #expect(pair.second.code == expected.rawValue, "\(label) second: \(pair.second.output.suffix(2))")
        let reason = try lastJSON(pair.first.output)["reason"] as? String
        #expect(reason == (expected == .success ? "exchanged" : "out_of_range"))
    }

    @Test func receiveOnlyGetsTheCardAndSendsNone() throws {
        let pair = try runPair(first: [], second: ["--receive-only"])
        #expect(pair.first.code == 0)
        #expect(pair.second.code == 0)
        #expect(try lastJSON(pair.first.output)["card"] is NSNull)
        #expect((try lastJSON(pair.second.output)["card"] as? [String: Any])?["name"] as? String == "Bori")
    }

    /// The debugging loop of the README: both terminals capture with --keylog, both captures replay
    /// identically from the devices' own key files, and tshark with the dissector names every
    /// message type of the pairing.
    @Test func bothSidesCaptureAndReplayIdentically() throws {
        let directory = try TestPaths.temporaryDirectory()
        let captures = ["a", "b"].map { directory.appendingPathComponent("\($0).pcapng").path }
        let pair = try runPair(
            first: ["--capture", captures[0], "--keylog"], second: ["--capture", captures[1], "--keylog"],
            keyDirectory: directory)
        #expect(pair.first.code == 0 && pair.second.code == 0)
        var typesSeen = Set<String>()
        for (index, capture) in captures.enumerated() {
            let key = directory.appendingPathComponent(index == 0 ? "a.key" : "b.key").path
            let replay = try ToolProcess(["replay", capture, "--key-file", key]).finish()
            #expect(replay.code == 0, "\(replay.output.suffix(3)) \(replay.errors)")
            #expect(replay.output.last?.hasPrefix("replay: ") == true)
            #expect(replay.output.last?.hasSuffix(" datagrams, identical") == true)
            if let tshark = ["/usr/bin/tshark", "/usr/local/bin/tshark"].first(
                where: FileManager.default.isExecutableFile)
            {
                let script = TestPaths.packageRoot.appendingPathComponent("Tools/wireshark/profiledrop.lua")
                    .path
                let process = Process()
                let pipe = Pipe()
                process.executableURL = URL(fileURLWithPath: tshark)
                process.arguments = [
                    "-X", "lua_script:\(script)", "-r", capture, "-Y", "profiledrop", "-T", "fields", "-e",
                    "profiledrop.type_name",
                ]
                process.standardOutput = pipe
                process.standardError = FileHandle.nullDevice
                try process.run()
                let output = pipe.fileHandleForReading.readDataToEndOfFile()
                process.waitUntilExit()
                typesSeen.formUnion(
                    String(decoding: output, as: UTF8.self).split(separator: "\n").map(String.init))
            }
        }
        if !typesSeen.isEmpty {
            for type in ["BEACON", "QUERY", "INVITE", "ACCEPT", "CONFIRM", "SECURE"] {
                #expect(typesSeen.contains(type), "tshark listed \(typesSeen.sorted())")
            }
        }
    }
}
