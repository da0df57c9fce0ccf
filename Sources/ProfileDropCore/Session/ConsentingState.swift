/// Both in range; deciding.
struct ConsentingState {
    /// When an unanswered user request declines by itself.
    var userDeadline: Instant?
    /// How long we wait for the peer's decision.
    let peerDeadline: Instant
}

extension ConsentingState: LiveState {
    /// Enters consenting: decides by policy, or asks the user.
    init(link: inout Link, peer: DeviceID, localCard: [UInt8]?, context: inout SessionContext) {
        self.init(userDeadline: nil, peerDeadline: context.now + context.timeouts.consent + .seconds(10))
        switch context.configuration.consent {
        case .share: Self.consent(.share, link: &link, localCard: localCard, context: &context)
        case .receiveOnly: Self.consent(.receiveOnly, link: &link, localCard: localCard, context: &context)
        case .decline: Self.consent(.decline, link: &link, localCard: localCard, context: &context)
        case .askUser:
            userDeadline = context.now + context.timeouts.consent
            context.emit(.consentRequested(peer: peer))
        }
    }

    /// The user's answer to our request.
    mutating func decide(
        _ decision: ConsentDecision, link: inout Link, localCard: [UInt8]?, context: inout SessionContext
    ) {
        userDeadline = nil
        Self.consent(decision, link: &link, localCard: localCard, context: &context)
    }

    private static func consent(
        _ decision: ConsentDecision, link: inout Link, localCard: [UInt8]?, context: inout SessionContext
    ) {
        // Without a card, or with one over the peer's limit, sharing means receiving only.
        let tooLarge = (localCard?.count ?? 0) > Int(link.peerParameters.maxCardBytes)
        let effective: ConsentDecision =
            decision == .share && (localCard == nil || tooLarge) ? .receiveOnly : decision
        link.localConsent = effective
        if effective == .share, let localCard {
            link.localOffer = CardSender.offer(for: localCard)
        }
        if effective != .decline { link.sendControl(backOff: false, context: &context) }
    }

    /// A decline closes; two decisions to go on move the cards.
    func advance(link: Link) -> Transition {
        if link.localConsent == .decline {
            .close(
                .declined(by: .local),
                frames: [.consent(.decline, nil), .close(CloseFrame(code: .declined))],
                endsDevice: true)
        } else if link.peerConsent == .decline {
            .close(.declined(by: .peer), frames: [.close(CloseFrame(code: .declined))], endsDevice: true)
        } else if link.localConsent != nil && link.peerConsent != nil {
            .transfer
        } else {
            .stay
        }
    }

    func expiry(link: Link, context: SessionContext) -> Transition? {
        if let userDeadline, context.now >= userDeadline {
            // Nobody answered: decline, and say why locally.
            return .close(
                .timeout(.consent),
                frames: [.consent(.decline, nil), .close(CloseFrame(code: .declined))],
                endsDevice: true)
        }
        return context.now >= peerDeadline ? .timeout(.peerConsent) : nil
    }

    func rangingRound(link: inout Link, context: inout SessionContext) {
        link.watchProximity(context: &context)
    }

    func handleTimeout(link: inout Link, context: inout SessionContext) -> Transition {
        if context.now >= link.controlAt { link.sendControl(backOff: true, context: &context) }
        return .stay
    }

    func nextDeadline(link: Link) -> Instant {
        min(link.controlAt, peerDeadline, userDeadline ?? peerDeadline)
    }
}
