import ProfileDropCrypto
import ProfileDropNoise

/// A handshake in progress.
struct HandshakingState {
    var noise: HandshakeState
    /// The last handshake datagram we sent (INVITE or ACCEPT), retransmitted until answered.
    var lastDatagram: [UInt8]
    var transmissions = 1
    var retransmitAt: Instant
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

    mutating func handleDuplicateInvite(
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

    mutating func handleAccept(_ accept: HandshakePacket, context: inout SessionContext)
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
            // The first ranging round sends CONFIRM, then the first SECURE packet.
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

    func resendConfirm(_ link: Link, context: inout SessionContext) {
        guard let confirm = link.confirmDatagram else { return }
        context.outbox.push(OutgoingDatagram(destination: .unicast(peerAddress), bytes: confirm))
    }

    mutating func handleConfirm(_ confirm: HandshakePacket, context: inout SessionContext)
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

    mutating func establish(
        noise: HandshakeState, parameters: HandshakeParameters, confirm: [UInt8]?,
        context: inout SessionContext
    ) {
        let transport = noise.split()
        let link = Link(
            channel: SecureChannel(sessionID: sessionID, peerAddress: peerAddress, transport: transport),
            peerParameters: parameters, localToken: context.random.bytes(WireConstants.tokenLength),
            handshakeHash: transport.handshakeHash, confirmDatagram: confirm, lastHeard: context.now,
            controlAt: context.now, controlInterval: context.configuration.measurement.sampleInterval,
            gate: ProximityGate(configuration: context.configuration.gate), rangingAt: context.now)
        context.emit(.secured(peer: peer, verificationCode: Self.verificationCode(transport.handshakeHash)))
        var ranging = RangingState(
            link: link, startedAt: context.now, deadline: context.now + context.timeouts.rangingWindow)
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
}
