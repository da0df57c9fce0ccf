import ProfileDropCrypto
import ProfileDropNoise

/// A handshake in progress.
///
/// The initiator first probes an address that has not proved it receives (PROTOCOL.md 5, "Return
/// routability"): it sends a PROBE, whose retransmissions the device pays from the address's
/// credit, and its INVITE once the PROBE_ACK echoes the challenge. It then retransmits its INVITE
/// until ACCEPT arrives. The responder (a half-open handshake,
/// PROTOCOL.md 5) never repeats its ACCEPT on its own timer: it answers each repeated INVITE with
/// one ACCEPT, so it never sends an unverified address more than it received from it, and it gives
/// the handshake up silently when ``retransmitAt`` passes.
struct HandshakingState {
    var noise: HandshakeState
    /// The last handshake datagram we sent (INVITE or ACCEPT): the INVITE is retransmitted until
    /// answered, the ACCEPT sent again for each duplicate INVITE. Empty while we probe.
    var lastDatagram: [UInt8]
    /// Initiator only: the INVITE as last sent, whose cookie a BUSY(retry) may change (its Noise
    /// message is empty until written, once the address is proven); nil for the responder.
    var invite: HandshakePacket?
    /// Initiator only: the challenge of our PROBE while the invitee's address has not echoed it;
    /// the INVITE waits until it has.
    var probe: UInt64?
    /// INVITE transmissions, or PROBE transmissions while ``probe`` is set.
    var transmissions = 1
    /// BUSY(retry) answers followed so far (initiator).
    var cookieRetries = 0
    /// Initiator: the next INVITE retransmission. Responder: when the half-open handshake expires.
    var retransmitAt: Instant
    /// When our first handshake datagram (PROBE, then INVITE; or ACCEPT) went out.
    var sentAt: Instant
    /// Initiator: when our INVITE last went out, first or again; a BUSY answers that one.
    var lastSentAt: Instant
    /// Initiator: when our INVITE last went out for a crossing INVITE; nil before the first.
    var crossingResentAt: Instant?
    /// Whether more than one of our handshake datagrams went out, so that the answer may belong to
    /// any of them (Karn): the handshake then gives no round-trip sample.
    var resent = false
}

extension HandshakingState {
    /// A duplicate INVITE: our ACCEPT was lost, so answer again, once per INVITE received.
    mutating func handleDuplicateInvite(to peerAddress: PeerAddress, context: inout SessionContext) {
        resent = true
        context.outbox.push(OutgoingDatagram(destination: .unicast(peerAddress), bytes: lastDatagram))
    }

    /// BUSY(retry) from the invitee (initiator): send the INVITE again at once carrying `cookie`, and
    /// keep it in every later retransmission. The same cookie again is dropped. Past
    /// ``HalfOpenHandshakes/cookieRetries`` new ones in one invitation, a new cookie sends nothing
    /// at once but still replaces the kept one, for the next retransmission: forged BUSY(retry)s
    /// cannot make us send more than a few extra INVITEs, nor crowd out the invitee's own cookie,
    /// which comes after them.
    mutating func retry(with cookie: [UInt8], to peerAddress: PeerAddress, context: inout SessionContext)
        throws(ProtocolError)
    {
        // Sixteen zero bytes are no cookie on the wire.
        let cookie = cookie.allSatisfy { $0 == 0 } ? [] : cookie
        guard var invite, probe == nil else {
            throw ProtocolError(.unexpectedMessage, "BUSY(retry) for a session we accepted or still probe")
        }
        guard cookie != invite.cookie else {
            throw ProtocolError(.unexpectedMessage, "BUSY(retry) repeats the cookie our INVITE carries")
        }
        invite.cookie = cookie
        self.invite = invite
        lastDatagram = Packet.invite(invite).encoded()
        guard cookieRetries < HalfOpenHandshakes.cookieRetries else { return }
        cookieRetries += 1
        sendInviteAgain(to: peerAddress, context: &context)
    }

    /// The least time between two INVITEs sent for crossing INVITEs
    /// (``resendForCrossing(to:context:)``): a forger that spoofs the invitee's address makes us send
    /// at most one INVITE per gap, to the invitee, for the invitation's life, beside the
    /// retransmissions of the back-off.
    static let crossingResendGap: Duration = .milliseconds(100)

    /// The invitee's own INVITE crossed ours and we stay initiator: it most likely has not seen ours
    /// (or needs it with the cookie it asked for), or it would have accepted it and dropped its own.
    /// Sends ours again at once, unless one went out for a crossing INVITE within
    /// ``crossingResendGap``, without moving the back-off or counting an attempt: over a lossy link
    /// the next retransmission may be seconds away, while the invitee's INVITEs keep arriving and
    /// are ignored. The gap does not count our retransmissions: the invitee's INVITEs follow the same
    /// back-off as ours, so they tend to arrive just after each of ours, and a gap counted from
    /// those let almost none through.
    mutating func resendForCrossing(to peerAddress: PeerAddress, context: inout SessionContext) {
        // While we probe, the INVITE waits for the echo: the crossing INVITE proves nothing.
        guard invite != nil, probe == nil else { return }
        if let crossingResentAt, context.now < crossingResentAt + Self.crossingResendGap { return }
        crossingResentAt = context.now
        sendInviteAgain(to: peerAddress, context: &context)
    }

