/// The device's rules on invitations (PROTOCOL.md 2, "Crossing INVITEs", and 5, "Invitations and
/// the crowded room"), as one pure decision: given what the device holds (a ``View``) and what
/// happened (an ``Event``), which ``Decision`` the device applies.
///
/// It reads no clock, sends nothing and changes nothing: the device gathers the view, asks, and
/// applies the answer in one place (`Device.apply(_:)`). Every row of ``decide(_:)`` names the
/// section that states it, in the order the protocol gives the rules:
///
/// - `invite` (2; 5, "Answering INVITE"): a half-open handshake's INVITE crossing ours, we the
///   lower id → `resendCrossingInvite`; a session of ours → `routeToSession`; else
///   `answerAfterRateLimits`.
/// - `newInvite` (5, "Answering INVITE", steps 1–7; "Cookies"): `refuseStaleID`; `reject` (our
///   own); `refuse` (BUSY 2); crossing: `resendCrossingInvite` if we are lower, else on to step 6;
///   `refuseWhileBusy` (places taken or peer held; a fresh half-open handshake alone);
///   `askForCookie`; `acceptHalfOpen`.
/// - `busy` (5, "Addresses", "Refusals are held", "Cookies"): not our invitation, or not its
///   address → `reject`; retry → `sendInviteWithCookie`; the first refusal → `holdRefusal`.
/// - `timersDue` (5, "Refusals are held", "Stale ids"): a hold ended → `dropHeldRefusal` if the
///   invitation ended, else `believeBusy` or `forgetStaleID`.
/// - `outcomesTaken` (5, "Probing ahead", "Tentative invitations"): `abandonTentative` while the
///   invitee is probed and another candidate answered a PROBE, after a second INVITE among equally
///   near candidates, for a newcomer outranked, or after a third INVITE.
/// - `halfOpenCompleted` (5, "Half-open handshakes"): `dropInvitation` (our invitee there) or
///   `abandonTentative`.
/// - `settled` (5, "Candidates"): `dropHalfOpen` beside a secured session of its id or address.
/// - `inputHandled` (5, "Refusals are held"): `dropHeldRefusal` once its invitation ended.
///
/// Two rules asked on every input, whether the device invites (`mayInvite`) and what its
/// announcements say (`announcement`), take their facts lazily instead.
struct InvitationArbiter {
    /// What the device holds, as the rules read it.
    let view: View

    /// Secured sessions held at once up to consent: one peer that stalls, or several, cannot keep
    /// the device from the one held against it (PROTOCOL.md 5, "Candidates").
    static let maxCandidates = 3

    /// INVITE transmissions without an answer after which a tentative invitation given up counts as
    /// unanswered: 750 ms with the default retransmission schedule.
    static let unansweredTransmissions = 3

    /// The same while another candidate ranks as near as the invitee (both within the gate band's
    /// far edge): 250 ms, one INVITE's wait. Which of such peers is the device held against ours is
    /// a draw, and a forger's phantoms claiming our spot tie with it (PROTOCOL.md 11.6 item 6), so
    /// each wrong draw costs one wait, not three.
    static let unansweredTransmissionsAmongEquals = 2

    /// A peer id at an address: a session's two ends as the rules compare them.
    struct Endpoint: Equatable {
        let peer: DeviceID
        let address: PeerAddress
    }

    /// Our invitation awaiting ACCEPT.
    struct Invitation: Equatable {
        let sessionID: UInt64
        /// The invitee, at the address we invite it at.
        let invitee: Endpoint
        /// Its peer has not completed a handshake with us in this run (PROTOCOL.md 5, "Tentative
        /// invitations").
        let isTentative: Bool
        /// Its peer is established (PROTOCOL.md 4): not a newcomer.
        let isEstablished: Bool
        /// How many times its INVITE (or PROBE) went out.
        let transmissions: Int
        /// Its PROBE has not been echoed yet: the invitee's address has not shown that it receives.
        var isProbing = false
        /// When a refusal arriving now would be believed; nil when none would be held.
        let refusalHeldUntil: Instant?
    }

    /// What the device holds.
    struct View: Equatable {
        let deviceID: DeviceID
        let now: Instant
        let isClosed: Bool
        /// Our invitation awaiting ACCEPT, if any.
        let invitation: Invitation?
        /// At least one half-open handshake is open: a new handshake needs a cookie.
        let isUnderLoad: Bool
        /// A half-open handshake that began alone is in its fresh period.
        let hasFreshHalfOpen: Bool
        /// A BUSY for our invitation, not yet believed.
        let heldRefusal: HeldRefusal?
    }

