import ProfileDropCrypto

/// Cards moving.
struct TransferringState {
    var link: Link
    var sender: CardSender?
    var receiver: CardReceiver?
    /// The peer's card, verified and acknowledged but not yet delivered: it is reported only when
    /// the exchange completes, so pulling the devices apart before then delivers nothing.
    var receivedCard: ProfileCard?
    /// When every offered card was verified and acknowledged; the confirmation hold starts here.
    var completedAt: Instant?
    let deadline: Instant
    /// Acknowledged chunks last reported as progress.
    var reportedProgress = 0
    /// When the sender can next send a chunk or must declare one lost.
    var sendAt: Instant?
}

extension ExchangeSession {
    func reportProgress(_ transferring: inout TransferringState, context: inout SessionContext) {
        guard let sender = transferring.sender else { return }
        let step = max(1, sender.total / 10)
        if sender.ackedCount == sender.total && transferring.reportedProgress < sender.total
            || sender.ackedCount >= transferring.reportedProgress + step
        {
            transferring.reportedProgress = sender.ackedCount
            context.emit(.exchanging(sent: sender.ackedCount, total: sender.total))
        }
    }

    /// Acknowledges received chunks (every second one at once, otherwise after the SACK delay) and
    /// verifies the card once complete (it is delivered when the exchange completes).
    func afterChunks(_ transferring: inout TransferringState, context: inout SessionContext)
        throws(ProtocolError)
    {
        guard var receiver = transferring.receiver, receiver.unacknowledged > 0 else { return }
        if receiver.isComplete && transferring.link.verifiedPeerCard == nil {
            guard let bytes = receiver.card else { return }
            guard BLAKE2bDigest.of(bytes) == receiver.offer.digest else {
                throw ProtocolError(.cardDigestMismatch, "received card does not match the offered digest")
            }
            let card: ProfileCard
            do {
                card = try ProfileCard(decoding: bytes)
            } catch {
                throw ProtocolError(.cardInvalid, "received card: \(error)")
            }
            transferring.link.verifiedPeerCard = receiver.offer.digest
            transferring.receivedCard = card
            context.emit(.cardVerified(card))
        }
        if receiver.isComplete || receiver.unacknowledged >= 2 {
            receiver.unacknowledged = 0
            receiver.sackAt = nil
            transferring.receiver = receiver
            transferring.link.sendControl(
                extra: [.cardSack(receiver.sack())], backOff: false, context: &context)
        } else if receiver.sackAt == nil {
            receiver.sackAt = context.now + context.timeouts.sackDelay
            transferring.receiver = receiver
        }
    }

    mutating func enterTransferring(_ link: Link, context: inout SessionContext) {
        var sender: CardSender?
        if link.localConsent == .share, let localCard, let offer = link.localOffer {
            let window = min(context.limits.sendWindow, Int(link.peerParameters.receiveWindow))
            sender = CardSender(
                bytes: localCard, offer: offer, window: window, timeouts: context.timeouts, now: context.now)
        }
        let receiver = link.peerConsent == .share ? link.peerOffer.map(CardReceiver.init(offer:)) : nil
        var transferring = TransferringState(
            link: link, sender: sender, receiver: receiver, deadline: context.now + context.timeouts.transfer)
        if let sender { context.emit(.exchanging(sent: 0, total: sender.total)) }
        sendChunks(&transferring, context: &context)
        state = .transferring(transferring)
    }

    /// Reports the peer's verified card, once, as the session closes as exchanged.
    mutating func deliverReceivedCard(context: inout SessionContext) {
        guard case .transferring(var transferring) = state, let card = transferring.receivedCard else {
            return
        }
        transferring.receivedCard = nil
        state = .transferring(transferring)
        context.emit(.cardReceived(card))
    }

    func sendChunks(_ transferring: inout TransferringState, context: inout SessionContext) {
        guard var sender = transferring.sender else { return }
        while let chunk = sender.takeChunk(now: context.now) {
            transferring.link.send([chunk], context: &context)
        }
        context.counters.chunkRetransmissions +=
            sender.retransmissions - (transferring.sender?.retransmissions ?? 0)
        transferring.sendAt = sender.nextDeadline(now: context.now)
        transferring.sender = sender
    }
}
