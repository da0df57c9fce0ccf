import ProfileDropCrypto
import ProfileDropNoise

/// One unicast exchange session with one peer: handshake, ranging, consent, card transfer and
/// close, as the state machine in PROTOCOL.md section 6.
///
/// What every state shares lives here once: the peer, the secured ``Link`` and the timers every
/// live state obeys (idle, walk-away). Each state struct handles its own frames and timers and
/// returns a ``Transition``, which ``apply(_:context:)`` carries out. The outcome is pushed once
/// to ``SessionContext/outcomes`` when it is decided.
struct ExchangeSession {
    let sessionID: UInt64
    let peer: DeviceID
    let peerAddress: PeerAddress
    let isInitiator: Bool
    let localCard: [UInt8]?
    /// A secured session with no authenticated packet for this long closes.
    let idle: Duration

    /// What both sides have told each other: nil until the handshake completes, and once closed.
    /// Boxed, as the large states are (``ExchangeState``).
    private var linkBox: CopyOnWriteBox<Link>?
    var state: ExchangeState

    /// Whether the handshake completed and the session is not yet closed: it has a link.
    var isSecured: Bool { linkBox != nil }
    /// Whether the handshake ever completed: the peer showed it receives at ``peerAddress``.
    private(set) var handshakeCompleted = false

    /// The link of a state past the handshake. Every such state has one, from the handshake's end
    /// until the session is closed, so its absence here is our own bug, never the peer's doing.
    var securedLink: Link {
        _read {
            guard let linkBox else { preconditionFailure("session \(sessionID) has no link in \(state)") }
            yield linkBox.value
        }
        _modify {
            guard linkBox != nil else { preconditionFailure("session \(sessionID) has no link in \(state)") }
            // In place, so the link's buffers are not copied on every change.
            yield &linkBox!.uniqueStorage().value
        }
    }

    /// A session with `peer` at `peerAddress`, in its handshake: every session begins there.
    init(
        sessionID: UInt64, peer: DeviceID, peerAddress: PeerAddress, isInitiator: Bool,
        handshake: HandshakingState, context: SessionContext
    ) {
        self.sessionID = sessionID
        self.peer = peer
        self.peerAddress = peerAddress
        self.isInitiator = isInitiator
        state = .handshaking(CopyOnWriteBox(handshake))
        self.localCard = context.configuration.card?.encoded()
        self.idle = context.timeouts.idle
    }

    /// Whether we invited and are still waiting for ACCEPT (the only time BUSY or a crossing
    /// INVITE matters).
    var isAwaitingAccept: Bool {
        switch state {
        case .handshaking: isInitiator
        case .ranging, .consenting, .transferring, .closing, .draining, .closed: false
        }
    }

    /// While we invite and wait for ACCEPT: how many times our INVITE went out; nil otherwise.
    var inviteTransmissions: Int? {
        switch state {
        case .handshaking(let handshake): isInitiator ? handshake.value.transmissions : nil
        case .ranging, .consenting, .transferring, .closing, .draining, .closed: nil
        }
    }

    /// While we invite and wait for ACCEPT: when a refusal that arrives now is believed
    /// (``HeldRefusal/until(now:invitedAt:retransmitAt:)``); nil otherwise.
    func refusalHeldUntil(now: Instant) -> Instant? {
        switch state {
        case .handshaking(let handshake):
            isInitiator
                ? HeldRefusal.until(
                    now: now, invitedAt: handshake.value.lastSentAt,
                    retransmitAt: handshake.value.retransmitAt)
                : nil
        case .ranging, .consenting, .transferring, .closing, .draining, .closed: nil
        }
    }

    /// Whether we accepted an INVITE and still wait for CONFIRM (a half-open handshake, PROTOCOL.md 5).
    var isHalfOpen: Bool {
        switch state {
        case .handshaking: !isInitiator
        case .ranging, .consenting, .transferring, .closing, .draining, .closed: false
        }
    }

