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

    /// The shared file's path when it exists; otherwise prints why the calling test is skipped.
    static func vectorPathOrExplain() -> String? {
        guard let path = sharedVectorPath else {
            print("Noise vector tests skipped: no Package.swift above \(#filePath)")
            return nil
        }
        guard FileManager.default.fileExists(atPath: path) else {
            print("Noise vector tests skipped: \(path) does not exist")
            return nil
        }
        return path
    }

    @Test func allSharedVectorsPass() throws {
        guard let path = Self.vectorPathOrExplain() else { return }
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
}