    /// Our INVITE again, as last sent (initiator): on the timer, for a cookie, or for a crossing
    /// INVITE. Its answer may then belong to any copy, so the handshake gives no round-trip sample.
    private mutating func sendInviteAgain(to peerAddress: PeerAddress, context: inout SessionContext) {
        resent = true
        context.outbox.push(OutgoingDatagram(destination: .unicast(peerAddress), bytes: lastDatagram))
        context.counters.handshakeRetransmissions += 1
        lastSentAt = context.now
    }

    /// ACCEPT (initiator): reads Noise message 2 and writes message 3 for CONFIRM, which the first
    /// ranging round sends in front of the first SECURE packet.
    mutating func handleAccept(
        _ accept: HandshakePacket, sessionID: UInt64, context: inout SessionContext
    ) throws(ProtocolError) -> Transition {
        let confirmMessage: [UInt8]
        let parameters: HandshakeParameters
        do {
            let payload = try noise.readMessage(accept.noiseMessage)
            parameters = try HandshakeParameters(decoding: payload)
            confirmMessage = try noise.writeMessage(
                payload: ExchangeSession.parameters(context).encoded(), random: &context.random)
        } catch let error as ProtocolError {
            throw error
        } catch {
            throw ProtocolError(.handshakeFailed, "ACCEPT: \(error)")
        }
        let confirm = Packet.confirm(
            HandshakePacket(
                sessionID: sessionID, sender: context.deviceID, receiver: accept.sender,
                noiseMessage: confirmMessage)
        ).encoded()
        return .secured(
            noise.split(), peerParameters: parameters, confirm: confirm, roundTrip: roundTrip(context))
    }

    /// The round trip our handshake datagram took, if it went out once: the first sample of the
    /// session's round trip, which the close uses (PROTOCOL.md 6.7).
    func roundTrip(_ context: SessionContext) -> Duration? {
        resent ? nil : context.now - sentAt
    }

    /// CONFIRM (responder): reads Noise message 3.
    mutating func handleConfirm(_ confirm: HandshakePacket, context: SessionContext) throws(ProtocolError)
        -> Transition
    {
        let parameters: HandshakeParameters
        do {
            parameters = try HandshakeParameters(decoding: try noise.readMessage(confirm.noiseMessage))
        } catch let error as ProtocolError {
            throw error
        } catch {
            throw ProtocolError(.handshakeFailed, "CONFIRM: \(error)")
        }
        return .secured(
            noise.split(), peerParameters: parameters, confirm: nil, roundTrip: roundTrip(context))
    }

    /// Retransmits our INVITE with back-off (doubling up to the cap), and gives up once the
    /// handshake's lifetime since the first INVITE (or PROBE) has passed. A responder's half-open
    /// handshake only expires, with no outcome: its sender proved nothing, so nobody is blamed.
    /// While we probe, the device sends the PROBE again (``sendProbeAgain(to:context:)``) before
    /// this runs, when the address's credit allows; if it could not, the next try is one first
    /// timeout later.
    mutating func handleTimeout(to peerAddress: PeerAddress, context: inout SessionContext) -> Transition {
        guard context.now >= retransmitAt else { return .stay }
        guard invite != nil else { return .closed(outcome: nil) }
        let givesUpAt = sentAt + HalfOpenHandshakes.lifetime(context.timeouts)
        guard context.now < givesUpAt else { return .closed(outcome: .timeout(.handshake)) }
        guard probe == nil else {
            retransmitAt = min(context.now + context.timeouts.handshakeRetransmit, givesUpAt)
            return .stay
        }
        sendInviteAgain(to: peerAddress, context: &context)
        scheduleRetransmission(givesUpAt: givesUpAt, context: context)
        return .stay
    }

    /// The next retransmission, at most four first timeouts apart (1 s): doubling to the end left
    /// the lifetime's last 4 s without an INVITE, and at 30 % loss each way one invitation in 30
    /// lost every round trip.
    private mutating func scheduleRetransmission(givesUpAt: Instant, context: SessionContext) {
        let wait = context.timeouts.handshakeRetransmit.doubled(
            transmissions, cap: context.timeouts.handshakeRetransmit * 4)
        retransmitAt = min(context.now + wait, givesUpAt)
        transmissions += 1
    }

