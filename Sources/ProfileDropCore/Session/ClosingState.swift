/// CLOSE sent, waiting for CLOSE_ACK.
struct ClosingState {
    let frames: [Frame]
    var transmissions = 1
    var retransmitAt: Instant
    /// When CLOSE last went out, on the timer or in answer to the peer.
    var lastSentAt: Instant
    /// The first retransmission's wait, from the session's round trip; each later one doubles it.
    let probeTimeout: Duration
    /// When the session gives up waiting for CLOSE_ACK: as long as the close always lasted, so a
    /// peer cut off for a while still learns the outcome when the cut heals.
    let endsAt: Instant
}

/// The close's timers, from the session's round trip (RFC 9000 10.2 is the model): CLOSE is
/// retransmitted after one probe timeout, doubling, and a side that answered CLOSE drains for three,
/// so a lost CLOSE_ACK costs one retransmission and a clean close ends within a few round trips.
struct CloseTimers {
    /// The smallest probe timeout: the peer's processing and a scheduler's delay, which a loopback
    /// round trip does not show.
    static let granularity: Duration = .milliseconds(10)

    /// The wait before CLOSE's first retransmission: the smoothed round trip plus four deviations,
    /// at least ``granularity``, at most ``Timeouts/closeRetransmit`` (also the wait before any
    /// round-trip sample).
    let probeTimeout: Duration
    /// How long a side that answered CLOSE keeps answering: three probe timeouts, at most
    /// ``Timeouts/drain``.
    let drain: Duration

    init(roundTrip: RoundTripEstimator, timeouts: Timeouts) {
        let ceiling = max(timeouts.closeRetransmit, Self.granularity)
        probeTimeout = roundTrip.timeout(
            granularity: Self.granularity, initial: ceiling, range: Self.granularity...ceiling)
        drain = min(probeTimeout * 3, timeouts.drain)
    }
}

extension ClosingState {
    /// CLOSE_ACK drains; a packet without CLOSE shows the peer missed ours.
    mutating func handle(_ inbound: Link.Inbound, link: inout Link, context: inout SessionContext)
        -> Transition
    {
        if inbound.closeAck { return .drain }
        if inbound.close == nil, context.now >= lastSentAt + context.configuration.measurement.sampleInterval
        {
            // The peer is still in the session, so it has not seen our CLOSE: send it again
            // now rather than on the backed-off timer (at most once per ranging interval). After
            // a lost CLOSE, or a cut that healed, the peer learns the outcome within a round
            // trip instead of waiting for a retransmission seconds away.
            send(through: &link, context: &context)
        }
        return .stay
    }

    /// CLOSE again, with a RECEIPT of what we hold.
    private mutating func send(through link: inout Link, context: inout SessionContext) {
        link.send(Self.packet(frames, link: link), context: &context)
        lastSentAt = context.now
    }

    /// The frames of a CLOSE packet: the close frames, then a RECEIPT of what we hold.
    static func packet(_ frames: [Frame], link: Link) -> [Frame] { frames + [.receipt(link.receipts)] }

    /// Retransmits CLOSE with back-off until the closing limit.
    mutating func handleTimeout(link: inout Link, context: inout SessionContext) -> Transition {
        guard context.now < endsAt else { return .closed(outcome: nil) }
        guard context.now >= retransmitAt else { return .stay }
        send(through: &link, context: &context)
        retransmitAt =
            context.now + probeTimeout.doubled(transmissions, cap: context.timeouts.closeLongestInterval)
        transmissions += 1
        return .stay
    }

    /// The next retransmission, or the end of closing.
    var nextDeadline: Instant { min(retransmitAt, endsAt) }
}

/// Closed, answering late CLOSE frames.
struct DrainingState {
    let until: Instant
}

extension ExchangeSession {
    /// The peer sent CLOSE: acknowledge it and drain. In a live state this decides the outcome.
    mutating func peerClosed(_ close: CloseFrame, context: inout SessionContext) {
        guard isSecured else { return }
        // Our CLOSE_ACK ends the session: nothing else this packet prompted matters any more.
        securedLink.discardPending()
        securedLink.send(.closeAck, context: &context)
        switch state {
        case .ranging, .consenting:
            concludePeerClose(close, exchangeComplete: false, context: &context)
        case .transferring(var transferring):
            let exchangeComplete = transferring.value.isExchangeComplete(link: securedLink)
            // Believed (our own gate may be waiting for samples): the exchange is complete.
            if close.code == .exchanged && exchangeComplete {
                transferring.value.deliverReceivedCard(from: securedLink.peer, context: &context)
            }
            concludePeerClose(close, exchangeComplete: exchangeComplete, context: &context)
        case .closing:
            break
        case .draining:
            return
        case .handshaking, .closed:
            preconditionFailure("a session without a link cannot hear CLOSE")
        }
        apply(.drain, context: &context)
    }

    /// Decides the outcome of the peer's CLOSE.
    private func concludePeerClose(_ close: CloseFrame, exchangeComplete: Bool, context: inout SessionContext)
    {
        let reason: CloseReason =
            switch close.code {
            case .exchanged:
                // Only believed when everything we expected did arrive.
                exchangeComplete
                    ? .exchanged
                    : .error(
                        ProtocolError(
                            .unexpectedMessage, "peer closed as exchanged before the exchange completed"))
            case .declined: .declined(by: .peer)
            case .outOfRange: .outOfRange
            case .timeout: .timeout(.peerGaveUp)
            case .error:
                .error(
                    ProtocolError(
                        ProtocolError.Code(rawValue: close.errorCode) ?? .unexpectedMessage,
                        "peer closed with error \(close.errorCode)"))
            }
        // The peer's decline ends this session only, before or after our code: anyone who passes
        // the gate could otherwise stop our run with one packet (PROTOCOL.md 11.6, item 10).
        let endsDevice = close.code == .exchanged && exchangeComplete
        conclude(reason, endsDevice: endsDevice, context: &context)
    }

    /// Closes with CLOSE(error) after the peer broke the protocol.
    mutating func fail(_ error: ProtocolError, context: inout SessionContext) {
        apply(
            .close(
                .error(error), frames: [.close(CloseFrame(code: .error, errorCode: error.code.wireValue))],
                endsDevice: false),
            context: &context)
    }

    /// Enters closing: decides the outcome, sends `frames` (ending with CLOSE) and retransmits them
    /// until CLOSE_ACK. Once closing, the outcome stands: a later error changes nothing.
    mutating func close(
        _ reason: CloseReason, frames: [Frame], endsDevice: Bool, context: inout SessionContext
    ) {
        guard isActive else { return }
        conclude(reason, endsDevice: endsDevice, context: &context)
        guard isSecured else {
            // A handshake has nothing to send CLOSE through.
            state = .closed
            return
        }
        // CLOSE carries what the peer still needs (the frames the transition chose); a control
        // packet or RANGING this input gathered would tell it nothing more.
        securedLink.discardPending()
        securedLink.send(ClosingState.packet(frames, link: securedLink), context: &context)
        let timers = CloseTimers(roundTrip: securedLink.roundTrip, timeouts: context.timeouts)
        state = .closing(
            ClosingState(
                frames: frames, retransmitAt: context.now + timers.probeTimeout, lastSentAt: context.now,
                probeTimeout: timers.probeTimeout, endsAt: context.now + context.timeouts.closingLimit))
    }
}
