import ProfileDropCrypto
import ProfileDropNoise

/// One unicast exchange session with one peer: handshake, ranging, consent, card transfer and
/// close, as the state machine in PROTOCOL.md section 6.
struct ExchangeSession {
    let sessionID: UInt64
    let peer: DeviceID
    let peerAddress: PeerAddress
    let isInitiator: Bool
    private(set) var state: ExchangeState
    /// How the session ended, once that is decided (entering closing or draining, or failing).
    private(set) var outcome: CloseReason?
    /// The device has reported ``outcome``.
    var outcomeReported = false
    /// The outcome ends the device, not just this session: an exchange, or a decline (including
    /// a consent request nobody answered).
    private(set) var endsDevice = false
    private let localCard: [UInt8]?
    /// A secured session with no authenticated packet for this long closes.
    private let idle: Duration

    private init(
        sessionID: UInt64, peer: DeviceID, peerAddress: PeerAddress, isInitiator: Bool, state: ExchangeState,
        context: SessionContext
    ) {
        self.sessionID = sessionID
        self.peer = peer
        self.peerAddress = peerAddress
        self.isInitiator = isInitiator
        self.state = state
        self.localCard = context.configuration.card?.encoded()
        self.idle = context.timeouts.idle
    }

    /// The Noise prologue: label, version, session id, initiator id, responder id, so a handshake
    /// cannot be replayed into another session or another protocol version.
    static func prologue(sessionID: UInt64, initiator: DeviceID, responder: DeviceID) -> [UInt8] {
        var writer = ByteWriter(capacity: 36)
        writer.writeBytes(WireConstants.prologueLabel)
        writer.writeInteger(WireConstants.version)
        writer.writeInteger(sessionID)
        writer.writeInteger(initiator.rawValue)
        writer.writeInteger(responder.rawValue)
        return writer.bytes
    }

    private static func parameters(_ context: SessionContext) -> HandshakeParameters {
        HandshakeParameters(
            maxCardBytes: UInt32(clamping: context.limits.maxCardBytes),
            receiveWindow: UInt16(clamping: max(context.limits.sendWindow, 1) * 2))
    }

    private static func handshake(
        role: NoiseRole, sessionID: UInt64, initiator: DeviceID, responder: DeviceID, context: SessionContext
    ) -> HandshakeState {
        do {
            return try HandshakeState(
                protocolName: WireConstants.noiseProtocolName, role: role,
                prologue: prologue(sessionID: sessionID, initiator: initiator, responder: responder),
                staticKey: context.configuration.staticKey, remoteStaticKey: nil)
        } catch {
            preconditionFailure("the fixed Noise protocol name and our static key are valid: \(error)")
        }
    }

    /// Invites `peer`: sends INVITE carrying Noise message 1.
    static func initiate(to peer: DeviceID, at address: PeerAddress, context: inout SessionContext)
        -> ExchangeSession
    {
        let sessionID = context.random.nextUInt64()
        var noise = handshake(
            role: .initiator, sessionID: sessionID, initiator: context.deviceID, responder: peer,
            context: context)
        let message: [UInt8]
        do {
            message = try noise.writeMessage(payload: [], random: &context.random)
        } catch {
            preconditionFailure("the first XX message has no DH to fail: \(error)")
        }
        let datagram = Packet.invite(
            HandshakePacket(
                sessionID: sessionID, sender: context.deviceID, receiver: peer, noiseMessage: message)
        ).encoded()
        context.outbox.push(OutgoingDatagram(destination: .unicast(address), bytes: datagram))
        context.emit(.connecting(peer: peer, initiator: true))
        let state = HandshakingState(
            noise: noise, lastDatagram: datagram,
            retransmitAt: context.now + context.timeouts.handshakeRetransmit)
        return ExchangeSession(
            sessionID: sessionID, peer: peer, peerAddress: address, isInitiator: true,
            state: .handshaking(state),
            context: context)
    }

