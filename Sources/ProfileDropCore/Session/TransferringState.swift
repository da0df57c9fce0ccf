import ProfileDropCrypto

/// Cards moving.
struct TransferringState {
    var sender: CardSender?
    var receiver: CardReceiver?
    /// The peer's card, verified and acknowledged but not yet delivered: it is reported only when
    /// the exchange completes, so pulling the devices apart before then delivers nothing.
    var receivedCard: ProfileCard?
    /// When every offered card was verified and acknowledged; the confirmation hold starts here.
    var completedAt: Instant?
    let deadline: Instant
    /// When the transfer is cut as stalled: ``Timeouts/stall`` after its last step forward.
    var stallDeadline: Instant
    /// Steps forward so far, as ``progress(link:)`` counts them.
    var progressMark = 0
    /// Acknowledged chunks last reported as progress.
    var reportedProgress = 0
    /// When the sender can next send a chunk, or must probe as nothing was acknowledged.
    var sendAt: Instant?
}

extension TransferringState: LiveState {
    /// Enters transferring: starts sending our card if we share it.
    init(link: inout Link, localCard: [UInt8]?, context: inout SessionContext) {
        var sender: CardSender?
        if link.localConsent == .share, let localCard, let offer = link.localOffer {
            let window = min(context.limits.sendWindow, Int(link.peerParameters.receiveWindow))
            sender = CardSender(
                bytes: localCard, offer: offer, window: window, timeouts: context.timeouts, now: context.now)
        }
        let receiver = link.peerConsent == .share ? link.peerOffer.map(CardReceiver.init(offer:)) : nil
        self.init(
            sender: sender, receiver: receiver, deadline: context.now + context.timeouts.transfer,
            stallDeadline: context.now + context.timeouts.stall)
        progressMark = progress(link: link)
        // Both users agreed: a new peer becomes known once the exchange completes.
        link.pairing.beginBond(identity: context.configuration.identity, random: &context.random)
        link.sendControl(backOff: false, context: &context)
        if let sender { context.emit(.exchanging(sent: 0, total: sender.total)) }
        sendChunks(link: &link, context: &context)
    }

    /// Whether the card phase delivered what it should: the peer's card verified if it offered one,
    /// ours acknowledged if we sent one, and the peer's BOND held if it is new.
    // Inlined, as progress(link:) and noteProgress: a call would pass the 800-byte link by copy.
    @inline(__always)
    func isExchangeComplete(link: Link) -> Bool {
        // Whether a card moves is asked through optional chaining, in place: `sender == nil`
        // copied the whole sender (352 bytes) to look at it.
        (receiver?.total == nil || link.verifiedPeerCard != nil)
            && (sender?.total == nil || link.peerAckedOurCard) && link.pairing.isBondSettled
    }

    /// Chunks and selective acknowledgements.
    mutating func handle(_ inbound: Link.Inbound, link: inout Link, context: inout SessionContext)
        throws(ProtocolError) -> Transition
    {
        for chunk in inbound.chunks {
            try receiver?.accept(index: chunk.index, data: chunk.data)
        }
        // The sender and receiver are mutated in place (optional chaining), never copied out and
        // stored back, which would copy their arrays on the first write.
        if sender?.total != nil {  // in place, as in isExchangeComplete(link:)
            // The chunks' samples are the session's too: the close times itself from them.
            if let latest = sender?.apply(inbound.sacks, now: context.now) { link.roundTrip.add(latest) }
            reportProgress(context: &context)
            sendChunks(link: &link, context: &context)
        }
        try afterChunks(link: &link, context: &context)
        noteProgress(link: link, context: context)
        return .stay
    }

    /// Steps forward so far; it only grows: chunks of ours acknowledged, chunks of the peer's card
    /// held, the peer's CARD_ACK and BOND, and our side done (the confirmation hold began).
    @inline(__always)
    func progress(link: Link) -> Int {
        (sender?.ackedCount ?? 0) + (receiver?.haveCount ?? 0) + (link.peerAckedOurCard ? 1 : 0)
            + (link.pairing.isBondSettled ? 1 : 0) + (completedAt != nil ? 1 : 0)
    }

    /// Moves the stall deadline on after a step forward. A peer that only keeps the session alive
    /// (a RANGING now and then, repeated control packets) moves nothing: the transfer is cut
    /// ``Timeouts/stall`` after its last step, and the hold, which a done side enters as its last
    /// step, must decide within that time too.
    @inline(__always)
    mutating func noteProgress(link: Link, context: SessionContext) {
        let mark = progress(link: link)
        guard mark > progressMark else { return }
        progressMark = mark
        stallDeadline = context.now + context.timeouts.stall
    }

    /// Closes as exchanged once complete and confirmed in range.
    mutating func advance(link: inout Link, context: inout SessionContext) -> Transition {
        guard isExchangeComplete(link: link) else { return .stay }
        // Done. A walk-away is seen only some rounds late (the gate filters a window of
        // samples, and leaving takes several measurements in a row), so the devices must stay
        // in range for one gate window after the last fact arrived: then every sample the
        // open gate rests on was taken after it, and a move made before it has been seen.
        // The decision is taken at a ranging round that measured the peer: an open gate may
        // rest on samples up to a window old, and deciding on those alone would commit blind
        // to a peer cut off since, which could no longer learn the outcome (section 6.7).
        if completedAt == nil {
            completedAt = context.now
            scheduleRoundAtHoldEnd(link: &link, context: context)
        }
        noteProgress(link: link, context: context)
        guard link.gate.isOpen, link.measuredAt == context.now, let holdEnds = holdEnds(context),
            context.now >= holdEnds
        else { return .stay }
        deliverReceivedCard(from: link.peer, context: &context)
        // Our outstanding facts (CARD_ACK, or CONSENT if the peer missed it) travel with CLOSE.
        let frames =
            link.controlFrames().filter { $0.type != .receipt } + [.close(CloseFrame(code: .exchanged))]
        return .close(.exchanged, frames: frames, endsDevice: true)
    }

