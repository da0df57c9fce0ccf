import ProfileDropNoise

/// The state of an exchange session. Each case carries what only that state needs; the shared
/// facts of a secured session travel in ``Link``.
enum ExchangeState {
    /// INVITE/ACCEPT/CONFIRM with retransmission.
    case handshaking(HandshakingState)
    /// Exchanging tokens and poses until both proximity gates open, within the ranging window.
    case ranging(RangingState)
    /// Both in range; waiting for our decision (maybe the user's) and the peer's.
    case consenting(ConsentingState)
    /// Cards in flight.
    case transferring(TransferringState)
    /// CLOSE sent; retransmitted until CLOSE_ACK or the attempts run out.
    case closing(ClosingState)
    /// Closed; still answering a late CLOSE with CLOSE_ACK until the drain period ends.
    case draining(DrainingState)
    /// Nothing more to do.
    case closed
}

/// A handshake in progress.
struct HandshakingState {
    var noise: HandshakeState
    /// The last handshake datagram we sent (INVITE or ACCEPT), retransmitted until answered.
    var lastDatagram: [UInt8]
    var transmissions = 1
    var retransmitAt: Instant
}

/// Secured; measuring proximity.
struct RangingState {
    var link: Link
    var gate: ProximityGate
    /// When ranging began.
    let startedAt: Instant
    /// Consecutive raw measurements beyond ``Limits/farAbortDistance``.
    var consecutiveFar = 0
    /// The ranging window ends here.
    let deadline: Instant
    /// The next RANGING frame and measurement.
    var sampleAt: Instant
}

/// Both in range; deciding.
struct ConsentingState {
    var link: Link
    /// When an unanswered user request declines by itself.
    var userDeadline: Instant?
    /// How long we wait for the peer's decision.
    let peerDeadline: Instant
}

/// Cards moving.
struct TransferringState {
    var link: Link
    var sender: CardSender?
    var receiver: CardReceiver?
    let deadline: Instant
    /// Acknowledged chunks last reported as progress.
    var reportedProgress = 0
    /// When the sender can next send a chunk or must declare one lost.
    var sendAt: Instant?
}

/// CLOSE sent, waiting for CLOSE_ACK.
struct ClosingState {
    var link: Link
    let frames: [Frame]
    let reason: CloseReason
    var transmissions = 1
    var retransmitAt: Instant
}

/// Closed, answering late CLOSE frames.
struct DrainingState {
    var link: Link
    let until: Instant
}
