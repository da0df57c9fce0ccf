import Foundation
import ProfileDropCore
import ProfileDropJSON

/// What `share` shows: a live status line on a terminal, plain lines otherwise, or JSON snapshots.
struct ShareDisplay {
    /// The user-facing stages, in order.
    enum Stage: String {
        case advertising
        case peerFound = "peer found"
        case secured, ranging
        case inRange = "in range"
        case exchanging, acknowledged,
            closed
    }

    let mode: ShareOptions.OutputMode
    let console: Console
    private var statusLine = StatusLine()
    private var stage = Stage.advertising
    /// What verification showed in the current session: the code, and the known peer if any.
    private var verification: Verification?
    /// Whether a consent request waits for the user's answer.
    private var awaitingAnswer = false
    /// Whether our side agreed and waits for the peer's decision.
    private var waitingForPeer = false
    private var lastPrintedStage: Stage?
    /// The last `--json` line written, without its `ts`: a snapshot equal to it is not written again,
    /// so the stream has one line per change a consumer can see.
    private var lastJSONMembers: JSONValue?
    private var lastRangingLine: Instant?
    private var pose: Pose?
    /// The last figures of the current session: the core clears them once the session closes, but
    /// the display keeps showing what was reached.
    private var remembered: DeviceSnapshot?

    private mutating func remember(_ snapshot: DeviceSnapshot) -> DeviceSnapshot {
        var merged = snapshot
        if let previous = remembered, snapshot.peer == nil || snapshot.peer == previous.peer {
            merged.peer = snapshot.peer ?? previous.peer
            merged.distanceCm = snapshot.distanceCm ?? previous.distanceCm
            merged.bearingDeg = snapshot.bearingDeg ?? previous.bearingDeg
            if snapshot.totalSendChunks == 0 && snapshot.totalReceiveChunks == 0 {
                merged.sentChunks = previous.sentChunks
                merged.totalSendChunks = previous.totalSendChunks
                merged.receivedChunks = previous.receivedChunks
                merged.totalReceiveChunks = previous.totalReceiveChunks
            }
        }
        remembered = merged
        return merged
    }

    /// How the device decides: it asks its user before any card moves unless `--yes`, and with
    /// `--yes-known` only about a device that is not a known peer.
    let consent: ConsentPolicy

    init(mode: ShareOptions.OutputMode, console: Console, consent: ConsentPolicy = .askUser) {
        self.mode = mode
        self.console = console
        self.consent = consent
    }

    /// Whether the device asks its user about the peer of `verification`.
    private func asksUser(about verification: Verification) -> Bool {
        consent.decision(knownPeer: verification.knownPeer != nil) == nil
    }

    mutating func started(interfaces: [String], listening: String, snapshot: DeviceSnapshot) {
        switch mode {
        case .terminal, .lines:
            console.output(
                "profiledrop share: device \(snapshot.deviceID) on \(interfaces.joined(separator: ", ")) (\(listening))"
            )
        case .json:
            break
        }
        render(event: "advertising", snapshot: snapshot)
    }

    /// Moves forward only: late progress events after the acknowledgement must not move the
    /// display back.
    private mutating func advance(to next: Stage) {
        if Self.stageNumber(next) > Self.stageNumber(stage) { stage = next }
    }

