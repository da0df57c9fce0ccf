extension Device {
    /// The invitation rules over what the device holds now.
    var invitations: InvitationArbiter {
        let invitation = invitationIndex.map { index in
            // Read in place: binding the session would copy it whole.
            InvitationArbiter.Invitation(
                sessionID: live[index].sessionID,
                invitee: .init(peer: live[index].peer, address: live[index].peerAddress),
                isTentative: !discovery.isVerified(peer: live[index].peer),
                isEstablished: discovery.isEstablished(peer: live[index].peer),
                transmissions: live[index].inviteTransmissions ?? 0, isProbing: live[index].isProbing,
                refusalHeldUntil: live[index].refusalHeldUntil(now: context.now))
        }
        return InvitationArbiter(
            view: InvitationArbiter.View(
                deviceID: deviceID, now: context.now, isClosed: closeReason != nil, invitation: invitation,
                isUnderLoad: halfOpen.isUnderLoad, hasFreshHalfOpen: halfOpen.isFresh(at: context.now),
                heldRefusal: heldRefusal))
    }

    /// What the device knows about the sender of `invite`, an INVITE of no session of ours.
    func newInvite(_ invite: HandshakePacket, from source: PeerAddress) -> InvitationArbiter.Invite {
        InvitationArbiter.Invite(
            packet: invite, source: source,
            senderDisfavoured: discovery.prefersNotToAccept(invite.sender, from: source, now: context.now),
            candidates: live.compactMap {
                $0.isAwaitingAccept ? nil : .init(peer: $0.peer, address: $0.peerAddress)
            },
            echoesCookie: halfOpen.isUnderLoad
                && halfOpen.hasValidCookie(invite, from: source, now: context.now, timeouts: context.timeouts)
        )
    }

    /// How the peers we could invite rank against `invitee`, our tentative invitee.
    func tentativeRanking(of invitee: DeviceID) -> InvitationArbiter.TentativeRanking {
        InvitationArbiter.TentativeRanking(
            equallyNearCandidate: discovery.hasEquallyNearCandidate(than: invitee, context: context),
            establishedCandidate: discovery.hasEstablishedCandidate(than: invitee, now: context.now),
            betterHeardCandidate: discovery.hasBetterHeardCandidate(than: invitee, now: context.now),
            otherCandidate: discovery.hasOtherCandidate(than: invitee, now: context.now),
            answeredCandidate: discovery.hasAnsweredCandidate(than: invitee, now: context.now))
    }

    /// Asks the rules about `event`, which concerns no received datagram, and applies the decision.
    mutating func settle(_ event: InvitationArbiter.Event) {
        do {
            try apply(invitations.decide(event))
        } catch {
            assertionFailure("\(event) decided to reject a datagram: \(error)")
        }
    }

    /// Carries out a decision of the invitation rules.
    mutating func apply(_ decision: InvitationArbiter.Decision) throws(ProtocolError) {
        switch decision {
        case .noChange:
            return
        case .routeToSession(let invite, let source):
            try routeToSession(.invite(invite), sessionID: invite.sessionID, source: source)
        case .answerAfterRateLimits(let invite, let source):
            try admit(source)
            try apply(invitations.decide(.newInvite(newInvite(invite, from: source))))
        case .resendCrossingInvite:
            guard let invitationIndex else { return }
            sessions[live: invitationIndex].resendInviteForCrossing(context: &context)
        case .refuse(let busy, let destination):
            context.send(.busy(busy), to: .unicast(destination))
        case .refuseWhileBusy(let busy, let destination):
            context.send(.busy(busy), to: .unicast(destination))
            discovery.refusedWhileBusy(busy.receiver, context: context)
        case .refuseStaleID(let busy, let destination, let error):
            context.send(.busy(busy), to: .unicast(destination))
            throw error
        case .askForCookie(let invite, let source):
            let cookie = sessions.cookie(for: invite, from: source, context: &context)
            context.send(
                .busy(
                    Busy(
                        sessionID: invite.sessionID, sender: deviceID, receiver: invite.sender,
                        reason: .retry,
                        cookie: cookie)),
                to: .unicast(source))
        case .acceptHalfOpen(let invite, let source, let cookieEchoed):
            if cookieEchoed { routability.prove(source, now: context.now) }
            let session = try ExchangeSession.accept(invite, from: source, context: &context)
            sessions.insertHalfOpen(session, context: context)
        case .reject(let error):
            throw error
        case .sendInviteWithCookie(let cookie):
            guard let invitationIndex else { return }
            try sessions[live: invitationIndex].retry(with: cookie, context: &context)
        case .holdRefusal(let refusal):
            heldRefusal = refusal
        case .dropHeldRefusal:
            heldRefusal = nil
        case .believeBusy(let peer):
            heldRefusal = nil
            if let invitationIndex { sessions.removeLive(at: invitationIndex) }
            context.emit(.peerBusy(peer))
            discovery.peerBusy(peer, context: &context)
        case .forgetStaleID(let peer):
            heldRefusal = nil
            guard let invitationIndex else { return }
            let session = sessions.removeLive(at: invitationIndex)
            discovery.forget(peer, at: session.peerAddress, context: &context)
        case .dropInvitation:
            if let invitationIndex { sessions.removeLive(at: invitationIndex) }
        case .abandonTentative(let countsUnanswered):
            guard let invitationIndex else { return }
            let session = sessions.removeLive(at: invitationIndex)
            if countsUnanswered {
                discovery.invitationUnanswered(to: session.peer, at: session.peerAddress, context: &context)
            }
        case .dropHalfOpen(let offsets):
            sessions.removeHalfOpen(atOffsets: offsets)
        }
    }
}
