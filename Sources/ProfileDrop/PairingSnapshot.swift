import ProfileDropCore
import ProfileDropJSON

/// The full state of a run at one moment: what `profiledrop share --json` prints as one line. Every
/// element of a ``PairingRun`` is one of these; each differs from the one before in something
/// other than time.
public struct PairingSnapshot: Sendable, Equatable {
    /// The `v` of every JSON line (docs/share.md, "JSON lines").
    public static let schemaVersion = 1

    /// What just happened.
    public var event: Event
    /// How far the pairing got.
    public var stage: Stage
    /// This device's identifier for the run.
    public var device: String
    /// The peer of the current session, once one is found.
    public var peer: String?
    /// The six-digit code both screens show once the session is verified.
    public var code: String?
    /// Whether the verified peer is a known peer that proved who it is; nil before verification.
    public var isKnownPeer: Bool?
    /// The name a known peer was remembered by.
    public var knownPeerName: String?
    /// The measured distance to the peer, in centimetres, to one decimal.
    public var distanceCm: Double?
    /// The measured bearing of the peer, in degrees, to one decimal.
    public var bearingDeg: Double?
    /// The card's chunks moved so far.
    public var progress: Progress
    /// The question waiting for an answer, while one does: the newest of ``candidates`` (the
    /// one a ``Event/consent`` snapshot adds).
    public var question: ConsentQuestion?
    /// Every candidate asked about right now, each with its own code, in the order they were
    /// asked (PROTOCOL.md 5, "Candidates"). When two devices are in range at once (the one held
    /// against this one and a stranger), both are listed: the user picks the one whose code the
    /// other screen shows (``PairingRun/share(candidate:)``), which declines the others. Empty
    /// while nothing is asked; with one candidate it is ``question`` alone.
    public var candidates: [ConsentQuestion]
    /// With ``Event/decision(_:)``: the peer of the candidate the answer named, or nil for an
    /// answer about the one candidate shown (or declining them all).
    public var answeredCandidate: String?
    /// How the run ended, in its last snapshot.
    public var outcome: PairingOutcome?
    /// Devices heard so far in the run (not part of the JSON line).
    public var peersSeen: Int
    /// Why the known-peers store could not take the peer, with
    /// ``Event/peerRemembered(name:fingerprint:stored:)`` when `stored` is false (not part of the
    /// JSON line).
    public var storeError: String?

    /// A snapshot with the given state, for a program's own tests and previews.
    public init(
        event: Event, stage: Stage, device: String, peer: String? = nil, code: String? = nil,
        isKnownPeer: Bool? = nil, knownPeerName: String? = nil, distanceCm: Double? = nil,
        bearingDeg: Double? = nil,
        progress: Progress = Progress(sent: 0, sendTotal: 0, received: 0, receiveTotal: 0),
        question: ConsentQuestion? = nil, outcome: PairingOutcome? = nil, peersSeen: Int = 0,
        storeError: String? = nil, candidates: [ConsentQuestion]? = nil, answeredCandidate: String? = nil
    ) {
        self.event = event
        self.stage = stage
        self.device = device
        self.peer = peer
        self.code = code
        self.isKnownPeer = isKnownPeer
        self.knownPeerName = knownPeerName
        self.distanceCm = distanceCm
        self.bearingDeg = bearingDeg
        self.progress = progress
        self.question = question
        self.outcome = outcome
        self.peersSeen = peersSeen
        self.storeError = storeError
        self.candidates = candidates ?? question.map { [$0] } ?? []
        self.answeredCandidate = answeredCandidate
    }

    /// The user-facing stages, in order.
    public enum Stage: String, Sendable, Equatable, CaseIterable {
        /// Looking for a peer.
        case advertising
        /// A peer answered.
        case peerFound = "peer found"
        /// The handshake finished: the link is encrypted.
        case secured
        /// Measuring distance and bearing.
        case ranging
        /// The devices are 5–10 cm apart, facing.
        case inRange = "in range"
        /// Cards are moving.
        case exchanging
        /// The peer acknowledged every chunk.
        case acknowledged
        /// The run is over.
        case closed