    mutating func show(_ event: DeviceEvent, snapshot current: DeviceSnapshot) {
        var snapshot = remember(current)
        let name: String
        var extra: [(key: String, value: JSONValue)] = []
        defer { render(event: name, snapshot: snapshot, extra: extra) }
        switch event {
        case .advertising:
            // ``started(interfaces:listening:snapshot:)`` announced it: one line per change.
            guard stage != .advertising else {
                name = ""
                return
            }
            stage = .advertising
            name = "advertising"
        case .peerFound(let peer):
            // Other devices found while a session is under way are no step of this one: reported
            // as they were, they would read as the session going back.
            guard Self.stageNumber(stage) <= Self.stageNumber(.peerFound) else {
                name = ""
                return
            }
            advance(to: .peerFound)
            name = "peer_found"
            extra = [("peer", .string(peer.description))]
        case .peerBusy:
            name = "peer_busy"
        case .connecting(let peer, _):
            advance(to: .peerFound)
            name = "connecting"
            extra = [("peer", .string(peer.description))]
        case .secured(let peer):
            advance(to: .secured)
            name = "secured"
            extra = [("peer", .string(peer.description))]
        case .verified(let verification):
            self.verification = verification
            name = "verified"
            extra = Self.identityMembers(verification)
            if !asksUser(about: verification) {
                // Deciding without asking (--yes, or --yes-known with a known peer): the code is
                // still worth a look.
                let who =
                    verification.knownPeer.map { "known peer \(Self.quoted($0.name))" } ?? "a new device"
                printLine("verified: code \(Self.spaced(verification.code)), \(who)", snapshot: snapshot)
            }
            if verification.interruptedBefore > 0 {
                printLine(Self.interruptedBeforeWarning(verification.interruptedBefore), snapshot: snapshot)
            }
        case .pairingInterrupted(let peer, let code, let reason):
            name = "pairing_interrupted"
            extra = [
                ("peer", .string(peer.description)), ("code", code.map { .string($0) } ?? .null),
                ("reason", .string(Self.reasonCode(reason))), ("detail", .string(reason.description)),
            ]
            let shown = code.map { " after code \(Self.spaced($0)) was shown" } ?? ""
            printLine(
                "WARNING: the pairing with \(peer) was interrupted\(shown) (\(reason)). If nobody cancelled it, "
                    + "someone may be trying to get between the two devices: compare the codes carefully.",
                snapshot: snapshot)
        case .knownPeerMismatch(let peerName):
            name = "known_peer_mismatch"
            extra = [("name", .string(peerName))]
            printLine(
                "WARNING: a device claimed to be the known peer \(Self.quoted(peerName)) but could not prove it: "
                    + "an impostor, or that device forgot this one. It is treated as a new device: compare the "
                    + "codes before you share.",
                snapshot: snapshot)
        case .incompatiblePeer(let peer, let version):
            name = "incompatible_peer"
            extra = [("peer", .string(peer.description)), ("version", .integer(Int(version)))]
            printLine(
                "device \(peer) speaks protocol version \(version) and this one version "
                    + "\(WireConstants.version): they cannot pair (update the older one)",
                snapshot: snapshot)
        case .peerRemembered, .consentRequested:
            // The session reports these with what only it knows: ``remembered(_:fingerprint:stored:snapshot:)``
            // and ``askConsent(timeoutSeconds:offersCard:snapshot:)``.
            name = ""
            return
        case .ranging:
            advance(to: .ranging)
            name = "ranging"
        case .inRange:
            advance(to: .inRange)
            name = "in_range"
        case .exchanging:
            waitingForPeer = false
            // Progress that arrives after the acknowledgement tells nothing new.
            guard Self.stageNumber(stage) <= Self.stageNumber(.exchanging) else {
                name = ""
                return
            }
            advance(to: .exchanging)
            name = "exchanging"
        case .cardReceived:
            name = "card_received"
        case .acknowledged:
            advance(to: .acknowledged)
            // The acknowledgement covers every chunk, whatever the last progress event said.
            snapshot.sentChunks = snapshot.totalSendChunks
            remembered = snapshot
            name = "acknowledged"
        case .sessionEnded(_, let reason):
            // Back to browsing for another peer.
            stage = .advertising
            verification = nil
            awaitingAnswer = false
            remembered = nil
            name = "session_ended"
            extra = [("reason", .string(Self.reasonCode(reason))), ("detail", .string(reason.description))]
            // On a terminal too, above the status line: the person should see why it went back to
            // looking (a peer that quit before the code no longer ends this run).
            printLine("session ended: \(reason); looking for another peer", snapshot: snapshot)
        case .closed, .datagramRejected, .cardVerified:
            // finish(reason:) reports the end, with the card; rejections are counted for --verbose;
            // a verified card is shown only once it is delivered.
            name = ""
            return
        }
    }

