import Foundation
import Testing

@testable import ProfileDropCLI

/// Bad input to `share` is one line on standard error and exit code 2, before any socket opens.
@Suite struct ShareInputTests {
    func run(_ arguments: [String]) -> (code: Int32, errors: [String]) {
        let console = CapturingConsole()
        let code = CommandLineTool.run(
            arguments: ["share"] + arguments + ["--interface", "lo"], console: console)
        return (code, console.errorLines)
    }

    @Test func missingProfileFile() throws {
        let result = run(["--profile", "/nonexistent/card.json"])
        #expect(result.code == 2)
        #expect(result.errors.count == 1)
        #expect(result.errors.first?.contains("/nonexistent/card.json") == true)
    }

    @Test func malformedJSON() throws {
        let directory = try TestPaths.temporaryDirectory()
        let file = directory.appendingPathComponent("bad.json").path
        try "{\"name\": \"Bori\",".write(toFile: file, atomically: true, encoding: .utf8)
        let result = run(["--profile", file])
        #expect(result.code == 2)
        #expect(result.errors.count == 1)
    }

    @Test func oversizedPhoto() throws {
        let directory = try TestPaths.temporaryDirectory()
        var jpeg: [UInt8] = [0xFF, 0xD8, 0xFF, 0xE0]
        jpeg += [UInt8](repeating: 0, count: 262_144)
        try Data(jpeg).write(to: directory.appendingPathComponent("big.jpg"))
        let file = directory.appendingPathComponent("card.json").path
        try """
        {"name": "Bori", "age": 3, "sex": "female", "neutered": true, "size": "small",
         "keywords": [], "owner": "minji", "photo": "big.jpg"}
        """.write(toFile: file, atomically: true, encoding: .utf8)
        let result = run(["--profile", file])
        #expect(result.code == 2)
        #expect(result.errors.count == 1)
        #expect(result.errors.first?.contains("big.jpg") == true)
    }

    @Test func unknownFlagAndBadValues() {
        #expect(run(["--profile", "x.json", "--teleport"]).code == 2)
        #expect(run(["--receive-only", "--pose", "1,2"]).code == 2)
        #expect(run(["--receive-only", "--still"]).code == 2)
        #expect(run(["--receive-only", "--motion", "fly 3"]).code == 2)
        #expect(run(["--receive-only", "--timeout", "0"]).code == 2)
        #expect(run(["--receive-only", "--port", "80"]).code == 2)
        #expect(run(["--receive-only", "--confirm", "--yes"]).code == 2)
        #expect(run(["--receive-only", "--keylog"]).code == 2)
        #expect(run([]).code == 2)
    }

