import Foundation
import ProfileDrop
import Testing

@testable import ProfileDropCLI

/// What `share` writes, fed the library's snapshots directly: the `--json` line schema and the
/// lines people read. (How the core's events become snapshots: ProfileDropTests' SnapshotBuilderTests.)
@Suite struct ShareDisplayTests {
    static let device = "0102030405060708"
    static let peer = "1112131415161718"

    static func snapshot(
        _ event: PairingSnapshot.Event, stage: PairingSnapshot.Stage = .advertising, peer: String? = nil,
        outcome: PairingOutcome? = nil
    ) -> PairingSnapshot {
        PairingSnapshot(event: event, stage: stage, device: device, peer: peer, outcome: outcome)
    }

    static func closed(
        _ reason: PairingOutcome.Reason, detail: String?, hint: String? = nil, saved: String? = nil,
        distance: (Double, Double)? = nil
    ) -> PairingSnapshot {
        var snapshot = snapshot(
            .closed, stage: .closed, peer: peer,
            outcome: PairingOutcome(
                reason: reason, detail: detail, hint: hint, closeReason: nil, card: nil,
                cardAcknowledged: false,
                unanswered: false, savedPath: saved, captureError: nil, traffic: ""))
        snapshot.distanceCm = distance?.0
        snapshot.bearingDeg = distance?.1
        return snapshot
    }

    static func jsonDisplay() -> (ShareDisplay, CapturingConsole) {
        let console = CapturingConsole()
        var display = ShareDisplay(mode: .json, console: console, consent: .always)
        display.timestamp = { "2026-11-30T12:00:00.000Z" }
        return (display, console)
    }

    static func objects(_ console: CapturingConsole) throws -> [[String: Any]] {
        try console.outputLines.map {
            try #require(JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])
        }
    }

    @Test func everyLineStartsWithTheSchemaVersionAndATimestamp() throws {
        var (display, console) = Self.jsonDisplay()
        display.started(device: Self.device, interfaces: ["lo"], listening: "port 1")
        display.show(Self.snapshot(.advertising))
        display.show(Self.snapshot(.peerFound(peer: Self.peer), stage: .peerFound, peer: Self.peer))
        display.finish(Self.closed(.exchanged, detail: "exchanged"))
        for line in console.outputLines {
            #expect(line.hasPrefix(#"{"v":1,"ts":"2026-11-30T12:00:00.000Z","event":""#), "\(line)")
        }
        #expect(console.outputLines.count == 3)
        #expect(try Self.objects(console)[1]["peer"] as? String == Self.peer)
    }

