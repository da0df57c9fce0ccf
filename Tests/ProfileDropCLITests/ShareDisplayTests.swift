import Foundation
import Testing

@testable import ProfileDropCLI
@testable import ProfileDropCore

/// What `share` writes, fed events directly: the `--json` line schema and its order.
@Suite struct ShareDisplayTests {
    static let device = DeviceID(rawValue: 0x0102_0304_0506_0708)
    static let peer = DeviceID(rawValue: 0x1112_1314_1516_1718)
    static let other = DeviceID(rawValue: 0x2122_2324_2526_2728)

    static func snapshot(peer: DeviceID? = nil) -> DeviceSnapshot {
        DeviceSnapshot(
            stage: .discovering, deviceID: device, peer: peer, distanceCm: nil, bearingDeg: nil,
            sentChunks: 0,
            totalSendChunks: 0, receivedChunks: 0, totalReceiveChunks: 0, peersSeen: 0, closeReason: nil)
    }

    static func jsonDisplay() -> (ShareDisplay, CapturingConsole) {
        let console = CapturingConsole()
        var display = ShareDisplay(mode: .json, console: console, consent: .share)
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
        display.started(interfaces: ["lo"], listening: "port 1", snapshot: Self.snapshot())
        display.show(.peerFound(Self.peer), snapshot: Self.snapshot())
        display.finish(reason: .exchanged, snapshot: Self.snapshot(peer: Self.peer), card: nil)
        for line in console.outputLines {
            #expect(line.hasPrefix(#"{"v":1,"ts":"2026-11-30T12:00:00.000Z","event":""#), "\(line)")
        }
        #expect(console.outputLines.count == 3)
    }

    @Test func theWallClockTimestampIsRFC3339WithMilliseconds() {
        let stamp = ShareDisplay.wallClockTimestamp()
        #expect(
            stamp.range(of: #"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$"#, options: .regularExpression) != nil)
    }

    @Test func oneLinePerStateChangeInOrder() throws {
        var (display, console) = Self.jsonDisplay()
        display.started(interfaces: ["lo"], listening: "port 1", snapshot: Self.snapshot())
        // The core's own first advertising event repeats what the start announced.
        display.show(.advertising, snapshot: Self.snapshot())
        display.show(.peerFound(Self.peer), snapshot: Self.snapshot())
        display.show(.connecting(peer: Self.peer, initiator: true), snapshot: Self.snapshot())
        display.show(.secured(peer: Self.peer), snapshot: Self.snapshot())
        // Another device found during the session is no step back for this one.
        display.show(.peerFound(Self.other), snapshot: Self.snapshot(peer: Self.peer))
        display.show(.inRange, snapshot: Self.snapshot(peer: Self.peer))
        display.show(.exchanging(sent: 0, total: 2), snapshot: Self.snapshot(peer: Self.peer))
        display.show(.acknowledged, snapshot: Self.snapshot(peer: Self.peer))
        // Late progress after the acknowledgement tells nothing new.
        display.show(.exchanging(sent: 2, total: 2), snapshot: Self.snapshot(peer: Self.peer))
        display.finish(reason: .exchanged, snapshot: Self.snapshot(peer: Self.peer), card: nil)
        let events = try Self.objects(console).map { $0["event"] as? String ?? "?" }
        #expect(
            events == [
                "advertising", "peer_found", "connecting", "secured", "in_range", "exchanging",
                "acknowledged",
                "closed",
            ])
        // Every event about a peer names it, whatever the snapshot still lacks.
        for object in try Self.objects(console) where object["event"] as? String != "advertising" {
            #expect(object["peer"] as? String == Self.peer.description, "\(object)")
        }
    }

    @Test func aSignalEndsWithAnInterruptedLine() throws {
        var (display, console) = Self.jsonDisplay()
        display.finish(reason: nil, snapshot: Self.snapshot(), card: nil, signal: "SIGINT")
        let last = try #require(try Self.objects(console).last)
        #expect(last["event"] as? String == "closed")
        #expect(last["reason"] as? String == "interrupted")
        #expect(last["detail"] as? String == "interrupted (SIGINT)")
    }