    /// Whether both sides agreed and the cards are moving: the device then holds no other
    /// candidate.
    var isTransferring: Bool {
        switch state {
        case .transferring: true
        case .handshaking, .ranging, .consenting, .closing, .draining, .closed: false
        }
    }

    /// Whether our user's question for this session is on screen.
    var isAskingUser: Bool {
        switch state {
        case .consenting(let consenting): consenting.userDeadline != nil
        case .handshaking, .ranging, .transferring, .closing, .draining, .closed: false
        }
    }

    /// How far the session got, for choosing which one a snapshot shows: handshake 0, ranging 1,
    /// consent 2, transfer 3, ended 4.
    var progress: Int {
        switch state {
        case .handshaking: 0
        case .ranging: 1
        case .consenting: 2
        case .transferring: 3
        case .closing, .draining, .closed: 4
        }
    }

    /// Whether the session still has a live exchange (not closing, draining or closed): its outcome
    /// is not yet decided.
    var isActive: Bool {
        switch state {
        case .handshaking, .ranging, .consenting, .transferring: true
        case .closing, .draining, .closed: false
        }
    }

    // MARK: - Inputs

    /// Handles a unicast datagram of this session.
    /// - Throws: ``ProtocolError`` when the datagram is dropped. Errors after authentication also
    ///   close the session with CLOSE(error).
    mutating func handle(_ packet: Packet, context: inout SessionContext) throws(ProtocolError) {
        defer { flush(context: &context) }  // The first ranging round, once secured.
        switch packet {
        case .invite(let invite):
            guard !isInitiator, invite.sender == peer else {
                throw ProtocolError(.unexpectedMessage, "INVITE for a session we did not accept")
            }
            switch state {
            case .handshaking(var handshaking):
                handshaking.value.handleDuplicateInvite(to: peerAddress, context: &context)
                state = .handshaking(handshaking)
            case .ranging, .consenting, .transferring, .closing, .draining, .closed:
                break  // A stale duplicate: the initiator already has our ACCEPT.
            }
        case .accept(let accept):
            guard isInitiator, accept.sender == peer, accept.receiver == context.deviceID else {
                throw ProtocolError(.unexpectedMessage, "ACCEPT from a device we did not invite")
            }
            switch state {
            case .handshaking(var handshaking):
                // Not stored back: a failed handshake message leaves the state as it was.
                apply(
                    try handshaking.value.handleAccept(accept, sessionID: sessionID, context: &context),
                    context: &context)
            case .ranging, .consenting, .transferring:
                // Our CONFIRM was lost.
                if let confirm = linkBox?.value.confirmDatagram {
                    context.outbox.push(OutgoingDatagram(destination: .unicast(peerAddress), bytes: confirm))
                }
            case .closing, .draining, .closed:
                break
            }
        case .confirm(let confirm):
            guard !isInitiator, confirm.sender == peer, confirm.receiver == context.deviceID else {
                throw ProtocolError(.unexpectedMessage, "CONFIRM from a device we did not accept")
            }
            switch state {
            case .handshaking(var handshaking):
                let transition = try handshaking.value.handleConfirm(confirm, context: context)
                // A half-open handshake becomes a session with a peer only now.
                context.emit(.connecting(peer: peer, initiator: false))
                apply(transition, context: &context)
            case .ranging, .consenting, .transferring, .closing, .draining, .closed:
                break  // A retransmitted CONFIRM after we were already secured.
            }
        case .secure(let secure):
            try handleSecure(secure, context: &context)
        case .beacon, .query, .busy, .probe, .probeAck:
            throw ProtocolError(.unexpectedMessage, "\(packet.type) is not a session message")
        }
    }

    /// The invitee's INVITE crossed ours and we stay initiator: ours again, at once
    /// (``HandshakingState/resendForCrossing(to:context:)``).
    mutating func resendInviteForCrossing(context: inout SessionContext) {
        guard case .handshaking(var handshaking) = state, isInitiator else { return }
        handshaking.value.resendForCrossing(to: peerAddress, context: &context)
        state = .handshaking(handshaking)
    }