        /// 1 to 8, as the status line counts.
        public var number: Int { (Self.allCases.firstIndex(of: self) ?? 0) + 1 }
    }

    /// Chunks of the card moved in each direction.
    public struct Progress: Sendable, Equatable {
        /// Chunks of our card the peer has.
        public var sent: Int
        /// Chunks of our card in all.
        public var sendTotal: Int
        /// Chunks of the peer's card received.
        public var received: Int
        /// Chunks of the peer's card in all.
        public var receiveTotal: Int

        /// Progress with the given counts.
        public init(sent: Int, sendTotal: Int, received: Int, receiveTotal: Int) {
            self.sent = sent
            self.sendTotal = sendTotal
            self.received = received
            self.receiveTotal = receiveTotal
        }
    }

    /// What happened, with what the event alone tells: the `event` of a JSON line and its members.
    public enum Event: Sendable, Equatable {
        /// Looking for a peer (again).
        case advertising
        /// A device answered.
        case peerFound(peer: String)
        /// A device that is pairing with another answered.
        case peerBusy
        /// The handshake with `peer` started.
        case connecting(peer: String)
        /// The handshake with `peer` finished.
        case secured(peer: String)
        /// The code is known, and whether the peer is a known one; `interruptedBefore` counts
        /// pairings interrupted after their code was shown, earlier in the run.
        case verified(interruptedBefore: Int)
        /// A pairing ended after its code was shown, which someone between the devices could cause.
        case pairingInterrupted(peer: String, code: String?, reason: String, detail: String)
        /// A device claimed to be the known peer `name` but could not prove it.
        case knownPeerMismatch(name: String)
        /// A device speaks another protocol version.
        case incompatiblePeer(peer: String, version: Int)
        /// A new measurement.
        case ranging
        /// The devices are held right.
        case inRange
        /// The question in ``PairingSnapshot/question`` waits for an answer.
        case consent
        /// The answer was handed to the device.
        case decision(ConsentAnswer)
        /// Chunks moved.
        case exchanging
        /// The peer's card arrived whole.
        case cardReceived
        /// The peer has our whole card.
        case acknowledged
        /// The peer was added to the known peers (`stored`: the store took it).
        case peerRemembered(name: String, fingerprint: String, stored: Bool)
        /// The session ended without ending the run: back to looking for a peer.
        case sessionEnded(reason: String, detail: String)
        /// The program moved the device.
        case pose
        /// The run is over: ``PairingSnapshot/outcome`` says how.
        case closed

        /// Whether this is ``decision(_:)``.
        var isDecision: Bool {
            if case .decision = self { return true }
            return false
        }

        /// The `event` member of the JSON line.
        public var name: String {
            switch self {
            case .advertising: "advertising"
            case .peerFound: "peer_found"
            case .peerBusy: "peer_busy"
            case .connecting: "connecting"
            case .secured: "secured"
            case .verified: "verified"
            case .pairingInterrupted: "pairing_interrupted"
            case .knownPeerMismatch: "known_peer_mismatch"
            case .incompatiblePeer: "incompatible_peer"
            case .ranging: "ranging"
            case .inRange: "in_range"
            case .consent: "consent"
            case .decision: "decision"
            case .exchanging: "exchanging"
            case .cardReceived: "card_received"
            case .acknowledged: "acknowledged"
            case .peerRemembered: "peer_remembered"
            case .sessionEnded: "session_ended"
            case .pose: "pose"
            case .closed: "closed"
            }
        }
    }

    /// The snapshot as one `--json` line: `v`, `ts` (`timestamp`), `event`, the event's members,
    /// then the state.
    public func jsonLine(timestamp: String) -> String {
        JSONValue.object(
            [("v", .integer(Self.schemaVersion)), ("ts", .string(timestamp))] + jsonMembers
        ).serialized
    }