    /// Which of the device's tables holds an INVITE's session id.
    enum KnownSession: Equatable {
        /// None: a new INVITE.
        case none
        /// A half-open handshake we accepted.
        case halfOpen
        /// A live session or one still closing.
        case other
    }

    /// An INVITE of no session of ours and what the device knows about its sender.
    struct Invite: Equatable {
        let packet: HandshakePacket
        let source: PeerAddress
        /// The device would rather not accept its sender now: it backs off from the sender's host,
        /// or an established candidate elsewhere has fewer failed sessions, or it backs off from
        /// the sender while such a candidate exists (PROTOCOL.md 5, "Answering INVITE", step 3).
        let senderDisfavoured: Bool
        /// The live sessions besides our invitation: the candidates.
        let candidates: [Endpoint]
        /// Under load, it carries a valid cookie we handed its source (false when not under load).
        let echoesCookie: Bool
    }

    /// How the peers the device could invite rank against our tentative invitee (PROTOCOL.md 5,
    /// "Candidates" and "Tentative invitations"). When the invitee's address answered a PROBE, the
    /// first three facts count only candidates whose address answered too, as the ranking puts
    /// those first: a phantom kept alive until established, or claiming our spot, does not turn
    /// the device away from a peer that answered.
    struct TentativeRanking: Equatable {
        /// Another candidate and the invitee both hint within the gate band's far edge.
        let equallyNearCandidate: Bool
        /// Some established peer is a candidate.
        let establishedCandidate: Bool
        /// The invitee was heard once, and a candidate with no more failed sessions more often.
        let betterHeardCandidate: Bool
        /// Any other peer is a candidate.
        let otherCandidate: Bool
        /// Another candidate's address answered a PROBE of ours, or a handshake.
        var answeredCandidate = false
    }

    /// What happened.
    enum Event: Equatable {
        /// An INVITE arrived from `source`, naming a session the device may hold.
        case invite(HandshakePacket, from: PeerAddress, KnownSession)
        /// An INVITE of no session of ours that passed the rate limits of section 7.
        case newInvite(Invite)
        /// A BUSY arrived from `source`.
        case busy(Busy, from: PeerAddress)
        /// The device's timers ran.
        case timersDue
        /// An input's session outcomes were taken: a tentative invitation may be given up.
        case outcomesTaken(TentativeRanking)
        /// The CONFIRM of a half-open handshake with `peer` verified: it becomes a candidate.
        case halfOpenCompleted(Endpoint)
        /// The device's sessions settled: half-open handshakes (`halfOpen`, in table order) beside
        /// its secured sessions (`secured`).
        case settled(halfOpen: [Endpoint], secured: [Endpoint])
        /// An input was handled, and the invitation may have ended.
        case inputHandled
    }

    /// What the device does.
    enum Decision: Equatable {
        /// Nothing.
        case noChange
        /// Hands the INVITE to the session it names.
        case routeToSession(HandshakePacket, from: PeerAddress)
        /// Charges the INVITE to the rate limits of section 7, then answers it (``Event/newInvite(_:)``).
        case answerAfterRateLimits(HandshakePacket, from: PeerAddress)
        /// Sends our invitation's INVITE again, as the answer to a crossing INVITE (PROTOCOL.md 2).
        case resendCrossingInvite
        /// Answers BUSY(2).
        case refuse(Busy, to: PeerAddress)
        /// Answers BUSY(1), and notes the sender as one that wanted us (PROTOCOL.md 5, "Candidates").
        case refuseWhileBusy(Busy, to: PeerAddress)
        /// Answers BUSY(4) naming the invited id, then counts the INVITE as `error`.
        case refuseStaleID(Busy, to: PeerAddress, ProtocolError)
        /// Answers BUSY(retry) with a cookie for this INVITE, keeping nothing.
        case askForCookie(HandshakePacket, from: PeerAddress)
        /// Accepts the INVITE as a half-open handshake; an echoed cookie proves its source.
        case acceptHalfOpen(HandshakePacket, from: PeerAddress, cookieEchoed: Bool)
        /// Drops the datagram, counted as `error`.
        case reject(ProtocolError)
        /// Sends our INVITE again at once carrying `cookie`.
        case sendInviteWithCookie([UInt8])
        /// Holds a refusal of our invitation.
        case holdRefusal(HeldRefusal)
        /// Forgets the held refusal.
        case dropHeldRefusal
        /// Believes a held BUSY(1) or BUSY(2): ends the invitation and backs off from `peer`.
        case believeBusy(DeviceID)
        /// Believes a held BUSY(4): ends the invitation and forgets `peer` at the invited address.
        case forgetStaleID(DeviceID)
        /// Ends our invitation without an outcome: the crossing's other handshake completed.
        case dropInvitation
        /// Gives up our tentative invitation, as unanswered (its peer then ranks last) or silently.
        case abandonTentative(countsUnanswered: Bool)
        /// Drops the half-open handshakes at these places of the table.
        case dropHalfOpen([Int])
    }