    /// Reports the peer's verified card, once, as the session closes as exchanged.
    mutating func deliverReceivedCard(from peer: DeviceID, context: inout SessionContext) {
        guard let card = receivedCard else { return }
        receivedCard = nil
        context.emit(.cardReceived(card, from: peer))
    }

    func expiry(link: Link, context: SessionContext) -> Transition? {
        if context.now >= deadline { return .timeout(.transfer) }
        return context.now >= stallDeadline ? .timeout(.transferStalled) : nil
    }

    func rangingRound(link: inout Link, context: inout SessionContext) {
        link.watchProximity(context: &context)
        scheduleRoundAtHoldEnd(link: &link, context: context)
    }

    /// Puts a ranging round at the end of the confirmation hold, so the decision waits for no
    /// later round; the rounds after it keep their interval.
    @inline(__always)  // read in place: a call copied the 352-byte context
    func scheduleRoundAtHoldEnd(link: inout Link, context: SessionContext) {
        guard let holdEnds = holdEnds(context), holdEnds > context.now else { return }
        link.rangingAt = min(link.rangingAt, holdEnds)
    }

    /// When the confirmation hold ends: one gate window after our side was done; nil before.
    @inline(__always)  // read in place: a call copied the 352-byte context
    func holdEnds(_ context: SessionContext) -> Instant? {
        completedAt.map { $0 + context.configuration.gate.window }
    }

    mutating func handleTimeout(link: inout Link, context: inout SessionContext) -> Transition {
        sendChunks(link: &link, context: &context)
        if let sackAt = receiver?.sackAt, context.now >= sackAt, let sack = receiver?.sack() {
            receiver?.sackAt = nil
            receiver?.unacknowledged = 0
            link.pending.cardSack = sack
        }
        if context.now >= link.controlAt {
            // Through optional chaining: `receiver.map` would copy the receiver and its buffers.
            let sack = receiver?.sack()
            link.sendControl(extra: sack, backOff: true, context: &context)
        }
        return .stay
    }

    func nextDeadline(link: Link) -> Instant {
        var due = min(link.controlAt, deadline, stallDeadline)
        if let sackAt = receiver?.sackAt { due = min(due, sackAt) }
        if let sendAt { due = min(due, sendAt) }
        return due
    }

    mutating func reportProgress(context: inout SessionContext) {
        // The two counts read in place: binding the sender copied it and retained its buffers.
        guard let total = sender?.total, let ackedCount = sender?.ackedCount else { return }
        let step = max(1, total / 10)
        if ackedCount == total && reportedProgress < total || ackedCount >= reportedProgress + step {
            reportedProgress = ackedCount
            context.emit(.exchanging(sent: ackedCount, total: total))
        }
    }

    /// Acknowledges received chunks (every second one at once, otherwise after the SACK delay) and
    /// verifies the card once complete (it is delivered when the exchange completes).
    mutating func afterChunks(link: inout Link, context: inout SessionContext) throws(ProtocolError) {
        // The receiver is read and changed through optional chaining, never bound to a copy: a copy
        // retains its three buffers, and storing it back releases the old ones, for every packet.
        guard let unacknowledged = receiver?.unacknowledged, unacknowledged > 0 else { return }
        let isComplete = receiver?.isComplete == true
        if isComplete && link.verifiedPeerCard == nil {
            guard let bytes = receiver?.card, let offer = receiver?.offer else { return }
            guard BLAKE2bDigest.of(bytes) == offer.digest else {
                throw ProtocolError(.cardDigestMismatch, "received card does not match the offered digest")
            }
            let card: ProfileCard
            do {
                card = try ProfileCard(decoding: bytes)
            } catch {
                throw ProtocolError(.cardInvalid, "received card: \(error)")
            }
            link.verifiedPeerCard = offer.digest
            link.pairing.peerName = "\(card.name) (\(card.owner))"
            receivedCard = card
            context.emit(.cardVerified(card, from: link.peer))
        }
        if isComplete || unacknowledged >= 2 {
            receiver?.unacknowledged = 0
            receiver?.sackAt = nil
            if let sack = receiver?.sack() {
                link.sendControl(extra: sack, backOff: false, context: &context)
            }
        } else if receiver?.sackAt == nil {
            receiver?.sackAt = context.now + context.timeouts.sackDelay
        }
    }

    mutating func sendChunks(link: inout Link, context: inout SessionContext) {
        guard let retransmitted = sender?.retransmissions else { return }
        while let chunk = sender?.takeChunk(now: context.now) {
            link.sendChunk(chunk)
        }
        context.counters.chunkRetransmissions += (sender?.retransmissions ?? retransmitted) - retransmitted
        sendAt = sender?.nextDeadline(now: context.now)
    }
}
