/// Both in range: verifying the code, then deciding.
struct ConsentingState {
    /// Verification completed and the decision was made or asked for.
    var verified = false
    /// When an unanswered user request declines by itself.
    var userDeadline: Instant?
    /// Whether our user's decline of this session ends the device when it holds no other
    /// candidate: not when the user declined it by picking another candidate of the list
    /// (PROTOCOL.md 5, "Candidates").
    var declineEndsDevice = true
    /// When the code must be known (``Timeouts/stall`` after entering consenting): until then the
    /// peer's part of it, or its PROOF, may be on its way.
    let verificationDeadline: Instant
    /// When the peer's decision must have arrived, once our code is known: its user has as long as
    /// ours (``Timeouts/consent``) from seeing the same code, plus ``peerConsentGrace``.
    var peerDeadline: Instant?

    /// What the peer's decision gets beyond its user's time: the two devices learn the code within
    /// a round trip of each other, and its CONSENT, repeated at least every second, may be lost a
    /// few times on the way.
    static let peerConsentGrace: Duration = .seconds(10)
}

extension ConsentingState: LiveState {
    /// Enters consenting: starts verification (PROTOCOL.md 6.5). The decision waits for the code.
    init(link: inout Link, context: inout SessionContext) {
        self.init(verificationDeadline: context.now + context.timeouts.stall)
        link.pairing.beginVerification(random: &context.random)
        link.sendControl(backOff: false, context: &context)
    }

    /// The user's answer to our request; `endsDevice` false for a decline that came from picking
    /// another candidate.
    mutating func decide(
        _ decision: ConsentDecision, endsDevice: Bool, link: inout Link, localCard: [UInt8]?,
        context: inout SessionContext
    ) {
        userDeadline = nil
        declineEndsDevice = endsDevice
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
            peerDeadline = context.now + context.timeouts.consent + Self.peerConsentGrace
            let known = Self.knownPeer(link)
            Self.emitVerified(link: link, peer: peer, code: code, context: &context)
            if let decision = context.configuration.consent.decision(knownPeer: known != nil) {
                Self.consent(decision, link: &link, localCard: localCard, context: &context)
            } else {
                // Shown at once beside any other candidate asked about, each with its own code and
                // its own deadline (PROTOCOL.md 5, "Candidates").
                userDeadline = context.now + context.timeouts.consent
                context.emit(.consentRequested(peer: peer))
            }
        }
        if link.localConsent == .decline {
            return .close(
                .declined(by: .local), frames: link.declineFrames(), endsDevice: declineEndsDevice)
        } else if link.peerConsent == .decline {
            return .close(
                .declined(by: .peer), frames: [.close(CloseFrame(code: .declined))], endsDevice: false)
        } else if link.localConsent != nil && link.peerConsent != nil {
            return .transfer
        } else {
            return .stay
        }
    }

    /// The known peer a verified session's recognition found, if any.
    private static func knownPeer(_ link: Link) -> KnownPeer? {
        switch link.pairing.recognition {
        case .known(let peer): peer
        case .stranger, nil: nil
        }
    }

    private static func emitVerified(link: Link, peer: DeviceID, code: String, context: inout SessionContext)
    {
        context.emit(
            .verified(
                Verification(
                    peer: peer, code: code, knownPeer: knownPeer(link),
                    interruptedBefore: context.counters.interruptedPairings)))
    }

    /// Our user did not answer: decline as a user does (``Link/declineFrames()``), and say why
    /// locally. It ends this session only: an unattended device goes on for other peers.
    static func unanswered(link: Link) -> Transition {
        .close(.timeout(.consent), frames: link.declineFrames(), endsDevice: false)
    }

    func expiry(link: Link, context: SessionContext) -> Transition? {
        if let userDeadline, context.now >= userDeadline { return Self.unanswered(link: link) }
        if !verified && context.now >= verificationDeadline { return .timeout(.verification) }
        if let peerDeadline, context.now >= peerDeadline, link.peerConsent == nil {
            return .timeout(.peerConsent)
        }
        return nil
    }

    /// How the session ends when the device's overall limit passes during consent: a request still
    /// unanswered declines, as at its own deadline; otherwise the wait still open times out.
    func closeAtDeviceLimit(link: Link) -> Transition {
        if userDeadline != nil { return Self.unanswered(link: link) }
        return verified ? .timeout(.peerConsent) : .timeout(.verification)
    }

    func rangingRound(link: inout Link, context: inout SessionContext) {
        link.watchProximity(context: &context)
    }

    func handleTimeout(link: inout Link, context: inout SessionContext) -> Transition {
        if context.now >= link.controlAt { link.sendControl(backOff: true, context: &context) }
        return .stay
    }

    func nextDeadline(link: Link) -> Instant {
        var due = min(link.controlAt, verified ? (peerDeadline ?? link.controlAt) : verificationDeadline)
        if let userDeadline { due = min(due, userDeadline) }
        return due
    }
}