    /// Accepts an INVITE: reads Noise message 1 and answers ACCEPT with message 2.
    /// - Throws: `.handshakeFailed` or `.malformed` when the invitation cannot be read.
    static func accept(
        _ invite: HandshakePacket, from source: PeerAddress, context: inout SessionContext
    ) throws(ProtocolError) -> ExchangeSession {
        var noise = handshake(
            role: .responder, sessionID: invite.sessionID, initiator: invite.sender,
            responder: context.deviceID,
            context: context)
        let message: [UInt8]
        do {
            let payload = try noise.readMessage(invite.noiseMessage)
            guard payload.isEmpty else { throw ProtocolError(.malformed, "INVITE payload must be empty") }
            message = try noise.writeMessage(payload: parameters(context).encoded(), random: &context.random)
        } catch let error as ProtocolError {
            throw error
        } catch {
            throw ProtocolError(.handshakeFailed, "INVITE: \(error)")
        }
        let datagram = Packet.accept(
            HandshakePacket(
                sessionID: invite.sessionID, sender: context.deviceID, receiver: invite.sender,
                noiseMessage: message)
        ).encoded()
        context.outbox.push(OutgoingDatagram(destination: .unicast(source), bytes: datagram))
        context.emit(.connecting(peer: invite.sender, initiator: false))
        let state = HandshakingState(
            noise: noise, lastDatagram: datagram,
            retransmitAt: context.now + context.timeouts.handshakeRetransmit)
        return ExchangeSession(
            sessionID: invite.sessionID, peer: invite.sender, peerAddress: source, isInitiator: false,
            state: .handshaking(state), context: context)
    }

    /// Whether we invited and are still waiting for ACCEPT (the only time BUSY or a crossing
    /// INVITE matters).
    var isAwaitingAccept: Bool {
        switch state {
        case .handshaking: isInitiator
        case .ranging, .consenting, .transferring, .closing, .draining, .closed: false
        }
    }

