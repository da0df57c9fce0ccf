/// Which side of an exchange did something.
public enum Side: Sendable, Equatable {
    /// This device.
    case local
    /// The other device.
    case peer
}

/// Why an exchange session or the whole device closed.
public enum CloseReason: Sendable, Equatable, CustomStringConvertible {
    /// Both cards that were offered were delivered, verified and acknowledged.
    case exchanged
    /// One side refused (policy, user decision, or an unanswered request).
    case declined(by: Side)
    /// The proximity gate did not open on both devices within the ranging window, or a device's
    /// gate saw the peer leave before the exchange completed (the exchange is then cancelled).
    case outOfRange
    /// A wait ran out; the kind says which.
    case timeout(TimeoutKind)
    /// The peer misbehaved or the channel failed.
    case error(ProtocolError)

    public var description: String {
        switch self {
        case .exchanged: "exchanged"
        case .declined(by: .local): "declined by us"
        case .declined(by: .peer): "declined by peer"
        case .outOfRange: "out of range"
        case .timeout(let kind): "timeout: \(kind)"
        case .error(let error): "error: \(error)"
        }
    }
}

extension CloseReason {
    /// Whether the session ended by its peer's fault: it broke a rule (any error), or withheld a step
    /// only it could take (its verification part, its decision, the card's progress). A device
    /// backs off from that peer's host, whatever id the peer comes back under.
    var isPeerFault: Bool {
        switch self {
        case .error: true
        case .timeout(let kind):
            switch kind {
            case .verification, .peerConsent, .transfer, .transferStalled: true
            case .handshake, .peerSilent, .consent, .peerGaveUp, .noExchange: false
            }
        case .exchanged, .declined, .outOfRange: false
        }
    }
}

/// Which wait ran out when a session or the device closes with ``CloseReason/timeout(_:)``.
public enum TimeoutKind: String, CaseIterable, Sendable, Equatable, CustomStringConvertible {
    /// The Noise handshake did not complete within its retransmissions.
    case handshake
    /// No authenticated packet from the peer for the idle time.
    case peerSilent = "peer silent"
    /// Our user did not answer the consent request.
    case consent
    /// The verification code could not be computed in time: the peer withheld its part of it (or
    /// its PROOF).
    case verification
    /// The peer's decision did not arrive.
    case peerConsent = "peer consent"
    /// The card transfer did not complete.
    case transfer
    /// The card transfer made no progress for ``Timeouts/stall``: nothing new acknowledged or
    /// received, or a finished exchange whose confirmation hold could not decide.
    case transferStalled = "transfer stalled"
    /// The peer closed because one of its own waits ran out.
    case peerGaveUp = "peer gave up waiting"
    /// The device's overall time ran out without an exchange.
    case noExchange = "no exchange"

    /// The words users and transcripts see.
    public var description: String { rawValue }
}

