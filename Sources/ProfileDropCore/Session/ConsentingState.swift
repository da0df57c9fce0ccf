/// Both in range; deciding.
struct ConsentingState {
    var link: Link
    /// When an unanswered user request declines by itself.
    var userDeadline: Instant?
    /// How long we wait for the peer's decision.
    let peerDeadline: Instant
}

extension ExchangeSession {
    /// The user's answer to a consent request.
    mutating func decide(_ decision: ConsentDecision, context: inout SessionContext) {
        guard case .consenting(var consenting) = state, consenting.userDeadline != nil,
            consenting.link.localConsent == nil
        else { return }
        consenting.userDeadline = nil
        state = .consenting(consenting)
        setLocalConsent(decision, context: &context)
        advance(context: &context)
    }

    mutating func setLocalConsent(_ decision: ConsentDecision, context: inout SessionContext) {
        guard case .consenting(var consenting) = state else { return }
        // Without a card, or with one over the peer's limit, sharing means receiving only.
        let tooLarge = (localCard?.count ?? 0) > Int(consenting.link.peerParameters.maxCardBytes)
        let effective: ConsentDecision =
            decision == .share && (localCard == nil || tooLarge) ? .receiveOnly : decision
        consenting.link.localConsent = effective
        if effective == .share, let localCard {
            consenting.link.localOffer = CardSender.offer(for: localCard)
        }
        if effective != .decline { consenting.link.sendControl(backOff: false, context: &context) }
        state = .consenting(consenting)
    }

    mutating func enterConsenting(_ link: Link, context: inout SessionContext) {
        let consenting = ConsentingState(
            link: link, userDeadline: nil,
            peerDeadline: context.now + context.timeouts.consent + .seconds(10))
        state = .consenting(consenting)
        switch context.configuration.consent {
        case .share: setLocalConsent(.share, context: &context)
        case .receiveOnly: setLocalConsent(.receiveOnly, context: &context)
        case .decline: setLocalConsent(.decline, context: &context)
        case .askUser:
            if case .consenting(var waiting) = state {
                waiting.userDeadline = context.now + context.timeouts.consent
                state = .consenting(waiting)
            }
            context.emit(.consentRequested(peer: peer))
        }
    }
}
