import Foundation
import Testing

@testable import ProfileDropNoise

/// Runs the shared cacophony vectors, and checks that the runner notices corrupted or unreadable files.
struct NoiseVectorRunnerTests {
    /// `../shared/noise-vectors/…` next to the package root, found by walking up from this file to the
    /// directory holding Package.swift.
    static let sharedVectorPath: String? = {
        var directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        while directory.path != "/" {
            if FileManager.default.fileExists(atPath: directory.appendingPathComponent("Package.swift").path)
            {
                return directory.deletingLastPathComponent()
                    .appendingPathComponent("shared/noise-vectors/cacophony-25519-ChaChaPoly-BLAKE2b.json")
                    .path
            }
            directory = directory.deletingLastPathComponent()
        }
        return nil
    }()

    /// The shared file's path when it exists.
    static var existingVectorPath: String? {
        sharedVectorPath.flatMap { FileManager.default.fileExists(atPath: $0) ? $0 : nil }
    }

    /// Why the shared-vector tests cannot run here, for the skip message.
    static let absentVectors = Comment(
        rawValue:
            "../shared/noise-vectors/cacophony-25519-ChaChaPoly-BLAKE2b.json is not beside the repository")

    @Test(
        .enabled(if: NoiseVectorRunnerTests.existingVectorPath != nil, NoiseVectorRunnerTests.absentVectors))
    func allSharedVectorsPass() throws {
        let path = try #require(Self.existingVectorPath)
        let results = try NoiseVectorRunner.run(contentsOf: path)
        #expect(results.count == 59)
        let failed = results.filter { if case .failed = $0.outcome { true } else { false } }
        let skipped = results.filter { if case .skipped = $0.outcome { true } else { false } }
        for result in failed + skipped {
            Issue.record("\(result.protocolName): \(result.outcome)")
        }
        #expect(failed.isEmpty)
        #expect(skipped.isEmpty)
    }

    /// Writes `json` to a fresh temporary file and returns its path.
    static func temporaryFile(_ contents: Data) throws -> String {
        let url = FileManager.default.temporaryDirectory
            .appendingPathComponent("noise-vectors-\(UUID().uuidString).json")
        try contents.write(to: url)
        return url.path
    }

    /// The shared file's vectors as mutable JSON objects.
    static func sharedVectors(_ path: String) throws -> [[String: Any]] {
        let data = try Data(contentsOf: URL(fileURLWithPath: path))
        let root = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        return try #require(root["vectors"] as? [[String: Any]])
    }

    static func write(_ vectors: [[String: Any]]) throws -> String {
        try temporaryFile(
            try JSONSerialization.data(withJSONObject: ["vectors": vectors], options: [.sortedKeys]))
    }

    /// Flips the low bit of the last hex digit of one field.
    static func flipLastDigit(_ hex: String) -> String {
        let last = hex.last!
        let flipped = String(last.hexDigitValue! ^ 1, radix: 16)
        return String(hex.dropLast()) + flipped
    }

    @Test(
        .enabled(if: NoiseVectorRunnerTests.existingVectorPath != nil, NoiseVectorRunnerTests.absentVectors))
    func corruptedCiphertextsAndHashesFailOnlyTheirVector() throws {
        let path = try #require(Self.existingVectorPath)
        var vectors = try Self.sharedVectors(path)
        // Vector 0 (NN): a transport message; vector 10 (XX): the second handshake message;
        // vector 20 (XKpsk3): the handshake hash.
        for (vectorIndex, messageIndex) in [(0, 3), (10, 1)] {
            var messages = try #require(vectors[vectorIndex]["messages"] as? [[String: String]])
            messages[messageIndex]["ciphertext"] = Self.flipLastDigit(
                try #require(messages[messageIndex]["ciphertext"]))
            vectors[vectorIndex]["messages"] = messages
        }
        vectors[20]["handshake_hash"] = Self.flipLastDigit(
            try #require(vectors[20]["handshake_hash"] as? String))
        let corrupted = try Self.write(vectors)
        defer { try? FileManager.default.removeItem(atPath: corrupted) }

        let results = try NoiseVectorRunner.run(contentsOf: corrupted)
        #expect(results.count == vectors.count)
        let failedIndices = results.indices.filter {
            if case .failed = results[$0].outcome { true } else { false }
        }
        #expect(failedIndices == [0, 10, 20])
        for index in failedIndices {
            #expect(results[index].protocolName == vectors[index]["protocol_name"] as? String)
        }
        guard case .failed(let reason) = results[20].outcome else { return }
        #expect(reason.contains("handshake hash"))
    }

    @Test func unsupportedProtocolsAreSkippedAndBadHexFails() throws {
        let base: [String: Any] = [
            "protocol_name": "Noise_NN_25519_AESGCM_SHA256",
            "init_prologue": "", "resp_prologue": "",
            "messages": [["payload": "00", "ciphertext": "00"]],
        ]
        var badHex = base
        badHex["protocol_name"] = "Noise_NN_25519_ChaChaPoly_BLAKE2b"
        badHex["init_ephemeral"] = "zz"
        let path = try Self.write([base, badHex])
        defer { try? FileManager.default.removeItem(atPath: path) }
        let results = try NoiseVectorRunner.run(contentsOf: path)
        #expect(
            results.map(\.protocolName) == [
                "Noise_NN_25519_AESGCM_SHA256", "Noise_NN_25519_ChaChaPoly_BLAKE2b",
            ])
        guard case .skipped(let reason) = results[0].outcome else {
            Issue.record("expected a skip, got \(results[0].outcome)")
            return
        }
        #expect(reason.contains("AESGCM"))
        guard case .failed(let failure) = results[1].outcome else {
            Issue.record("expected a failure, got \(results[1].outcome)")
            return
        }
        #expect(failure.contains("init_ephemeral"))
    }

    @Test func unreadableOrMalformedFilesThrowOneLineNamingTheFile() throws {
        let missing = "/nonexistent/noise-vectors.json"
        #expect {
            try NoiseVectorRunner.run(contentsOf: missing)
        } throws: { error in
            let text = (error as? NoiseVectorFileError)?.description ?? ""
            return text.contains(missing) && !text.contains("\n")
        }
        let garbage = try Self.temporaryFile(Data("{\"vectors\": [ {\"protocol_name\": 3}\n ]".utf8))
        defer { try? FileManager.default.removeItem(atPath: garbage) }
        #expect {
            try NoiseVectorRunner.run(contentsOf: garbage)
        } throws: { error in
            let text = (error as? NoiseVectorFileError)?.description ?? ""
            return text.contains(garbage) && !text.contains("\n")
        }
        let wrongShape = try Self.temporaryFile(Data("{\"vectors\": [{\"protocol_name\": \"x\"}]}".utf8))
        defer { try? FileManager.default.removeItem(atPath: wrongShape) }
        #expect {
            try NoiseVectorRunner.run(contentsOf: wrongShape)
        } throws: { error in
            (error as? NoiseVectorFileError)?.reason.contains("messages") == true
        }
    }
}
