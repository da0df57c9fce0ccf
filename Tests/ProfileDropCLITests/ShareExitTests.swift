import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// The exit rule (README, "JSON lines"): `share` ends with its final line, within 100 ms, whatever
/// its standard input is and however the run ends. Two real processes on loopback.
@Suite struct ShareExitTests {
    /// The most a process may take from its final line to its exit.
    static let exitBound = 0.1

    /// What a test can put on the standard input of `share`.
    enum StandardInput: String, CaseIterable, CustomTestStringConvertible {
        case terminal, openPipe, closedPipe, devNull, file

        var testDescription: String { rawValue }

        /// The handle the child reads, and whatever must stay alive (a pipe's writer, a terminal's
        /// controlling side) until the child has exited.
        func make(in directory: URL) throws -> (handle: FileHandle, keepAlive: [FileHandle]) {
            switch self {
            case .terminal:
                // A pseudo-terminal from /dev/ptmx; Glibc's module does not import posix_openpt and
                // friends, so the two ioctls they wrap (Linux's TIOCSPTLCK and TIOCGPTN) are used.
                let controller = open("/dev/ptmx", O_RDWR | O_NOCTTY)
                guard controller >= 0 else { throw POSIXError(.ENODEV) }
                var unlock: Int32 = 0
                var number: UInt32 = 0
                guard ioctl(controller, 0x4004_5431, &unlock) == 0,
                    ioctl(controller, 0x8004_5430, &number) == 0
                else { throw POSIXError(.ENODEV) }
                let device = open("/dev/pts/\(number)", O_RDWR | O_NOCTTY)
                guard device >= 0 else { throw POSIXError(.ENODEV) }
                return (
                    FileHandle(fileDescriptor: device, closeOnDealloc: true),
                    [FileHandle(fileDescriptor: controller, closeOnDealloc: true)]
                )
            case .openPipe:
                let pipe = Pipe()
                return (pipe.fileHandleForReading, [pipe.fileHandleForWriting])
            case .closedPipe:
                let pipe = Pipe()
                try pipe.fileHandleForWriting.close()
                return (pipe.fileHandleForReading, [])
            case .devNull:
                return (FileHandle.nullDevice, [])
            case .file:
                // A file that answers nothing: one blank line, then its end.
                let path = directory.appendingPathComponent("input-\(UUID().uuidString)")
                try Data("\n".utf8).write(to: path)
                return (try FileHandle(forReadingFrom: path), [])
            }
        }
    }

    /// The issue's case for every kind of input: a device that asks, and gets no answer before
    /// `--timeout 5`, next to one that shares with anyone. The one that asks declines at 5 s, and
    /// its final line is its last act.
    @Test(arguments: StandardInput.allCases)
    func anUnansweredRunEndsWithItsFinalLine(input: StandardInput) throws {
        let pair = try ExitPair()
        let (handle, keepAlive) = try input.make(in: pair.directory)
        let asking = try TimedShare(
            pair.arguments(0, pose: "0,0,0") + ["--json", "--timeout", "5"], input: handle)
        let sharing = try TimedShare(
            pair.arguments(1, pose: "7,0,180") + ["--json", "--yes", "--timeout", "15"])
        let result = asking.finish(within: 15)
        withExtendedLifetime(keepAlive) {}
        _ = sharing.finish(within: 15)
        #expect(result.code == 4, "\(result.lines.suffix(2)) \(result.errors)")
        let last = try #require(result.lines.last.flatMap(TimedShare.parse))
        #expect(last["event"] as? String == "closed")
        #expect(last["detail"] as? String == "timeout: consent", "\(last)")
        let lag = try #require(result.exitLagFromTimestamp)
        #expect(lag < Self.exitBound, "exited \(lag) s after its final line with \(input) on standard input")
    }

    /// How a run can end, each driven with standard input an open pipe that the test holds.
    enum Ending: String, CaseIterable, CustomTestStringConvertible {
        case exchanged, declined, timeout, error, interrupted, quit
        /// The peer's process is killed while our question waits: our CLOSE at `--timeout` is
        /// never acknowledged, so the close's drain runs its full course before the process exits.
        case peerGone