    /// The consent request, after ``DeviceEvent/verified(_:)``: the `consent` event, or the prompt
    /// with the code to compare. `timeoutSeconds` is how long the request waits for an answer.
    mutating func askConsent(timeoutSeconds: Int, offersCard: Bool, snapshot current: DeviceSnapshot) {
        let snapshot = remember(current)
        awaitingAnswer = true
        guard let verification else { return }
        switch mode {
        case .json:
            var members: [(key: String, value: JSONValue)] = [
                ("peer", .string(verification.peer.description)), ("code", .string(verification.code)),
            ]
            members += Self.identityMembers(verification)
            members += [("timeout_s", .integer(timeoutSeconds)), ("offers_card", .bool(offersCard))]
            render(event: "consent", snapshot: snapshot, extra: members)
        case .terminal, .lines:
            let who =
                verification.knownPeer.map { "pair with known peer \(Self.quoted($0.name))?" }
                ?? "pair with a NEW device?"
            let choices =
                offersCard ? "[s]hare, [r]eceive only, [d]ecline" : "[r]eceive their card, [d]ecline"
            printLine(
                "\(who) code \(Self.spaced(verification.code)) — check that the other screen shows the same code. "
                    + "\(choices) (\(timeoutSeconds) s)",
                snapshot: snapshot)
        }
    }

    /// The user's answer was handed to the device.
    mutating func decided(_ decision: ConsentDecision, snapshot current: DeviceSnapshot) {
        let snapshot = remember(current)
        awaitingAnswer = false
        waitingForPeer = decision != .decline
        switch mode {
        case .json:
            render(
                event: "decision", snapshot: snapshot,
                extra: [("decision", .string(ConsentInput.word(for: decision)))])
        case .terminal, .lines:
            let text =
                switch decision {
                case .share: "you answered: share; waiting for the peer to accept"
                case .receiveOnly: "you answered: receive only; waiting for the peer to accept"
                case .decline: "you answered: decline"
                }
            printLine(text, snapshot: snapshot)
        }
    }

    /// No answer came in time (within the request's wait, or before `--timeout`): the request was
    /// declined.
    mutating func declinedUnanswered(snapshot current: DeviceSnapshot) {
        let snapshot = remember(current)
        awaitingAnswer = false
        if mode != .json { printLine("no answer in time: declined", snapshot: snapshot) }
    }

    /// A peer the exchange completed with, kept (or not: `stored`) in the known-peers file.
    mutating func remembered(
        _ peer: KnownPeer, fingerprint: String, stored: Bool, snapshot current: DeviceSnapshot
    ) {
        let snapshot = remember(current)
        switch mode {
        case .json:
            render(
                event: "peer_remembered", snapshot: snapshot,
                extra: [
                    ("name", .string(peer.name)), ("fingerprint", .string(fingerprint)),
                    ("stored", .bool(stored)),
                ])
        case .terminal, .lines:
            guard stored else { return }
            printLine(
                "remembered \(Self.quoted(peer.name)) as a known peer (\(fingerprint))", snapshot: snapshot)
        }
    }

    /// A line of input that is not an answer, or an answer with no request pending. In `--json`
    /// mode an `input_error` event on standard output; otherwise one line on standard error.
    mutating func inputError(_ detail: String) {
        switch mode {
        case .json:
            writeJSON([("event", .string("input_error")), ("detail", .string(detail))])
        case .terminal, .lines:
            console.error("profiledrop share: input ignored: \(detail)")
        }
    }

    /// `known`, `name` and `interrupted_before`: who the verified peer is.
    private static func identityMembers(_ verification: Verification) -> [(key: String, value: JSONValue)] {
        [
            ("known", .bool(verification.knownPeer != nil)),
            ("name", verification.knownPeer.map { .string($0.name) } ?? .null),
            ("interrupted_before", .integer(verification.interruptedBefore)),
        ]
    }

    private static func interruptedBeforeWarning(_ count: Int) -> String {
        let pairings = count == 1 ? "1 pairing was" : "\(count) pairings were"
        return "WARNING: \(pairings) interrupted after the code was shown, earlier in this run. If nobody "
            + "cancelled, someone may be trying to get between the devices: compare the codes carefully."
    }