    /// Whether we invited and still wait for the invitee's address to echo our PROBE.
    var isProbing: Bool {
        guard case .handshaking(let handshaking) = state, isInitiator else { return false }
        return handshaking.value.probe != nil
    }

    /// Whether our PROBE is due again now: the device then pays for it from the address's credit
    /// and calls ``sendProbeAgain(context:)``, before this session's own timer runs.
    func isProbeDue(context: SessionContext) -> Bool {
        guard case .handshaking(let handshaking) = state, isInitiator else { return false }
        return handshaking.value.isProbeDue(now: context.now, timeouts: context.timeouts)
    }

    /// Our PROBE again (``HandshakingState/sendProbeAgain(to:context:)``).
    mutating func sendProbeAgain(context: inout SessionContext) {
        guard case .handshaking(var handshaking) = state, isInitiator else { return }
        handshaking.value.sendProbeAgain(to: peerAddress, context: &context)
        state = .handshaking(handshaking)
    }

    /// The invitee's address echoed another PROBE of ours (one sent ahead, PROTOCOL.md 5, "Probing
    /// ahead"): our INVITE goes out as if our own PROBE had been echoed.
    mutating func addressProven(context: inout SessionContext) {
        guard case .handshaking(let handshaking) = state, isInitiator, let probe = handshaking.value.probe
        else { return }
        _ = probeAnswered(probe, context: &context)
    }

    /// PROBE_ACK from the invitee's address: our INVITE goes out if it echoes our challenge
    /// (``HandshakingState/probeAnswered(_:to:context:)``); false otherwise.
    mutating func probeAnswered(_ challenge: UInt64, context: inout SessionContext) -> Bool {
        guard case .handshaking(var handshaking) = state, isInitiator else { return false }
        let answered = handshaking.value.probeAnswered(challenge, to: peerAddress, context: &context)
        state = .handshaking(handshaking)
        return answered
    }

    /// BUSY(retry) from the invitee while we wait for ACCEPT: send the INVITE again with its cookie.
    mutating func retry(with cookie: [UInt8], context: inout SessionContext) throws(ProtocolError) {
        guard case .handshaking(var handshaking) = state, isInitiator else {
            throw ProtocolError(
                .unexpectedMessage, "BUSY(retry) for session \(sessionID), which is past its INVITE")
        }
        try handshaking.value.retry(with: cookie, to: peerAddress, context: &context)
        state = .handshaking(handshaking)
    }

    mutating func handleSecure(_ packet: SecurePacket, context: inout SessionContext)
        throws(ProtocolError)
    {
        defer { flush(context: &context) }
        guard isSecured else {
            switch state {
            case .handshaking:
                throw ProtocolError(.unexpectedMessage, "encrypted packet before the handshake completed")
            case .ranging, .consenting, .transferring, .closing, .draining, .closed:
                throw ProtocolError(.unknownSession, "session \(sessionID) is closed")
            }
        }
        // A packet that fails (replayed, forged or malformed) changes nothing.
        let live = isActive
        let (inbound, transferred) = try context.withFrameList { (frames, context) throws(ProtocolError) in
            try securedLink.channel.open(packet, appendingTo: &frames)
            do throws(ProtocolError) {
                let inbound = try securedLink.absorb(frames, live: live, context: &context)
                return (inbound, try handle(inbound, context: &context))
            } catch {
                fail(error, context: &context)
                throw error
            }
        }
        // The facts in the packet count before its CLOSE: they may complete our side too.
        advance(context: &context)
        // Matched only now: a copy of the state held across the handling above would make the
        // transfer copy its buffers.
        if !transferred, case .transferring = state, !inbound.chunks.isEmpty || !inbound.sacks.isEmpty {
            // The packet's facts (the peer's CONSENT) began the transfer: its chunks, sent with
            // them, belong to it.
            do throws(ProtocolError) {
                try handle(inbound, context: &context)
                advance(context: &context)
            } catch {
                fail(error, context: &context)
                throw error
            }
        }
        if let close = inbound.close { peerClosed(close, context: &context) }
    }

