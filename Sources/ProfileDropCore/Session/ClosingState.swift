/// CLOSE sent, waiting for CLOSE_ACK.
struct ClosingState {
    var link: Link
    let frames: [Frame]
    let reason: CloseReason
    var transmissions = 1
    var retransmitAt: Instant
    /// When CLOSE last went out, on the timer or in answer to the peer.
    var lastSentAt: Instant
}

/// Closed, answering late CLOSE frames.
struct DrainingState {
    var link: Link
    let until: Instant
}

extension ExchangeSession {
    /// The peer sent CLOSE: acknowledge it and drain.
    mutating func peerClosed(_ close: CloseFrame, context: inout SessionContext) {
        guard var link else { return }
        link.send([.closeAck], context: &context)
        if outcome == nil {
            let exchangeComplete = isExchangeComplete
            endsDevice = (close.code == .exchanged && exchangeComplete) || close.code == .declined
            // Believed (our own gate may be waiting for samples): the exchange is complete.
            if close.code == .exchanged && exchangeComplete { deliverReceivedCard(context: &context) }
            outcome =
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
                case .timeout: .timeout(what: "peer gave up waiting")
                case .error:
                    .error(
                        ProtocolError(
                            ProtocolError.Code(rawValue: close.errorCode) ?? .unexpectedMessage,
                            "peer closed with error \(close.errorCode)"))
                }
        }
        switch state {
        case .draining:
            setLink(link)
        case .ranging, .consenting, .transferring, .closing:
            state = .draining(DrainingState(link: link, until: context.now + context.timeouts.drain))
        case .handshaking, .closed:
            break
        }
    }

    /// Whether the card phase delivered what it should: the peer's card verified if it offered one,
    /// and ours acknowledged if we sent one.
    var isExchangeComplete: Bool {
        switch state {
        case .transferring(let transferring):
            (transferring.receiver == nil || transferring.link.verifiedPeerCard != nil)
                && (transferring.sender == nil || transferring.link.peerAckedOurCard)
        case .closing, .draining:
            outcome == .exchanged
        case .handshaking, .ranging, .consenting, .closed:
            false
        }
    }

    /// Ends the session as out of range: the ranging window ran out, the peer is far, or our gate
    /// saw the peer leave before the exchange completed (a card we verified is then not delivered).
    mutating func closeOutOfRange(context: inout SessionContext) {
        close(.outOfRange, frames: [.close(CloseFrame(code: .outOfRange))], context: &context)
    }

    /// Closes with CLOSE(error) after the peer broke the protocol.
    mutating func fail(_ error: ProtocolError, context: inout SessionContext) {
        close(
            .error(error), frames: [.close(CloseFrame(code: .error, errorCode: error.code.wireValue))],
            context: &context)
    }

    /// Enters closing: sends `frames` (ending with CLOSE) and retransmits them until CLOSE_ACK.
    mutating func close(_ reason: CloseReason, frames: [Frame], context: inout SessionContext) {
        switch reason {
        case .exchanged, .declined: endsDevice = true
        case .outOfRange, .timeout, .error: break
        }
        guard var link, isActive else {
            if case .handshaking = state {
                outcome = outcome ?? reason
                state = .closed
            }
            return
        }
        outcome = outcome ?? reason
        link.send(frames + [.receipt(link.receipts)], context: &context)
        state = .closing(
            ClosingState(
                link: link, frames: frames, reason: reason,
                retransmitAt: context.now + context.timeouts.closeRetransmit, lastSentAt: context.now))
    }
}
