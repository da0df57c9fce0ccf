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