    @Test func theWallClockTimestampIsRFC3339WithMilliseconds() {
        let stamp = ShareDisplay.wallClockTimestamp()
        #expect(
            stamp.range(of: #"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$"#, options: .regularExpression) != nil)
    }

    @Test func aSignalEndsWithAnInterruptedLine() throws {
        var (display, console) = Self.jsonDisplay()
        display.finish(Self.closed(.interrupted, detail: "interrupted (SIGINT)"))
        let last = try #require(try Self.objects(console).last)
        #expect(last["event"] as? String == "closed")
        #expect(last["reason"] as? String == "interrupted")
        #expect(last["detail"] as? String == "interrupted (SIGINT)")
    }

    @Test func quittingHasNoDetail() throws {
        var (display, console) = Self.jsonDisplay()
        display.finish(Self.closed(.quit, detail: nil))
        let last = try #require(try Self.objects(console).last)
        #expect(last["reason"] as? String == "quit")
        #expect(last["detail"] == nil)

        let plain = CapturingConsole()
        var lines = ShareDisplay(mode: .lines, console: plain)
        lines.finish(Self.closed(.quit, detail: nil))
        #expect(plain.outputLines.last == "closed: quit")
    }

    @Test func theSavedPathIsReported() throws {
        var (display, console) = Self.jsonDisplay()
        display.finish(Self.closed(.exchanged, detail: "exchanged", saved: "/tmp/cards/Bori.json"))
        #expect(try Self.objects(console).last?["saved"] as? String == "/tmp/cards/Bori.json")

        let plain = CapturingConsole()
        var lines = ShareDisplay(mode: .lines, console: plain, consent: .always)
        lines.finish(Self.closed(.exchanged, detail: "exchanged", saved: "/tmp/cards/Bori.json"))
        #expect(plain.outputLines.last == "saved: /tmp/cards/Bori.json")
    }

    @Test func theLiveLineIsCutToTheTerminalWidth() {
        let text = "[4/8] ranging · code 123 456 · 13.5 cm · 4.2° · pose 0,0,0"
        let cut = StatusLine.cut(text, to: 40)
        // The last column stays free, so the line never wraps and redraws in place.
        #expect(cut.count == 39)
        #expect(cut.hasSuffix("…"))
        #expect(StatusLine.cut("short", to: 40) == "short")
    }

    @Test func theHintFollowsTheDetail() throws {
        let console = CapturingConsole()
        var display = ShareDisplay(mode: .lines, console: console, consent: .always)
        let hint = "last seen at 13.5 cm, 4°: hold the devices 5–10 cm apart, facing each other"
        display.finish(Self.closed(.outOfRange, detail: "out of range", hint: hint, distance: (13.5, 4)))
        #expect(console.outputLines.last == "closed: out of range — " + hint)

        var (json, jsonConsole) = Self.jsonDisplay()
        json.finish(Self.closed(.outOfRange, detail: "out of range", hint: hint, distance: (13.5, 4)))
        let last = try #require(try Self.objects(jsonConsole).last)
        #expect(last["detail"] as? String == "out of range")
        #expect(last["hint"] as? String == hint)
        #expect(last["distance_cm"] as? Double == 13.5)
    }

    @Test func afterAnsweringTheUserSeesThatThePeerIsAwaited() {
        let console = CapturingConsole()
        var display = ShareDisplay(mode: .lines, console: console, consent: .ask)
        display.show(Self.snapshot(.decision(.share), stage: .inRange, peer: Self.peer))
        #expect(console.outputLines.last == "you answered: share; waiting for the peer to accept")
    }

    /// With `--yes-known` the code of a known peer is printed, as it is with `--yes` (nobody is
    /// asked); a new device's code comes with the question instead.
    @Test func sharingWithKnownPeersOnlyPrintsTheCodeOfAKnownPeer() {
        for (name, printed) in [("Kong (jae)" as String?, true), (nil, false)] {
            let console = CapturingConsole()
            var display = ShareDisplay(mode: .lines, console: console, consent: .knownPeers)
            var snapshot = Self.snapshot(.verified(interruptedBefore: 0), stage: .secured, peer: Self.peer)
            snapshot.code = "123456"
            snapshot.isKnownPeer = name != nil
            snapshot.knownPeerName = name
            display.show(snapshot)
            let line = console.outputLines.first { $0.hasPrefix("verified: code 123 456") }
            #expect((line != nil) == printed)
            if printed { #expect(line?.hasSuffix("known peer “Kong (jae)”") == true) }
        }
    }

    @Test func aQuestionIsAPromptWithTheCode() {
        let console = CapturingConsole()
        var display = ShareDisplay(mode: .lines, console: console, consent: .ask)
        var snapshot = Self.snapshot(.consent, stage: .inRange, peer: Self.peer)
        snapshot.code = "123456"
        snapshot.question = ConsentQuestion(
            peer: Self.peer, code: "123456", knownPeerName: nil, interruptedBefore: 0, timeoutSeconds: 60,
            offersCard: false)
        display.show(snapshot)
        #expect(
            console.outputLines.last
                == "pair with a NEW device? code 123 456 — check that the other screen shows the same code. "
                + "[r]eceive their card, [d]ecline (60 s)")
    }

    static func candidates() -> [ConsentQuestion] {
        [
            ConsentQuestion(
                peer: peer, code: "214244", knownPeerName: nil, interruptedBefore: 0, timeoutSeconds: 60,
                offersCard: true),
            ConsentQuestion(
                peer: "2122232425262728", code: "903117", knownPeerName: "Kong (jae)", interruptedBefore: 0,
                timeoutSeconds: 58, offersCard: true),
        ]
    }

    /// Two devices in range at once: both are listed, numbered, each with its code, and the
    /// answers name one by its number.
    @Test func severalCandidatesAreANumberedList() {
        let console = CapturingConsole()
        var display = ShareDisplay(mode: .lines, console: console, consent: .ask)
        let list = Self.candidates()
        var snapshot = Self.snapshot(.consent, stage: .inRange, peer: Self.peer)
        snapshot.question = list[1]
        snapshot.candidates = list
        display.show(snapshot)
        #expect(
            console.outputLines.suffix(4) == [
                "2 devices ask to pair: pick the one whose code the other screen shows.",
                "  1  code 214 244  NEW device",
                "  2  code 903 117  known peer “Kong (jae)”",
                "s1 share with 1, r1 receive only from 1, d1 decline 1 alone, d then Enter to decline all "
                    + "(each 60 s)",
            ])
        // Declining one by its number names it, and leaves the other, asked about as a single
        // candidate again.
        var declined = Self.snapshot(.decision(.decline), stage: .inRange)
        declined.answeredCandidate = Self.peer
        declined.question = list[1]
        declined.candidates = [list[1]]
        display.show(declined)
        #expect(console.outputLines.suffix(2).first == "you answered: decline 1 (code 214 244)")
        #expect(
            console.outputLines.last?.hasPrefix("pair with known peer “Kong (jae)”? code 903 117") == true)
        // A candidate that leaves the list by itself is said so.
        var left = Self.snapshot(
            .sessionEnded(reason: "declined", detail: "declined by peer"), stage: .inRange)
        left.question = list[1]
        left.candidates = [list[1]]
        display.show(left)
        #expect(console.outputLines.suffix(2).first == "a candidate left the list: declined by peer")
    }

    /// The `--json` lines list the candidates while any is asked about, and a decision names the
    /// candidate it answered.
    @Test func theJSONLinesListTheCandidates() throws {
        var (display, console) = Self.jsonDisplay()
        var snapshot = Self.snapshot(.consent, stage: .inRange, peer: Self.peer)
        snapshot.question = Self.candidates()[1]
        snapshot.candidates = Self.candidates()
        display.show(snapshot)
        var decision = Self.snapshot(.decision(.share), stage: .inRange, peer: Self.peer)
        decision.answeredCandidate = Self.peer
        display.show(decision)
        let lines = try Self.objects(console)
        let consent = try #require(lines.first)
        #expect(consent["event"] as? String == "consent" && consent["code"] as? String == "903117")
        let listed = try #require(consent["candidates"] as? [[String: Any]])
        #expect(listed.map { $0["code"] as? String } == ["214244", "903117"])
        #expect(listed.map { $0["known"] as? Bool } == [false, true])
        #expect(listed[1]["name"] as? String == "Kong (jae)" && listed[0]["peer"] as? String == Self.peer)
        let answered = try #require(lines.last)
        #expect(answered["decision"] as? String == "share" && answered["candidate"] as? String == Self.peer)
        #expect(answered["candidates"] == nil)
    }

    @Test func nothingMovedIsNotReportedAsExchanged() throws {
        var (display, console) = Self.jsonDisplay()
        display.finish(Self.closed(.nothingExchanged, detail: "nothing exchanged: both sides only receive"))
        let last = try #require(try Self.objects(console).last)
        #expect(last["reason"] as? String == "nothing_exchanged")
        #expect(last["detail"] as? String == "nothing exchanged: both sides only receive")
    }
}

/// Errors of a command run with `--json` are JSON lines too.
@Suite struct JSONErrorTests {
    @Test func aUsageErrorUnderJSONIsAnErrorLine() throws {
        let console = CapturingConsole()
        let code = CommandLineTool.run(
            arguments: ["share", "--json", "--timeout", "abc", "--interface", "lo"], console: console)
        #expect(code == 2)
        #expect(console.errorLines.count == 1)
        let line = try #require(console.outputLines.last)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        #expect(object["v"] as? Int == 1)
        #expect(object["event"] as? String == "error")
        #expect(object["exit_code"] as? Int == 2)
        #expect((object["message"] as? String)?.contains("--timeout") == true)
    }

    @Test func withoutJSONErrorsStayOnStandardError() {
        let console = CapturingConsole()
        let code = CommandLineTool.run(
            arguments: ["share", "--timeout", "abc", "--interface", "lo"], console: console)
        #expect(code == 2)
        #expect(console.outputLines.isEmpty)
    }
}
