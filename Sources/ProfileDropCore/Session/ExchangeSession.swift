import ProfileDropCrypto
import ProfileDropNoise

/// One unicast exchange session with one peer: handshake, ranging, consent, card transfer and
/// close, as the state machine in PROTOCOL.md section 6.
struct ExchangeSession {
    let sessionID: UInt64
    let peer: DeviceID
    let peerAddress: PeerAddress
    let isInitiator: Bool

    var state: ExchangeState

    /// How the session ended, once that is decided (entering closing or draining, or failing).
    var outcome: CloseReason?

    /// The device has reported ``outcome``.
    var outcomeReported = false

    /// The outcome ends the device, not just this session: an exchange, or a decline (including
    /// a consent request nobody answered).
    var endsDevice = false

    let localCard: [UInt8]?

    /// A secured session with no authenticated packet for this long closes.
    let idle: Duration

    init(
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

    var link: Link? {
        switch state {
        case .ranging(let ranging): ranging.link
        case .consenting(let consenting): consenting.link
        case .transferring(let transferring): transferring.link
        case .closing(let closing): closing.link
        case .draining(let draining): draining.link
        case .handshaking, .closed: nil
        }
    }

    mutating func setLink(_ link: Link) {
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

    mutating func handleSecure(_ packet: SecurePacket, context: inout SessionContext)
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
    mutating func react(to inbound: Link.Inbound, context: inout SessionContext) throws(ProtocolError) {
        switch state {
        case .ranging(var ranging):
            if inbound.learned { ranging.link.controlSoon(context: context) }
            state = .ranging(ranging)
        case .consenting(var consenting):
            if inbound.learned { consenting.link.controlSoon(context: context) }
            state = .consenting(consenting)
        case .transferring(var transferring):
            // Held only here while chunks go in, so the reassembly buffer is written in place
            // instead of being copied whole for every packet.
            state = .closed
            defer { state = .transferring(transferring) }
            if inbound.learned { transferring.link.controlSoon(context: context) }
            for chunk in inbound.chunks {
                try transferring.receiver?.accept(index: chunk.index, data: chunk.data)
            }
            if var sender = transferring.sender {
                for sack in inbound.sacks { _ = sender.apply(sack, now: context.now) }
                transferring.sender = sender
                reportProgress(&transferring, context: &context)
                sendChunks(&transferring, context: &context)
            }
            try afterChunks(&transferring, context: &context)
        case .closing(var closing):
            if inbound.closeAck {
                state = .draining(
                    DrainingState(link: closing.link, until: context.now + context.timeouts.drain))
            } else if inbound.close == nil,
                context.now >= closing.lastSentAt + context.configuration.measurement.sampleInterval
            {
                // The peer is still in the session, so it has not seen our CLOSE: send it again
                // now rather than on the backed-off timer (at most once per ranging interval). After
                // a lost CLOSE, or a cut that healed, the peer learns the outcome within a round
                // trip instead of waiting for a retransmission seconds away.
                closing.link.send(closing.frames + [.receipt(closing.link.receipts)], context: &context)
                closing.lastSentAt = context.now
                state = .closing(closing)
            }
        case .handshaking, .draining, .closed:
            break
        }
    }

    // MARK: - Progress

    /// Moves to the next state when the facts allow it.
    mutating func advance(context: inout SessionContext) {
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
        case .transferring(var transferring):
            guard isExchangeComplete else { return }
            // Done. A walk-away is seen only some rounds late (the gate filters a window of
            // samples, and leaving takes several measurements in a row), so the devices must stay
            // in range for one gate window after the last fact arrived: then every sample the
            // open gate rests on was taken after it, and a move made before it has been seen.
            // The decision is taken at a ranging round that measured the peer: an open gate may
            // rest on samples up to a window old, and deciding on those alone would commit blind
            // to a peer cut off since, which could no longer learn the outcome (section 6.7).
            let completedAt = transferring.completedAt ?? context.now
            if transferring.completedAt == nil {
                transferring.completedAt = completedAt
                state = .transferring(transferring)
            }
            guard transferring.link.gate.isOpen, transferring.link.measuredAt == context.now,
                context.now >= completedAt + context.configuration.gate.window
            else { return }
            deliverReceivedCard(context: &context)
            // Our outstanding facts (CARD_ACK, or CONSENT if the peer missed it) travel with CLOSE.
            let frames =
                transferring.link.controlFrames().filter { $0.type != .receipt }
                + [.close(CloseFrame(code: .exchanged))]
            close(.exchanged, frames: frames, context: &context)
        case .handshaking, .closing, .draining, .closed:
            break
        }
    }

    // MARK: - Timers

    /// When ``handleTimeout(context:)`` must run next; nil when closed.
    var nextDeadline: Instant? {
        switch state {
        case .handshaking(let handshaking):
            return handshaking.retransmitAt
        case .ranging(let ranging):
            return min(ranging.link.rangingAt, ranging.deadline, ranging.link.lastHeard + idle)
        case .consenting(let consenting):
            var deadline = min(
                consenting.link.controlAt, consenting.link.rangingAt, consenting.peerDeadline,
                consenting.link.lastHeard + idle)
            if let user = consenting.userDeadline { deadline = min(deadline, user) }
            return deadline
        case .transferring(let transferring):
            var deadline = min(
                transferring.link.controlAt, transferring.link.rangingAt, transferring.deadline,
                transferring.link.lastHeard + idle)
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
                closeOutOfRange(context: &context)
            } else if now >= ranging.link.rangingAt {
                rangingTick(&ranging, context: &context)
                state = .ranging(ranging)
                // Our gate opened, then saw the peer leave while we waited for its IN_RANGE.
                if ranging.link.peerLeft {
                    closeOutOfRange(context: &context)
                    return
                }
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
            } else {
                if now >= consenting.link.rangingAt {
                    watchProximity(&consenting.link, context: &context)
                    // The link's packet numbers moved on: store it before closing through it.
                    state = .consenting(consenting)
                    if consenting.link.peerLeft {
                        closeOutOfRange(context: &context)
                        return
                    }
                }
                if now >= consenting.link.controlAt {
                    consenting.link.sendControl(backOff: true, context: &context)
                }
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
            if now >= transferring.link.rangingAt {
                watchProximity(&transferring.link, context: &context)
                state = .transferring(transferring)
                if transferring.link.peerLeft {
                    closeOutOfRange(context: &context)
                    return
                }
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
            // A gate that opened again may let a finished exchange close.
            advance(context: &context)
        case .closing(var closing):
            guard now >= closing.retransmitAt else { return }
            guard closing.transmissions < context.timeouts.closeAttempts else {
                state = .closed
                return
            }
            closing.link.send(closing.frames + [.receipt(closing.link.receipts)], context: &context)
            closing.lastSentAt = now
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
