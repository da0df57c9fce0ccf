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
    private var verificationCode: String?
    private var lastPrintedStage: Stage?
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

    init(mode: ShareOptions.OutputMode, console: Console) {
        self.mode = mode
        self.console = console
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
        defer { render(event: name, snapshot: snapshot) }
        switch event {
        case .advertising:
            stage = .advertising
            name = "advertising"
        case .peerFound:
            advance(to: .peerFound)
            name = "peer_found"
        case .peerBusy:
            name = "peer_busy"
        case .connecting:
            advance(to: .peerFound)
            name = "connecting"
        case .secured:
            advance(to: .secured)
            name = "secured"
        case .verified(let verification):
            verificationCode = verification.code
            name = "verified"
        case .pairingInterrupted, .knownPeerMismatch, .peerRemembered, .incompatiblePeer:
            name = ""
            return
        case .ranging:
            advance(to: .ranging)
            name = "ranging"
        case .inRange:
            advance(to: .inRange)
            name = "in_range"
        case .consentRequested:
            name = "consent_requested"
            if mode != .json {
                console.output("share your card with this peer? [s]hare, [r]eceive only, [d]ecline (60 s)")
            }
        case .exchanging:
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
            verificationCode = nil
            remembered = nil
            name = "session_ended"
            if mode == .lines { console.output("session ended: \(reason); looking for another peer") }
        case .closed, .datagramRejected, .cardVerified:
            // finish(reason:) reports the end, with the card; rejections are counted for --verbose;
            // a verified card is shown only once it is delivered.
            name = ""
            return
        }
    }

    mutating func poseChanged(_ pose: Pose, snapshot: DeviceSnapshot) {
        self.pose = pose
        render(event: "pose", snapshot: snapshot)
    }

    mutating func finish(reason: CloseReason?, snapshot current: DeviceSnapshot, card: ProfileCard?) {
        let snapshot = remember(current)
        stage = .closed
        let reasonText = reason.map(Self.reasonCode) ?? "quit"
        switch mode {
        case .json:
            var members: [(key: String, value: JSONValue)] = [
                ("event", .string("closed")), ("reason", .string(reasonText)),
            ]
            members += snapshotMembers(snapshot)
            if let reason { members.append(("detail", .string(reason.description))) }
            members.append(("card", card.map(Self.cardJSON) ?? .null))
            console.output(JSONValue.object(members).serialized)
        case .terminal:
            statusLine.show(line(snapshot) + " · " + (reason?.description ?? "quit"))
            statusLine.finish()
            if let card { console.output("received: \(card.summary)") }
        case .lines:
            console.output("closed: \(reason?.description ?? "quit")")
            if let card { console.output("received: \(card.summary)") }
        }
    }

    private mutating func render(event: String, snapshot: DeviceSnapshot) {
        guard !event.isEmpty else { return }
        switch mode {
        case .json:
            console.output(
                JSONValue.object([("event", .string(event))] + snapshotMembers(snapshot)).serialized)
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
            if let code = verificationCode { text += " · code \(code.prefix(3)) \(code.dropFirst(3))" }
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
            ("code", verificationCode.map { .string($0) } ?? .null),
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

    static func reasonCode(_ reason: CloseReason) -> String {
        switch reason {
        case .exchanged: return "exchanged"
        case .declined: return "declined"
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
