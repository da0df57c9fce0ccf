import Foundation

/// Paths the CLI tests need, found from this file's location so that tests run from any directory.
enum TestPaths {
    static let packageRoot = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// The shared Noise vectors beside the repository, or nil (with the reason) when absent.
    static var sharedNoiseVectors: String? {
        let path = packageRoot.deletingLastPathComponent()
            .appendingPathComponent("shared/noise-vectors/cacophony-25519-ChaChaPoly-BLAKE2b.json").path
        return FileManager.default.fileExists(atPath: path) ? path : nil
    }

    /// A fresh temporary directory for one test.
    static func temporaryDirectory() throws -> URL {
        let url = FileManager.default.temporaryDirectory
            .appendingPathComponent("profiledrop-test-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }
}