    /// Seals what the input just handled gathered (``Link/flush(context:)``).
    private mutating func flush(context: inout SessionContext) {
        guard linkBox?.value.pending.isEmpty == false else { return }
        securedLink.flush(context: &context)
    }

    /// The frames the current state acts on, after the link absorbed the shared facts.
    /// - Returns: whether the state was transferring, the one that acts on chunks and
    ///   acknowledgements.
    @discardableResult
    private mutating func handle(_ inbound: Link.Inbound, context: inout SessionContext) throws(ProtocolError)
        -> Bool
    {
        let transition: Transition
        var transferred = false
        switch state {
        case .ranging, .consenting:
            if inbound.learned { securedLink.controlSoon(context: context) }
            transition = .stay
        case .transferring:
            guard case .transferring(var transferring) = takeState() else {
                preconditionFailure("the state was just matched")
            }
            // Held only here while chunks go in, so the reassembly buffer is written in place
            // instead of being copied whole for every packet.
            defer { state = .transferring(transferring) }
            if inbound.learned { securedLink.controlSoon(context: context) }
            transition = try transferring.value.handle(inbound, link: &securedLink, context: &context)
            transferred = true
        case .closing:
            guard case .closing(var closing) = takeState() else {
                preconditionFailure("the state was just matched")
            }
            transition = closing.handle(inbound, link: &securedLink, context: &context)
            state = .closing(closing)
        case .handshaking, .draining, .closed:
            transition = .stay
        }
        apply(transition, context: &context)
        return transferred
    }

    /// The user's answer to a consent request; `endsDevice` false for a decline that came from
    /// picking another candidate, which never ends the device.
    mutating func decide(_ decision: ConsentDecision, endsDevice: Bool = true, context: inout SessionContext)
    {
        guard case .consenting(var consenting) = state, consenting.userDeadline != nil,
            securedLink.localConsent == nil
        else { return }
        consenting.decide(
            decision, endsDevice: endsDevice, link: &securedLink, localCard: localCard, context: &context)
        state = .consenting(consenting)
        advance(context: &context)
        flush(context: &context)
    }

    /// Ends a live session because the device's overall limit passed, with the reason of the wait
    /// it was in: the handshake, the ranging window (`out of range`: the gates have not both
    /// opened), the code, our user's answer (declined, as when its own deadline passes), the
    /// peer's decision, or the cards. Sends CLOSE as that wait's own expiry would. Does nothing to
    /// a session already closing or draining.
    mutating func closeAtDeviceLimit(context: inout SessionContext) {
        let transition: Transition
        switch state {
        case .handshaking: transition = .timeout(.handshake)
        case .ranging: transition = .outOfRange
        case .consenting(let consenting): transition = consenting.closeAtDeviceLimit(link: securedLink)
        case .transferring: transition = .timeout(.transfer)
        case .closing, .draining, .closed: return
        }
        apply(transition, context: &context)
    }

    // MARK: - Progress

    /// Moves to the next state when the facts allow it.
    mutating func advance(context: inout SessionContext) {
        let transition: Transition
        switch state {
        case .ranging(let ranging):
            transition = ranging.advance(link: securedLink)
        case .consenting:
            guard case .consenting(var consenting) = takeState() else {
                preconditionFailure("the state was just matched")
            }
            transition = consenting.advance(
                link: &securedLink, peer: peer, localCard: localCard, context: &context)
            state = .consenting(consenting)
        case .transferring:
            guard case .transferring(var transferring) = takeState() else {
                preconditionFailure("the state was just matched")
            }
            transition = transferring.value.advance(link: &securedLink, context: &context)
            state = .transferring(transferring)
        case .handshaking, .closing, .draining, .closed:
            return
        }
        apply(transition, context: &context)
    }

    /// Moves the state out, leaving `.closed` in its place until it is stored back: a state mutated
    /// while still stored would be copied first, with a retain per buffer, and then released.
    private mutating func takeState() -> ExchangeState {
        var taken = ExchangeState.closed
        swap(&taken, &state)
        return taken
    }

