/// Both in range: verifying the code, then deciding.
struct ConsentingState {
    /// Verification completed and the decision was made or asked for.
    var verified = false
    /// When an unanswered user request declines by itself.
    var userDeadline: Instant?
    /// How long we wait for the peer's decision.
    let peerDeadline: Instant
}

extension ConsentingState: LiveState {
    /// Enters consenting: starts verification (PROTOCOL.md 6.5). The decision waits for the code.
    init(link: inout Link, context: inout SessionContext) {
        self.init(peerDeadline: context.now + context.timeouts.consent + .seconds(10))
        link.pairing.beginVerification(random: &context.random)
        link.sendControl(backOff: false, context: &context)
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

    /// Verification steps as their facts arrive; then the decision by policy or by the user; then a
    /// decline closes, and two decisions to go on move the cards.
    mutating func advance(
        link: inout Link, peer: DeviceID, localCard: [UInt8]?, context: inout SessionContext
    ) -> Transition {
        if !verified {
            if link.pairing.localNonce == nil && link.pairing.commitment != nil {
                // The initiator answers the responder's commitment.
                link.pairing.beginVerification(random: &context.random)
                link.sendControl(backOff: false, context: &context)
            }
            guard link.pairing.isReadyForConsent, let code = link.pairing.code else { return .stay }
            verified = true
            let known: KnownPeer? =
                switch link.pairing.recognition {
                case .known(let peer): peer
                case .stranger, nil: nil
                }
            context.emit(
                .verified(
                    Verification(
                        peer: peer, code: code, knownPeer: known,
                        interruptedBefore: context.counters.interruptedPairings)))
            switch context.configuration.consent {
            case .share: Self.consent(.share, link: &link, localCard: localCard, context: &context)
            case .receiveOnly:
                Self.consent(.receiveOnly, link: &link, localCard: localCard, context: &context)
            case .decline: Self.consent(.decline, link: &link, localCard: localCard, context: &context)
            case .askUser:
                userDeadline = context.now + context.timeouts.consent
                context.emit(.consentRequested(peer: peer))
            }
        }
        if link.localConsent == .decline {
            return .close(
                .declined(by: .local),
                frames: [.consent(.decline, nil), .close(CloseFrame(code: .declined))],
                endsDevice: true)
        } else if link.peerConsent == .decline {
            return .close(
                .declined(by: .peer), frames: [.close(CloseFrame(code: .declined))], endsDevice: true)
        } else if link.localConsent != nil && link.peerConsent != nil {
            return .transfer
        } else {
            return .stay
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
