import Testing

@testable import ProfileDropCore

/// The invitation rules alone (PROTOCOL.md 2, "Crossing INVITEs", and 5): one test per row of
/// ``InvitationArbiter``, each with a view where the row applies and a neighbouring one where it
/// does not.
@Suite struct InvitationArbiterTests {
    typealias Arbiter = InvitationArbiter

    static let us = DeviceID(rawValue: 500)
    static let lower = DeviceID(rawValue: 100)
    static let higher = DeviceID(rawValue: 900)
    static let peerAddress = PeerAddress(10, 0, 0, 7, port: 4000)
    static let otherAddress = PeerAddress(10, 0, 0, 8, port: 4000)
    static let now = Instant.zero + .seconds(2)

    static func invitation(
        of peer: DeviceID = higher, at address: PeerAddress = peerAddress, tentative: Bool = true,
        established: Bool = false, transmissions: Int = 1
    ) -> Arbiter.Invitation {
        Arbiter.Invitation(
            sessionID: 77, invitee: .init(peer: peer, address: address), isTentative: tentative,
            isEstablished: established, transmissions: transmissions,
            refusalHeldUntil: now + .milliseconds(50))
    }

    static func arbiter(
        closed: Bool = false, invitation: Arbiter.Invitation? = nil, underLoad: Bool = false,
        fresh: Bool = false, heldRefusal: HeldRefusal? = nil, at time: Instant = now
    ) -> Arbiter {
        Arbiter(
            view: Arbiter.View(
                deviceID: us, now: time, isClosed: closed, invitation: invitation, isUnderLoad: underLoad,
                hasFreshHalfOpen: fresh, heldRefusal: heldRefusal))
    }

    static func packet(from sender: DeviceID = higher, to receiver: DeviceID = us) -> HandshakePacket {
        HandshakePacket(sessionID: 42, sender: sender, receiver: receiver, noiseMessage: [])
    }

    static func invite(
        from sender: DeviceID = higher, to receiver: DeviceID = us, at source: PeerAddress = peerAddress,
        disfavoured: Bool = false, candidates: [Arbiter.Endpoint] = [], echoesCookie: Bool = false
    ) -> Arbiter.Event {
        .newInvite(
            Arbiter.Invite(
                packet: packet(from: sender, to: receiver), source: source, senderDisfavoured: disfavoured,
                candidates: candidates, echoesCookie: echoesCookie))
    }

    static func refusal(_ reason: BusyReason, to sender: DeviceID = higher) -> Busy {
        Busy(sessionID: 42, sender: us, receiver: sender, reason: reason)
    }

    static func busy(_ reason: BusyReason, session: UInt64 = 77, from sender: DeviceID = higher) -> Busy {
        Busy(
            sessionID: session, sender: sender, receiver: us, reason: reason,
            cookie: reason == .retry ? [UInt8](repeating: 9, count: WireConstants.cookieLength) : [])
    }

    static func held(_ reason: BusyReason, session: UInt64 = 77, until: Instant = now) -> HeldRefusal {
        HeldRefusal(busy: busy(reason, session: session), until: until)
    }

    static let accepted = Arbiter.Decision.acceptHalfOpen(packet(), from: peerAddress, cookieEchoed: false)

    // MARK: - Asked on every input

