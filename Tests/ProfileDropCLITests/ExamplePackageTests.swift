import Foundation
import Testing

/// `Examples/PairCard`, a package of its own that uses the ProfileDrop library by path: it builds,
/// and pairs with `profiledrop share` on loopback, answering the question through the library.
@Suite(.serialized) struct ExamplePackageTests {
    static let examplePackage = TestPaths.packageRoot.appendingPathComponent("Examples/PairCard")
    /// Kept inside this package's build directory, so that later runs build only what changed.
    static let scratch = TestPaths.packageRoot.appendingPathComponent(".build/examples/PairCard")

    /// Builds the example once for the suite; the path of its executable.
    static let executable: Result<URL, ExampleBuildError> = {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = [
            "swift", "build", "--package-path", examplePackage.path, "--scratch-path", scratch.path,
        ]
        let log = Pipe()
        process.standardOutput = log
        process.standardError = log
        do {
            try process.run()
        } catch {
            return .failure(ExampleBuildError(log: "\(error)"))
        }
        let output = String(decoding: log.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { return .failure(ExampleBuildError(log: output)) }
        return .success(scratch.appendingPathComponent("debug/PairCard"))
    }()

    struct ExampleBuildError: Error { var log: String }

    /// Runs the example with `arguments` and returns its exit code and output lines.
    static func runExample(_ arguments: [String]) throws -> (code: Int32, output: [String]) {
        let process = Process()
        process.executableURL = try executable.get()
        process.arguments = arguments
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        try process.run()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return (process.terminationStatus, text.split(separator: "\n").map(String.init))
    }

    static func shareArguments(_ extra: [String], port: UInt16) throws -> [String] {
        let directory = try TestPaths.temporaryDirectory()
        return [
            "share", "--interface", "lo", "--port", "\(port)", "--timeout", "30", "--json", "--yes",
            "--key-file", directory.appendingPathComponent("key").path,
        ] + extra
    }

    static func lastJSON(_ lines: [String]) throws -> [String: Any] {
        let last = try #require(lines.last)
        return try #require(try JSONSerialization.jsonObject(with: Data(last.utf8)) as? [String: Any])
    }

    @Test func theExampleSharesWithShareThatStartedFirst() throws {
        _ = try Self.executable.get()
        let port = freeUDPPort()
        let bori = TestPaths.packageRoot.appendingPathComponent("Examples/bori.json").path
        let max = TestPaths.packageRoot.appendingPathComponent("Examples/max.json").path
        let share = try ToolProcess(try Self.shareArguments(["--profile", bori], port: port))
        let example = try Self.runExample(["--card", max, "--interface", "lo", "--port", "\(port)"])
        let peer = share.finish()
        #expect(example.code == 0, "\(example.output.suffix(3))")
        #expect(example.output.last == "received: Bori", "\(example.output.suffix(3))")
        #expect(example.output.contains { $0.hasPrefix("code ") && $0.hasSuffix(": sharing") })
        #expect(peer.code == 0, "\(peer.errors)")
        let closed = try Self.lastJSON(peer.output)
        #expect(closed["reason"] as? String == "exchanged")
        #expect((closed["card"] as? [String: Any])?["name"] as? String == "Max")
    }

    @Test func theExampleReceivesOnlyFromShareThatStartedSecond() throws {
        _ = try Self.executable.get()
        let port = freeUDPPort()
        let bori = TestPaths.packageRoot.appendingPathComponent("Examples/bori.json").path
        let group = DispatchGroup()
        nonisolated(unsafe) var example: Result<(code: Int32, output: [String]), any Error>?
        group.enter()
        DispatchQueue.global().async {
            example = Result { try Self.runExample(["--interface", "lo", "--port", "\(port)"]) }
            group.leave()
        }
        // The example listens first, and the command joins it.
        usleep(700_000)
        let peer = try ToolProcess(try Self.shareArguments(["--profile", bori], port: port)).finish()
        group.wait()
        let result = try #require(try example?.get())
        #expect(result.code == 0, "\(result.output.suffix(3))")
        #expect(result.output.last == "received: Bori", "\(result.output.suffix(3))")
        #expect(result.output.contains { $0.hasPrefix("code ") && $0.hasSuffix(": receiving") })
        #expect(peer.code == 0, "\(peer.errors)")
        let closed = try Self.lastJSON(peer.output)
        #expect(closed["reason"] as? String == "exchanged")
        #expect(closed["card"] is NSNull)
    }
}