        var testDescription: String { rawValue }

        /// The exit code the README gives this ending.
        var exitCode: Int32 {
            switch self {
            case .exchanged: 0
            case .declined, .quit, .peerGone: 4
            case .timeout: 3
            case .error: 6
            case .interrupted: 130
            }
        }
    }

    @Test(arguments: Ending.allCases)
    func everyEndingIsTheLastAct(ending: Ending) throws {
        let pair = try ExitPair()
        let input = Pipe()
        let timeout = ending == .timeout ? "2" : ending == .peerGone ? "5" : "15"
        var arguments = pair.arguments(0, pose: "0,0,0") + ["--timeout", timeout]
        // `q` is a word of the lines mode; every other ending is read from `--json`.
        if ending != .quit { arguments.append("--json") }
        let saveDirectory = pair.directory.appendingPathComponent("cards")
        if ending == .error {
            try FileManager.default.createDirectory(at: saveDirectory, withIntermediateDirectories: false)
            arguments += ["--save", saveDirectory.path, "--yes"]
        }
        let device = try TimedShare(arguments, input: input.fileHandleForReading)
        #expect(device.waitForLine(within: 10) != nil)
        var peer: TimedShare?
        switch ending {
        case .exchanged, .declined:
            peer = try TimedShare(
                pair.arguments(1, pose: "7,0,180") + ["--json", "--yes", "--timeout", "15"])
            _ = try #require(device.waitForLine(containing: #""event":"consent""#, within: 15))
            let word = ending == .exchanged ? "share" : "decline"
            input.fileHandleForWriting.write(Data("{\"decision\":\"\(word)\"}\n".utf8))
        case .error:
            // Checked at the start, then taken away before the card arrives: the run fails (6).
            try FileManager.default.removeItem(at: saveDirectory)
            try Data("not a directory".utf8).write(to: saveDirectory)
            peer = try TimedShare(
                pair.arguments(1, pose: "7,0,180") + ["--json", "--yes", "--timeout", "15"])
        case .peerGone:
            let gone = try TimedShare(
                pair.arguments(1, pose: "7,0,180") + ["--json", "--yes", "--timeout", "15"])
            _ = try #require(device.waitForLine(containing: #""event":"consent""#, within: 15))
            kill(gone.processIdentifier, SIGKILL)
            peer = gone
        case .timeout:
            break
        case .interrupted:
            kill(device.processIdentifier, SIGINT)
        case .quit:
            input.fileHandleForWriting.write(Data("q\n".utf8))
        }
        let result = device.finish(within: 20)
        withExtendedLifetime(input) {}
        _ = peer?.finish(within: 20)
        #expect(result.code == ending.exitCode, "\(result.lines.suffix(2)) \(result.errors)")
        if ending == .quit {
            #expect(result.lines.last?.hasPrefix("closed: quit") == true, "\(result.lines.suffix(2))")
        } else {
            let last = try #require(result.lines.last.flatMap(TimedShare.parse))
            #expect(last["event"] as? String == "closed")
            let lag = try #require(result.exitLagFromTimestamp)
            #expect(lag < Self.exitBound, "exited \(lag) s after its final line (\(ending))")
        }
        // Measured by the test's own clock too, for the lines mode's final line, which has no `ts`.
        let arrival = try #require(result.exitLagFromArrival)
        #expect(arrival < Self.exitBound, "exited \(arrival) s after its final line arrived (\(ending))")
    }
}

/// Two devices' files and arguments on loopback, on a discovery port of their own.
struct ExitPair {
    let directory: URL
    let port = String(freeUDPPort())

    init() throws {
        directory = try TestPaths.temporaryDirectory()
        for (index, card) in [ShareCommandTests.bori, ShareCommandTests.max].enumerated() {
            try card.write(
                to: directory.appendingPathComponent("card\(index).json"), atomically: true, encoding: .utf8)
        }
    }