    @Test func theDeviceInvitesOnlyWhenOpenNotInvitingWithAPlaceFreeNoFreshHandshakeAndSomeoneToInvite() {
        #expect(
            Arbiter.mayInvite(
                isClosed: false, isInviting: false, candidateCount: 2, hasFreshHalfOpen: false,
                hasPeerToInvite: true))
        for (closed, inviting, candidates, fresh, peer) in [
            (true, false, 0, false, true), (false, true, 0, false, true), (false, false, 3, false, true),
            (false, false, 0, true, true), (false, false, 0, false, false),
        ] {
            #expect(
                !Arbiter.mayInvite(
                    isClosed: closed, isInviting: inviting, candidateCount: candidates,
                    hasFreshHalfOpen: fresh,
                    hasPeerToInvite: peer))
        }
    }

    @Test func beaconsSayBusyOnlyWithEveryCandidatePlaceTakenAndQueriesStopForASecuredOrKnownSession() {
        let full = Arbiter.announcement(candidateCount: 3, isInviting: false, isTentative: false)
        #expect(full == Arbiter.Announcement(saysBusy: true, sendsNoQuery: true))
        let one = Arbiter.announcement(candidateCount: 1, isInviting: false, isTentative: false)
        #expect(one == Arbiter.Announcement(saysBusy: false, sendsNoQuery: true))
        let known = Arbiter.announcement(candidateCount: 0, isInviting: true, isTentative: false)
        #expect(known == Arbiter.Announcement(saysBusy: false, sendsNoQuery: true))
        let tentative = Arbiter.announcement(candidateCount: 0, isInviting: true, isTentative: true)
        #expect(tentative == Arbiter.Announcement(saysBusy: false, sendsNoQuery: false))
    }

    // MARK: - Routing an INVITE

    @Test func theLowerIdAnswersAHalfOpenHandshakesInviteSentAgainWhileInvitingItsSenderWithItsOwn() {
        let crossing = Self.arbiter(invitation: Self.invitation(of: Self.higher))
        #expect(
            crossing.decide(.invite(Self.packet(), from: Self.peerAddress, .halfOpen))
                == .resendCrossingInvite)
        // The higher id, or an INVITE from another address, goes to the half-open handshake.
        let higher = Self.arbiter(invitation: Self.invitation(of: Self.lower))
        #expect(
            higher.decide(.invite(Self.packet(from: Self.lower), from: Self.peerAddress, .halfOpen))
                == .routeToSession(Self.packet(from: Self.lower), from: Self.peerAddress))
        #expect(
            crossing.decide(.invite(Self.packet(), from: Self.otherAddress, .halfOpen))
                == .routeToSession(Self.packet(), from: Self.otherAddress))
    }

    @Test func anInviteOfASessionWeHaveGoesToItAndAnyOtherIsAnsweredAfterTheRateLimits() {
        let arbiter = Self.arbiter(invitation: Self.invitation(of: Self.higher))
        #expect(
            arbiter.decide(.invite(Self.packet(), from: Self.peerAddress, .other))
                == .routeToSession(Self.packet(), from: Self.peerAddress))
        #expect(
            arbiter.decide(.invite(Self.packet(), from: Self.peerAddress, .none))
                == .answerAfterRateLimits(Self.packet(), from: Self.peerAddress))
    }

    // MARK: - Answering a new INVITE, steps 1 to 7

    @Test func step1AnInviteForAnotherIdGetsBusy4NamingThatIdAndCountsAsUnexpected() {
        let stale = DeviceID(rawValue: 501)
        guard
            case .refuseStaleID(let busy, let destination, let error) = Self.arbiter().decide(
                Self.invite(to: stale))
        else {
            Issue.record("not refused as stale")
            return
        }
        #expect(busy == Busy(sessionID: 42, sender: stale, receiver: Self.higher, reason: .staleID))
        #expect(destination == Self.peerAddress && error.code == .unexpectedMessage)
        #expect(Self.arbiter().decide(Self.invite()) == Self.accepted)
    }

    @Test func step2OurOwnInviteIsDroppedAsOurOwn() {
        guard case .reject(let error) = Self.arbiter().decide(Self.invite(from: Self.us)) else {
            Issue.record("our own INVITE not dropped")
            return
        }
        #expect(error.code == .ownDatagram)
        #expect(Self.arbiter().decide(Self.invite(from: Self.lower)) != .reject(error))
    }

    @Test func step3AClosedDeviceOrADisfavouredSenderGetsBusy2EvenWhileWeInviteIt() {
        let refused = Arbiter.Decision.refuse(Self.refusal(.unavailable), to: Self.peerAddress)
        #expect(Self.arbiter(closed: true).decide(Self.invite()) == refused)
        let crossing = Self.arbiter(invitation: Self.invitation(of: Self.higher))
        #expect(crossing.decide(Self.invite(disfavoured: true)) == refused)
        #expect(Self.arbiter().decide(Self.invite()) == Self.accepted)
    }

    @Test func step4OnACrossingInviteTheLowerIdSendsItsOwnAgainAndTheHigherAcceptsBesideItsInvitation() {
        let lowerSide = Self.arbiter(invitation: Self.invitation(of: Self.higher))
        #expect(lowerSide.decide(Self.invite(from: Self.higher)) == .resendCrossingInvite)
        // Only from the address we invite at: elsewhere it is any other INVITE.
        #expect(
            lowerSide.decide(Self.invite(from: Self.higher, at: Self.otherAddress)) != .resendCrossingInvite)
        // The higher side accepts, even beside three candidates or a fresh handshake (steps 4 and
        // 5 are skipped), and asks for a cookie under load (step 6).
        let full = Array(repeating: Arbiter.Endpoint(peer: Self.higher, address: Self.otherAddress), count: 3)
        let higherSide = Self.arbiter(invitation: Self.invitation(of: Self.lower), fresh: true)
        #expect(
            higherSide.decide(Self.invite(from: Self.lower, candidates: full))
                == .acceptHalfOpen(Self.packet(from: Self.lower), from: Self.peerAddress, cookieEchoed: false)
        )
        let loaded = Self.arbiter(invitation: Self.invitation(of: Self.lower), underLoad: true)
        #expect(
            loaded.decide(Self.invite(from: Self.lower))
                == .askForCookie(Self.packet(from: Self.lower), from: Self.peerAddress))
    }

    @Test func step4AllCandidatePlacesTakenOrASessionWithTheSendersIdOrAddressGetBusy1() {
        let busy = Arbiter.Decision.refuseWhileBusy(Self.refusal(.inSession), to: Self.peerAddress)
        let elsewhere = { (host: UInt8) in
            Arbiter.Endpoint(
                peer: DeviceID(rawValue: UInt64(host)), address: PeerAddress(10, 0, 1, host, port: 4000))
        }
        #expect(
            Self.arbiter().decide(Self.invite(candidates: [elsewhere(1), elsewhere(2), elsewhere(3)])) == busy
        )
        #expect(
            Self.arbiter().decide(Self.invite(candidates: [elsewhere(1), elsewhere(2)])) == Self.accepted)
        let sameID = Arbiter.Endpoint(peer: Self.higher, address: Self.otherAddress)
        let sameAddress = Arbiter.Endpoint(peer: Self.lower, address: Self.peerAddress)
        #expect(Self.arbiter().decide(Self.invite(candidates: [sameID])) == busy)
        #expect(Self.arbiter().decide(Self.invite(candidates: [sameAddress])) == busy)
        // Our tentative invitation of the sender's id at another address refuses nothing.
        let racer = Self.arbiter(invitation: Self.invitation(of: Self.higher, at: Self.otherAddress))
        #expect(racer.decide(Self.invite()) == Self.accepted)
    }

    @Test func step5AFreshHalfOpenHandshakeWithNoLiveSessionGetsBusy1() {
        let busy = Arbiter.Decision.refuseWhileBusy(Self.refusal(.inSession), to: Self.peerAddress)
        #expect(Self.arbiter(underLoad: true, fresh: true).decide(Self.invite()) == busy)
        // Beside an invitation of ours, or a candidate, a fresh handshake holds nothing back.
        let inviting = Self.arbiter(invitation: Self.invitation(of: Self.lower), fresh: true)
        #expect(inviting.decide(Self.invite()) == Self.accepted)
        let candidate = Arbiter.Endpoint(peer: Self.lower, address: Self.otherAddress)
        #expect(Self.arbiter(fresh: true).decide(Self.invite(candidates: [candidate])) == Self.accepted)
    }

    @Test func step6UnderLoadAnInviteWithoutAValidCookieGetsBusyRetry() {
        let loaded = Self.arbiter(underLoad: true)
        #expect(loaded.decide(Self.invite()) == .askForCookie(Self.packet(), from: Self.peerAddress))
        #expect(
            loaded.decide(Self.invite(echoesCookie: true))
                == .acceptHalfOpen(Self.packet(), from: Self.peerAddress, cookieEchoed: true))
    }

    @Test func step7OtherwiseTheInviteIsAcceptedAsAHalfOpenHandshake() {
        #expect(Self.arbiter().decide(Self.invite()) == Self.accepted)
        // A cookie proves its source only under load, where it was checked.
        #expect(Self.arbiter().decide(Self.invite(echoesCookie: true)) == Self.accepted)
        #expect(Self.arbiter(fresh: true).decide(Self.invite()) != Self.accepted)
    }

    // MARK: - BUSY for our invitation

    @Test func aBusyForNoInvitationOfOursOrNamingOtherIdsIsAnUnknownSession() {
        let inviting = Self.arbiter(invitation: Self.invitation())
        for (arbiter, busy) in [
            (Self.arbiter(), Self.busy(.inSession)),
            (inviting, Self.busy(.inSession, session: 78)),
            (inviting, Self.busy(.inSession, from: Self.lower)),
        ] {
            guard case .reject(let error) = arbiter.decide(.busy(busy, from: Self.peerAddress)) else {
                Issue.record("\(busy) not rejected")
                continue
            }
            #expect(error.code == .unknownSession)
        }
        var toOther = Self.busy(.inSession)
        toOther.receiver = Self.lower
        #expect(
            inviting.decide(.busy(toOther, from: Self.peerAddress)) != .holdRefusal(Self.held(.inSession)))
        #expect(
            inviting.decide(.busy(Self.busy(.inSession), from: Self.peerAddress))
                == .holdRefusal(HeldRefusal(busy: Self.busy(.inSession), until: Self.now + .milliseconds(50)))
        )
    }

    @Test func aBusyFromAnotherAddressThanTheInvitedOneIsUnexpected() {
        let inviting = Self.arbiter(invitation: Self.invitation())
        guard
            case .reject(let error) = inviting.decide(.busy(Self.busy(.unavailable), from: Self.otherAddress))
        else {
            Issue.record("BUSY from another address not rejected")
            return
        }
        #expect(error.code == .unexpectedMessage)
        guard case .holdRefusal = inviting.decide(.busy(Self.busy(.unavailable), from: Self.peerAddress))
        else {
            Issue.record("BUSY from the invited address not held")
            return
        }
    }

    @Test func busyRetrySendsTheInviteAgainWithItsCookieAndIsNeverHeld() {
        let inviting = Self.arbiter(invitation: Self.invitation())
        let retry = Self.busy(.retry)
        #expect(inviting.decide(.busy(retry, from: Self.peerAddress)) == .sendInviteWithCookie(retry.cookie))
        let heldAlready = Self.arbiter(invitation: Self.invitation(), heldRefusal: Self.held(.inSession))
        #expect(
            heldAlready.decide(.busy(retry, from: Self.peerAddress)) == .sendInviteWithCookie(retry.cookie))
    }

    @Test func theFirstRefusalOfAnInvitationIsHeldAndLaterOnesChangeNothing() {
        let inviting = Self.arbiter(invitation: Self.invitation())
        let refusal = HeldRefusal(busy: Self.busy(.staleID), until: Self.now + .milliseconds(50))
        #expect(inviting.decide(.busy(Self.busy(.staleID), from: Self.peerAddress)) == .holdRefusal(refusal))
        let holding = Self.arbiter(invitation: Self.invitation(), heldRefusal: refusal)
        #expect(holding.decide(.busy(Self.busy(.inSession), from: Self.peerAddress)) == .noChange)
        // A refusal held for an earlier invitation does not count.
        let earlier = Self.arbiter(
            invitation: Self.invitation(), heldRefusal: Self.held(.inSession, session: 70))
        #expect(earlier.decide(.busy(Self.busy(.staleID), from: Self.peerAddress)) == .holdRefusal(refusal))
    }

    // MARK: - Held refusals

    @Test func aHeldRefusalWhoseHoldEndedIsBelievedBusyBacksOffAndStaleIDForgets() {
        let until = Self.now + .milliseconds(10)
        for (reason, believed) in [
            (BusyReason.inSession, Arbiter.Decision.believeBusy(Self.higher)),
            (.unavailable, .believeBusy(Self.higher)),
            (.staleID, .forgetStaleID(Self.higher)),
        ] {
            let refusal = Self.held(reason, until: until)
            let before = Self.arbiter(invitation: Self.invitation(), heldRefusal: refusal)
            #expect(before.decide(.timersDue) == .noChange)
            let after = Self.arbiter(invitation: Self.invitation(), heldRefusal: refusal, at: until)
            #expect(after.decide(.timersDue) == believed)
        }
    }

    @Test func aHeldRefusalWhoseInvitationEndedIsDroppedWhenItsHoldEnds() {
        let refusal = Self.held(.inSession)
        #expect(Self.arbiter(heldRefusal: refusal).decide(.timersDue) == .dropHeldRefusal)
        let other = Self.arbiter(
            invitation: Self.invitation(), heldRefusal: Self.held(.inSession, session: 70))
        #expect(other.decide(.timersDue) == .dropHeldRefusal)
        #expect(Self.arbiter().decide(.timersDue) == .noChange)
    }

    @Test func aHeldRefusalOutlivesNeitherItsInvitationNorItsWaitForAccept() {
        let refusal = Self.held(.inSession, until: Self.now + .seconds(1))
        #expect(Self.arbiter(heldRefusal: refusal).decide(.inputHandled) == .dropHeldRefusal)
        #expect(
            Self.arbiter(invitation: Self.invitation(), heldRefusal: refusal).decide(.inputHandled)
                == .noChange)
    }

    // MARK: - Tentative invitations

    static func ranking(
        equallyNear: Bool = false, established: Bool = false, betterHeard: Bool = false, other: Bool = false
    ) -> Arbiter.TentativeRanking {
        Arbiter.TentativeRanking(
            equallyNearCandidate: equallyNear, establishedCandidate: established,
            betterHeardCandidate: betterHeard, otherCandidate: other)
    }

    static let nobody = ranking()

    @Test func aTentativeInvitationIsGivenUpAsUnansweredAfterTwoInvitesAmongEquallyNearCandidates() {
        let tie = Self.ranking(equallyNear: true, other: true)
        let twice = Self.arbiter(invitation: Self.invitation(established: true, transmissions: 2))
        #expect(twice.decide(.outcomesTaken(tie)) == .abandonTentative(countsUnanswered: true))
        #expect(twice.decide(.outcomesTaken(Self.nobody)) == .noChange)
        let once = Self.arbiter(invitation: Self.invitation(established: true, transmissions: 1))
        #expect(once.decide(.outcomesTaken(tie)) == .noChange)
        let verified = Self.arbiter(invitation: Self.invitation(tentative: false, transmissions: 5))
        #expect(verified.decide(.outcomesTaken(tie)) == .noChange)
    }

    @Test func aNewcomersInvitationIsGivenUpForAnEstablishedOrBetterHeardCandidateSilentlyBeforeThreeInvites()
    {
        let established = Self.ranking(established: true, other: true)
        let betterHeard = Self.ranking(betterHeard: true, other: true)
        let newcomer = Self.arbiter(invitation: Self.invitation(established: false, transmissions: 1))
        #expect(newcomer.decide(.outcomesTaken(established)) == .abandonTentative(countsUnanswered: false))
        #expect(newcomer.decide(.outcomesTaken(betterHeard)) == .abandonTentative(countsUnanswered: false))
        let late = Self.arbiter(invitation: Self.invitation(established: false, transmissions: 3))
        #expect(late.decide(.outcomesTaken(betterHeard)) == .abandonTentative(countsUnanswered: true))
        let known = Self.arbiter(invitation: Self.invitation(established: true, transmissions: 1))
        #expect(known.decide(.outcomesTaken(established)) == .noChange)
    }

    @Test func aTentativeInvitationIsGivenUpAsUnansweredAfterThreeInvitesWhileAnotherPeerIsACandidate() {
        let other = Self.ranking(other: true)
        let thrice = Self.arbiter(invitation: Self.invitation(established: true, transmissions: 3))
        #expect(thrice.decide(.outcomesTaken(other)) == .abandonTentative(countsUnanswered: true))
        #expect(thrice.decide(.outcomesTaken(Self.nobody)) == .noChange)
        let twice = Self.arbiter(invitation: Self.invitation(established: true, transmissions: 2))
        #expect(twice.decide(.outcomesTaken(other)) == .noChange)
    }

    /// PROTOCOL.md 5, "Probing ahead": while our tentative invitee's PROBE waits for its echo, a
    /// candidate that answered one is invited instead, counting nothing against the invitee; once
    /// the invitee's address answered, or with no answered candidate, the invitation goes on.
    @Test func aProbedInvitationIsGivenUpSilentlyForACandidateThatAnswered() {
        let answered = Arbiter.TentativeRanking(
            equallyNearCandidate: false, establishedCandidate: false, betterHeardCandidate: false,
            otherCandidate: true, answeredCandidate: true)
        var probing = Self.invitation(established: true, transmissions: 1)
        probing.isProbing = true
        #expect(
            Self.arbiter(invitation: probing).decide(.outcomesTaken(answered))
                == .abandonTentative(countsUnanswered: false))
        #expect(
            Self.arbiter(invitation: probing).decide(.outcomesTaken(Self.ranking(other: true))) == .noChange)
        let inviting = Self.invitation(established: true, transmissions: 1)
        #expect(Self.arbiter(invitation: inviting).decide(.outcomesTaken(answered)) == .noChange)
    }

    // MARK: - Half-open handshakes

    @Test func aCompletedHalfOpenHandshakeOfOurInviteeEndsOurInvitationWithoutAnOutcome() {
        let invitee = Arbiter.Endpoint(peer: Self.higher, address: Self.peerAddress)
        let crossing = Self.arbiter(invitation: Self.invitation(tentative: false))
        #expect(crossing.decide(.halfOpenCompleted(invitee)) == .dropInvitation)
        let elsewhere = Arbiter.Endpoint(peer: Self.higher, address: Self.otherAddress)
        #expect(crossing.decide(.halfOpenCompleted(elsewhere)) == .noChange)
        #expect(Self.arbiter().decide(.halfOpenCompleted(invitee)) == .noChange)
    }

    @Test func aCompletedHalfOpenHandshakeOfAnotherPeerGivesUpATentativeInvitationAsUnanswered() {
        let other = Arbiter.Endpoint(peer: Self.lower, address: Self.otherAddress)
        let early = Self.arbiter(invitation: Self.invitation(transmissions: 1))
        #expect(early.decide(.halfOpenCompleted(other)) == .abandonTentative(countsUnanswered: false))
        let late = Self.arbiter(invitation: Self.invitation(transmissions: 3))
        #expect(late.decide(.halfOpenCompleted(other)) == .abandonTentative(countsUnanswered: true))
        let verified = Self.arbiter(invitation: Self.invitation(tentative: false, transmissions: 3))
        #expect(verified.decide(.halfOpenCompleted(other)) == .noChange)
    }

    @Test func halfOpenHandshakesOfASecuredSessionsIdOrAddressAreDropped() {
        let secured = [Arbiter.Endpoint(peer: Self.higher, address: Self.peerAddress)]
        let halfOpen = [
            Arbiter.Endpoint(peer: Self.lower, address: Self.otherAddress),
            Arbiter.Endpoint(peer: Self.higher, address: Self.otherAddress),
            Arbiter.Endpoint(peer: Self.lower, address: Self.peerAddress),
        ]
        #expect(
            Self.arbiter().decide(.settled(halfOpen: halfOpen, secured: secured)) == .dropHalfOpen([1, 2]))
        #expect(Self.arbiter().decide(.settled(halfOpen: [halfOpen[0]], secured: secured)) == .noChange)
        #expect(Self.arbiter().decide(.settled(halfOpen: halfOpen, secured: [])) == .noChange)
    }
}
