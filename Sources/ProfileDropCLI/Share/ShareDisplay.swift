import Foundation
import ProfileDrop
// Only for the lines that are no snapshot (input errors), written as the snapshots are.
import ProfileDropJSON

/// What `share` shows of a run's snapshots: a live status line on a terminal, plain lines
/// otherwise, or each snapshot's JSON line.
struct ShareDisplay {
    let mode: ShareOptions.OutputMode
    let console: Console
    private var statusLine = StatusLine()
    /// Whether our side agreed and waits for the peer's decision.
    private var waitingForPeer = false
    private var lastPrintedStage: PairingSnapshot.Stage?
    /// The pose the user moved to with the arrow keys, once they did.
    private var pose: Pose?
    /// The last snapshot shown, for redrawing the status line.
    private var latest: PairingSnapshot?
    /// The candidates listed last, numbered from 1: what an answer's number referred to.
    private var shownCandidates: [ConsentQuestion] = []

    /// How the device decides: it asks its user before any card moves unless `--yes`, and with
    /// `--yes-known` only about a device that is not a known peer.
    let consent: PairingConfiguration.ConsentPolicy

    init(mode: ShareOptions.OutputMode, console: Console, consent: PairingConfiguration.ConsentPolicy = .ask)
    {
        self.mode = mode
        self.console = console
        self.consent = consent
    }

    /// Whether the device asks its user about a peer that is known (or not).
    private func asksUser(knownPeer: Bool) -> Bool {
        switch consent {
        case .ask: true
        case .always: false
        case .knownPeers: !knownPeer
        }
    }

    /// The header line, before the run's first snapshot (not in `--json` mode).
    func started(device: String, interfaces: [String], listening: String) {
        guard mode != .json else { return }
        console.output(
            "profiledrop share: device \(device) on \(interfaces.joined(separator: ", ")) (\(listening))")
    }

    /// One snapshot of the run, before the closed one (``finish(_:)``).
    mutating func show(_ snapshot: PairingSnapshot) {
        latest = snapshot
        if !snapshot.event.isDecisionEvent { shownCandidates = snapshot.candidates }
        switch snapshot.event {
        case .verified(let interruptedBefore):
            if let code = snapshot.code, !asksUser(knownPeer: snapshot.isKnownPeer ?? false) {
                // Deciding without asking (--yes, or --yes-known with a known peer): the code is
                // still worth a look.
                let who = snapshot.knownPeerName.map { "known peer \(Self.quoted($0))" } ?? "a new device"
                printLine("verified: code \(Self.spaced(code)), \(who)", snapshot: snapshot)
            }
            if interruptedBefore > 0 {
                printLine(Self.interruptedBeforeWarning(interruptedBefore), snapshot: snapshot)
            }
        case .pairingInterrupted(let peer, let code, _, let detail):
            let shown = code.map { " after code \(Self.spaced($0)) was shown" } ?? ""
            printLine(
                "WARNING: the pairing with \(peer) was interrupted\(shown) (\(detail)). If nobody cancelled it, "
                    + "someone may be trying to get between the two devices: compare the codes carefully.",
                snapshot: snapshot)
        case .knownPeerMismatch(let name):
            printLine(
                "WARNING: a device claimed to be the known peer \(Self.quoted(name)) but could not prove it: "
                    + "an impostor, or that device forgot this one. It is treated as a new device: compare the "
                    + "codes before you share.",
                snapshot: snapshot)
        case .incompatiblePeer(let peer, let version):
            printLine(
                "device \(peer) speaks protocol version \(version) and this one version "
                    + "\(ProfileDropAPI.protocolVersion): they cannot pair (update the older one)",
                snapshot: snapshot)
        case .consent:
            guard mode != .json, let question = snapshot.question else { break }
            if snapshot.candidates.count > 1 {
                for line in Self.candidateList(snapshot.candidates) { printLine(line, snapshot: snapshot) }
                return
            }
            printLine(Self.singlePrompt(question), snapshot: snapshot)
            return
        case .decision(let answer):
            let listed = shownCandidates
            shownCandidates = snapshot.candidates
            waitingForPeer = answer != .decline
            guard mode != .json else { break }
            // With several listed, the answer names its candidate by the number it was shown with.
            var named = ""
            if let peer = snapshot.answeredCandidate,
                let index = listed.firstIndex(where: { $0.peer == peer })
            {
                named = " \(index + 1) (code \(Self.spaced(listed[index].code)))"
            }
            let text =
                switch answer {
                case .share: "you answered: share\(named); waiting for the peer to accept"
                case .receiveOnly: "you answered: receive only\(named); waiting for the peer to accept"
                case .decline: "you answered: decline\(named)"
                }
            printLine(text, snapshot: snapshot)
            // A single candidate declined: the others stay asked about.
            if snapshot.candidates.count > 1 {
                for line in Self.candidateList(snapshot.candidates) { printLine(line, snapshot: snapshot) }
            } else if let left = snapshot.candidates.first {
                printLine(Self.singlePrompt(left), snapshot: snapshot)
            }
            return
        case .peerRemembered(let name, let fingerprint, let stored):
            if let problem = snapshot.storeError {
                console.error("profiledrop share: cannot remember the peer: \(problem)")
            }
            guard mode != .json else { break }
            if stored {
                printLine(
                    "remembered \(Self.quoted(name)) as a known peer (\(fingerprint))", snapshot: snapshot)
            }
            return
        case .sessionEnded(_, let detail):
            if !snapshot.candidates.isEmpty {
                // A candidate left the list; the others stay asked about.
                printLine("a candidate left the list: \(detail)", snapshot: snapshot)
                if snapshot.candidates.count > 1 {
                    for line in Self.candidateList(snapshot.candidates) {
                        printLine(line, snapshot: snapshot)
                    }
                } else if let question = snapshot.candidates.first {
                    printLine(Self.singlePrompt(question), snapshot: snapshot)
                }
                return
            }
            // On a terminal too, above the status line: the person should see why it went back to
            // looking (a peer that quit before the code no longer ends this run).
            printLine("session ended: \(detail); looking for another peer", snapshot: snapshot)
        case .exchanging:
            waitingForPeer = false
        case .advertising, .peerFound, .peerBusy, .connecting, .secured, .ranging, .inRange, .cardReceived,
            .acknowledged, .pose, .closed:
            break
        }
        render(snapshot)
    }

