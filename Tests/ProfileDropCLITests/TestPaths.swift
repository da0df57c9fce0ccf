import Foundation
import ProfileDropCLI

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

    /// A fresh temporary directory for one test, removed with what it holds when the test process
    /// exits.
    static func temporaryDirectory() throws -> URL {
        let url = FileManager.default.temporaryDirectory
            .appendingPathComponent("profiledrop-test-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        TestDirectories.shared.add(url)
        return url
    }
}

/// The temporary directories tests made, removed when the test process exits. Tests run in
/// parallel and many hand their directory to a child process, so the process's end is the one
/// moment when none of them is in use; a process that crashes leaves them for inspection.
final class TestDirectories: @unchecked Sendable {  // `directories` is guarded by `lock`.
    static let shared: TestDirectories = {
        atexit { TestDirectories.shared.removeAll() }
        return TestDirectories()
    }()

    private let lock = NSLock()
    private var directories: [URL] = []

    /// Records `directory` for removal at exit.
    func add(_ directory: URL) {
        lock.lock()
        defer { lock.unlock() }
        directories.append(directory)
    }

    /// Removes every recorded directory and what it holds.
    func removeAll() {
        lock.lock()
        defer { lock.unlock() }
        for directory in directories { try? FileManager.default.removeItem(at: directory) }
        directories.removeAll()
    }
}

extension TestPaths {
    /// The `profiledrop` executable built beside the test bundle, or the one `PROFILEDROP_TOOL`
    /// names: a test that times many processes against a lone pair on two cores measures the debug
    /// build's CPU more than the protocol, and is run against a release build
    /// (CONTRIBUTING.md, "Test").
    static var executable: URL {
        if let tool = ProcessInfo.processInfo.environment["PROFILEDROP_TOOL"], !tool.isEmpty {
            return URL(fileURLWithPath: tool)
        }
        let buildDirectory = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
            .deletingLastPathComponent()
        let beside = buildDirectory.appendingPathComponent("profiledrop")
        if FileManager.default.isExecutableFile(atPath: beside.path) { return beside }
        return packageRoot.appendingPathComponent(".build/debug/profiledrop")
    }
}

extension Process {
    /// Sets this process up to run `profiledrop` with `arguments`, reading `input`, and returns the
    /// new pipes its output and errors go to. A write to it once it has exited fails rather than
    /// kill the test runner.
    func prepareProfiledrop(_ arguments: [String], input: Any) -> (output: Pipe, errors: Pipe) {
        signal(SIGPIPE, SIG_IGN)
        let output = Pipe()
        let errors = Pipe()
        executableURL = TestPaths.executable
        self.arguments = arguments
        standardInput = input
        standardOutput = output
        standardError = errors
        return (output, errors)
    }
}

/// A `profiledrop` child process whose output is collected.
final class ToolProcess: @unchecked Sendable {  // The collected data is read only after group.wait().
    let process = Process()
    private let output = Pipe()
    private let errors = Pipe()
    private var collectedOutput = Data()
    private var collectedErrors = Data()
    private let group = DispatchGroup()

    init(_ arguments: [String], prefix: [String] = []) throws {
        if prefix.isEmpty {
            process.executableURL = TestPaths.executable
            process.arguments = arguments
        } else {
            process.executableURL = URL(fileURLWithPath: prefix[0])
            process.arguments = Array(prefix.dropFirst()) + [TestPaths.executable.path] + arguments
        }
        process.standardOutput = output
        process.standardError = errors
        process.standardInput = FileHandle.nullDevice
        // Drain both pipes as the child writes, so that a chatty child never blocks on a full pipe.
        for (pipe, keyPath) in [
            (output, \ToolProcess.collectedOutput), (errors, \ToolProcess.collectedErrors),
        ] {
            group.enter()
            DispatchQueue.global().async { [self] in
                let data = pipe.fileHandleForReading.readDataToEndOfFile()
                self[keyPath: keyPath] = data
                group.leave()
            }
        }
        try process.run()
    }