    /// The line's members after `ts`.
    var jsonMembers: [(key: String, value: JSONValue)] {
        if event == .closed, let outcome {
            var members: [(key: String, value: JSONValue)] = [
                ("event", .string("closed")), ("reason", .string(outcome.reason.rawValue)),
            ]
            members += stateMembers
            if let detail = outcome.detail { members.append(("detail", .string(detail))) }
            if let hint = outcome.hint { members.append(("hint", .string(hint))) }
            members.append(("card", outcome.card.map(Self.cardJSON) ?? .null))
            members.append(("saved", outcome.savedPath.map { .string($0) } ?? .null))
            return members
        }
        let extra = eventMembers
        let named = Set(extra.map(\.key))
        return [("event", .string(event.name))] + extra + stateMembers.filter { !named.contains($0.key) }
    }

    private var identityMembers: [(key: String, value: JSONValue)] {
        [
            ("known", .bool(isKnownPeer ?? false)),
            ("name", knownPeerName.map { .string($0) } ?? .null),
        ]
    }

    private var eventMembers: [(key: String, value: JSONValue)] {
        switch event {
        case .peerFound(let peer), .connecting(let peer), .secured(let peer):
            return [("peer", .string(peer))]
        case .verified(let interruptedBefore):
            return identityMembers + [("interrupted_before", .integer(interruptedBefore))]
        case .pairingInterrupted(let peer, let code, let reason, let detail):
            return [
                ("peer", .string(peer)), ("code", code.map { .string($0) } ?? .null),
                ("reason", .string(reason)), ("detail", .string(detail)),
            ]
        case .knownPeerMismatch(let name):
            return [("name", .string(name))]
        case .incompatiblePeer(let peer, let version):
            return [("peer", .string(peer)), ("version", .integer(version))]
        case .consent:
            guard let question else { return [] }
            return Self.questionMembers(question)
        case .decision(let answer):
            return [
                ("decision", .string(answer.rawValue)),
                ("candidate", answeredCandidate.map { .string($0) } ?? .null),
            ]
        case .peerRemembered(let name, let fingerprint, let stored):
            return [
                ("name", .string(name)), ("fingerprint", .string(fingerprint)), ("stored", .bool(stored)),
            ]
        case .sessionEnded(let reason, let detail):
            return [("reason", .string(reason)), ("detail", .string(detail))]
        case .advertising, .peerBusy, .ranging, .inRange, .exchanging, .cardReceived, .acknowledged, .pose,
            .closed:
            return []
        }
    }

    /// A question's members: those of the `consent` line, and of each entry of `candidates`.
    private static func questionMembers(_ question: ConsentQuestion) -> [(key: String, value: JSONValue)] {
        [
            ("peer", .string(question.peer)), ("code", .string(question.code)),
            ("known", .bool(question.knownPeerName != nil)),
            ("name", question.knownPeerName.map { .string($0) } ?? .null),
            ("interrupted_before", .integer(question.interruptedBefore)),
            ("timeout_s", .integer(question.timeoutSeconds)), ("offers_card", .bool(question.offersCard)),
        ]
    }

    /// The state members, with `candidates` while any is asked about.
    private var stateMembers: [(key: String, value: JSONValue)] {
        guard !candidates.isEmpty else { return baseStateMembers }
        return baseStateMembers + [
            ("candidates", .array(candidates.map { .object(Self.questionMembers($0)) }))
        ]
    }

    private var baseStateMembers: [(key: String, value: JSONValue)] {
        [
            ("stage", .string(stage.rawValue)),
            ("device", .string(device)),
            ("peer", peer.map { .string($0) } ?? .null),
            ("code", code.map { .string($0) } ?? .null),
            ("distance_cm", distanceCm.map(Self.finiteJSON) ?? .null),
            ("bearing_deg", bearingDeg.map(Self.finiteJSON) ?? .null),
            (
                "progress",
                .object([
                    ("sent", .integer(progress.sent)), ("send_total", .integer(progress.sendTotal)),
                    ("received", .integer(progress.received)),
                    ("receive_total", .integer(progress.receiveTotal)),
                ])
            ),
        ]
    }