    /// The user moved the device with an arrow key: the status line shows the pose at once.
    mutating func poseChanged(_ pose: Pose) {
        self.pose = pose
        if mode == .terminal, let latest { statusLine.show(line(latest)) }
    }

    /// A line of input that is not an answer, or an answer with no request pending. In `--json`
    /// mode an `input_error` event on standard output; otherwise one line on standard error.
    func inputError(_ detail: String) {
        switch mode {
        case .json:
            console.output(
                Self.jsonLine(
                    [("event", .string("input_error")), ("detail", .string(detail))], timestamp: timestamp()))
        case .terminal, .lines:
            console.error("profiledrop share: input ignored: \(detail)")
        }
    }

    /// The final line: the outcome, the card received and where it was saved (the snapshot's
    /// ``PairingOutcome/savedPath``).
    mutating func finish(_ snapshot: PairingSnapshot) {
        guard let outcome = snapshot.outcome else { return }
        waitingForPeer = false
        if outcome.unanswered && mode != .json {
            printLine("no answer in time: declined", snapshot: snapshot)
        }
        let detail = outcome.detail ?? "quit"
        let shown = detail + (outcome.hint.map { " — " + $0 } ?? "")
        switch mode {
        case .json:
            console.output(snapshot.jsonLine(timestamp: timestamp()))
        case .terminal:
            statusLine.show(line(snapshot) + " · " + detail)
            statusLine.finish()
            if let hint = outcome.hint { console.output(hint) }
        case .lines:
            console.output("closed: \(shown)")
        }
        if mode != .json {
            if let card = outcome.card { console.output("received: \(card.summary)".printable) }
            if let saved = outcome.savedPath { console.output("saved: \(saved)".printable) }
        }
    }

    /// The prompt for one candidate.
    static func singlePrompt(_ question: ConsentQuestion) -> String {
        let who =
            question.knownPeerName.map { "pair with known peer \(Self.quoted($0))?" }
            ?? "pair with a NEW device?"
        let choices =
            question.offersCard ? "[s]hare, [r]eceive only, [d]ecline" : "[r]eceive their card, [d]ecline"
        return "\(who) code \(Self.spaced(question.code)) — check that the other screen shows the same code. "
            + "\(choices) (\(question.timeoutSeconds) s)"
    }

    /// The prompt for several candidates at once (PROTOCOL.md 5, "Candidates"): each numbered with
    /// its code, then the answers, which name a candidate by its number.
    static func candidateList(_ candidates: [ConsentQuestion]) -> [String] {
        var lines = [
            "\(candidates.count) devices ask to pair: pick the one whose code the other screen shows."
        ]
        for (index, question) in candidates.enumerated() {
            let who = question.knownPeerName.map { "known peer \(Self.quoted($0))" } ?? "NEW device"
            lines.append("  \(index + 1)  code \(Self.spaced(question.code))  \(who)")
        }
        let offersCard = candidates.allSatisfy(\.offersCard)
        let pick = offersCard ? "s1 share with 1, r1 receive only from 1" : "r1 receive 1's card"
        lines.append(
            "\(pick), d1 decline 1 alone, d then Enter to decline all (each \(candidates[0].timeoutSeconds) s)"
        )
        return lines
    }

    private static func interruptedBeforeWarning(_ count: Int) -> String {
        let pairings = count == 1 ? "1 pairing was" : "\(count) pairings were"
        return "WARNING: \(pairings) interrupted after the code was shown, earlier in this run. If nobody "
            + "cancelled, someone may be trying to get between the devices: compare the codes carefully."
    }

