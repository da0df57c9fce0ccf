import ProfileDropNoise

/// The state of an exchange session. Each case carries what only that state needs; what every
/// state shares (the peer, the secured ``Link``) lives on ``ExchangeSession``.
///
/// The two large states are boxed, so that the enum, and the session that holds it, stay about a
/// hundred bytes: inline, the transferring state made every move of a session a copy of over 600.
enum ExchangeState {
    /// INVITE/ACCEPT/CONFIRM with retransmission.
    case handshaking(CopyOnWriteBox<HandshakingState>)
    /// Exchanging tokens and poses until both proximity gates open, within the ranging window.
    case ranging(RangingState)
    /// Both in range; waiting for our decision (maybe the user's) and the peer's.
    case consenting(ConsentingState)
    /// Cards in flight.
    case transferring(CopyOnWriteBox<TransferringState>)
    /// CLOSE sent; retransmitted until CLOSE_ACK or the attempts run out.
    case closing(ClosingState)
    /// Closed; still answering a late CLOSE with CLOSE_ACK until the drain period ends.
    case draining(DrainingState)
    /// Nothing more to do.
    case closed
}

/// What a state asks of its session after handling an input; the session carries it out in
/// ``ExchangeSession/apply(_:context:)``.
enum Transition {
    /// Stay in the current state (its struct may have changed).
    case stay
    /// The handshake completed: make the link and start ranging. `roundTrip` is the handshake's
    /// round trip when our datagram went out once.
    case secured(
        NoiseTransport, peerParameters: HandshakeParameters, confirm: [UInt8]?, roundTrip: Duration?)
    /// Both gates opened: ask for consent.
    case consent
    /// Both sides agreed to go on: move the cards.
    case transfer
    /// End the exchange with `reason`: send `frames` (ending with CLOSE) until CLOSE_ACK.
    /// `endsDevice` when the outcome ends the device, not just this session.
    case close(CloseReason, frames: [Frame], endsDevice: Bool)
    /// Our CLOSE was acknowledged: answer late CLOSE frames until the drain period ends.
    case drain
    /// Nothing more to do; `outcome` when the session ends here without a CLOSE (the handshake gave
    /// up), nil when it was already decided.
    case closed(outcome: CloseReason?)

    /// Closes as out of range: the ranging window ran out, the peer is far, or our gate saw the peer
    /// leave before the exchange completed (a card we verified is then not delivered).
    static let outOfRange = Transition.close(
        .outOfRange, frames: [.close(CloseFrame(code: .outOfRange))], endsDevice: false)

    /// Closes because the wait `kind` ran out.
    static func timeout(_ kind: TimeoutKind) -> Transition {
        .close(.timeout(kind), frames: [.close(CloseFrame(code: .timeout))], endsDevice: false)
    }
}

/// How an exchange session ended, output once when it is decided (entering closing or draining,
/// or giving up the handshake).
struct SessionOutcome {
    let sessionID: UInt64
    let peer: DeviceID
    let reason: CloseReason
    /// The outcome may end the device, not just this session: an exchange, or our user's own
    /// decline (which the device applies only while it holds no other candidate, PROTOCOL.md 5).
    let endsDevice: Bool
}

/// A secured state with a live exchange (ranging, consenting, transferring). The session runs the
/// timers they share (idle, then the state's deadlines, the ranging round and its walk-away check)
/// and leaves the rest to the state.
protocol LiveState {
    /// The state's own deadline that has passed, as the close it calls for.
    func expiry(link: Link, context: SessionContext) -> Transition?
    /// One ranging round, due at ``Link/rangingAt``.
    mutating func rangingRound(link: inout Link, context: inout SessionContext)
    /// The state's other due timers, after the ranging round.
    mutating func handleTimeout(link: inout Link, context: inout SessionContext) -> Transition
    /// When the state's own timers are due (the session adds the idle and ranging timers).
    func nextDeadline(link: Link) -> Instant
}