    /// The decision for `event`, by the first rule that applies.
    func decide(_ event: Event) -> Decision {
        switch event {
        case .invite(let invite, let source, let known): routing(invite, from: source, known)
        case .newInvite(let invite): answer(invite)
        case .busy(let busy, let source): answer(busy, from: source)
        case .timersDue: heldRefusalEnded()
        case .outcomesTaken(let ranking): tentativeInvitation(ranking)
        case .halfOpenCompleted(let peer): halfOpenCompleted(peer)
        case .settled(let halfOpen, let secured): halfOpenBeside(secured, halfOpen)
        case .inputHandled: heldRefusalOutlived()
        }
    }

    // MARK: - Asked on every input

    // These two read few facts, some of them costly, on every input: they take them as they need
    // them rather than from a view.

    /// PROTOCOL.md 5, "Candidates": the device invites its next peer whenever it is open, has no
    /// invitation awaiting ACCEPT, a candidate place is free, no fresh half-open handshake is
    /// completing ("Fresh period") and its table holds a peer it has no live session with.
    static func mayInvite(
        isClosed: Bool, isInviting: @autoclosure () -> Bool, candidateCount: @autoclosure () -> Int,
        hasFreshHalfOpen: @autoclosure () -> Bool, hasPeerToInvite: @autoclosure () -> Bool
    ) -> Bool {
        !isClosed && !isInviting() && candidateCount() < maxCandidates && !hasFreshHalfOpen()
            && hasPeerToInvite()
    }

    /// What the device's BEACONs and QUERYs say of its sessions.
    struct Announcement: Equatable {
        /// BEACONs say busy.
        let saysBusy: Bool
        /// No QUERY goes out.
        let sendsNoQuery: Bool
    }

    /// PROTOCOL.md 5, "Candidates" and "Tentative invitations": BEACONs say busy only while every
    /// candidate place is taken (a stalled session holds one place, and the device stays open to
    /// the peer held against it); no QUERY goes out while the device holds a secured session or an
    /// invitation that is not tentative (of a peer it met before).
    static func announcement(candidateCount: Int, isInviting: Bool, isTentative: @autoclosure () -> Bool)
        -> Announcement
    {
        Announcement(
            saysBusy: candidateCount >= maxCandidates,
            sendsNoQuery: candidateCount > 0 || (isInviting && !isTentative()))
    }

    // MARK: - INVITE

    /// Whether our invitation awaits ACCEPT from `peer`: the one case where an INVITE from that peer
    /// at that address is a crossing INVITE (PROTOCOL.md 2).
    private func isCrossing(_ peer: Endpoint) -> Bool { view.invitation?.invitee == peer }

    private func routing(_ invite: HandshakePacket, from source: PeerAddress, _ known: KnownSession)
        -> Decision
    {
        let sender = Endpoint(peer: invite.sender, address: source)
        switch known {
        // PROTOCOL.md 2, "Crossing INVITEs", last paragraph: the INVITE of a handshake we accepted
        // before we invited its sender, sent again, is a crossing INVITE like any other. We stay
        // initiator and send ours again rather than ACCEPT again: the sender, the higher id, keeps
        // its invitation beside ours, and two ACCEPTs crossing would complete both handshakes.
        case .halfOpen where view.deviceID < sender.peer && isCrossing(sender):
            return .resendCrossingInvite
        // PROTOCOL.md 5, "Answering INVITE": an INVITE of a session we have goes to it.
        case .halfOpen, .other:
            return .routeToSession(invite, from: source)
        // Any other INVITE is answered after the rate limits of section 7.
        case .none:
            return .answerAfterRateLimits(invite, from: source)
        }
    }

