import Foundation
@_spi(Storage) import ProfileDrop
import ProfileDropCore
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

    /// Runs two devices with the given extra arguments and waits for both. Both share without
    /// asking (`--yes`), each with its own known-peers file.
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
        func arguments(_ card: String, _ name: String, _ extra: [String]) -> [String] {
            [
                // --receive-only sends no card, so it takes none.
                "share"
            ] + (extra.contains("--receive-only") ? [] : ["--profile", card]) + [
                "--interface", interface, "--port", port, "--json", "--yes",
                "--key-file", directory.appendingPathComponent("\(name).key").path,
                "--known-peers", directory.appendingPathComponent("\(name).peers").path,
                "--timeout", String(timeout),
            ] + extra
        }
        let a = try ToolProcess(arguments(boriFile, "a", first), prefix: prefixes.0)
        let b = try ToolProcess(arguments(maxFile, "b", second), prefix: prefixes.1)
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

    /// One line per change: in a whole exchange of two still devices (whose distance and bearing
    /// settle during the confirmation hold), no line repeats the one before it apart from `ts`.
    @Test func theJSONStreamHasOneLinePerChange() throws {
        let pair = try runPair(
            first: ["--pose", "0,0,0", "--still"], second: ["--pose", "7,0,180", "--still"])
        for side in [pair.first, pair.second] {
            #expect(side.code == 0, "\(side.output.suffix(2)) \(side.errors)")
            let lines = try side.output.map { line in
                var object = try #require(
                    try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
                object["ts"] = nil
                return object as NSDictionary
            }
            #expect(lines.count > 5, "too short to judge: \(side.output)")
            for (before, after) in zip(lines, lines.dropFirst()) {
                #expect(before != after, "a repeated line: \(after)")
            }
        }
    }

    /// The exit codes and `--json` reasons docs/share.md lists: a request nobody answered declines
    /// (4, `declined`), every other wait that ran out is a timeout (3), and a peer that broke the
    /// protocol is an error (6), whichever way the run ended.
    @Test func exitCodesAndReasonsFollowTheReadme() {
        let cases: [(CloseReason, ExitCode, String)] = [
            (.exchanged, .success, "exchanged"),
            (.declined(by: .local), .declined, "declined"),
            (.declined(by: .peer), .declined, "declined"),
            (.timeout(.consent), .declined, "declined"),
            (.timeout(.peerConsent), .timeout, "timeout"),
            (.timeout(.transferStalled), .timeout, "timeout"),
            (.timeout(.noExchange), .timeout, "timeout"),
            (.outOfRange, .outOfRange, "out_of_range"),
            (.error(ProtocolError(.cardTooLarge, "offer of 600000 bytes")), .runtimeError, "error"),
        ]
        for (reason, code, coarse) in cases {
            #expect(ShareSession.exitCode(for: reason) == code, "\(reason)")
            #expect(ShareDisplay.reasonCode(reason) == coarse, "\(reason)")
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

    /// The debugging loop of docs/debugging.md: both terminals capture with --keylog, both captures replay
    /// identically with the run's static key embedded in them (it is on no disk), and tshark with
    /// the dissector names every message type of the pairing.
    @Test func bothSidesCaptureAndReplayIdentically() throws {
        let directory = try TestPaths.temporaryDirectory()
        let captures = ["a", "b"].map { directory.appendingPathComponent("\($0).pcapng").path }
        let pair = try runPair(
            first: ["--capture", captures[0], "--keylog"], second: ["--capture", captures[1], "--keylog"],
            keyDirectory: directory)
        #expect(pair.first.code == 0 && pair.second.code == 0)
        var typesSeen = Set<String>()
        for capture in captures {
            let replay = try ToolProcess(["replay", capture]).finish()
            // The keylog holds the run's key, the identity and the known peers: replay matches.
            #expect(replay.code == 0, "\(replay.output.suffix(3)) \(replay.errors)")
            #expect(replay.output.last?.hasSuffix(" datagrams, identical") == true)
            let said = replay.output + replay.errors
            #expect(!said.contains { $0.contains("static key") }, "\(said.suffix(3))")
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

/// The consent contract of `share --json`, driven by the test as a user interface would drive it:
/// read the `consent` line, compare the codes, answer one JSON line on standard input.
extension ShareCommandTests {
    /// Two devices' files: cards, identity keys and known-peers files, kept across pairings.
    struct ConsentDevices {
        let directory: URL

        init() throws {
            directory = try TestPaths.temporaryDirectory()
            try ShareCommandTests.bori.write(to: path("bori.json"), atomically: true, encoding: .utf8)
            try ShareCommandTests.max.write(to: path("max.json"), atomically: true, encoding: .utf8)
        }

        func path(_ name: String) -> URL { directory.appendingPathComponent(name) }

        /// Starts Bori's device (`a`) and Max's (`b`) on loopback, on a port of their own, asking
        /// before sharing (the default).
        func start(timeouts: (Int, Int) = (25, 25)) throws -> (
            InteractiveShare, () throws -> InteractiveShare
        ) {
            let port = String(freeUDPPort())
            func arguments(_ card: String, _ name: String, _ timeout: Int) -> [String] {
                [
                    "share", "--profile", path(card).path, "--interface", "lo", "--port", port, "--json",
                    "--key-file", path("\(name).key").path, "--known-peers", path("\(name).peers").path,
                    "--timeout", String(timeout),
                ]
            }
            let a = try InteractiveShare(arguments("bori.json", "a", timeouts.0))
            return (a, { try InteractiveShare(arguments("max.json", "b", timeouts.1)) })
        }

        /// One whole pairing: both answer share once both `consent` lines show the same code.
        /// Returns both `consent` events and both finished processes.
        func pairAndShare() throws -> (
            consents: ([String: Any], [String: Any]),
            results: (InteractiveShare.Result, InteractiveShare.Result)
        ) {
            let (a, startB) = try start()
            let b = try startB()
            let first = try #require(a.next("consent", within: 20), "\(a.lines)")
            let second = try #require(b.next("consent", within: 20), "\(b.lines)")
            let code = try #require(first["code"] as? String)
            #expect(code.count == 6 && code.allSatisfy(\.isNumber))
            let decision = code == second["code"] as? String ? "share" : "decline"
            #expect(decision == "share", "codes \(code) and \(second["code"] ?? "none")")
            a.send(#"{"decision":"\#(decision)"}"#)
            b.send(#"{"decision":"\#(decision)"}"#)
            return ((first, second), (a.finish(within: 20), b.finish(within: 20)))
        }
    }

    @Test func bothAnswerShareAfterSeeingEqualCodes() throws {
        let devices = try ConsentDevices()
        let ((first, second), (a, b)) = try devices.pairAndShare()
        for consent in [first, second] {
            #expect(consent["known"] as? Bool == false)
            #expect(consent["name"] is NSNull)
            #expect(consent["interrupted_before"] as? Int == 0)
            #expect((consent["timeout_s"] as? Int).map { (1...60).contains($0) } == true)
            #expect(consent["offers_card"] as? Bool == true)
            #expect(consent["stage"] != nil && consent["progress"] != nil)
        }
        #expect(a.code == 0, "\(a.errors)")
        #expect(b.code == 0, "\(b.errors)")
        #expect(a.last("closed")?["reason"] as? String == "exchanged")
        #expect((a.last("closed")?["card"] as? [String: Any])?["name"] as? String == "Max")
        #expect((b.last("closed")?["card"] as? [String: Any])?["name"] as? String == "Bori")
        #expect(a.last("decision")?["decision"] as? String == "share")
        // Each device stored the other, and said so without showing the bond key.
        let remembered = try #require(a.last("peer_remembered"))
        #expect(remembered["name"] as? String == "Max (joon)")
        #expect(remembered["stored"] as? Bool == true)
        let stored = try KnownPeersStore.load(at: devices.path("a.peers").path)
        #expect(stored.map(\.name) == ["Max (joon)"])
        #expect(remembered["fingerprint"] as? String == stored.first.map(KnownPeersStore.fingerprint))
        let bondHex = stored.first.map { $0.bondKey.map { String(format: "%02x", $0) }.joined() } ?? "?"
        #expect(!(a.lines + a.errors).contains { $0.contains(bondHex) })
        #expect(try KnownPeersStore.load(at: devices.path("b.peers").path).map(\.name) == ["Bori (minji)"])
    }

    @Test func theSameDevicesMeetAgainAsKnownPeers() throws {
        let devices = try ConsentDevices()
        let firstMeeting = try devices.pairAndShare()
        #expect(firstMeeting.results.0.code == 0 && firstMeeting.results.1.code == 0)
        let ((first, second), (a, b)) = try devices.pairAndShare()
        #expect(first["known"] as? Bool == true)
        #expect(first["name"] as? String == "Max (joon)")
        #expect(second["known"] as? Bool == true)
        #expect(second["name"] as? String == "Bori (minji)")
        #expect(a.last("verified")?["known"] as? Bool == true)
        #expect(a.code == 0 && b.code == 0, "\(a.errors) \(b.errors)")
        // Still one record each, under the latest name.
        #expect(try KnownPeersStore.load(at: devices.path("a.peers").path).count == 1)
    }

    /// Bori's record of Max holds the wrong bond key (as if one of them had forgotten the other and
    /// bonded again): neither proof matches, so each device warns with the name it stored, and each
    /// then asks about the other as a new device, as it would about any stranger (PROTOCOL.md 6.5).
    /// Nobody answers, so no card moves.
    @Test func aKnownPeerThatCannotProveItselfIsAWarning() throws {
        let devices = try ConsentDevices()
        let firstMeeting = try devices.pairAndShare()
        #expect(firstMeeting.results.0.code == 0 && firstMeeting.results.1.code == 0)
        let file = devices.path("a.peers").path
        var peers = try KnownPeersStore.load(at: file)
        try #require(peers.count == 1)
        peers[0].bondKey = peers[0].bondKey.map { $0 ^ 0x5a }
        try KnownPeersStore.save(peers, at: file)

        let (a, startB) = try devices.start(timeouts: (10, 10))
        let b = try startB()
        let first = a.finish(within: 15)
        let second = b.finish(within: 15)
        #expect(
            first.last("known_peer_mismatch")?["name"] as? String == "Max (joon)", "\(first.lines.suffix(3))")
        #expect(
            second.last("known_peer_mismatch")?["name"] as? String == "Bori (minji)",
            "\(second.lines.suffix(3))")
        for result in [first, second] {
            #expect(result.code == 4)
            #expect(result.last("consent")?["known"] as? Bool == false)
            #expect(result.last("closed")?["card"] is NSNull)
        }
    }

    /// Bori answers share; Max's user never answers (standard input open and silent). Max's
    /// `--timeout` declines the request, and no card moves either way. A request nobody answered
    /// is a decline: exit 4 on both sides, `reason` `declined` with the wait in `detail`. The
    /// decline ends Bori's session only, so Bori says so when its own `--timeout` ends the run.
    @Test func anUnansweredRequestMovesNoCard() throws {
        let devices = try ConsentDevices()
        let (a, startB) = try devices.start(timeouts: (20, 10))
        let b = try startB()
        let consent = try #require(a.next("consent", within: 15), "\(a.lines)")
        #expect(try #require(b.next("consent", within: 15))["code"] as? String == consent["code"] as? String)
        a.send(#"{"decision":"share"}"#)
        let first = a.finish(within: 25)
        let second = b.finish(within: 25)
        #expect(second.code == ExitCode.declined.rawValue, "\(second.lines.suffix(2))")
        #expect(second.last("closed")?["reason"] as? String == "declined")
        #expect(second.last("closed")?["detail"] as? String == "timeout: consent")
        #expect(first.code == ExitCode.declined.rawValue, "\(first.lines.suffix(2))")
        #expect(first.last("closed")?["detail"] as? String == "declined by peer")
        for result in [first, second] {
            #expect(result.last("closed")?["card"] is NSNull)
            #expect(result.last("card_received") == nil)
            #expect(result.last("peer_remembered") == nil)
        }
        #expect(try KnownPeersStore.load(at: devices.path("a.peers").path).isEmpty)
    }

    /// Max declines while Bori's user is still deciding: Bori's device shows the pairing as
    /// interrupted, with the code it showed, and neither device gets a card.
    @Test func aDeclineBeforeOurAnswerShowsAnInterruptedPairing() throws {
        let devices = try ConsentDevices()
        // Max's decline ends Bori's session only: Bori's run ends at its own `--timeout`.
        let (a, startB) = try devices.start(timeouts: (12, 25))
        let b = try startB()
        let consent = try #require(a.next("consent", within: 20), "\(a.lines)")
        _ = try #require(b.next("consent", within: 20), "\(b.lines)")
        b.send(#"{"decision":"decline"}"#)
        let interrupted = try #require(a.next("pairing_interrupted", within: 10), "\(a.lines)")
        #expect(interrupted["code"] as? String == consent["code"] as? String)
        #expect(interrupted["peer"] as? String == consent["peer"] as? String)
        #expect(interrupted["reason"] as? String == "declined")
        #expect(interrupted["detail"] as? String == "declined by peer")
        let first = a.finish(within: 15)
        let second = b.finish(within: 10)
        #expect(first.code == ExitCode.declined.rawValue && second.code == ExitCode.declined.rawValue)
        #expect(first.last("closed")?["card"] is NSNull)
        #expect(second.last("closed")?["card"] is NSNull)
        #expect(second.last("pairing_interrupted") == nil)
    }

    /// Lines that are not an answer, and an answer with no request pending, are reported as
    /// `input_error` and otherwise ignored: the pairing goes on and completes.
    @Test func aMalformedAnswerIsReportedAndTheSessionContinues() throws {
        let devices = try ConsentDevices()
        let (a, startB) = try devices.start()
        _ = try #require(a.next("advertising", within: 10))
        a.send(#"{"decision":"share"}"#)
        #expect(a.next("input_error", within: 10)?["detail"] as? String == "no consent request is pending")
        let b = try startB()
        let consent = try #require(a.next("consent", within: 20), "\(a.lines)")
        #expect(try #require(b.next("consent", within: 20))["code"] as? String == consent["code"] as? String)
        for bad in ["share please", #"{"decision":"maybe"}"#, #"["share"]"#, #"{"decision":"share","x":1}"#] {
            a.send(bad)
            let error = try #require(a.next("input_error", within: 10), "no input_error for \(bad)")
            // event and detail, after the schema version and the timestamp every line carries.
            #expect(error.count == 4, "\(error)")
            #expect(error["v"] as? Int == 1)
            #expect((error["detail"] as? String)?.isEmpty == false)
        }
        a.send(#"{"decision":"share"}"#)
        b.send(#"{"decision":"share"}"#)
        let first = a.finish(within: 20)
        let second = b.finish(within: 20)
        #expect(first.code == 0 && second.code == 0, "\(first.lines.suffix(2)) \(second.lines.suffix(2))")
        #expect((first.last("closed")?["card"] as? [String: Any])?["name"] as? String == "Max")
    }
}

/// A `share --json` process whose standard input the test writes and whose output lines it reads as
/// they come. Dropping it stops the process if it still runs.
final class InteractiveShare: Sendable {
    /// How a finished process ended: exit code, output lines and error lines.
    struct Result {
        var code: Int32
        var lines: [String]
        var errors: [String]

        /// The last event named `event`, parsed.
        func last(_ event: String) -> [String: Any]? {
            lines.reversed().lazy.compactMap(InteractiveShare.parse).first { $0["event"] as? String == event }
        }
    }

    /// What the reader threads collect; they hold this, not the process, so that dropping an
    /// `InteractiveShare` stops its process.
    private final class Collector: @unchecked Sendable {  // Every field is guarded by `condition`.
        let condition = NSCondition()
        var lines: [String] = []
        var errors = Data()
        /// Streams (output, errors) that reached their end.
        var ended = 0
        /// Output lines before this one were already looked at by ``InteractiveShare/next(_:within:)``.
        var cursor = 0
    }

    private let process = Process()
    private let input = Pipe()
    private let collector = Collector()

    init(_ arguments: [String]) throws {
        let (output, errors) = process.prepareProfiledrop(arguments, input: input)
        let collector = collector
        Thread.detachNewThread {
            var pending = Data()
            while case let data = output.fileHandleForReading.availableData, !data.isEmpty {
                pending += data
                collector.condition.lock()
                while let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                    collector.lines.append(String(decoding: pending[..<newline], as: UTF8.self))
                    pending = Data(pending[(newline + 1)...])
                }
                collector.condition.broadcast()
                collector.condition.unlock()
            }
            collector.condition.lock()
            collector.ended += 1
            collector.condition.broadcast()
            collector.condition.unlock()
        }
        Thread.detachNewThread {
            let data = errors.fileHandleForReading.readDataToEndOfFile()
            collector.condition.lock()
            collector.errors = data
            collector.ended += 1
            collector.condition.broadcast()
            collector.condition.unlock()
        }
        try process.run()
    }

    deinit {
        if process.isRunning { process.terminate() }
    }

    static func parse(_ line: String) -> [String: Any]? {
        (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any]
    }

    /// The output lines so far.
    var lines: [String] {
        collector.condition.lock()
        defer { collector.condition.unlock() }
        return collector.lines
    }

    /// The next event named `event` after those already returned, waiting up to `seconds` for it.
    func next(_ event: String, within seconds: Double) -> [String: Any]? {
        let deadline = Date(timeIntervalSinceNow: seconds)
        collector.condition.lock()
        defer { collector.condition.unlock() }
        while true {
            while collector.cursor < collector.lines.count {
                let line = collector.lines[collector.cursor]
                collector.cursor += 1
                if let object = Self.parse(line), object["event"] as? String == event { return object }
            }
            if collector.ended == 2 || !collector.condition.wait(until: deadline) { return nil }
        }
    }

    /// The child's process id, for signals.
    var processIdentifier: Int32 { process.processIdentifier }

    /// Writes `line` and a newline to the process's standard input.
    func send(_ line: String) {
        try? input.fileHandleForWriting.write(contentsOf: Data((line + "\n").utf8))
    }

    /// Waits up to `seconds` for the process to exit (stopping it after that) and for its output.
    func finish(within seconds: Double) -> Result {
        let deadline = Date(timeIntervalSinceNow: seconds)
        while process.isRunning && Date() < deadline { usleep(20_000) }
        if process.isRunning {
            process.terminate()
            Issue.record("the process did not exit within \(seconds) s")
        }
        process.waitUntilExit()
        try? input.fileHandleForWriting.close()
        collector.condition.lock()
        defer { collector.condition.unlock() }
        while collector.ended < 2 { collector.condition.wait() }
        return Result(
            code: process.terminationStatus, lines: collector.lines,
            errors: String(decoding: collector.errors, as: UTF8.self).split(separator: "\n").map(String.init))
    }
}

/// How a run ends when the user stops it: the final line, the exit code, the terminal.
@Suite struct ShareEndingTests {
    @Test(arguments: [(SIGTERM, Int32(143), "SIGTERM"), (SIGINT, 130, "SIGINT"), (SIGHUP, 129, "SIGHUP")])
    func aSignalEndsWithAFinalLineAndItsExitCode(signal: Int32, code: Int32, name: String) throws {
        let pair = try SharingPair(port: freeUDPPort(), timeout: 20)
        let alone = try ToolProcess(pair.arguments(0) + ["--json"])
        // Until the run is under way (its first line, or at most 5 s).
        usleep(1_500_000)
        kill(alone.process.processIdentifier, signal)
        let result = alone.finish()
        #expect(result.code == code, "\(result.errors)")
        let last = try #require(result.output.last)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(last.utf8)) as? [String: Any])
        #expect(object["event"] as? String == "closed")
        #expect(object["reason"] as? String == "interrupted")
        #expect(object["detail"] as? String == "interrupted (\(name))")
        #expect(object["v"] as? Int == 1)
    }

    @Test func aSaveDirectoryThatCannotTakeACardIsRefusedBeforeAnyExchange() throws {
        let directory = try TestPaths.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let card = directory.appendingPathComponent("card.json").path
        try ShareCommandTests.bori.write(toFile: card, atomically: true, encoding: .utf8)
        let console = CapturingConsole()
        let code = CommandLineTool.run(
            arguments: [
                "share", "--profile", card, "--save", card, "--interface", "lo", "--port",
                String(freeUDPPort()),
                "--timeout", "5", "--key-file", directory.appendingPathComponent("key").path,
            ], console: console)
        #expect(code == 2)
        #expect(console.errorLines.count == 1)
        #expect(console.errorLines.first?.contains("is not a directory") == true, "\(console.errorLines)")
    }

    /// The arguments of device `index` sharing `card` with `--yes --json`, standing still at `pose`
    /// on loopback at `port`, its card, key and known peers in `directory`.
    static func stillSharing(_ index: Int, card: String, pose: String, directory: URL, port: String) throws
        -> [String]
    {
        let path = directory.appendingPathComponent("card\(index).json").path
        try card.write(toFile: path, atomically: true, encoding: .utf8)
        return [
            "share", "--profile", path, "--yes", "--json", "--interface", "lo", "--port", port, "--timeout",
            "20",
            "--pose", pose, "--still", "--key-file", directory.appendingPathComponent("key\(index)").path,
            "--known-peers", directory.appendingPathComponent("peers\(index)").path,
        ]
    }

    /// A save directory that stops taking files during the run (here it becomes a file): the card
    /// received is still shown in full, the failure is one line on stderr, and the exit code is 6,
    /// while the peer, whose exchange succeeded, exits 0.
    @Test func aCardThatCannotBeSavedIsStillShownAndTheRunFails() throws {
        let directory = try TestPaths.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let saveDirectory = directory.appendingPathComponent("cards")
        try FileManager.default.createDirectory(at: saveDirectory, withIntermediateDirectories: false)
        let port = String(freeUDPPort())
        func arguments(_ index: Int, card: String, pose: String, extra: [String]) throws -> [String] {
            try Self.stillSharing(index, card: card, pose: pose, directory: directory, port: port) + extra
        }
        let saver = try InteractiveShare(
            try arguments(
                0, card: ShareCommandTests.bori, pose: "0,0,0", extra: ["--save", saveDirectory.path]))
        _ = try #require(saver.next("advertising", within: 10), "\(saver.lines)")
        // Checked at the start, then taken away before the card can arrive.
        try FileManager.default.removeItem(at: saveDirectory)
        try Data("not a directory".utf8).write(to: saveDirectory)
        let peer = try InteractiveShare(
            try arguments(1, card: ShareCommandTests.max, pose: "7,0,180", extra: []))
        let saved = saver.finish(within: 25)
        let other = peer.finish(within: 25)
        #expect(saved.code == 6, "\(saved.lines.suffix(2)) \(saved.errors)")
        #expect(other.code == 0, "\(other.lines.suffix(2)) \(other.errors)")
        let closed = try #require(saved.lines.last.flatMap(InteractiveShare.parse))
        #expect(closed["reason"] as? String == "exchanged")
        #expect((closed["card"] as? [String: Any])?["name"] as? String == "Max")
        #expect(closed["saved"] is NSNull)
        #expect(saved.errors.count == 1, "\(saved.errors)")
        #expect(saved.errors.first?.contains("cannot save the received card") == true, "\(saved.errors)")
    }

    @Test func twoReceiversReportThatNothingMoved() throws {
        let directory = try TestPaths.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let port = String(freeUDPPort())
        func arguments(_ index: Int, pose: String) -> [String] {
            [
                "share", "--receive-only", "--yes", "--json", "--interface", "lo", "--port", port,
                "--timeout", "20",
                "--pose", pose, "--still", "--key-file", directory.appendingPathComponent("key\(index)").path,
                "--known-peers", directory.appendingPathComponent("peers\(index)").path,
            ]
        }
        let first = try ToolProcess(arguments(0, pose: "0,0,0"))
        let second = try ToolProcess(arguments(1, pose: "7,0,180"))
        for result in [first.finish(), second.finish()] {
            #expect(result.code == 4, "\(result.output.suffix(2)) \(result.errors)")
            let last = try #require(result.output.last)
            let object = try #require(
                try JSONSerialization.jsonObject(with: Data(last.utf8)) as? [String: Any])
            #expect(object["reason"] as? String == "nothing_exchanged")
        }
    }

    /// Interrupted while ranging, before either code: the peer hears it at once (`session_ended`,
    /// `declined by peer`), but goes on looking for someone else, since a CLOSE(declined) before
    /// the code could come from anyone who completed a handshake (PROTOCOL.md 11.6, item 10).
    @Test func anInterruptedDeviceTellsItsPeerAtOnce() throws {
        let directory = try TestPaths.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let port = String(freeUDPPort())
        func arguments(_ index: Int, card: String, pose: String) throws -> [String] {
            try Self.stillSharing(index, card: card, pose: pose, directory: directory, port: port)
        }
        // 20 cm apart: they pair and range, but never come in range, so only the interruption can
        // end the peer's session early (its ranging window alone would take 3 s).
        let first = try InteractiveShare(try arguments(0, card: ShareCommandTests.bori, pose: "0,0,0"))
        let second = try InteractiveShare(try arguments(1, card: ShareCommandTests.max, pose: "20,0,180"))
        _ = try #require(first.next("secured", within: 15), "\(first.lines)")
        _ = try #require(second.next("secured", within: 15), "\(second.lines)")
        kill(first.processIdentifier, SIGINT)
        let interruptedAt = Date()
        let ended = try #require(second.next("session_ended", within: 5), "\(second.lines)")
        #expect(Date().timeIntervalSince(interruptedAt) < 2, "the peer took its time")
        #expect(ended["detail"] as? String == "declined by peer")
        let interrupted = first.finish(within: 5)
        #expect(interrupted.code == 130)
        // Still looking: only the user (here a signal) or --timeout ends it.
        usleep(500_000)
        kill(second.processIdentifier, SIGTERM)
        let peer = second.finish(within: 5)
        #expect(peer.code == 143, "\(peer.lines.suffix(2))")
        let closed = try #require(peer.lines.last.flatMap(InteractiveShare.parse))
        #expect(closed["reason"] as? String == "interrupted")
    }
}