    /// Writes Noise message 1 into our INVITE (initiator). Only once the address is proven, so that
    /// no ephemeral key is drawn for a phantom that never answers our PROBE, and the key is among
    /// the draws of the input that sends the INVITE (a capture's decryptor looks for it there).
    mutating func writeInvite(context: inout SessionContext) {
        guard var invite else { return }
        do {
            invite.noiseMessage = try noise.writeMessage(payload: [], random: &context.random)
        } catch {
            preconditionFailure("the first XX message has no DH to fail: \(error)")
        }
        self.invite = invite
        lastDatagram = Packet.invite(invite).encoded()
    }

    /// Whether our PROBE's retransmission is due now (and the handshake not yet given up).
    func isProbeDue(now: Instant, timeouts: Timeouts) -> Bool {
        probe != nil && invite != nil && now >= retransmitAt
            && now < sentAt + HalfOpenHandshakes.lifetime(timeouts)
    }

    /// Our PROBE again, on the INVITE's back-off schedule; the device checked the credit.
    mutating func sendProbeAgain(to peerAddress: PeerAddress, context: inout SessionContext) {
        guard let probe else { return }
        context.sendProbe(probe, to: peerAddress)
        resent = true
        lastSentAt = context.now
        scheduleRetransmission(
            givesUpAt: sentAt + HalfOpenHandshakes.lifetime(context.timeouts), context: context)
    }

    /// PROBE_ACK echoing `challenge` from the invitee's address: it receives there, so our INVITE
    /// goes out now, and the handshake's clock starts again from it. False, changing nothing, for
    /// any other challenge.
    mutating func probeAnswered(
        _ challenge: UInt64, to peerAddress: PeerAddress, context: inout SessionContext
    )
        -> Bool
    {
        guard let probe, probe == challenge, invite != nil else { return false }
        self.probe = nil
        writeInvite(context: &context)
        context.outbox.push(OutgoingDatagram(destination: .unicast(peerAddress), bytes: lastDatagram))
        sentAt = context.now
        lastSentAt = context.now
        retransmitAt = context.now + context.timeouts.handshakeRetransmit
        transmissions = 1
        resent = false
        return true
    }
}

extension ExchangeSession {
    static func parameters(_ context: SessionContext) -> HandshakeParameters {
        HandshakeRules.parameters(context.limits)
    }

    static func handshake(
        role: NoiseRole, sessionID: UInt64, initiator: DeviceID, responder: DeviceID, context: SessionContext
    ) -> HandshakeState {
        HandshakeRules.handshake(
            role: role, sessionID: sessionID, initiator: initiator, responder: responder,
            staticKey: context.configuration.staticKey)
    }

    /// Invites `peer`: sends INVITE carrying Noise message 1, or, when `address` has not proved that
    /// it receives, a PROBE first (the device paid for it), and the INVITE once it is echoed. A PROBE
    /// sent ahead to `address` and still waiting (`probedAhead`, its challenge) counts as that first
    /// PROBE: none goes now, so one BEACON never draws two (PROTOCOL.md 5, "Amplification").
    static func initiate(
        to peer: DeviceID, at address: PeerAddress, proven: Bool, probedAhead: UInt64? = nil,
        context: inout SessionContext
    ) -> ExchangeSession {
        let sessionID = context.random.nextUInt64()
        let noise = handshake(
            role: .initiator, sessionID: sessionID, initiator: context.deviceID, responder: peer,
            context: context)
        var state = HandshakingState(
            noise: noise, lastDatagram: [],
            invite: HandshakePacket(
                sessionID: sessionID, sender: context.deviceID, receiver: peer, noiseMessage: []),
            retransmitAt: context.now + context.timeouts.handshakeRetransmit, sentAt: context.now,
            lastSentAt: context.now)
        if proven {
            state.writeInvite(context: &context)
            context.outbox.push(OutgoingDatagram(destination: .unicast(address), bytes: state.lastDatagram))
        } else if let probedAhead {
            state.probe = probedAhead
        } else {
            let challenge = context.random.nextUInt64()
            context.sendProbe(challenge, to: address)
            state.probe = challenge
        }
        context.emit(.connecting(peer: peer, initiator: true))
        return ExchangeSession(
            sessionID: sessionID, peer: peer, peerAddress: address, isInitiator: true, handshake: state,
            context: context)
    }

    /// Accepts an INVITE: reads Noise message 1 and answers ACCEPT with message 2, once. The session
    /// is a half-open handshake until CONFIRM verifies (PROTOCOL.md 5); it reports
    /// ``DeviceEvent/connecting(peer:initiator:)`` only then, so INVITEs that never complete show
    /// nothing.
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
        let state = HandshakingState(
            noise: noise, lastDatagram: datagram,
            retransmitAt: context.now + HalfOpenHandshakes.lifetime(context.timeouts), sentAt: context.now,
            lastSentAt: context.now)
        return ExchangeSession(
            sessionID: invite.sessionID, peer: invite.sender, peerAddress: source, isInitiator: false,
            handshake: state, context: context)
    }
}