    /// PROTOCOL.md 5, "Answering INVITE": the first of steps 1 to 7 that applies.
    private func answer(_ invite: Invite) -> Decision {
        let packet = invite.packet
        let sender = Endpoint(peer: packet.sender, address: invite.source)
        let refusal = { (reason: BusyReason) in
            Busy(sessionID: packet.sessionID, sender: view.deviceID, receiver: packet.sender, reason: reason)
        }
        // Step 1 ("Stale ids"): tell the inviter at once that the id it holds for this address is
        // not ours, rather than leave it waiting out a handshake; the answer is smaller than the
        // INVITE.
        guard packet.receiver == view.deviceID else {
            return .refuseStaleID(
                Busy(
                    sessionID: packet.sessionID, sender: packet.receiver, receiver: packet.sender,
                    reason: .staleID),
                to: invite.source, ProtocolError(.unexpectedMessage, "INVITE addressed to \(packet.receiver)")
            )
        }
        // Step 2.
        guard packet.sender != view.deviceID else {
            return .reject(ProtocolError(.ownDatagram, "our own INVITE"))
        }
        // Step 3: closed, or we would rather not accept this sender now.
        if view.isClosed || invite.senderDisfavoured {
            return .refuse(refusal(.unavailable), to: invite.source)
        }
        if isCrossing(sender) {
            // Step 4, section 2's tie-break: only the INVITE of the very peer we invite, from the
            // address we invite it at, counts; the lower device id stays initiator. The peer most
            // likely has not seen our INVITE (or needs it with its cookie), or it would have
            // dropped its own: ours again now, not at the next back-off.
            if view.deviceID < sender.peer { return .resendCrossingInvite }
            // The peer stays initiator: we accept its INVITE (steps 6 and 7), and our invitation
            // goes on beside it until one of the two handshakes completes. Its id and address are
            // in every BEACON, so the crossing INVITE may be a forger's, whose handshake never
            // completes; abandoning ours for it let one spoofed datagram cancel the invitation.
        } else if invite.candidates.count >= Self.maxCandidates
            || invite.candidates.contains(where: { $0.peer == sender.peer || $0.address == sender.address })
        {
            // Step 4: every candidate place is taken, or this peer already has a session. Anyone
            // else invites beside our sessions, even beside our invitation of a peer that may be a
            // phantom: the first handshake to complete becomes a candidate (a phantom never does).
            // Even an established peer's INVITE waits for its CONFIRM: its id is in every BEACON
            // and an XX first message is any 32 bytes, so until then it may be a forger's
            // (PROTOCOL.md 11.4). So does our invitee's own id from another address: the address
            // we hold may be a racer's, whose BEACON in that name we heard first (PROTOCOL.md 4).
            // And a peer that completed its handshake and stalls holds one candidate place, not
            // the device (PROTOCOL.md 11.6, item 10).
            return .refuseWhileBusy(refusal(.inSession), to: invite.source)
        } else if view.invitation == nil, invite.candidates.isEmpty, view.hasFreshHalfOpen {
            // Step 5, "Fresh period": a handshake that began alone completes within a round
            // trip: let it.
            return .refuseWhileBusy(refusal(.inSession), to: invite.source)
        }
        // Step 6, "Cookies": under load, no state and no key for a source that has not shown it
        // receives there.
        if view.isUnderLoad && !invite.echoesCookie { return .askForCookie(packet, from: invite.source) }
        // Step 7.
        return .acceptHalfOpen(
            packet, from: invite.source, cookieEchoed: view.isUnderLoad && invite.echoesCookie)
    }

    // MARK: - BUSY

    /// PROTOCOL.md 5, "Addresses", "Refusals are held" and "Cookies": BUSY for the invitation we
    /// are making, believed only from the address we invited.
    private func answer(_ busy: Busy, from source: PeerAddress) -> Decision {
        // "BUSY MUST be accepted only for a session we are inviting and still awaiting ACCEPT":
        // session id, sender and receiver ids must match.
        guard let invitation = view.invitation, invitation.sessionID == busy.sessionID,
            busy.sender == invitation.invitee.peer, busy.receiver == view.deviceID
        else {
            return .reject(
                ProtocolError(
                    .unknownSession, "BUSY for session \(busy.sessionID), which we are not inviting"))
        }
        // ... and it must come from the address we invite at.
        guard invitation.invitee.address == source else {
            return .reject(
                ProtocolError(
                    .unexpectedMessage,
                    "BUSY for session \(busy.sessionID) from \(source), not the invited address"))
        }
        switch busy.reason {
        // "Cookies": BUSY(retry) sends the INVITE again with its cookie.
        case .retry:
            return .sendInviteWithCookie(busy.cookie)
        // "Refusals are held": the invitation's first refusal is held; later ones change nothing,
        // so that a forger cannot prolong the wait.
        case .inSession, .unavailable, .staleID:
            guard view.heldRefusal?.busy.sessionID != busy.sessionID, let until = invitation.refusalHeldUntil
            else { return .noChange }
            return .holdRefusal(HeldRefusal(busy: busy, until: until))
        }
    }