    /// Device `index` (0 or 1), still at `pose`, with its own key and known peers.
    func arguments(_ index: Int, pose: String) -> [String] {
        [
            "share", "--profile", directory.appendingPathComponent("card\(index).json").path,
            "--interface", "lo", "--port", port, "--pose", pose, "--still",
            "--key-file", directory.appendingPathComponent("key\(index)").path,
            "--known-peers", directory.appendingPathComponent("peers\(index)").path,
        ]
    }
}

/// A `share` process whose output lines are kept with the moment each arrived, and the moment its
/// output ended, which is when it exited (nothing else holds its standard output).
final class TimedShare: @unchecked Sendable {  // Every collected field is guarded by `condition`.
    struct Result {
        var code: Int32
        var lines: [String]
        var errors: String
        /// When each line arrived, and when the output ended.
        var arrivals: [Date]
        var ended: Date?

        /// From the final line's `ts` to the exit, on the wall clock both share.
        var exitLagFromTimestamp: Double? {
            guard let ended, let stamp = lines.last.flatMap(TimedShare.parse)?["ts"] as? String,
                let written = TimedShare.timestamp(stamp)
            else { return nil }
            return ended.timeIntervalSince(written)
        }

        /// From the final line's arrival to the exit.
        var exitLagFromArrival: Double? {
            guard let ended, let arrived = arrivals.last else { return nil }
            return ended.timeIntervalSince(arrived)
        }
    }

    private let process = Process()
    private let condition = NSCondition()
    private var lines: [String] = []
    private var arrivals: [Date] = []
    private var ended: Date?
    private var errors = Data()
    private var errorsEnded = false

    init(_ arguments: [String], input: FileHandle = FileHandle.nullDevice) throws {
        let (output, errorPipe) = process.prepareProfiledrop(arguments, input: input)
        Thread.detachNewThread { [self] in
            var pending = Data()
            while case let data = output.fileHandleForReading.availableData, !data.isEmpty {
                let now = Date()
                pending += data
                condition.lock()
                while let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                    lines.append(String(decoding: pending[..<newline], as: UTF8.self))
                    arrivals.append(now)
                    pending = Data(pending[(newline + 1)...])
                }
                condition.broadcast()
                condition.unlock()
            }
            condition.lock()
            ended = Date()
            condition.broadcast()
            condition.unlock()
        }
        Thread.detachNewThread { [self] in
            let data = errorPipe.fileHandleForReading.readDataToEndOfFile()
            condition.lock()
            errors = data
            errorsEnded = true
            condition.broadcast()
            condition.unlock()
        }
        try process.run()
    }

    deinit {
        if process.isRunning { process.terminate() }
    }

    var processIdentifier: Int32 { process.processIdentifier }

    /// The first output line that contains `text` (any line when empty), waiting up to `seconds`.
    func waitForLine(containing text: String = "", within seconds: Double) -> String? {
        let deadline = Date(timeIntervalSinceNow: seconds)
        condition.lock()
        defer { condition.unlock() }
        while true {
            if let line = lines.first(where: { text.isEmpty || $0.contains(text) }) { return line }
            if ended != nil || !condition.wait(until: deadline) { return nil }
        }
    }

    /// Waits up to `seconds` for the process to exit (stopping it after that) and for its output.
    func finish(within seconds: Double) -> Result {
        let deadline = Date(timeIntervalSinceNow: seconds)
        condition.lock()
        while ended == nil, condition.wait(until: deadline) {}
        let exited = ended != nil
        condition.unlock()
        if !exited {
            Issue.record("the process did not exit within \(seconds) s")
            process.terminate()
        }
        process.waitUntilExit()
        condition.lock()
        defer { condition.unlock() }
        while ended == nil || !errorsEnded { condition.wait() }
        return Result(
            code: process.terminationStatus, lines: lines, errors: String(decoding: errors, as: UTF8.self),
            arrivals: arrivals, ended: exited ? ended : nil)
    }

    static func parse(_ line: String) -> [String: Any]? {
        (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any]
    }

    /// `2026-12-05T21:47:36.932Z`, the `ts` of a `--json` line.
    static func timestamp(_ text: String) -> Date? {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.date(from: text)
    }
}
