import Foundation
import Glibc
import ProfileDropTestSupport
import Testing

/// `share` on a real terminal, as a person uses it: tmux runs it in a window of a given size,
/// `send-keys` types and `capture-pane` reads the screen. Skipped (with a note) where tmux is
/// missing; `scripts/setup.sh` installs it.
@Suite(.serialized) struct TerminalSessionTests {
    /// One tmux server of its own, so that a test never touches anyone's sessions.
    final class Window {
        let socket = "profiledrop-test-\(UUID().uuidString.prefix(8))"
        let directory: URL
        /// Where the shell wrapper writes the terminal's modes after `share` exits.
        var modesFile: URL { directory.appendingPathComponent("stty-after") }

        init(columns: Int, rows: Int = 12, term: String = "xterm-256color", command: [String]) throws {
            directory = try TestPaths.temporaryDirectory()
            let quoted = ([TestPaths.executable.path] + command).map { "'\($0)'" }.joined(separator: " ")
            // After `share` the wrapper records the modes (raw mode must be gone) and keeps the
            // window open so that the screen can still be read.
            let script = "\(quoted); echo \"exit=$?\"; stty -a > '\(modesFile.path)'; sleep 30"
            // Not read: the server it starts would hold the pipe open for its whole life.
            try Window.run(
                [
                    "tmux", "-L", socket, "new-session", "-d", "-s", "t", "-x", String(columns), "-y",
                    String(rows), "env", "TERM=\(term)", "sh", "-c", script,
                ], readsOutput: false)
        }

        deinit {
            _ = try? Window.run(["tmux", "-L", socket, "kill-server"])
            try? FileManager.default.removeItem(at: directory)
        }

        @discardableResult
        func tmux(_ arguments: [String]) throws -> String {
            try Window.run(["tmux", "-L", socket] + arguments)
        }

        /// The visible screen, one string per row, trailing blanks removed.
        func screen() throws -> [String] {
            try tmux(["capture-pane", "-p", "-t", "t"]).split(
                separator: "\n", omittingEmptySubsequences: false
            )
            .map { String($0).replacingOccurrences(of: "\\s+$", with: "", options: .regularExpression) }
        }

        func keys(_ keys: String...) throws { try tmux(["send-keys", "-t", "t"] + keys) }

        /// Polls the screen until `condition` holds or `seconds` pass; returns the last screen.
        func wait(seconds: Double, until condition: ([String]) -> Bool) throws -> [String] {
            let end = Date().addingTimeInterval(seconds)
            var rows = try screen()
            while !condition(rows) && Date() < end {
                usleep(100_000)
                rows = try screen()
            }
            return rows
        }

        @discardableResult
        static func run(_ arguments: [String], readsOutput: Bool = true) throws -> String {
            guard readsOutput else {
                // Through the shell rather than Foundation's Process: a tmux server started under
                // Process did not outlive the call.
                let line = arguments.map { "'" + $0.replacingOccurrences(of: "'", with: "'\\''") + "'" }
                    .joined(separator: " ")
                _ = system(line + " >/dev/null 2>&1")
                return ""
            }
            return try runProgram("/usr/bin/env", arguments).output
        }
    }

    static var hasTmux: Bool {
        FileManager.default.isExecutableFile(atPath: "/usr/bin/tmux")
    }