    private static func finiteJSON(_ value: Double) -> JSONValue { value.isFinite ? .number(value) : .null }

    /// A card as the `card` member of the closed line: its fields, and the photo's format and size.
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
}

/// The question a run asks before any card moves: compare the code with the peer's screen, then
/// answer with ``PairingRun/answer(_:)``.
public struct ConsentQuestion: Sendable, Equatable {
    /// The peer asked about.
    public var peer: String
    /// The code both screens show.
    public var code: String
    /// The name of the known peer it proved to be, or nil for a new device.
    public var knownPeerName: String?
    /// Pairings interrupted after their code was shown, earlier in the run: a reason for care.
    public var interruptedBefore: Int
    /// How long the question waits; then it is declined.
    public var timeoutSeconds: Int
    /// Whether this device has a card to offer (else it can only receive or decline).
    public var offersCard: Bool

    /// A question with the given contents, for a program's own tests and previews.
    public init(
        peer: String, code: String, knownPeerName: String?, interruptedBefore: Int, timeoutSeconds: Int,
        offersCard: Bool
    ) {
        self.peer = peer
        self.code = code
        self.knownPeerName = knownPeerName
        self.interruptedBefore = interruptedBefore
        self.timeoutSeconds = timeoutSeconds
        self.offersCard = offersCard
    }
}

/// An answer to a ``ConsentQuestion``.
public enum ConsentAnswer: String, Sendable, Equatable, CaseIterable {
    /// Send our card and receive theirs.
    case share
    /// Receive their card, send none.
    case receiveOnly = "receive-only"
    /// Refuse: nothing moves.
    case decline
}

/// How a run ended: the `reason`, `detail`, `hint` and `card` of the closed line.
public struct PairingOutcome: Sendable, Equatable {
    /// The coarse reason, as the closed line's `reason`.
    public enum Reason: String, Sendable, Equatable {
        /// Cards moved as agreed.
        case exchanged
        /// Declined by either side, or a question nobody answered.
        case declined
        /// The devices were never held 5–10 cm apart, facing.
        case outOfRange = "out_of_range"
        /// No peer, or a wait ran out.
        case timeout
        /// The peer broke the protocol.
        case error
        /// The program ended the run (cancellation, a signal).
        case interrupted
        /// The program ended the run as the user's own choice (`q`).
        case quit
        /// Both sides only receive: the exchange closed with nothing moved.
        case nothingExchanged = "nothing_exchanged"
    }

    /// The coarse reason.
    public var reason: Reason
    /// The reason in words, e.g. `declined by peer`; nil for ``Reason/quit``.
    public var detail: String?
    /// What to try next, when there is something to try.
    public var hint: String?
    /// The protocol's close reason; nil when the program ended the run before the device closed.
    public var closeReason: CloseReason?
    /// The peer's card, when one arrived.
    public var card: ProfileCard?
    /// Whether the peer acknowledged our card.
    public var cardAcknowledged: Bool
    /// Whether the question asked was declined for want of an answer.
    public var unanswered: Bool
    /// Where the program saved the card (``CardFiles/save(_:in:)``): the closed line's `saved`.
    public var savedPath: String?
    /// The capture could not be written (the run's other results stand).
    public var captureError: PairingError?
    /// Traffic counters in one line: datagrams received, accepted, dropped by reason, sent, resent.
    public var traffic: String

    /// An outcome with the given contents, for a program's own tests and previews.
    public init(
        reason: Reason, detail: String?, hint: String? = nil, closeReason: CloseReason? = nil,
        card: ProfileCard? = nil, cardAcknowledged: Bool = false, unanswered: Bool = false,
        savedPath: String? = nil, captureError: PairingError? = nil, traffic: String = ""
    ) {
        self.reason = reason
        self.detail = detail
        self.hint = hint
        self.closeReason = closeReason
        self.card = card
        self.cardAcknowledged = cardAcknowledged
        self.unanswered = unanswered
        self.savedPath = savedPath
        self.captureError = captureError
        self.traffic = traffic
    }
}