    /// Writes a whole line for people (not in `--json` mode); on a terminal, below the status line,
    /// which is then drawn again.
    private mutating func printLine(_ text: String, snapshot: PairingSnapshot) {
        switch mode {
        case .json:
            return
        case .terminal:
            statusLine.clear()
            console.output(text.printable)
            statusLine.show(line(snapshot))
        case .lines:
            console.output(text.printable)
        }
    }

    /// `123 456`: a code as people read it.
    static func spaced(_ code: String) -> String {
        code.count == 6 ? "\(code.prefix(3)) \(code.dropFirst(3))" : code
    }

    /// A name between quotation marks.
    static func quoted(_ name: String) -> String { "“\(name)”" }

    /// When each line is written: an RFC 3339 UTC time with milliseconds. Tests fix it.
    var timestamp: () -> String = ShareDisplay.wallClockTimestamp

    static func wallClockTimestamp() -> String {
        var time = timespec()
        clock_gettime(CLOCK_REALTIME, &time)
        var seconds = time_t(time.tv_sec)
        var parts = tm()
        gmtime_r(&seconds, &parts)
        return String(
            format: "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", Int(parts.tm_year) + 1900, Int(parts.tm_mon) + 1,
            Int(parts.tm_mday), Int(parts.tm_hour), Int(parts.tm_min), Int(parts.tm_sec),
            Int(time.tv_nsec / 1_000_000))
    }

    /// A JSON line of the schema that is no snapshot (an input or usage error): `v`, `ts`, then
    /// `members`.
    static func jsonLine(_ members: [(key: String, value: JSONValue)], timestamp: String) -> String {
        let stamp: [(key: String, value: JSONValue)] = [
            ("v", .integer(PairingSnapshot.schemaVersion)), ("ts", .string(timestamp)),
        ]
        return JSONValue.object(stamp + members).serialized
    }

    /// One snapshot as the mode shows it: its JSON line, the live line, or a line per stage.
    private mutating func render(_ snapshot: PairingSnapshot) {
        switch mode {
        case .json:
            console.output(snapshot.jsonLine(timestamp: timestamp()))
        case .terminal:
            statusLine.show(line(snapshot))
        case .lines:
            let stage = snapshot.stage
            if stage != lastPrintedStage || (stage == .ranging && snapshot.event == .ranging) {
                // Ranging updates arrive several times a second; one line per stage change is enough
                // for a log, plus the ranging figures when they first appear.
                if stage == .ranging && lastPrintedStage == .ranging { return }
                lastPrintedStage = stage
                console.output(line(snapshot))
            }
        }
    }

    private func line(_ snapshot: PairingSnapshot) -> String {
        let stage = snapshot.stage
        var text = "[\(stage.number)/8] \(stage.rawValue)"
        switch stage {
        case .advertising:
            text += " · \(snapshot.peersSeen) peer\(snapshot.peersSeen == 1 ? "" : "s") seen"
        case .peerFound:
            if let peer = snapshot.peer { text += " · \(peer)" }
        case .secured, .ranging, .inRange:
            if snapshot.candidates.count > 1 {
                // No one code stands for the list: each is on its line above.
                text += " · \(snapshot.candidates.count) devices listed · your answer?"
            } else if let code = snapshot.code {
                text += " · code \(Self.spaced(code))"
                if let known = snapshot.knownPeerName { text += " · known peer \(Self.quoted(known))" }
                if snapshot.question != nil { text += " · your answer?" }
                if waitingForPeer
                    || (!asksUser(knownPeer: snapshot.isKnownPeer ?? false) && stage == .inRange)
                {
                    text += " · waiting for the peer"
                }
            }
            if let distance = snapshot.distanceCm, let bearing = snapshot.bearingDeg {
                text += " · \(Self.oneDecimal(distance)) cm · \(Self.oneDecimal(bearing))°"
            }
        case .exchanging:
            text += " · sent \(snapshot.progress.sent) of \(snapshot.progress.sendTotal)"
            text += ", received \(snapshot.progress.received) of \(snapshot.progress.receiveTotal)"
        case .acknowledged, .closed:
            break
        }
        if let pose {
            text +=
                " · pose \(Self.oneDecimal(pose.x)),\(Self.oneDecimal(pose.y)),\(Self.oneDecimal(pose.heading))"
        }
        return text
    }

    /// The coarse `reason` of `--json` (PROTOCOL.md section 9): a request nobody answered was
    /// declined (its `detail` says `timeout: consent`).
    static func reasonCode(_ reason: CloseReason) -> String {
        switch reason {
        case .exchanged: return "exchanged"
        case .declined, .timeout(.consent): return "declined"
        case .outOfRange: return "out_of_range"
        case .timeout: return "timeout"
        case .error: return "error"
        }
    }

    static func oneDecimal(_ value: Double) -> String {
        let rounded = (value * 10).rounded() / 10
        return rounded == rounded.rounded() ? String(Int(rounded)) : String(rounded)
    }
}

extension PairingSnapshot.Event {
    /// Whether this is a decision, after which the candidates answered leave the list.
    fileprivate var isDecisionEvent: Bool {
        if case .decision = self { return true }
        return false
    }
}
