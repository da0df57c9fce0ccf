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

extension HandshakingState {
    /// A duplicate INVITE: our ACCEPT was lost, so answer again, without counting an attempt.
    func handleDuplicateInvite(to peerAddress: PeerAddress, context: inout SessionContext) {
        context.outbox.push(OutgoingDatagram(destination: .unicast(peerAddress), bytes: lastDatagram))
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
        return .secured(noise.split(), peerParameters: parameters, confirm: confirm)
    }

    /// CONFIRM (responder): reads Noise message 3.
    mutating func handleConfirm(_ confirm: HandshakePacket) throws(ProtocolError) -> Transition {
        let parameters: HandshakeParameters
        do {
            parameters = try HandshakeParameters(decoding: try noise.readMessage(confirm.noiseMessage))
        } catch let error as ProtocolError {
            throw error
        } catch {
            throw ProtocolError(.handshakeFailed, "CONFIRM: \(error)")
        }
        return .secured(noise.split(), peerParameters: parameters, confirm: nil)
    }

    /// Retransmits our last handshake message with back-off, and gives up after the attempts.
    mutating func handleTimeout(to peerAddress: PeerAddress, context: inout SessionContext) -> Transition {
        guard context.now >= retransmitAt else { return .stay }
        guard transmissions < context.timeouts.handshakeAttempts else {
            return .closed(outcome: .timeout(.handshake))
        }
        context.outbox.push(OutgoingDatagram(destination: .unicast(peerAddress), bytes: lastDatagram))
        context.counters.handshakeRetransmissions += 1
        retransmitAt =
            context.now + context.timeouts.handshakeRetransmit.doubled(transmissions, cap: .seconds(30))
        transmissions += 1
        return .stay
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
}
