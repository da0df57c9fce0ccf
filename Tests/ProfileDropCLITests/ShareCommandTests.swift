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
        interface: String = "lo"
    ) throws -> Pair {
        let directory = try TestPaths.temporaryDirectory()
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
}