    /// PROTOCOL.md 5, "Refusals are held" and "Stale ids": a held refusal whose time came is
    /// believed if the invitation it refused still awaits ACCEPT. BUSY(1) or (2) backs off from the
    /// peer; BUSY(4) forgets its id at that address (another device answers there).
    private func heldRefusalEnded() -> Decision {
        guard let refusal = view.heldRefusal, view.now >= refusal.until else { return .noChange }
        let busy = refusal.busy
        guard view.invitation?.sessionID == busy.sessionID else { return .dropHeldRefusal }
        switch busy.reason {
        case .inSession, .unavailable: return .believeBusy(busy.sender)
        case .staleID: return .forgetStaleID(busy.sender)
        case .retry: preconditionFailure("BUSY(retry) is followed at once, never held")
        }
    }

    /// PROTOCOL.md 5, "Refusals are held": a refusal outlives neither the invitation it refused
    /// nor that invitation's wait for ACCEPT.
    private func heldRefusalOutlived() -> Decision {
        guard let refusal = view.heldRefusal, view.invitation?.sessionID != refusal.busy.sessionID else {
            return .noChange
        }
        return .dropHeldRefusal
    }

    // MARK: - Tentative invitations and half-open handshakes

    /// PROTOCOL.md 5, "Tentative invitations": the peer we wait on may be a phantom. Go elsewhere if
    /// its second INVITE went unanswered while another candidate ranks as near, if it is a
    /// newcomer and another peer became established or was heard more often, or if three INVITEs
    /// to it went unanswered while another peer waits.
    private func tentativeInvitation(_ ranking: TentativeRanking) -> Decision {
        guard let invitation = view.invitation, invitation.isTentative else { return .noChange }
        let sent = invitation.transmissions
        // "Probing ahead": a peer that showed it receives is invited now rather than after the
        // invitee's PROBEs go unanswered. Nothing is counted: the invitee has not failed to answer
        // yet, and once invited, the answered peer's INVITE needs no PROBE, so this cannot repeat.
        if invitation.isProbing && ranking.answeredCandidate {
            return .abandonTentative(countsUnanswered: false)
        }
        if sent >= Self.unansweredTransmissionsAmongEquals && ranking.equallyNearCandidate {
            return .abandonTentative(countsUnanswered: true)
        }
        if !invitation.isEstablished && (ranking.establishedCandidate || ranking.betterHeardCandidate) {
            // Given up before its INVITE went out three times unanswered, it counts nothing: the
            // peer has not failed to answer yet, we only went elsewhere, and a real peer on a lossy
            // link must not be blamed for it.
            return .abandonTentative(countsUnanswered: sent >= Self.unansweredTransmissions)
        }
        if sent >= Self.unansweredTransmissions && ranking.otherCandidate {
            return .abandonTentative(countsUnanswered: true)
        }
        return .noChange
    }

    /// PROTOCOL.md 5, "Half-open handshakes": when one becomes a candidate, our invitation still
    /// awaiting ACCEPT is abandoned without an outcome when it invited that same peer at that
    /// address (the tie-break's crossing INVITE, section 2); a tentative one is given up as
    /// unanswered, as tentative invitations given up are (its peer may be a phantom); any other
    /// goes on.
    private func halfOpenCompleted(_ peer: Endpoint) -> Decision {
        guard let invitation = view.invitation else { return .noChange }
        if invitation.invitee == peer { return .dropInvitation }
        guard invitation.isTentative else { return .noChange }
        return .abandonTentative(countsUnanswered: invitation.transmissions >= Self.unansweredTransmissions)
    }

    /// PROTOCOL.md 5, "Candidates": no half-open handshake waits beside a secured session of the
    /// same peer id or address; it is the other handshake of a crossing, or a forger's in its name.
    private func halfOpenBeside(_ secured: [Endpoint], _ halfOpen: [Endpoint]) -> Decision {
        let dropped = halfOpen.indices.filter { index in
            secured.contains { $0.peer == halfOpen[index].peer || $0.address == halfOpen[index].address }
        }
        return dropped.isEmpty ? .noChange : .dropHalfOpen(dropped)
    }
}