    /// Carries out a state's transition: the one place the state changes to another.
    mutating func apply(_ transition: Transition, context: inout SessionContext) {
        switch transition {
        case .stay:
            break
        case .secured(let transport, let peerParameters, let confirm, let roundTrip):
            establish(
                transport, peerParameters: peerParameters, confirm: confirm, roundTrip: roundTrip,
                context: &context)
        case .consent:
            state = .consenting(ConsentingState(link: &securedLink, context: &context))
            advance(context: &context)
        case .transfer:
            state = .transferring(
                CopyOnWriteBox(TransferringState(link: &securedLink, localCard: localCard, context: &context))
            )
            advance(context: &context)
        case .close(let reason, let frames, let endsDevice):
            close(reason, frames: frames, endsDevice: endsDevice, context: &context)
        case .drain:
            let timers = CloseTimers(roundTrip: securedLink.roundTrip, timeouts: context.timeouts)
            state = .draining(DrainingState(until: context.now + timers.drain))
        case .closed(let outcome):
            if let outcome { conclude(outcome, endsDevice: false, context: &context) }
            state = .closed
            linkBox = nil
        }
    }

    private mutating func establish(
        _ transport: NoiseTransport, peerParameters: HandshakeParameters, confirm: [UInt8]?,
        roundTrip: Duration?, context: inout SessionContext
    ) {
        let localToken = DiscoveryToken(context.random.bytes(DiscoveryToken.length))
        let pairing = Pairing(
            isInitiator: isInitiator, handshakeHash: transport.handshakeHash,
            identity: context.configuration.identity, random: &context.random)
        var link = Link(
            peer: peer,
            channel: SecureChannel(sessionID: sessionID, peerAddress: peerAddress, transport: transport),
            peerParameters: peerParameters, localToken: localToken,
            pairing: pairing, confirmDatagram: confirm, lastHeard: context.now,
            controlAt: context.now, controlInterval: context.configuration.measurement.sampleInterval,
            gate: ProximityGate(configuration: context.configuration.gate), rangingAt: context.now)
        if let roundTrip { link.roundTrip.add(roundTrip.secondsDouble) }
        context.emit(.secured(peer: peer))
        var ranging = RangingState(
            startedAt: context.now, window: context.timeouts.rangingWindow,
            deadline: context.now + context.timeouts.rangingWindow)
        ranging.rangingRound(link: &link, context: &context)
        linkBox = CopyOnWriteBox(link)
        handshakeCompleted = true
        state = .ranging(ranging)
    }

    /// Outputs the outcome, once: every way out of a live state passes here.
    func conclude(_ reason: CloseReason, endsDevice: Bool, context: inout SessionContext) {
        // A peer of version 2 closes with `identity-proof-failed` when our PROOF failed its check:
        // we warn about the peer we recognised, unless its own proof already made us warn.
        if case .error(let error) = reason, error.code == .identityProofFailed,
            let pairing = linkBox?.value.pairing, let claimed = pairing.claimedPeer,
            pairing.unprovenClaim == nil
        {
            context.emit(.knownPeerMismatch(name: claimed.name))
        }
        if reason == .exchanged, let remembered = linkBox?.value.pairing.rememberedPeer {
            context.emit(.peerRemembered(remembered))
        }
        if let link = linkBox?.value, link.pairing.verificationBegan,
            link.localConsent == nil || link.peerConsent == nil
        {
            switch reason {
            case .exchanged, .declined(by: .local), .timeout(.consent):
                // Our own user declined, or saw the prompt and let it run out.
                break
            case .declined(by: .peer), .outOfRange, .timeout, .error:
                context.counters.interruptedPairings += 1
                context.emit(.pairingInterrupted(peer: peer, code: link.pairing.code, reason: reason))
            }
        }
        context.outcomes.push(
            SessionOutcome(sessionID: sessionID, peer: peer, reason: reason, endsDevice: endsDevice))
    }