    /// Writes a whole line for people (not in `--json` mode); on a terminal, below the status line,
    /// which is then drawn again.
    private mutating func printLine(_ text: String, snapshot: DeviceSnapshot) {
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

    mutating func poseChanged(_ pose: Pose, snapshot: DeviceSnapshot) {
        self.pose = pose
        render(event: "pose", snapshot: snapshot)
    }

    /// The final line: the outcome (`reason`), or the user's `q` (`reason` and `signal` nil), or a
    /// signal that ended the run (`signal`, its name); the card received and where it was saved.
    mutating func finish(
        reason: CloseReason?, snapshot current: DeviceSnapshot, card: ProfileCard?, saved: String? = nil,
        signal: String? = nil, nothingMoved: Bool = false
    ) {
        let snapshot = remember(current)
        stage = .closed
        waitingForPeer = false
        var reasonText = signal != nil ? "interrupted" : reason.map(Self.reasonCode) ?? "quit"
        var detail = signal.map { "interrupted (\($0))" } ?? reason?.description ?? "quit"
        if nothingMoved {
            reasonText = "nothing_exchanged"
            detail = "nothing exchanged: both sides only receive"
        }
        let hint = reason.flatMap { nothingMoved ? nil : Self.hint(for: $0, snapshot: snapshot) }
        let shown = detail + (hint.map { " — " + $0 } ?? "")
        switch mode {
        case .json:
            var members: [(key: String, value: JSONValue)] = [
                ("event", .string("closed")), ("reason", .string(reasonText)),
            ]
            members += snapshotMembers(snapshot)
            if reason != nil || signal != nil { members.append(("detail", .string(detail))) }
            if let hint { members.append(("hint", .string(hint))) }
            members.append(("card", card.map(Self.cardJSON) ?? .null))
            members.append(("saved", saved.map { .string($0) } ?? .null))
            writeJSON(members)
        case .terminal:
            statusLine.show(line(snapshot) + " · " + detail)
            statusLine.finish()
            if let hint { console.output(hint) }
        case .lines:
            console.output("closed: \(shown)")
        }
        if mode != .json {
            if let card { console.output("received: \(card.summary)".printable) }
            if let saved { console.output("saved: \(saved)".printable) }
        }
    }

    /// What to try next after `reason`, when there is something: the distance seen against the
    /// band for out of range, and where to look when no peer was ever seen.
    static func hint(for reason: CloseReason, snapshot: DeviceSnapshot) -> String? {
        switch reason {
        case .outOfRange:
            let band = "hold the devices 5–10 cm apart, facing each other"
            guard let distance = snapshot.distanceCm, let bearing = snapshot.bearingDeg else { return band }
            return "last seen at \(oneDecimal(distance)) cm, \(oneDecimal(bearing))°: \(band)"
        case .timeout(.noExchange) where snapshot.peersSeen == 0 && snapshot.peer == nil:
            return "no peer was seen: the same --port on both? a firewall dropping UDP multicast? "
                + "See README, Troubleshooting discovery"
        case .exchanged, .declined, .timeout, .error:
            return nil
        }
    }

    /// The version of the `--json` line schema, the `v` of every line (docs/share.md, "JSON lines").
    static let schemaVersion = 1

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

    /// One `--json` line: `v` and `ts` first, then `members` (which start with `event`).
    private mutating func writeJSON(_ members: [(key: String, value: JSONValue)]) {
        lastJSONMembers = .object(members)
        console.output(Self.jsonLine(members, timestamp: timestamp()))
    }

    /// Writes a snapshot line unless it would repeat the line before it apart from `ts`. Distance and
    /// bearing are already rounded to the one decimal printed, so a change below that is no change.
    private mutating func writeJSONSnapshot(_ members: [(key: String, value: JSONValue)]) {
        guard JSONValue.object(members) != lastJSONMembers else { return }
        writeJSON(members)
    }

    /// A JSON line of the schema: `v`, then `ts`, then `members`.
    static func jsonLine(_ members: [(key: String, value: JSONValue)], timestamp: String) -> String {
        let stamp: [(key: String, value: JSONValue)] = [
            ("v", .integer(schemaVersion)), ("ts", .string(timestamp)),
        ]
        return JSONValue.object(stamp + members).serialized
    }

    /// One snapshot: in `--json` mode `event`, then `extra`, then the snapshot members `extra`
    /// does not name.
    private mutating func render(
        event: String, snapshot: DeviceSnapshot, extra: [(key: String, value: JSONValue)] = []
    ) {
        guard !event.isEmpty else { return }
        switch mode {
        case .json:
            let named = Set(extra.map(\.key))
            let members = snapshotMembers(snapshot).filter { !named.contains($0.key) }
            writeJSONSnapshot([("event", .string(event))] + extra + members)
        case .terminal:
            statusLine.show(line(snapshot))
        case .lines:
            if stage != lastPrintedStage || (stage == .ranging && event == "ranging") {
                // Ranging updates arrive several times a second; one line per stage change is enough
                // for a log, plus the ranging figures when they first appear.
                if stage == .ranging && lastPrintedStage == .ranging { return }
                lastPrintedStage = stage
                console.output(line(snapshot))
            }
        }
    }

    private func line(_ snapshot: DeviceSnapshot) -> String {
        var text = "[\(Self.stageNumber(stage))/8] \(stage.rawValue)"
        switch stage {
        case .advertising:
            text += " · \(snapshot.peersSeen) peer\(snapshot.peersSeen == 1 ? "" : "s") seen"
        case .peerFound:
            if let peer = snapshot.peer { text += " · \(peer)" }
        case .secured, .ranging, .inRange:
            if let verification {
                text += " · code \(Self.spaced(verification.code))"
                if let known = verification.knownPeer { text += " · known peer \(Self.quoted(known.name))" }
                if awaitingAnswer { text += " · your answer?" }
                if waitingForPeer || (!asksUser(about: verification) && stage == .inRange) {
                    text += " · waiting for the peer"
                }
            }
            if let distance = snapshot.distanceCm, let bearing = snapshot.bearingDeg {
                text += " · \(Self.oneDecimal(distance)) cm · \(Self.oneDecimal(bearing))°"
            }
        case .exchanging:
            text += " · sent \(snapshot.sentChunks) of \(snapshot.totalSendChunks)"
            text += ", received \(snapshot.receivedChunks) of \(snapshot.totalReceiveChunks)"
        case .acknowledged, .closed:
            break
        }
        if let pose {
            text +=
                " · pose \(Self.oneDecimal(pose.x)),\(Self.oneDecimal(pose.y)),\(Self.oneDecimal(pose.heading))"
        }
        return text
    }

    private func snapshotMembers(_ snapshot: DeviceSnapshot) -> [(key: String, value: JSONValue)] {
        [
            ("stage", .string(stage.rawValue)),
            ("device", .string(snapshot.deviceID.description)),
            ("peer", snapshot.peer.map { .string($0.description) } ?? .null),
            ("code", verification.map { .string($0.code) } ?? .null),
            ("distance_cm", snapshot.distanceCm.map(Self.oneDecimalJSON) ?? .null),
            ("bearing_deg", snapshot.bearingDeg.map(Self.oneDecimalJSON) ?? .null),
            (
                "progress",
                .object([
                    ("sent", .integer(snapshot.sentChunks)),
                    ("send_total", .integer(snapshot.totalSendChunks)),
                    ("received", .integer(snapshot.receivedChunks)),
                    ("receive_total", .integer(snapshot.totalReceiveChunks)),
                ])
            ),
        ]
    }

    /// One decimal is what the display shows; more would only be noise.
    private static func oneDecimalJSON(_ value: Double) -> JSONValue {
        value.isFinite ? .number((value * 10).rounded() / 10) : .null
    }

    static func cardJSON(_ card: ProfileCard) -> JSONValue {
        var members: [(key: String, value: JSONValue)] = [
            ("name", .string(card.name)), ("age", .integer(card.age)), ("sex", .string(card.sex.rawValue)),
            ("neutered", .bool(card.neutered)), ("size", .string(card.size.rawValue)),
            ("keywords", .array(card.keywords.map { .string($0) })), ("owner", .string(card.owner)),
        ]
        if let photo = card.photo {
            members.append(
                (
                    "photo",
                    .object([
                        ("format", .string(photo.format.rawValue)), ("bytes", .integer(photo.data.count)),
                    ])
                ))
        }
        return .object(members)
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

    static func stageNumber(_ stage: Stage) -> Int {
        switch stage {
        case .advertising: return 1
        case .peerFound: return 2
        case .secured: return 3
        case .ranging: return 4
        case .inRange: return 5
        case .exchanging: return 6
        case .acknowledged: return 7
        case .closed: return 8
        }
    }

    static func oneDecimal(_ value: Double) -> String {
        let rounded = (value * 10).rounded() / 10
        return rounded == rounded.rounded() ? String(Int(rounded)) : String(rounded)
    }
}