    /// Waits for the child and returns its exit code and output lines.
    func finish() -> (code: Int32, output: [String], errors: [String]) {
        process.waitUntilExit()
        group.wait()
        func lines(_ data: Data) -> [String] {
            String(decoding: data, as: UTF8.self).split(separator: "\n").map(String.init)
        }
        return (process.terminationStatus, lines(collectedOutput), lines(collectedErrors))
    }
}

/// A UDP port the kernel considers free right now, for one test's discovery group. With
/// `PROFILEDROP_TEST_PORTS=LOW-HIGH` in the environment, a port from that range that no other test
/// of this process was given, so that people sharing a machine can keep their runs apart.
func freeUDPPort() -> UInt16 {
    if let port = TestPortRange.shared?.next() { return port }
    let descriptor = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
    defer { close(descriptor) }
    return bind(descriptor, to: socketAddress(ipv4: 0x7F00_0001)) ?? 0
}

/// The discovery ports `PROFILEDROP_TEST_PORTS` reserves for this test process, handed out in turn.
final class TestPortRange: @unchecked Sendable {  // `next` is guarded by `lock`.
    static let shared: TestPortRange? = {
        guard let text = ProcessInfo.processInfo.environment["PROFILEDROP_TEST_PORTS"] else { return nil }
        let bounds = text.split(separator: "-").compactMap { UInt16($0) }
        guard bounds.count == 2, bounds[0] <= bounds[1] else { return nil }
        return TestPortRange(bounds[0]...bounds[1])
    }()

    let range: ClosedRange<UInt16>
    private let lock = NSLock()
    private var nextPort: UInt16

    init(_ range: ClosedRange<UInt16>) {
        self.range = range
        nextPort = range.lowerBound
    }

    /// The next port of the range that nothing on this machine holds, wrapping around.
    func next() -> UInt16 {
        lock.lock()
        defer { lock.unlock() }
        for _ in range {
            let port = nextPort
            nextPort = port == range.upperBound ? range.lowerBound : port + 1
            if Self.isFree(port) { return port }
        }
        return nextPort
    }

    /// Whether a UDP socket can bind `port` on the loopback address now.
    static func isFree(_ port: UInt16) -> Bool {
        let descriptor = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        defer { close(descriptor) }
        return bind(descriptor, to: socketAddress(ipv4: 0x7F00_0001, port: port)) != nil
    }
}

/// An IPv4 socket address: `ipv4` in host order (`0x7F00_0001` is 127.0.0.1), and `port`.
func socketAddress(ipv4: UInt32, port: UInt16 = 0) -> sockaddr_in {
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = port.bigEndian
    address.sin_addr.s_addr = ipv4.bigEndian
    return address
}

/// Binds `descriptor` to `address`; the port it is bound to (a free one when `address` names port
/// 0), or nil when binding failed.
func bind(_ descriptor: Int32, to address: sockaddr_in) -> UInt16? {
    var local = address
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafePointer(to: &local) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, length) }
    }
    guard bound == 0 else { return nil }
    _ = withUnsafeMutablePointer(to: &local) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) }
    }
    return UInt16(bigEndian: local.sin_port)
}

/// Sends `payload` from `descriptor` to `destination` (tests send only to loopback and to the
/// multicast group through the loopback interface).
func send(_ payload: [UInt8], from descriptor: Int32, to destination: sockaddr_in) {
    var destination = destination
    _ = payload.withUnsafeBytes { bytes in
        withUnsafePointer(to: &destination) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                sendto(
                    descriptor, bytes.baseAddress, bytes.count, 0, $0,
                    socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
    }
}

/// Runs `profiledrop` in this process with a capturing console: its exit code and output lines.
func runInProcess(_ arguments: [String]) -> (code: Int32, output: [String], errors: [String]) {
    let console = CapturingConsole()
    let code = CommandLineTool.run(arguments: arguments, console: console)
    return (code, console.outputLines, console.errorLines)
}