/// Something the driver (simulator, command line) may want to show or log, in order.
public enum DeviceEvent: Sendable, Equatable {
    /// The discovery session started announcing and browsing.
    case advertising
    /// A beacon from a new device was seen.
    case peerFound(DeviceID)
    /// `peer` refused our invitation with BUSY(1) or BUSY(2); we try it again after a short
    /// back-off. (BUSY(retry) is not reported: the invitation goes on with a cookie.)
    case peerBusy(DeviceID)
    /// An exchange session with `peer` started; `initiator` tells whether we invited. We report
    /// our invitation when we send INVITE, and an accepted INVITE only once its CONFIRM verified
    /// (right before ``secured(peer:)``): until then it is a half-open handshake that anyone could
    /// have started (PROTOCOL.md 5).
    case connecting(peer: DeviceID, initiator: Bool)
    /// The Noise handshake completed: the peer holds this session's keys. Who it is, and the code,
    /// come with ``verified(_:)`` once both devices are in range.
    case secured(peer: DeviceID)
    /// Both devices are in range and verification completed: the code both users compare, and
    /// whether the peer is a known peer. Comes before any consent request or decision.
    case verified(Verification)
    /// A pairing that reached verification (the peer may know the code) ended before both users
    /// decided. It is shown, so a man in the middle cannot abort a pairing whose codes would differ
    /// and try again unseen.
    case pairingInterrupted(peer: DeviceID, code: String?, reason: CloseReason)
    /// A device presented a known peer's identity, but its proof failed: an impostor, a replay of
    /// that peer's IDENT, or a device that forgot this one. Only our user hears of it: the session
    /// goes on as with a stranger, so that the peer cannot tell (PROTOCOL.md 6.5).
    case knownPeerMismatch(name: String)
    /// The exchange completed with a peer our user agreed to: remember it (a new bond, or a known
    /// peer under its latest name).
    case peerRemembered(KnownPeer)
    /// A device speaking another protocol version was heard; it cannot pair with this one.
    /// Reported once per device id.
    case incompatiblePeer(DeviceID, version: UInt8)
    /// A new filtered proximity estimate for the peer.
    case ranging(distanceCm: Double, bearingDeg: Double)
    /// Our proximity gate opened (we tell the peer with IN_RANGE).
    case inRange
    /// Both devices are in range; with ``ConsentPolicy/askUser`` the device now waits for our
    /// user's answer about `peer` (``Device/decide(_:for:at:)``, or ``Device/decide(_:at:)`` while
    /// it is the only candidate asked about). Every candidate is asked about as it is verified,
    /// beside the others already asked about: the user sees them all at once, each with the code
    /// of the ``verified(_:)`` just before (PROTOCOL.md 5, "Candidates").
    case consentRequested(peer: DeviceID)
    /// Card transfer progress: `sent` of `total` chunks of our card acknowledged by the peer.
    case exchanging(sent: Int, total: Int)
    /// The peer's card arrived complete, matched the offered digest and decoded; our CARD_ACK for
    /// it is on its way. It is not delivered yet: that is ``cardReceived(_:from:)``, when the exchange
    /// completes.
    case cardVerified(ProfileCard, from: DeviceID)
    /// The peer's card arrived, matched its digest and decoded, and the exchange completed: it is
    /// reported as the session closes as exchanged, never for an exchange that was cancelled.
    case cardReceived(ProfileCard, from: DeviceID)
    /// The peer acknowledged our card.
    case acknowledged
    /// An exchange session ended without closing the device, which goes back to browsing
    /// (for example a far peer whose ranging window ran out).
    case sessionEnded(peer: DeviceID, reason: CloseReason)
    /// The device finished: both sessions are closed and it will send nothing more
    /// (except draining replies until ``Device/nextDeadline`` is nil).
    case closed(CloseReason)
    /// A datagram was dropped. It did not change any state.
    case datagramRejected(reason: ProtocolError)
}

/// What verification showed: the code and who the peer is.
public struct Verification: Sendable, Equatable {
    /// The peer's per-run device id.
    public var peer: DeviceID
    /// The six-digit code both users compare.
    public var code: String
    /// The known peer that proved its identity, or nil for a new peer.
    public var knownPeer: KnownPeer?
    /// Pairings interrupted after verification began, earlier in this run.
    public var interruptedBefore: Int

    /// Creates a verification result.
    public init(peer: DeviceID, code: String, knownPeer: KnownPeer?, interruptedBefore: Int) {
        self.peer = peer
        self.code = code
        self.knownPeer = knownPeer
        self.interruptedBefore = interruptedBefore
    }
}

/// The coarse stage of a device, for display.
public enum DeviceStage: String, Sendable, Equatable {
    /// Announcing and browsing, no exchange session.
    case discovering
    /// Inviting or handshaking.
    case connecting
    /// Secured; measuring proximity.
    case ranging
    /// Both in range; waiting for consent (ours or the peer's).
    case consenting
    /// Cards in flight.
    case exchanging
    /// Closing handshake or draining.
    case closing
    /// Done.
    case closed
}

/// A display snapshot of a device.
public struct DeviceSnapshot: Sendable, Equatable {
    /// The coarse stage.
    public var stage: DeviceStage
    /// Our per-run device id.
    public var deviceID: DeviceID
    /// The peer of the current (or last) exchange session.
    public var peer: DeviceID?
    /// The latest filtered distance to the peer, in centimetres.
    public var distanceCm: Double?
    /// The latest filtered bearing of the peer, in degrees (0 = straight ahead).
    public var bearingDeg: Double?
    /// Chunks of our card the peer has acknowledged, and the total.
    public var sentChunks: Int
    /// Total chunks of our card (0 when we do not send one).
    public var totalSendChunks: Int
    /// Chunks of the peer's card received, and the total.
    public var receivedChunks: Int
    /// Total chunks of the peer's card (0 until its offer arrives).
    public var totalReceiveChunks: Int
    /// How many devices the discovery session knows.
    public var peersSeen: Int
    /// Why the device closed, once it has.
    public var closeReason: CloseReason?
}