    @Test func theSavedPathIsReported() throws {
        var (display, console) = Self.jsonDisplay()
        display.finish(
            reason: .exchanged, snapshot: Self.snapshot(), card: nil, saved: "/tmp/cards/Bori.json")
        #expect(try Self.objects(console).last?["saved"] as? String == "/tmp/cards/Bori.json")

        let plain = CapturingConsole()
        var lines = ShareDisplay(mode: .lines, console: plain, consent: .share)
        lines.finish(reason: .exchanged, snapshot: Self.snapshot(), card: nil, saved: "/tmp/cards/Bori.json")
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

    @Test func outOfRangeSaysWhereTheDevicesWereAndWhereToHoldThem() throws {
        let console = CapturingConsole()
        var display = ShareDisplay(mode: .lines, console: console, consent: .share)
        var snapshot = Self.snapshot(peer: Self.peer)
        snapshot.distanceCm = 13.54
        snapshot.bearingDeg = 4
        display.finish(reason: .outOfRange, snapshot: snapshot, card: nil)
        #expect(
            console.outputLines.last
                == "closed: out of range — last seen at 13.5 cm, 4°: hold the devices 5–10 cm apart, facing each other"
        )

        var (json, jsonConsole) = Self.jsonDisplay()
        json.finish(reason: .outOfRange, snapshot: snapshot, card: nil)
        let last = try #require(try Self.objects(jsonConsole).last)
        #expect(last["detail"] as? String == "out of range")
        #expect((last["hint"] as? String)?.hasPrefix("last seen at 13.5 cm") == true)
    }

    @Test func noPeerSeenPointsAtThePortAndTheFirewall() {
        let console = CapturingConsole()
        var display = ShareDisplay(mode: .lines, console: console, consent: .share)
        display.finish(reason: .timeout(.noExchange), snapshot: Self.snapshot(), card: nil)
        let last = console.outputLines.last ?? ""
        #expect(last.hasPrefix("closed: timeout: no exchange — no peer was seen: the same --port on both?"))
        #expect(last.contains("Troubleshooting discovery"))
    }

    @Test func afterAnsweringTheUserSeesThatThePeerIsAwaited() {
        let console = CapturingConsole()
        var display = ShareDisplay(mode: .lines, console: console, consent: .askUser)
        display.decided(.share, snapshot: Self.snapshot(peer: Self.peer))
        #expect(console.outputLines.last == "you answered: share; waiting for the peer to accept")
    }

    /// With `--yes-known` the code of a known peer is printed, as it is with `--yes` (nobody is
    /// asked); a new device's code comes with the question instead.
    @Test func sharingWithKnownPeersOnlyPrintsTheCodeOfAKnownPeer() {
        let known = KnownPeer(
            resolvingKey: Array(repeating: 1, count: 32), bondKey: Array(repeating: 2, count: 32),
            name: "Kong (jae)")
        for (peer, printed) in [(known as KnownPeer?, true), (nil, false)] {
            let console = CapturingConsole()
            var display = ShareDisplay(mode: .lines, console: console, consent: .shareWithKnownPeers)
            let verification = Verification(
                peer: Self.peer, code: "123456", knownPeer: peer, interruptedBefore: 0)
            display.show(.verified(verification), snapshot: Self.snapshot(peer: Self.peer))
            let line = console.outputLines.first { $0.hasPrefix("verified: code 123 456") }
            #expect((line != nil) == printed)
            if printed { #expect(line?.hasSuffix("known peer “Kong (jae)”") == true) }
        }
    }

    @Test func nothingMovedIsNotReportedAsExchanged() throws {
        var (display, console) = Self.jsonDisplay()
        display.finish(reason: .exchanged, snapshot: Self.snapshot(), card: nil, nothingMoved: true)
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