    static func cardFile(in directory: URL) throws -> String {
        let path = directory.appendingPathComponent("card.json").path
        try ShareCommandTests.bori.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    static func shareArguments(card: String, directory: URL, port: UInt16, extra: [String]) -> [String] {
        [
            "share", "--profile", card, "--interface", "lo", "--port", String(port), "--timeout", "15",
            "--key-file", directory.appendingPathComponent("key").path,
            "--known-peers", directory.appendingPathComponent("peers").path,
        ] + extra
    }

    /// The other device, answering by itself: `share --yes` with Max's card at `pose`, still, its
    /// files in `directory`.
    static func peer(pose: String, port: UInt16, directory: URL) throws -> ToolProcess {
        let card = directory.appendingPathComponent("card.json").path
        try ShareCommandTests.max.write(toFile: card, atomically: true, encoding: .utf8)
        return try ToolProcess(
            shareArguments(
                card: card, directory: directory, port: port, extra: ["--yes", "--pose", pose, "--still"]))
    }

    @Test func arrowKeysMoveTheDeviceAndQRestoresTheTerminal() throws {
        guard Self.hasTmux else {
            print("TerminalSessionTests: tmux is not installed; skipped")
            return
        }
        let files = try TestPaths.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: files) }
        let window = try Window(
            columns: 120,
            command: Self.shareArguments(
                card: try Self.cardFile(in: files), directory: files, port: freeUDPPort(),
                extra: ["--pose", "0,0,0"]))
        var rows = try window.wait(seconds: 10) { $0.contains { $0.contains("[1/8] advertising") } }
        #expect(rows.contains { $0.contains("[1/8] advertising") }, "\(rows)")
        // Up moves 1 cm forward (heading 0 is +x); Left turns 5 degrees.
        try window.keys("Up")
        try window.keys("Up")
        try window.keys("Left")
        rows = try window.wait(seconds: 5) { $0.contains { $0.contains("pose 2,0,5") } }
        #expect(rows.contains { $0.contains("pose 2,0,5") }, "\(rows)")
        try window.keys("q")
        rows = try window.wait(seconds: 5) { $0.contains { $0.hasPrefix("exit=") } }
        #expect(rows.contains("exit=4"), "\(rows)")
        // The shell after it gets its terminal back: line editing and echo on.
        usleep(300_000)
        let modes = try String(contentsOf: window.modesFile, encoding: .utf8)
        #expect(modes.contains(" icanon") && modes.contains(" echo "), "\(modes)")
        // The live line ended with a newline: the shell's output starts a row of its own.
        #expect(rows.contains { $0.hasPrefix("exit=") })
    }

    @Test func aSignalRestoresTheTerminal() throws {
        guard Self.hasTmux else { return }
        let files = try TestPaths.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: files) }
        let port = freeUDPPort()
        let window = try Window(
            columns: 100,
            command: Self.shareArguments(
                card: try Self.cardFile(in: files), directory: files, port: port, extra: ["--pose", "0,0,0"]))
        _ = try window.wait(seconds: 10) { $0.contains { $0.contains("[1/8] advertising") } }
        // The share process itself, not the shell around it.
        let pid = try Window.run(["pgrep", "-f", "^\(TestPaths.executable.path) share .*--port \(port) "])
        let share = try #require(Int32(pid.split(separator: "\n").first ?? ""), "no share process: \(pid)")
        kill(share, SIGTERM)
        let rows = try window.wait(seconds: 5) { $0.contains { $0.hasPrefix("exit=") } }
        #expect(rows.contains("exit=143"), "\(rows)")
        #expect(rows.contains { $0.contains("interrupted (SIGTERM)") }, "\(rows)")
        usleep(300_000)
        let modes = try String(contentsOf: window.modesFile, encoding: .utf8)
        #expect(modes.contains(" icanon") && modes.contains(" echo "), "\(modes)")
    }

    @Test func aNarrowWindowKeepsOneLiveRowAndThePromptGetsItsOwnLine() throws {
        guard Self.hasTmux else { return }
        let files = try TestPaths.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: files) }
        let port = freeUDPPort()
        let window = try Window(
            columns: 40, rows: 20,
            command: Self.shareArguments(
                card: try Self.cardFile(in: files), directory: files, port: port,
                extra: ["--pose", "0,0,0"]))
        // The peer, answering by itself, 7 cm in front and facing back.
        let peerFiles = try TestPaths.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: peerFiles) }
        let peer = try Self.peer(pose: "7,0,180", port: port, directory: peerFiles)
        var rows = try window.wait(seconds: 12) { $0.contains { $0.contains("[s]hare") } }
        // The prompt starts a line of its own: it is not glued to the live line.
        let prompt = try #require(rows.firstIndex { $0.hasPrefix("pair with a NEW device?") }, "\(rows)")
        #expect(rows[..<prompt].allSatisfy { !$0.contains("pair with") })
        // No row is wider than the window, and only one row shows the live line: a redraw that
        // wrapped would leave stale copies above it.
        #expect(rows.allSatisfy { $0.count <= 40 })
        let live = rows.filter { $0.hasPrefix("[") && $0.contains("/8]") }
        #expect(live.count == 1, "\(rows)")
        try window.keys("s")
        rows = try window.wait(seconds: 12) { $0.contains { $0.hasPrefix("exit=") } }
        #expect(rows.contains("exit=0"), "\(rows)")
        #expect(rows.contains { $0.hasPrefix("received: Max") }, "\(rows)")
        #expect(peer.finish().code == 0)
    }

    /// A peer that quits while ranging, before any code, ends only that pairing (PROTOCOL.md 11.6,
    /// item 10): the person at the terminal is told why, above the live line, which goes back to
    /// looking.
    @Test func aPeerThatQuitsBeforeTheCodeIsShownAndTheSearchGoesOn() throws {
        guard Self.hasTmux else { return }
        let files = try TestPaths.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: files) }
        let port = freeUDPPort()
        let window = try Window(
            columns: 100, rows: 16,
            command: Self.shareArguments(
                card: try Self.cardFile(in: files), directory: files, port: port, extra: ["--pose", "0,0,0"]))
        // The peer 20 cm away: they pair and range, but never come in range, so no code is shown.
        let peerFiles = try TestPaths.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: peerFiles) }
        let peer = try Self.peer(pose: "20,0,180", port: port, directory: peerFiles)
        var rows = try window.wait(seconds: 12) { $0.contains { $0.contains("/8] ranging") } }
        #expect(rows.contains { $0.contains("/8] ranging") }, "\(rows)")
        kill(peer.process.processIdentifier, SIGINT)
        #expect(peer.finish().code == 130)
        let ended = "session ended: declined by peer; looking for another peer"
        rows = try window.wait(seconds: 5) { $0.contains(ended) }
        #expect(rows.contains(ended), "\(rows)")
        rows = try window.wait(seconds: 5) { $0.contains { $0.contains("[1/8] advertising") } }
        #expect(rows.contains { $0.contains("[1/8] advertising") }, "\(rows)")
        #expect(!rows.contains { $0.hasPrefix("exit=") }, "the run ended with its peer: \(rows)")
        try window.keys("q")
        rows = try window.wait(seconds: 5) { $0.contains { $0.hasPrefix("exit=") } }
        #expect(rows.contains("exit=4"), "\(rows)")
    }

    @Test func aDumbTerminalGetsPlainLines() throws {
        guard Self.hasTmux else { return }
        let files = try TestPaths.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: files) }
        let card = try Self.cardFile(in: files)
        let arguments = [
            "share", "--profile", card, "--interface", "lo", "--port", String(freeUDPPort()), "--timeout",
            "2",
            "--key-file", files.appendingPathComponent("key").path,
        ]
        let window = try Window(columns: 100, term: "dumb", command: arguments)
        let rows = try window.wait(seconds: 10) { $0.contains { $0.hasPrefix("exit=") } }
        // Plain lines, as when the output is no terminal: a line per stage and the closing line,
        // no live line redrawn in place (which a dumb terminal cannot do).
        #expect(rows.contains("[1/8] advertising · 0 peers seen"), "\(rows)")
        #expect(rows.contains { $0.hasPrefix("closed: timeout: no exchange") }, "\(rows)")
        #expect(rows.contains("exit=3"), "\(rows)")
    }
}