    /// A malformed value is named before any rule that combines options: `--timeout abc` without
    /// `--profile` reports the timeout, not the missing card.
    @Test func malformedValuesComeBeforeMissingOptions() {
        let result = run(["--timeout", "abc"])
        #expect(result.code == 2)
        #expect(result.errors.count == 1)
        #expect(
            result.errors.first?.contains("--timeout takes a whole number from 1 to 3600, got 'abc'") == true)
        #expect(
            run(["--receive-only", "--profile", "/nonexistent.json", "--timeout", "abc"]).errors == [
                "profiledrop share: --timeout takes a whole number from 1 to 3600, got 'abc'"
            ])
        #expect(run(["--port", "80", "--impair-loss", "2"]).errors.first?.contains("--port") == true)
        #expect(run(["--impair-loss", "2", "--port", "80"]).errors.first?.contains("--impair-loss") == true)
    }

    /// `--receive-only` sends no card, so a card given with it is a mistake, said in one line.
    @Test func receiveOnlyWithAProfileIsAUsageError() throws {
        let directory = try TestPaths.temporaryDirectory()
        let card = directory.appendingPathComponent("card.json").path
        try ShareCommandTests.bori.write(toFile: card, atomically: true, encoding: .utf8)
        for order in [["--profile", card, "--receive-only"], ["--receive-only", "--profile", card]] {
            let result = run(order)
            #expect(result.code == ExitCode.usage.rawValue)
            #expect(
                result.errors == [
                    "profiledrop share: --receive-only and --profile cannot be combined: --receive-only sends no card"
                ])
        }
    }

    @Test func unknownInterfaceIsNamed() {
        let console = CapturingConsole()
        let code = CommandLineTool.run(
            arguments: ["share", "--receive-only", "--interface", "nope0"], console: console)
        #expect(code == 2)
        #expect(console.errorLines.first?.contains("no interface named 'nope0'") == true)
    }

    /// `--address` takes a dotted IPv4 address of this machine; anything else is one line and exit
    /// code 2, before any datagram is sent.
    @Test(arguments: [
        ("127.0.0.300", "--address takes an IPv4 address a.b.c.d, got '127.0.0.300'"),
        ("lo", "--address takes an IPv4 address a.b.c.d, got 'lo'"),
        // TEST-NET-2: never an address of this machine.
        ("198.51.100.7", "cannot bind 198.51.100.7:0: not an address of this machine"),
    ])
    func addressThatCannotBeUsedIsNamed(address: String, error: String) {
        let console = CapturingConsole()
        let code = CommandLineTool.run(
            arguments: [
                "share", "--receive-only", "--interface", "lo", "--port", "47329", "--address", address,
                "--timeout", "1",
            ], console: console)
        #expect(code == 2)
        #expect(console.errorLines == ["profiledrop share: \(error)"])
    }

    /// Asking is the default; `--confirm` says so again; `--yes` shares without asking, `--yes-known`
    /// with known peers only, and `--receive-only` offers no card either way.
    @Test func consentPolicyFromTheFlags() throws {
        let directory = try TestPaths.temporaryDirectory()
        let card = directory.appendingPathComponent("card.json").path
        try ShareCommandTests.bori.write(toFile: card, atomically: true, encoding: .utf8)
        func options(_ flags: [String]) throws -> ShareOptions {
            let arguments = try ShareCommand.parser.parse(
                ["--interface", "lo", "--key-file", "/k/key"] + flags)
            return try ShareOptions(arguments)
        }
        #expect(try options(["--profile", card]).consent == .ask)
        #expect(try options(["--profile", card, "--confirm"]).consent == .ask)
        let sharing = try options(["--profile", card, "--yes"])
        #expect(sharing.consent == .always && sharing.card != nil)
        let receiving = try options(["--receive-only"])
        #expect(receiving.consent == .ask && receiving.card == nil)
        // --yes without a card receives: the library's `always` shares what there is to share.
        let receivingAlways = try options(["--receive-only", "--yes"])
        #expect(receivingAlways.consent == .always && receivingAlways.card == nil)
        #expect(try options(["--profile", card, "--yes-known"]).consent == .knownPeers)
        #expect(try options(["--receive-only", "--yes-known"]).consent == .knownPeers)
        for other in ["--yes", "--confirm"] {
            let result = run(["--profile", card, "--yes-known", other])
            #expect(result.code == ExitCode.usage.rawValue)
            #expect(
                result.errors == [
                    "profiledrop share: --yes-known cannot be combined with \(other): it shares without asking "
                        + "with known peers only"
                ])
        }
        #expect(try options(["--receive-only"]).knownPeersPath == "/k/known-peers")
        #expect(try options(["--receive-only", "--known-peers", "/p"]).knownPeersPath == "/p")
        let console = CapturingConsole()
        _ = CommandLineTool.run(arguments: ["help", "share"], console: console)
        let help = console.outputLines.joined(separator: "\n")
        #expect(help.contains("anyone on this network can get your card"))
        #expect(help.contains("ask about any other device"))
        #expect(help.contains("(the default; kept for scripts)"))
    }

    @Test func consentAnswers() {
        #expect(ConsentInput.parseJSON(#"{"decision":"share"}"#) == .decision(.share))
        #expect(ConsentInput.parseJSON(#" { "decision" : "receive-only" } "#) == .decision(.receiveOnly))
        #expect(ConsentInput.parseJSON(#"{"decision":"decline"}"#) == .decision(.decline))
        #expect(ConsentInput.parseJSON("  ") == .blank)
        for bad in ["s", "share", "{", "[]", "{}", #"{"decision":1}"#, #"{"decision":"yes"}"#, #"{"x":1}"#] {
            guard case .invalid = ConsentInput.parseJSON(bad) else {
                Issue.record("'\(bad)' was taken as an answer")
                continue
            }
        }
        #expect(ConsentInput.parseLine("S") == .decision(.share))
        #expect(ConsentInput.parseLine(" r \r") == .decision(.receiveOnly))
        #expect(ConsentInput.parseLine("decline") == .decision(.decline))
        #expect(ConsentInput.parseLine("q") == .quit)
        #expect(ConsentInput.parseLine(#"{"decision":"share"}"#) == .decision(.share))
        guard case .invalid = ConsentInput.parseLine("maybe") else {
            Issue.record("'maybe' was taken as an answer")
            return
        }
    }

    /// With several candidates listed, an answer names one by its number (`s1`, `r 2`, `d3`), or
    /// by its peer in `--json`; `d` alone declines them all.
    @Test func answersNameACandidate() {
        #expect(ConsentInput.parseLine("s1") == .decision(.share, candidate: .number(1)))
        #expect(ConsentInput.parseLine(" R 2 ") == .decision(.receiveOnly, candidate: .number(2)))
        #expect(ConsentInput.parseLine("decline 3") == .decision(.decline, candidate: .number(3)))
        #expect(ConsentInput.parseLine("d") == .decision(.decline, candidate: nil))
        #expect(
            ConsentInput.parseJSON(#"{"decision":"share","candidate":"1112131415161718"}"#)
                == .decision(.share, candidate: .peer("1112131415161718")))
        #expect(
            ConsentInput.parseJSON(#"{"candidate":2,"decision":"decline"}"#)
                == .decision(.decline, candidate: .number(2)))
        #expect(
            ConsentInput.parseJSON(#"{"decision":"decline","candidate":null}"#)
                == .decision(.decline, candidate: nil))
        for bad in ["s0", "1", "q1", "s123", "s-1", "x2"] {
            guard case .invalid = ConsentInput.parseLine(bad) else {
                Issue.record("'\(bad)' was taken as an answer")
                continue
            }
        }
        for bad in [
            #"{"decision":"share","candidate":0}"#, #"{"decision":"share","candidate":1.5}"#,
            #"{"decision":"share","candidate":true}"#,
            #"{"decision":"share","candidate":"a","candidate":"b"}"#,
        ] {
            guard case .invalid = ConsentInput.parseJSON(bad) else {
                Issue.record("'\(bad)' was taken as an answer")
                continue
            }
        }
    }

    @Test func inputLinesHoweverTheReadsCutThem() {
        var splitter = LineSplitter()
        #expect(splitter.feed(Array("s\r\n{\"dec".utf8)) == [.text("s")])
        #expect(splitter.feed(Array("ision\":\"share\"}\n".utf8)) == [.text(#"{"decision":"share"}"#)])
        #expect(splitter.feed(Array("d".utf8)).isEmpty)
        #expect(splitter.finish() == .text("d"))
        #expect(splitter.finish() == nil)
        // An endless line is reported once, then skipped up to its end.
        let long = [UInt8](repeating: UInt8(ascii: "x"), count: LineSplitter.maximumLineBytes + 10)
        #expect(splitter.feed(long) == [.tooLong])
        #expect(splitter.feed(Array("xx\nr\n".utf8)) == [.text("r")])
    }

    @Test func poseAndMotionSyntax() throws {
        let pose = try PoseSyntax.pose("7,-2.5,180", flag: "pose")
        #expect(pose.x == 7 && pose.y == -2.5 && pose.heading == 180)
        let script = try PoseSyntax.script("hold 1; move 7,0,180 2", from: pose)
        #expect(script.steps.count == 2)
        #expect(throws: UsageError.self) { try PoseSyntax.script("hold -1", from: pose) }
        #expect(throws: UsageError.self) { try PoseSyntax.pose("nan,0,0", flag: "pose") }
    }
}
