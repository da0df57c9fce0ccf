import Foundation
import Testing

@testable import ProfileDropCLI

@Suite struct NoiseVectorsCommandTests {
    static let absent: Comment = "../shared/noise-vectors is not beside the repository"

    @Test(.enabled(if: TestPaths.sharedNoiseVectors != nil, absent))
    func sharedVectorsAllPass() throws {
        let path = try #require(TestPaths.sharedNoiseVectors)
        let console = CapturingConsole()
        let code = CommandLineTool.run(arguments: ["noise-vectors", path], console: console)
        #expect(console.outputLines.last == "noise-vectors: 59 vectors, 0 failed, 0 skipped")
        #expect(code == 0)
    }

    @Test(.enabled(if: TestPaths.sharedNoiseVectors != nil, absent))
    func aCorruptedCiphertextFailsAndExitsNonZero() throws {
        let path = try #require(TestPaths.sharedNoiseVectors)
        var text = try String(contentsOfFile: path, encoding: .utf8)
        // Flip one hex digit inside the first ciphertext.
        let marker = try #require(text.range(of: "\"ciphertext\": \""))
        let digit = text.index(marker.upperBound, offsetBy: 4)
        text.replaceSubrange(digit...digit, with: text[digit] == "0" ? "1" : "0")
        let directory = try TestPaths.temporaryDirectory()
        let corrupted = directory.appendingPathComponent("corrupted.json").path
        try text.write(toFile: corrupted, atomically: true, encoding: .utf8)

        let console = CapturingConsole()
        let code = CommandLineTool.run(arguments: ["noise-vectors", corrupted], console: console)
        #expect(code == ExitCode.failure.rawValue)
        #expect(console.outputLines.last == "noise-vectors: 59 vectors, 1 failed, 0 skipped")
        #expect(console.outputLines.contains { $0.hasPrefix("FAIL  Noise_") })
        // Standard error says it in one line too, for a log that keeps only that.
        #expect(console.errorLines == ["profiledrop noise-vectors: 1 of 59 vectors failed (listed above)"])
    }

    @Test func unsupportedProtocolsAreSkipped() throws {
        let directory = try TestPaths.temporaryDirectory()
        let file = directory.appendingPathComponent("other-suite.json").path
        try """
        {"vectors": [{"protocol_name": "Noise_NN_448_AESGCM_SHA512", "init_prologue": "", "resp_prologue": "",
          "init_ephemeral": "", "resp_ephemeral": "", "handshake_hash": "", "messages": []}]}
        """.write(toFile: file, atomically: true, encoding: .utf8)
        let console = CapturingConsole()
        #expect(CommandLineTool.run(arguments: ["noise-vectors", file], console: console) == 0)
        #expect(console.outputLines.last == "noise-vectors: 1 vectors, 0 failed, 1 skipped")
    }

    /// A vector file is outside input: a protocol name with line breaks and escapes is printed with
    /// U+FFFD in their place, so it can neither fake a line nor reach the terminal.
    @Test func controlCharactersInAVectorFileAreNotPrinted() throws {
        let directory = try TestPaths.temporaryDirectory()
        let file = directory.appendingPathComponent("escapes.json").path
        try """
        {"vectors": [{"protocol_name": "Noise_NN_448\\nall good\\u001b[31m", "init_prologue": "",
          "resp_prologue": "", "init_ephemeral": "", "resp_ephemeral": "", "handshake_hash": "", "messages": []}]}
        """.write(toFile: file, atomically: true, encoding: .utf8)
        let console = CapturingConsole()
        // Not a well-formed protocol name, so the vector fails.
        #expect(CommandLineTool.run(arguments: ["noise-vectors", file], console: console) == 1)
        #expect(console.outputLines.count == 2, "\(console.outputLines)")
        #expect(
            console.outputLines.first?.hasPrefix("FAIL  Noise_NN_448\u{FFFD}all good\u{FFFD}[31m:") == true)
        #expect(
            !console.outputLines.joined().unicodeScalars.contains {
                $0.properties.generalCategory == .control
            })
    }

    @Test func missingAndMalformedFilesAreOneLineUsageErrors() throws {
        let directory = try TestPaths.temporaryDirectory()
        let garbage = directory.appendingPathComponent("garbage.json").path
        try "{not json".write(toFile: garbage, atomically: true, encoding: .utf8)
        for path in [directory.appendingPathComponent("missing.json").path, garbage] {
            let console = CapturingConsole()
            #expect(CommandLineTool.run(arguments: ["noise-vectors", path], console: console) == 2)
            #expect(console.errorLines.count == 1)
            #expect(console.errorLines.first?.contains(path) == true)
        }
        let console = CapturingConsole()
        #expect(CommandLineTool.run(arguments: ["noise-vectors"], console: console) == 2)
    }
}
