extension Device {
    /// Moves the clock to `time`, then applies the overall limit if it passed: before the input is
    /// handled, so that nothing new starts past it.
    mutating func advanceClock(to time: Instant) {
        if time > context.now { context.now = time }
        enforceOverallLimit()
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
            // Nothing answers a BEACON by unicast: its bytes pay for a PROBE to its host.
            routability.received(bytes.count, fromHost: source.ipv4, now: context.now)
            let proven = routability.isProven(source, now: context.now)
            try discovery.receive(beacon, from: source, proven: proven, context: &context)
            if !proven { probeAhead(beacon, from: source) }
        case .query(let query):
            guard query.deviceID != deviceID else { throw ProtocolError(.ownDatagram, "our own query") }
            try admit(source)
            routability.received(bytes.count, fromHost: source.ipv4, now: context.now)
            discovery.receive(query, context: &context)
        case .probe(let probe):
            // Anyone may ask: one PROBE_ACK of the PROBE's size per PROBE, and nothing kept.
            try admit(source)
            context.send(.probeAck(probe), to: .unicast(source))
        case .probeAck(let echo):
            let probing = invitationIndex.flatMap {
                live[$0].peerAddress == source && live[$0].isProbing ? $0 : nil
            }
            if let index = probing, sessions[live: index].probeAnswered(echo.challenge, context: &context) {
                // The invitation's PROBE may be one sent ahead: its entry is answered too (taking
                // it proves the address).
                if let beacon = routability.answerAhead(echo.challenge, from: source, now: context.now) {
                    discovery.addressAnswered(source, beacon: beacon, context: &context)
                } else {
                    routability.prove(source, now: context.now)
                }
                return
            }
            // A PROBE sent ahead (PROTOCOL.md 5, "Probing ahead"): the address receives.
            guard let beacon = routability.answerAhead(echo.challenge, from: source, now: context.now) else {
                throw ProtocolError(
                    .unexpectedMessage,
                    probing == nil
                        ? "PROBE_ACK from \(source), which we are not probing"
                        : "PROBE_ACK from \(source) echoes another challenge")
            }
            discovery.addressAnswered(source, beacon: beacon, context: &context)
            // Our invitation there need not wait for the echo of its own PROBE.
            if let index = probing { sessions[live: index].addressProven(context: &context) }
        case .invite(let invite):
            let known: InvitationArbiter.KnownSession =
                if sessions.index(of: invite.sessionID, in: .halfOpen) != nil {
                    .halfOpen
                } else if sessions.route(sessionID: invite.sessionID) != nil {
                    .other
                } else {
                    .none
                }
            try apply(invitations.decide(.invite(invite, from: source, known)))
        case .accept(let message), .confirm(let message):
            try routeToSession(packet, sessionID: message.sessionID, source: source)
        case .busy(let busy):
            try apply(invitations.decide(.busy(busy, from: source)))
        case .secure(let secure):
            try routeToSession(secure, source: source)
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
        case .accept, .confirm, .busy, .secure, .probe, .probeAck: return
        }
        guard bytes.count >= offset + 8 else { return }
        var raw: UInt64 = 0
        for byte in bytes[offset..<(offset + 8)] { raw = raw << 8 | UInt64(byte) }
        let sender = DeviceID(rawValue: raw)
        guard sender != deviceID, !incompatiblePeers.contains(sender) else { return }
        // At least one place, as the peer table has: a configuration of zero peers (one read from a
        // capture, say) must not empty an empty list.
        if incompatiblePeers.count >= max(configuration.limits.maxPeers, 1) {
            incompatiblePeers.removeFirst()
        }
        incompatiblePeers.append(sender)
        context.emit(.incompatiblePeer(sender, version: bytes[2]))
    }

    /// Sends a PROBE ahead of any invitation to the peer of `beacon`, just taken from `source`, an
    /// address that has not proved it receives (PROTOCOL.md 5, "Probing ahead"): while a candidate
    /// place is free, to a candidate whose address is not the one our invitation probes and has no
    /// PROBE waiting; paid from its host's credit like any PROBE.
    private mutating func probeAhead(_ beacon: Beacon, from source: PeerAddress) {
        guard closeReason == nil, candidateCount < InvitationArbiter.maxCandidates,
            !routability.isProbingAhead(source, now: context.now),
            invitationIndex.map({ live[$0].peerAddress != source }) ?? true,
            discovery.isCandidate(beacon.deviceID, at: source, now: context.now),
            payForProbe(to: source)
        else { return }
        let challenge = context.random.nextUInt64()
        context.sendProbe(challenge, to: source)
        routability.probedAhead(source, challenge: challenge, beacon: beacon, now: context.now)
    }

    /// Charges an unsolicited datagram from `source` (section 7): an established peer's address, a
    /// session's address or a proven one on its own budget, any other source on its IP address's
    /// budget and then on the budget all of them share.
    mutating func admit(_ source: PeerAddress) throws(ProtocolError) {
        let known =
            sessions.isKnownSource(source) || discovery.isEstablished(source)
            || routability.isProven(source, now: context.now)
        let limits = configuration.limits
        switch admission.admit(source, known: known, now: context.now) {
        case nil: return
        case .knownPeer:
            throw ProtocolError(
                .rateLimited, "known peer \(source) exceeds \(limits.unsolicitedPerSecond) datagrams/s")
        case .address:
            throw ProtocolError(
                .rateLimited, "address of \(source) exceeds \(limits.unsolicitedPerSecond) datagrams/s")
        case .global(let perSecond):
            throw ProtocolError(
                .rateLimited, "\(source): unknown sources together exceed \(perSecond) datagrams/s")
        }
    }

    /// Hands a handshake packet to its session; it must come from the session's peer address.
    mutating func routeToSession(_ packet: Packet, sessionID: UInt64, source: PeerAddress)
        throws(ProtocolError)
    {
        try routeToSession(sessionID, type: packet.type, source: source) {
            (session, context) throws(ProtocolError) in
            try session.handle(packet, context: &context)
        }
    }

    /// Hands a SECURE packet to its session: authenticated instead, wherever it comes from. It goes
    /// to ``ExchangeSession/handleSecure(_:context:)`` directly, not wrapped in a ``Packet`` again.
    private mutating func routeToSession(_ packet: SecurePacket, source: PeerAddress) throws(ProtocolError) {
        try routeToSession(packet.sessionID, type: .secure, source: source) {
            (session, context) throws(ProtocolError) in
            try session.handleSecure(packet, context: &context)
        }
    }

    /// Finds session `sessionID` and lets `deliver` hand it a packet of `type` from `source`.
    private mutating func routeToSession(
        _ sessionID: UInt64, type: PacketType, source: PeerAddress,
        deliver: (inout ExchangeSession, inout SessionContext) throws(ProtocolError) -> Void
    ) throws(ProtocolError) {
        let isHandshake =
            switch type {
            case .invite, .accept, .confirm: true
            case .beacon, .query, .busy, .secure, .probe, .probeAck: false
            }
        // One lookup finds the session, whatever its role.
        guard let entry = sessions.route(sessionID: sessionID) else {
            try admit(source)
            throw ProtocolError(.unknownSession, "no session \(sessionID)")
        }
        if isHandshake, sessions.peerAddress(at: entry) != source {
            throw ProtocolError(.unexpectedMessage, "\(type) for session \(sessionID) from \(source)")
        }
        switch entry.role {
        case .live:
            // Mutated in place in the table, so its buffers are not copied.
            try deliver(&sessions[live: entry.index], &context)
        case .halfOpen:
            // Stored back only if it handled the datagram.
            var session = sessions.session(at: entry)
            try deliver(&session, &context)
            if session.isHalfOpen {
                sessions.updateHalfOpen(session, at: entry.index)
            } else {
                // Its CONFIRM verified: the half-open handshake becomes a candidate, and our
                // invitation may end for it.
                sessions.removeHalfOpen(at: entry.index)
                settle(.halfOpenCompleted(.init(peer: session.peer, address: session.peerAddress)))
                sessions.insertLive(session)
            }
        case .lingering:
            try deliver(&sessions[lingering: entry.index], &context)
        }
    }

    // MARK: - The session table

    /// Where our invitation awaiting ACCEPT is among the live sessions.
    var invitationIndex: Int? { sessions.invitationIndex }

    /// Secured live sessions (and handshakes we accepted that completed): every live one but our
    /// invitation.
    var candidateCount: Int { live.count - (invitationIndex == nil ? 0 : 1) }

    /// Whether the device invites its next peer when one is due, by the rule of ``InvitationArbiter``.
    var mayInvite: Bool {
        InvitationArbiter.mayInvite(
            isClosed: closeReason != nil, isInviting: invitationIndex != nil, candidateCount: candidateCount,
            hasFreshHalfOpen: halfOpen.isFresh(at: context.now),
            hasPeerToInvite: discovery.hasPeerBesides(live))
    }

    /// The live session a snapshot shows: the one moving cards, else the first one whose question
    /// is on screen, else the one that got furthest (the earliest of those).
    var focus: Int? {
        if let transferring = live.firstIndex(where: { $0.isTransferring }) { return transferring }
        if let asked = live.firstIndex(where: { $0.isAskingUser }) { return asked }
        var best: Int?
        for index in live.indices where best.map({ live[index].progress > live[$0].progress }) ?? true {
            best = index
        }
        return best
    }

    /// Whether we wait for ACCEPT from a peer that never completed a handshake with us: a tentative
    /// invitation, which may be a phantom's (even one kept alive until established), keeps us neither
    /// busy to others nor from other candidates (PROTOCOL.md 5).
    var isInvitingTentatively: Bool {
        // Read in place: binding the session (or calling this on a copy of the device) would copy
        // it whole on every input.
        guard let invitationIndex else { return false }
        return !discovery.isVerified(peer: live[invitationIndex].peer)
    }

    /// Runs due timers of the discovery session, the live sessions and lingering sessions.
    mutating func runTimers() {
        // Before the exchange's own timer: a refusal held until the INVITE's retransmission replaces it.
        if heldRefusal != nil { settle(.timersDue) }
        let announcement = InvitationArbiter.announcement(
            candidateCount: candidateCount, isInviting: invitationIndex != nil,
            isTentative: isInvitingTentatively)
        discovery.runTimers(busy: announcement.saysBusy, quiet: announcement.sendsNoQuery, context: &context)
        for index in live.indices where live[index].isProbeDue(context: context) {
            // A PROBE again only as the host's credit allows: its next BEACON brings more.
            if payForProbe(to: live[index].peerAddress) {
                sessions[live: index].sendProbeAgain(context: &context)
            }
        }
        for index in live.indices { sessions[live: index].handleTimeout(context: &context) }
        sessions.runHalfOpenTimers(context: &context)
        for index in lingering.indices { sessions[lingering: index].handleTimeout(context: &context) }
    }

    /// Closes the device once its overall limit passed, whatever its session is doing: a live
    /// session is closed first, with the reason of the wait it was in
    /// (``ExchangeSession/closeAtDeviceLimit(context:)``), and the device closes with
    /// ``reasonAtLimit(cut:)``, unless that session's own outcome ends it (an unanswered request
    /// declines).
    mutating func enforceOverallLimit() {
        guard closeReason == nil, context.now >= overallLimitAt else { return }
        let focused = focus.map { live[$0].sessionID }
        for index in live.indices { sessions[live: index].closeAtDeviceLimit(context: &context) }
        let cut = takeOutcomes(closingDevice: true, focused: focused)
        closeDevice(discovery.ended.reasonAtLimit(cut: cut))
    }

    /// Closes the live session as the owner's cancellation (``ExchangeSession/cancelByOwner(context:)``),
    /// then the device, with `declined by us`.
    mutating func stopForOwner() {
        guard closeReason == nil else { return }
        let focused = focus.map { live[$0].sessionID }
        for index in live.indices { sessions[live: index].cancelByOwner(context: &context) }
        takeOutcomes(closingDevice: true, focused: focused)
        closeDevice(.declined(by: .local))
    }

    /// Acts on decided session outcomes: an exchange ends the device, and so does our user's own
    /// decline while no other candidate is held; any other outcome is reported as a session's end,
    /// and the device backs off from that peer and goes on (PROTOCOL.md 5, "Candidates"). With
    /// `closingDevice` (the device closes next: its limit passed, or its owner stopped it),
    /// outcomes are only taken, and the reason of session `focused` is returned.
    @discardableResult
    private mutating func takeOutcomes(closingDevice: Bool = false, focused: UInt64? = nil) -> CloseReason? {
        var cut: CloseReason?
        while let outcome = context.outcomes.pop() {
            // Only live sessions decide: lingering ones already did.
            guard let index = sessions.index(of: outcome.sessionID, in: .live) else {
                preconditionFailure("outcome of session \(outcome.sessionID), which is not live")
            }
            let session = sessions.removeLive(at: index)
            if closingDevice || closeReason != nil {
                // The device closes, or closed: its sessions end with it, unreported, and the peer
                // it shows stays the one of the session that ended it (or the one it showed).
                let shown = outcome.sessionID == focused
                if shown { cut = outcome.reason }
                discovery.sessionEnded(outcome, of: session, as: .withDevice(shown: shown), context: &context)
            } else if outcome.endsDevice
                && (outcome.reason == .exchanged || !live.contains(where: { !$0.isAwaitingAccept }))
            {
                discovery.sessionEnded(outcome, of: session, as: .endsDevice, context: &context)
                closeDevice(outcome.reason)
                // Every other live session ends as our decline: one exchange ends the run, and a
                // peer still moving cards beside it is told at once.
                for index in live.indices { sessions[live: index].cancelByOwner(context: &context) }
            } else {
                context.emit(.sessionEnded(peer: outcome.peer, reason: outcome.reason))
                discovery.sessionEnded(outcome, of: session, as: .reported, context: &context)
            }
            if session.nextDeadline != nil { sessions.insertLingering(session) }
        }
        return cut
    }

    /// Acts on decided session outcomes, keeps the session table in order, then invites the next
    /// peer if a candidate place is free.
    mutating func afterInput() {
        for index in live.indices where live[index].isSecured {
            discovery.handshakeCompleted(
                with: live[index].peer, at: live[index].peerAddress, context: context)
            routability.prove(live[index].peerAddress, now: context.now)
        }
        takeOutcomes()
        discovery.setEngaged(live)
        // The peer we wait on may be a phantom: go elsewhere? (Ranked only while it may be one.)
        if isInvitingTentatively, let invitationIndex {
            settle(.outcomesTaken(tentativeRanking(of: live[invitationIndex].peer)))
        }
        if !halfOpen.sessions.isEmpty {
            settle(
                .settled(
                    halfOpen: halfOpen.sessions.map { .init(peer: $0.peer, address: $0.peerAddress) },
                    secured: live.compactMap {
                        $0.isSecured ? .init(peer: $0.peer, address: $0.peerAddress) : nil
                    }))
        }
        // After a session ended, so that a limit that passed during it applies now, not one call later.
        enforceOverallLimit()
        sessions.pruneLingering()
        if heldRefusal != nil { settle(.inputHandled) }
        if mayInvite, let invitee = discovery.nextInvitee(context: &context) {
            // An address that has not proved it receives gets a PROBE first, paid by what its host
            // sent us lately; the INVITE waits for the echo (PROTOCOL.md 5, "Return routability").
            let proven = routability.isProven(invitee.address, now: context.now)
            // A PROBE sent ahead there and still waiting is the invitation's first (PROTOCOL.md 5,
            // "Probing ahead"): a BEACON draws at most one PROBE.
            let probedAhead = proven ? nil : routability.probeAhead(to: invitee.address, now: context.now)
            if proven || probedAhead != nil || payForProbe(to: invitee.address) {
                sessions.insertLive(
                    ExchangeSession.initiate(
                        to: invitee.id, at: invitee.address, proven: proven, probedAhead: probedAhead,
                        context: &context))
            } else {
                // Its host sent nothing lately: try again once its next BEACON may have come.
                discovery.inviteAt = context.now + context.timeouts.handshakeRetransmit
            }
        }
    }

    /// Pays for one PROBE to `address` from its host's credit (PROTOCOL.md 5, "Return
    /// routability"); false, counted as a PROBE without credit, when the credit does not cover it.
    private mutating func payForProbe(to address: PeerAddress) -> Bool {
        guard routability.spend(WireConstants.probeSize, toHost: address.ipv4, now: context.now) else {
            context.counters.probesWithoutCredit += 1
            return false
        }
        return true
    }

    private mutating func closeDevice(_ reason: CloseReason) {
        guard closeReason == nil else { return }
        closeReason = reason
        discovery.close()
        sessions.removeAllHalfOpen()
        context.emit(.closed(reason))
    }
}