    // MARK: - Timers

    /// When ``handleTimeout(context:)`` must run next; nil when closed.
    var nextDeadline: Instant? {
        switch state {
        case .handshaking(let handshaking): handshaking.value.retransmitAt
        case .ranging(let ranging): liveDeadline(ranging)
        case .consenting(let consenting): liveDeadline(consenting)
        case .transferring(let transferring): liveDeadline(transferring.value)
        case .closing(let closing): closing.nextDeadline
        case .draining(let draining): draining.until
        case .closed: nil
        }
    }

    @inline(__always)  // so that the transfer's 553-byte state is read in place, not copied to a call
    private func liveDeadline(_ live: some LiveState) -> Instant {
        min(securedLink.rangingAt, securedLink.lastHeard + idle, live.nextDeadline(link: securedLink))
    }

    /// Runs the session's due timers.
    mutating func handleTimeout(context: inout SessionContext) {
        let transition: Transition
        // Each state is moved out, changed alone and stored back (see takeState()).
        switch takeState() {
        case .handshaking(var handshaking):
            transition = handshaking.value.handleTimeout(to: peerAddress, context: &context)
            state = .handshaking(handshaking)
        case .ranging(var ranging):
            transition = handleLiveTimeout(&ranging, context: &context)
            state = .ranging(ranging)
        case .consenting(var consenting):
            transition = handleLiveTimeout(&consenting, context: &context)
            state = .consenting(consenting)
        case .transferring(var transferring):
            transition = handleLiveTimeout(&transferring.value, context: &context)
            state = .transferring(transferring)
        case .closing(var closing):
            transition = closing.handleTimeout(link: &securedLink, context: &context)
            state = .closing(closing)
        case .draining(let draining):
            state = .draining(draining)
            transition = context.now >= draining.until ? .closed(outcome: nil) : .stay
        case .closed:
            return
        }
        apply(transition, context: &context)
        // A gate that opened (or opened again) may let the exchange go on.
        advance(context: &context)
        flush(context: &context)
    }

    /// The timers every live state shares, in order: idle, the state's own deadlines, then the
    /// ranging round, the walk-away and the state's deadlines it may bring forward, then the
    /// state's other timers.
    private mutating func handleLiveTimeout(_ live: inout some LiveState, context: inout SessionContext)
        -> Transition
    {
        if context.now >= securedLink.lastHeard + idle { return .timeout(.peerSilent) }
        if let expiry = live.expiry(link: securedLink, context: context) { return expiry }
        if context.now >= securedLink.rangingAt {
            live.rangingRound(link: &securedLink, context: &context)
            // Our gate opened, then saw the peer leave before the exchange completed.
            if securedLink.peerLeft { return .outOfRange }
            // The round's measurement may end the state now (ranging: our gate closed while it
            // held the window open, or a third far sample): end it in this call, or the next
            // deadline would already be due.
            if let expiry = live.expiry(link: securedLink, context: context) { return expiry }
        }
        return live.handleTimeout(link: &securedLink, context: &context)
    }

    // MARK: - Display

    /// Fills the session's part of a snapshot.
    func fill(_ snapshot: inout DeviceSnapshot) {
        snapshot.peer = peer
        snapshot.distanceCm = linkBox?.value.estimate?.distance
        snapshot.bearingDeg = linkBox?.value.estimate?.bearing
        switch state {
        case .handshaking:
            snapshot.stage = .connecting
        case .ranging:
            snapshot.stage = .ranging
        case .consenting:
            snapshot.stage = .consenting
        case .transferring(let transferring):
            snapshot.stage = .exchanging
            snapshot.sentChunks = transferring.value.sender?.ackedCount ?? 0
            snapshot.totalSendChunks = transferring.value.sender?.total ?? 0
            snapshot.receivedChunks = transferring.value.receiver?.haveCount ?? 0
            snapshot.totalReceiveChunks = transferring.value.receiver?.total ?? 0
        case .closing, .draining, .closed:
            snapshot.stage = .closing
        }
    }
}