    /// Whether the session still has a live exchange (not closing, draining or closed).
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
        switch packet {
        case .invite(let invite):
            try handleDuplicateInvite(invite, context: &context)
        case .accept(let accept):
            try handleAccept(accept, context: &context)
        case .confirm(let confirm):
            try handleConfirm(confirm, context: &context)
        case .secure(let secure):
            try handleSecure(secure, context: &context)
        case .beacon, .query, .busy:
            throw ProtocolError(.unexpectedMessage, "\(packet.type) is not a session message")
        }
    }

    private mutating func handleDuplicateInvite(
        _ invite: HandshakePacket, context: inout SessionContext
    ) throws(ProtocolError) {
        guard !isInitiator, invite.sender == peer else {
            throw ProtocolError(.unexpectedMessage, "INVITE for a session we did not accept")
        }
        switch state {
        case .handshaking(let handshaking):
            // Our ACCEPT was lost: answer again, without counting an attempt.
            context.outbox.push(
                OutgoingDatagram(destination: .unicast(peerAddress), bytes: handshaking.lastDatagram))
        case .ranging, .consenting, .transferring, .closing, .draining, .closed:
            break  // A stale duplicate: the initiator already has our ACCEPT.
        }
    }

    private mutating func handleAccept(_ accept: HandshakePacket, context: inout SessionContext)
        throws(ProtocolError)
    {
        guard isInitiator, accept.sender == peer, accept.receiver == context.deviceID else {
            throw ProtocolError(.unexpectedMessage, "ACCEPT from a device we did not invite")
        }
        switch state {
        case .handshaking(var handshaking):
            let confirmMessage: [UInt8]
            let parameters: HandshakeParameters
            do {
                let payload = try handshaking.noise.readMessage(accept.noiseMessage)
                parameters = try HandshakeParameters(decoding: payload)
                confirmMessage = try handshaking.noise.writeMessage(
                    payload: Self.parameters(context).encoded(), random: &context.random)
            } catch let error as ProtocolError {
                throw error
            } catch {
                throw ProtocolError(.handshakeFailed, "ACCEPT: \(error)")
            }
            let confirm = Packet.confirm(
                HandshakePacket(
                    sessionID: sessionID, sender: context.deviceID, receiver: peer,
                    noiseMessage: confirmMessage)
            ).encoded()
            context.outbox.push(OutgoingDatagram(destination: .unicast(peerAddress), bytes: confirm))
            establish(noise: handshaking.noise, parameters: parameters, confirm: confirm, context: &context)
        case .ranging(let ranging):
            resendConfirm(ranging.link, context: &context)
        case .consenting(let consenting):
            resendConfirm(consenting.link, context: &context)
        case .transferring(let transferring):
            resendConfirm(transferring.link, context: &context)
        case .closing, .draining, .closed:
            break
        }
    }

    private func resendConfirm(_ link: Link, context: inout SessionContext) {
        guard let confirm = link.confirmDatagram else { return }
        context.outbox.push(OutgoingDatagram(destination: .unicast(peerAddress), bytes: confirm))
    }

    private mutating func handleConfirm(_ confirm: HandshakePacket, context: inout SessionContext)
        throws(ProtocolError)
    {
        guard !isInitiator, confirm.sender == peer, confirm.receiver == context.deviceID else {
            throw ProtocolError(.unexpectedMessage, "CONFIRM from a device we did not accept")
        }
        switch state {
        case .handshaking(var handshaking):
            let parameters: HandshakeParameters
            do {
                parameters = try HandshakeParameters(
                    decoding: try handshaking.noise.readMessage(confirm.noiseMessage))
            } catch let error as ProtocolError {
                throw error
            } catch {
                throw ProtocolError(.handshakeFailed, "CONFIRM: \(error)")
            }
            establish(noise: handshaking.noise, parameters: parameters, confirm: nil, context: &context)
        case .ranging, .consenting, .transferring, .closing, .draining, .closed:
            break  // A retransmitted CONFIRM after we were already secured.
        }
    }

    private mutating func establish(
        noise: HandshakeState, parameters: HandshakeParameters, confirm: [UInt8]?,
        context: inout SessionContext
    ) {
        let transport = noise.split()
        let link = Link(
            channel: SecureChannel(sessionID: sessionID, peerAddress: peerAddress, transport: transport),
            peerParameters: parameters, localToken: context.random.bytes(WireConstants.tokenLength),
            handshakeHash: transport.handshakeHash, confirmDatagram: confirm, lastHeard: context.now,
            controlAt: context.now, controlInterval: context.configuration.measurement.sampleInterval)
        context.emit(.secured(peer: peer, verificationCode: Self.verificationCode(transport.handshakeHash)))
        var ranging = RangingState(
            link: link, gate: ProximityGate(configuration: context.configuration.gate),
            startedAt: context.now,
            deadline: context.now + context.timeouts.rangingWindow, sampleAt: context.now)
        rangingTick(&ranging, context: &context)
        state = .ranging(ranging)
    }

    /// Six decimal digits from the handshake hash; equal on both devices.
    static func verificationCode(_ handshakeHash: [UInt8]) -> String {
        var value: UInt64 = 0
        for byte in handshakeHash.prefix(8) { value = value << 8 | UInt64(byte) }
        let digits = String(value % 1_000_000)
        return String(repeating: "0", count: 6 - digits.count) + digits
    }

    private var link: Link? {
        switch state {
        case .ranging(let ranging): ranging.link
        case .consenting(let consenting): consenting.link
        case .transferring(let transferring): transferring.link
        case .closing(let closing): closing.link
        case .draining(let draining): draining.link
        case .handshaking, .closed: nil
        }
    }

    private mutating func setLink(_ link: Link) {
        switch state {
        case .ranging(var ranging):
            ranging.link = link
            state = .ranging(ranging)
        case .consenting(var consenting):
            consenting.link = link
            state = .consenting(consenting)
        case .transferring(var transferring):
            transferring.link = link
            state = .transferring(transferring)
        case .closing(var closing):
            closing.link = link
            state = .closing(closing)
        case .draining(var draining):
            draining.link = link
            state = .draining(draining)
        case .handshaking, .closed:
            break
        }
    }

    private mutating func handleSecure(_ packet: SecurePacket, context: inout SessionContext)
        throws(ProtocolError)
    {
        guard var link else {
            switch state {
            case .handshaking:
                throw ProtocolError(.unexpectedMessage, "encrypted packet before the handshake completed")
            case .ranging, .consenting, .transferring, .closing, .draining, .closed:
                throw ProtocolError(.unknownSession, "session \(sessionID) is closed")
            }
        }
        // Replay and authentication failures throw here, before anything changed.
        let frames = try link.channel.open(packet)
        let inbound: Link.Inbound
        do {
            inbound = try link.absorb(frames, context: &context)
        } catch {
            setLink(link)
            fail(error, context: &context)
            throw error
        }
        setLink(link)
        do {
            try react(to: inbound, context: &context)
        } catch {
            fail(error, context: &context)
            throw error
        }
        // The facts in the packet count before its CLOSE: they may complete our side too.
        advance(context: &context)
        if let close = inbound.close { peerClosed(close, context: &context) }
    }

    /// State-specific handling of chunks, acknowledgements and CLOSE_ACK.
    private mutating func react(to inbound: Link.Inbound, context: inout SessionContext) throws(ProtocolError)
    {
        switch state {
        case .ranging(var ranging):
            if inbound.learned { ranging.link.controlSoon(context: context) }
            state = .ranging(ranging)
        case .consenting(var consenting):
            if inbound.learned { consenting.link.controlSoon(context: context) }
            state = .consenting(consenting)
        case .transferring(var transferring):
            if inbound.learned { transferring.link.controlSoon(context: context) }
            if var receiver = transferring.receiver {
                for chunk in inbound.chunks { try receiver.accept(index: chunk.index, data: chunk.data) }
                transferring.receiver = receiver
            }
            if var sender = transferring.sender {
                for sack in inbound.sacks { _ = sender.apply(sack, now: context.now) }
                transferring.sender = sender
                reportProgress(&transferring, context: &context)
                sendChunks(&transferring, context: &context)
            }
            try afterChunks(&transferring, context: &context)
            state = .transferring(transferring)
        case .closing(let closing):
            if inbound.closeAck {
                state = .draining(
                    DrainingState(link: closing.link, until: context.now + context.timeouts.drain))
            }
        case .handshaking, .draining, .closed:
            break
        }
    }

    private func reportProgress(_ transferring: inout TransferringState, context: inout SessionContext) {
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
    /// verifies the card once complete.
    private func afterChunks(_ transferring: inout TransferringState, context: inout SessionContext)
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
            context.emit(.cardReceived(card))
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

    /// The peer sent CLOSE: acknowledge it and drain.
    private mutating func peerClosed(_ close: CloseFrame, context: inout SessionContext) {
        guard var link else { return }
        link.send([.closeAck], context: &context)
        if outcome == nil {
            let exchangeComplete = isExchangeComplete
            endsDevice = (close.code == .exchanged && exchangeComplete) || close.code == .declined
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
    private var isExchangeComplete: Bool {
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

    /// Closes with CLOSE(error) after the peer broke the protocol.
    private mutating func fail(_ error: ProtocolError, context: inout SessionContext) {
        close(
            .error(error), frames: [.close(CloseFrame(code: .error, errorCode: error.code.wireValue))],
            context: &context)
    }

    /// Enters closing: sends `frames` (ending with CLOSE) and retransmits them until CLOSE_ACK.
    private mutating func close(_ reason: CloseReason, frames: [Frame], context: inout SessionContext) {
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
                retransmitAt: context.now + context.timeouts.closeRetransmit))
    }

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

    private mutating func setLocalConsent(_ decision: ConsentDecision, context: inout SessionContext) {
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

    // MARK: - Progress

    /// Moves to the next state when the facts allow it.
    private mutating func advance(context: inout SessionContext) {
        switch state {
        case .ranging(let ranging):
            guard ranging.link.localInRange && ranging.link.peerInRange else { return }
            enterConsenting(ranging.link, context: &context)
            advance(context: &context)
        case .consenting(let consenting):
            if consenting.link.localConsent == .decline {
                close(
                    .declined(by: .local),
                    frames: [.consent(.decline, nil), .close(CloseFrame(code: .declined))],
                    context: &context)
            } else if consenting.link.peerConsent == .decline {
                close(.declined(by: .peer), frames: [.close(CloseFrame(code: .declined))], context: &context)
            } else if consenting.link.localConsent != nil && consenting.link.peerConsent != nil {
                enterTransferring(consenting.link, context: &context)
                advance(context: &context)
            }
        case .transferring(let transferring):
            let sent = transferring.sender == nil || transferring.link.peerAckedOurCard
            let received = transferring.receiver == nil || transferring.link.verifiedPeerCard != nil
            guard sent && received else { return }
            // Our outstanding facts (CARD_ACK, or CONSENT if the peer missed it) travel with CLOSE.
            let frames =
                transferring.link.controlFrames().filter { $0.type != .receipt }
                + [.close(CloseFrame(code: .exchanged))]
            close(.exchanged, frames: frames, context: &context)
        case .handshaking, .closing, .draining, .closed:
            break
        }
    }

    private mutating func enterConsenting(_ link: Link, context: inout SessionContext) {
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

    private mutating func enterTransferring(_ link: Link, context: inout SessionContext) {
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

    private func sendChunks(_ transferring: inout TransferringState, context: inout SessionContext) {
        guard var sender = transferring.sender else { return }
        while let chunk = sender.takeChunk(now: context.now) {
            transferring.link.send([chunk], context: &context)
        }
        context.counters.chunkRetransmissions +=
            sender.retransmissions - (transferring.sender?.retransmissions ?? 0)
        transferring.sendAt = sender.nextDeadline(now: context.now)
        transferring.sender = sender
    }

    // MARK: - Timers

    /// When ``handleTimeout(context:)`` must run next; nil when closed.
    var nextDeadline: Instant? {
        switch state {
        case .handshaking(let handshaking):
            return handshaking.retransmitAt
        case .ranging(let ranging):
            return min(ranging.sampleAt, ranging.deadline, ranging.link.lastHeard + idle)
        case .consenting(let consenting):
            var deadline = min(
                consenting.link.controlAt, consenting.peerDeadline, consenting.link.lastHeard + idle)
            if let user = consenting.userDeadline { deadline = min(deadline, user) }
            return deadline
        case .transferring(let transferring):
            var deadline = min(
                transferring.link.controlAt, transferring.deadline, transferring.link.lastHeard + idle)
            if let sackAt = transferring.receiver?.sackAt { deadline = min(deadline, sackAt) }
            if let sendAt = transferring.sendAt { deadline = min(deadline, sendAt) }
            return deadline
        case .closing(let closing):
            return closing.retransmitAt
        case .draining(let draining):
            return draining.until
        case .closed:
            return nil
        }
    }

    /// Runs the session's due timers.
    mutating func handleTimeout(context: inout SessionContext) {
        let now = context.now
        switch state {
        case .handshaking(var handshaking):
            guard now >= handshaking.retransmitAt else { return }
            guard handshaking.transmissions < context.timeouts.handshakeAttempts else {
                outcome = outcome ?? .timeout(what: "handshake")
                state = .closed
                return
            }
            context.outbox.push(
                OutgoingDatagram(destination: .unicast(peerAddress), bytes: handshaking.lastDatagram))
            context.counters.handshakeRetransmissions += 1
            handshaking.retransmitAt =
                now
                + context.timeouts.handshakeRetransmit.doubled(handshaking.transmissions, cap: .seconds(30))
            handshaking.transmissions += 1
            state = .handshaking(handshaking)
        case .ranging(var ranging):
            if now >= ranging.link.lastHeard + idle {
                close(
                    .timeout(what: "peer silent"), frames: [.close(CloseFrame(code: .timeout))],
                    context: &context)
            } else if now >= ranging.deadline || isFar(ranging, context: context) {
                close(.outOfRange, frames: [.close(CloseFrame(code: .outOfRange))], context: &context)
            } else if now >= ranging.sampleAt {
                rangingTick(&ranging, context: &context)
                state = .ranging(ranging)
                advance(context: &context)
            }
        case .consenting(var consenting):
            if now >= consenting.link.lastHeard + idle {
                close(
                    .timeout(what: "peer silent"), frames: [.close(CloseFrame(code: .timeout))],
                    context: &context)
            } else if let user = consenting.userDeadline, now >= user {
                // Nobody answered: decline, and say why locally.
                endsDevice = true
                close(
                    .timeout(what: "consent"),
                    frames: [.consent(.decline, nil), .close(CloseFrame(code: .declined))],
                    context: &context)
            } else if now >= consenting.peerDeadline {
                close(
                    .timeout(what: "peer consent"), frames: [.close(CloseFrame(code: .timeout))],
                    context: &context)
            } else if now >= consenting.link.controlAt {
                consenting.link.sendControl(backOff: true, context: &context)
                state = .consenting(consenting)
            }
        case .transferring(var transferring):
            if now >= transferring.link.lastHeard + idle {
                close(
                    .timeout(what: "peer silent"), frames: [.close(CloseFrame(code: .timeout))],
                    context: &context)
                return
            }
            if now >= transferring.deadline {
                close(
                    .timeout(what: "transfer"), frames: [.close(CloseFrame(code: .timeout))],
                    context: &context)
                return
            }
            sendChunks(&transferring, context: &context)
            if var receiver = transferring.receiver, let sackAt = receiver.sackAt, now >= sackAt {
                receiver.sackAt = nil
                receiver.unacknowledged = 0
                transferring.receiver = receiver
                transferring.link.send([.cardSack(receiver.sack())], context: &context)
            }
            if now >= transferring.link.controlAt {
                let extra: [Frame] = transferring.receiver.map { [.cardSack($0.sack())] } ?? []
                transferring.link.sendControl(extra: extra, backOff: true, context: &context)
            }
            state = .transferring(transferring)
        case .closing(var closing):
            guard now >= closing.retransmitAt else { return }
            guard closing.transmissions < context.timeouts.closeAttempts else {
                state = .closed
                return
            }
            closing.link.send(closing.frames + [.receipt(closing.link.receipts)], context: &context)
            closing.retransmitAt =
                now + context.timeouts.closeRetransmit.doubled(closing.transmissions, cap: .seconds(10))
            closing.transmissions += 1
            state = .closing(closing)
        case .draining(let draining):
            if now >= draining.until { state = .closed }
        case .closed:
            break
        }
    }

    /// Whether the peer is clearly too far to come into range soon: three raw measurements in a
    /// row beyond the far distance, after the far-abort delay. (The gate's filtered estimate needs
    /// more samples; this only decides to stop trying, never to open.)
    private func isFar(_ ranging: RangingState, context: SessionContext) -> Bool {
        context.now >= ranging.startedAt + context.timeouts.rangingFarAbort && !ranging.link.localInRange
            && ranging.consecutiveFar >= 3
    }

    /// Sends RANGING with our pose and takes one proximity measurement of the peer.
    private func rangingTick(_ ranging: inout RangingState, context: inout SessionContext) {
        let interval = context.configuration.measurement.sampleInterval
        ranging.link.rangingSequence &+= 1
        var sample: RangingSample?
        if let peerPose = ranging.link.peerPose, let heardAt = ranging.link.peerPoseAt,
            context.now - heardAt <= interval * 3
        {
            sample = context.configuration.measurement.sample(
                truePose: context.pose, peerPose: peerPose, random: &context.random)
        }
        ranging.gate.add(sample, at: context.now)
        if let sample {
            ranging.consecutiveFar =
                sample.distance > context.limits.farAbortDistance ? ranging.consecutiveFar + 1 : 0
        }
        if sample != nil, let estimate = ranging.gate.estimate {
            ranging.link.estimate = estimate
            context.emit(.ranging(distanceCm: estimate.distance, bearingDeg: estimate.bearing))
        }
        if ranging.gate.isOpen && !ranging.link.localInRange {
            ranging.link.localInRange = true
            context.emit(.inRange)
        }
        let frame = Frame.ranging(
            RangingFrame(
                sequence: ranging.link.rangingSequence, pose: context.pose, token: ranging.link.localToken))
        ranging.link.send([frame] + ranging.link.controlFrames(), context: &context)
        ranging.sampleAt = context.now + interval
        ranging.link.controlAt = ranging.sampleAt
    }

    // MARK: - Display

    /// Fills the session's part of a snapshot.
    func fill(_ snapshot: inout DeviceSnapshot) {
        snapshot.peer = peer
        snapshot.distanceCm = link?.estimate?.distance
        snapshot.bearingDeg = link?.estimate?.bearing
        switch state {
        case .handshaking:
            snapshot.stage = .connecting
        case .ranging:
            snapshot.stage = .ranging
        case .consenting:
            snapshot.stage = .consenting
        case .transferring(let transferring):
            snapshot.stage = .exchanging
            snapshot.sentChunks = transferring.sender?.ackedCount ?? 0
            snapshot.totalSendChunks = transferring.sender?.total ?? 0
            snapshot.receivedChunks = transferring.receiver?.haveCount ?? 0
            snapshot.totalReceiveChunks = transferring.receiver?.total ?? 0
        case .closing, .draining, .closed:
            snapshot.stage = .closing
        }
    }
}
