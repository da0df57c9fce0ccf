extension Device {
    mutating func advanceClock(to time: Instant) {
        if time > context.now { context.now = time }
    }

    /// Parses and routes one datagram.
    mutating func receive(_ bytes: [UInt8], from source: PeerAddress) throws(ProtocolError) {
        let packet: Packet
        do {
            packet = try Packet(datagram: bytes)
        } catch  where error.code == .unsupportedVersion {
            noteIncompatible(bytes)
            throw error
        }
        switch packet {
        case .beacon(let beacon):
            guard beacon.deviceID != deviceID else { throw ProtocolError(.ownDatagram, "our own beacon") }
            try admit(source)
            try discovery.receive(beacon, from: source, context: &context)
        case .query(let query):
            guard query.deviceID != deviceID else { throw ProtocolError(.ownDatagram, "our own query") }
            try admit(source)
            discovery.receive(query, context: &context)
        case .invite(let invite):
            if exchange?.sessionID == invite.sessionID
                || lingering.contains(where: { $0.sessionID == invite.sessionID })
            {
                try routeToSession(packet, sessionID: invite.sessionID, source: source)
                return
            }
            try admit(source)
            try handleInvite(invite, from: source)
        case .accept(let message), .confirm(let message):
            try routeToSession(packet, sessionID: message.sessionID, source: source)
        case .busy(let busy):
            guard let session = exchange, session.sessionID == busy.sessionID, session.isAwaitingAccept,
                busy.sender == session.peer, busy.receiver == deviceID
            else {
                throw ProtocolError(
                    .unknownSession, "BUSY for session \(busy.sessionID), which we are not inviting")
            }
            exchange = nil
            context.emit(.peerBusy(busy.sender))
            discovery.peerBusy(busy.sender, context: &context)
        case .secure(let secure):
            try routeToSession(packet, sessionID: secure.sessionID, source: source)
        }
    }

    /// Reports a device of another protocol version once, by the sender id its BEACON, QUERY or
    /// INVITE carries at the offset every version so far puts it, so its user learns why nothing
    /// pairs. Nothing is sent back: an older device could not read it.
    private mutating func noteIncompatible(_ bytes: [UInt8]) {
        guard bytes.count >= WireConstants.headerSize, let type = PacketType(rawValue: bytes[3]),
            bytes[2] != WireConstants.version
        else { return }
        let offset: Int
        switch type {
        case .beacon, .query: offset = WireConstants.headerSize
        case .invite: offset = WireConstants.headerSize + 8
        case .accept, .confirm, .busy, .secure: return
        }
        guard bytes.count >= offset + 8 else { return }
        var raw: UInt64 = 0
        for byte in bytes[offset..<(offset + 8)] { raw = raw << 8 | UInt64(byte) }
        let sender = DeviceID(rawValue: raw)
        guard sender != deviceID, !incompatiblePeers.contains(sender) else { return }
        if incompatiblePeers.count >= configuration.limits.maxPeers { incompatiblePeers.removeFirst() }
        incompatiblePeers.append(sender)
        context.emit(.incompatiblePeer(sender, version: bytes[2]))
    }

    /// Charges an unsolicited datagram from `source` (section 7): an established peer's address or
    /// a session's address on its own budget, any other source on its IP address's budget and
    /// then on the budget all of them share.
    private mutating func admit(_ source: PeerAddress) throws(ProtocolError) {
        let known =
            exchange?.peerAddress == source || lingering.contains { $0.peerAddress == source }
            || discovery.isEstablished(source)
        let limits = configuration.limits
        switch admission.admit(source, known: known, now: context.now) {
        case nil: return
        case .knownPeer:
            throw ProtocolError(
                .rateLimited, "known peer \(source) exceeds \(limits.unsolicitedPerSecond) datagrams/s")
        case .address:
            throw ProtocolError(
                .rateLimited, "address of \(source) exceeds \(limits.unsolicitedPerSecond) datagrams/s")
        case .global:
            throw ProtocolError(
                .rateLimited,
                "\(source): unknown sources together exceed \(limits.globalUnsolicitedPerSecond) datagrams/s")
        }
    }

    /// Hands a unicast packet to its session. Handshake packets must come from the session's peer
    /// address; SECURE packets are authenticated instead, wherever they come from.
    private mutating func routeToSession(
        _ packet: Packet, sessionID: UInt64, source: PeerAddress
    ) throws(ProtocolError) {
        let isHandshake =
            switch packet {
            case .invite, .accept, .confirm: true
            case .beacon, .query, .busy, .secure: false
            }
        let sessionAddress =
            exchange?.sessionID == sessionID
            ? exchange?.peerAddress : lingering.first { $0.sessionID == sessionID }?.peerAddress
        if isHandshake, let sessionAddress, sessionAddress != source {
            throw ProtocolError(.unexpectedMessage, "\(packet.type) for session \(sessionID) from \(source)")
        }
        if var session = exchange, session.sessionID == sessionID {
            // Held alone while it handles the packet, so its buffers are mutated in place.
            exchange = nil
            defer { exchange = session }
            try session.handle(packet, context: &context)
            return
        }
        if let index = lingering.firstIndex(where: { $0.sessionID == sessionID }) {
            try lingering[index].handle(packet, context: &context)
            return
        }
        try admit(source)
        throw ProtocolError(.unknownSession, "no session \(sessionID)")
    }

    private mutating func handleInvite(_ invite: HandshakePacket, from source: PeerAddress)
        throws(ProtocolError)
    {
        guard invite.receiver == deviceID else {
            throw ProtocolError(.unexpectedMessage, "INVITE addressed to \(invite.receiver)")
        }
        guard invite.sender != deviceID else { throw ProtocolError(.ownDatagram, "our own INVITE") }
        guard closeReason == nil, !discovery.prefersNotToAccept(invite.sender, now: context.now) else {
            refuse(invite, from: source, reason: .unavailable)
            return
        }
        if let session = exchange {
            if session.isAwaitingAccept && session.peer == invite.sender {
                // Both invited each other: the lower device id stays initiator.
                if deviceID < invite.sender { return }
                exchange = nil
            } else {
                refuse(invite, from: source, reason: .inSession)
                discovery.refusedWhileBusy(invite.sender, context: context)
                return
            }
        }
        exchange = try ExchangeSession.accept(invite, from: source, context: &context)
    }

    private mutating func refuse(_ invite: HandshakePacket, from source: PeerAddress, reason: BusyReason) {
        context.send(
            .busy(
                Busy(sessionID: invite.sessionID, sender: deviceID, receiver: invite.sender, reason: reason)),
            to: .unicast(source))
    }

    /// Runs due timers of the discovery session, the exchange session and lingering sessions.
    mutating func runTimers() {
        discovery.runTimers(busy: exchange != nil, context: &context)
        exchange?.handleTimeout(context: &context)
        for index in lingering.indices { lingering[index].handleTimeout(context: &context) }
    }

    /// Closes the device once the overall limit passed with no live session.
    private mutating func checkOverallLimit() {
        if closeReason == nil, exchange == nil, context.now >= startedAt + configuration.timeouts.overall {
            closeDevice(lastFailure == .outOfRange ? .outOfRange : .timeout(.noExchange))
        }
    }

    /// Acts on a decided session outcome, then invites the next peer if the device is free.
    mutating func afterInput() {
        if let session = exchange, session.link != nil {
            discovery.handshakeCompleted(with: session.peer, at: session.peerAddress, context: context)
        }
        while let outcome = context.outcomes.pop() {
            // Only the live exchange decides: lingering sessions already did.
            guard let session = exchange, session.sessionID == outcome.sessionID else {
                preconditionFailure("outcome of session \(outcome.sessionID), which is not the exchange")
            }
            exchange = nil
            lastPeer = outcome.peer
            if outcome.endsDevice {
                closeDevice(outcome.reason)
            } else {
                lastFailure = outcome.reason
                context.emit(.sessionEnded(peer: outcome.peer, reason: outcome.reason))
                if session.isInitiator, outcome.reason == .timeout(.handshake) {
                    // Neither ACCEPT nor BUSY came from the address we invited.
                    discovery.invitationUnanswered(
                        to: outcome.peer, at: session.peerAddress, context: &context)
                } else {
                    discovery.sessionFailed(with: outcome.peer, context: &context)
                }
            }
            if session.nextDeadline != nil { lingering.append(session) }
        }
        // After a session ended, so that a limit that passed during it applies now, not one call later.
        checkOverallLimit()
        lingering.removeAll { $0.nextDeadline == nil }
        if lingering.count > Self.maxLingering { lingering.removeFirst(lingering.count - Self.maxLingering) }
        if closeReason == nil, exchange == nil, let invitee = discovery.nextInvitee(context: &context) {
            exchange = ExchangeSession.initiate(to: invitee.id, at: invitee.address, context: &context)
        }
    }

    private mutating func closeDevice(_ reason: CloseReason) {
        guard closeReason == nil else { return }
        closeReason = reason
        discovery.close()
        context.emit(.closed(reason))
    }
}
