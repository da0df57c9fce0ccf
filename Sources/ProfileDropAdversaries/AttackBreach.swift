import ProfileDropCore

/// How a session ended, as its user saw it: a ``CloseReason`` with an error reduced to its code
/// (its diagnostic differs from run to run, its rule does not).
public enum SessionEnd: Sendable, Equatable, CustomStringConvertible {
    /// Both cards were exchanged.
    case exchanged
    /// One side refused.
    case declined(by: Side)
    /// The proximity gate did not open, or closed.
    case outOfRange
    /// A wait ran out.
    case timeout(TimeoutKind)
    /// The peer broke the rule with this code, or the channel failed.
    case error(ProtocolError.Code)

    /// The end of a session closed for `reason`.
    public init(_ reason: CloseReason) {
        switch reason {
        case .exchanged: self = .exchanged
        case .declined(let side): self = .declined(by: side)
        case .outOfRange: self = .outOfRange
        case .timeout(let kind): self = .timeout(kind)
        case .error(let error): self = .error(error.code)
        }
    }

    public var description: String {
        switch self {
        case .exchanged: CloseReason.exchanged.description
        case .declined(let side): CloseReason.declined(by: side).description
        case .outOfRange: CloseReason.outOfRange.description
        case .timeout(let kind): CloseReason.timeout(kind).description
        case .error(let code): "error: \(code.name)"
        }
    }
}

/// What an adversary took that a victim's user did not give.
public enum TakenSecret: Sendable, Equatable, CustomStringConvertible {
    /// The victim's card.
    case card(victim: String)
    /// The victim's resolving key.
    case resolvingKey(victim: String)
    /// The bond key the two victims share.
    case bondKey

    public var description: String {
        switch self {
        case .card(let victim): "\(victim)'s card"
        case .resolvingKey(let victim): "\(victim)'s resolving key"
        case .bondKey: "the victims' bond key"
        }
    }
}

/// A broken security property: the cause, with what shows it. Its description is the line the
/// report prints.
public enum AttackBreach: Sendable, Equatable, CustomStringConvertible {
    // Confidentiality.
    /// A victim was shown an adversary's device as its known peer.
    case adversaryShownAsKnown(victim: String)
    /// A secret reached the adversary although the victims' users withheld it.
    case secretTaken(TakenSecret, users: AttackUsers)
    /// The identity prober linked the victim's two runs, through the link described.
    case runsLinked(String)
    /// The victim's resolving key reached the identity prober although its user did not agree.
    case resolvingKeyReachedProber
    /// The victim's card reached the identity prober although its user did not agree.
    case cardReachedProber
    /// Victim A remembered the identity thief under its known peer B's resolving key.
    case bondReplacedByThief
    /// Victim A was shown the identity thief as its known peer.
    case thiefShownAsKnown
    /// Victim A's card reached the identity thief although its user did not agree.
    case cardReachedThief
    /// Victim B's card reached the replaying prober although its user did not agree.
    case cardReachedReplayingProber
    /// B's reaction to M's replayed IDENT differed with whether B knows M: the first items that
    /// differ, or the two counts when one reaction is a prefix of the other.
    case reactionTellsKnowledge(knowing: String, notKnowing: String)

    // Availability, every run against the pair.
    /// `who` did not exchange `condition`; how each device closed.
    case noExchange(who: String, condition: String, closes: [String])
    /// `who` took `ratio` times the pair's no-attack time, `condition`.
    case slowExchange(
        who: String, condition: String, ratio: Double, underAttack: Duration?, baseline: Duration?)
    /// A victim was not closed by its overall deadline (plus slack).
    case notClosed(victim: String, deadline: Instant)
    /// A victim closed after its overall deadline (plus slack).
    case closedLate(victim: String, at: Instant, deadline: Instant)
    /// A victim's discovery table held more peers than its bound.
    case tooManyPeers(peers: Int, bound: Int)
    /// A victim held a card buffer over its bound, in chunks.
    case bufferTooLarge(chunks: Int, bound: Int)

    // Availability, malicious peers.
    /// The victim ended a malicious session otherwise than the misbehaviour calls for.
    case wrongSessionEnd(at: Instant, ended: SessionEnd, expected: SessionEnd)
    /// The victim never ended the malicious session.
    case sessionNeverEnded
    /// The victim never sent the CLOSE_ACK withholder a CLOSE.
    case noCloseToWithholder
    /// The victim sent the CLOSE_ACK withholder more datagrams after closing than it may.
    case tooManyCloses(received: Int, sent: Int)
    /// The victim still sent CLOSE this long after closing, past its closing limit.
    case closeAfterLimit(Duration)

    // Availability, cleartext attackers that answer what they see.
    /// Re-invitations sooner than the BUSY back-off after a forged BUSY.
    case reinvitedTooSoon(Int)
    /// Re-invitations after a forged BUSY(1/2) later than its back-off, as after a failure.
    case reinvitedTooLate(Int)
    /// Forged BUSY(retry) cost this many extra INVITEs in one invitation.
    case tooManyCookieInvites(Int)
    /// Invitations ran out as `timeout: handshake` under forged BUSYs.
    case invitationsTimedOut(Int)
    /// Peers forgotten for a forged BUSY(4) that their next BEACON did not put back.
    case staleIDNotBack(Int)
    /// Forged INVITEs cancelled invitations between the victims.
    case invitationsCancelled(Int, of: Int)
    /// A victim ended a session otherwise than exchanged under replayed SECURE packets.
    case sessionEndedUnderReplays(victim: String, at: Instant, ended: SessionEnd)
    /// The pair's exchange time differed from the no-attack run's under replayed SECURE packets.
    case replaysChangedTheRun(underAttack: Duration, baseline: Duration)
    /// The victims sent an address that never proved it receives this many times the attacker's
    /// bytes.
    case amplified(ratio: Double)

    // Availability, on the path.
    /// The cut-off victim exchanged and the silenced one did not.
    case unevenCut(cutOff: String, silenced: String, cutAfter: Duration)
    /// A victim closed as exchanged with other cards than the other victim's alone.
    case wrongCards(victim: String, received: Int)

    public var description: String {
        switch self {
        case .adversaryShownAsKnown(let victim): "\(victim) was shown the adversary as its known peer"
        case .secretTaken(let secret, let users):
            "\(secret) reached the adversary although "
                + (users == .careful ? "the users compare codes" : "nobody agreed to share")
        case .runsLinked(let link): "the prober linked the victim's two runs: \(link)"
        case .resolvingKeyReachedProber:
            "the victim's resolving key reached the prober although its user did not agree"
        case .cardReachedProber: "the victim's card reached the prober although its user did not agree"
        case .bondReplacedByThief:
            "A remembered the thief under known peer B's resolving key: its record of B would be "
                + "replaced by a bond the thief holds"
        case .thiefShownAsKnown: "A was shown the thief as its known peer"
        case .cardReachedThief: "A's card reached the thief although its user did not agree"
        case .cardReachedReplayingProber: "B's card reached the prober although its user did not agree"
        case .reactionTellsKnowledge(let knowing, let notKnowing):
            "B's reaction to M's replayed IDENT told whether B knows M: \(knowing) against \(notKnowing)"
        case .noExchange(let who, let condition, let closes):
            "\(who) did not exchange \(condition) (\(closes.joined(separator: ", ")))"
        case .slowExchange(let who, let condition, let ratio, let underAttack, let baseline):
            "\(who) took \(Availability.format(ratio))× the pair's no-attack time "
                + "(\(Availability.seconds(underAttack)) against \(Availability.seconds(baseline))) \(condition)"
        case .notClosed(let victim, let deadline): "\(victim) was not closed by its deadline \(deadline)"
        case .closedLate(let victim, let at, let deadline):
            "\(victim) closed at \(at), after its deadline \(deadline)"
        case .tooManyPeers(let peers, let bound):
            "a victim's discovery table held \(peers) peers (bound \(bound))"
        case .bufferTooLarge(let chunks, let bound):
            "a victim held a buffer of \(chunks) chunks (bound \(bound))"
        case .wrongSessionEnd(let at, let ended, let expected):
            "V ended a malicious session at \(at) with \(ended), not \(expected)"
        case .sessionNeverEnded: "V never ended the malicious session"
        case .noCloseToWithholder: "the victim never sent the CLOSE_ACK withholder a CLOSE"
        case .tooManyCloses(let received, let sent):
            "V sent the CLOSE_ACK withholder \(received) datagrams after closing, for its \(sent)"
        case .closeAfterLimit(let after):
            "V still sent CLOSE \(after) after closing, past its 12.6 s closing limit"
        case .reinvitedTooSoon(let count):
            "\(count) re-invitations came sooner than the BUSY back-off after a forged BUSY"
        case .reinvitedTooLate(let count):
            "\(count) re-invitations after a forged BUSY(1/2) came later than its back-off, as after a failure"
        case .tooManyCookieInvites(let most):
            "forged BUSY(retry) cost \(most) extra INVITEs in one invitation"
        case .invitationsTimedOut(let count):
            "\(count) invitations ran out as timeout: handshake under forged BUSYs"
        case .staleIDNotBack(let count):
            "after a forged BUSY(4), the peer's next BEACON did not put it back (\(count) times)"
        case .invitationsCancelled(let cancelled, let hit):
            "forged INVITEs cancelled \(cancelled) of \(hit) invitations between the victims (their ACCEPT "
                + "went unconfirmed)"
        case .sessionEndedUnderReplays(let victim, let at, let ended):
            "\(victim) ended a session at \(at) with \(ended) under replayed, tampered and reflected SECURE "
                + "packets"
        case .replaysChangedTheRun(let underAttack, let baseline):
            "the pair exchanged in \(underAttack) against \(baseline) without the replayer: a copy changed what "
                + "a victim did"
        case .amplified(let ratio):
            "the victims sent an address that never proved it receives \(Availability.format(ratio))× the bytes "
                + "the attacker sent them"
        case .unevenCut(let cutOff, let silenced, let cutAfter):
            "\(cutOff) exchanged and \(silenced) did not, though \(cutOff)'s datagrams all reached \(silenced) "
                + "(\(silenced) cut off from it \(Availability.seconds(cutAfter)) after the first SECURE packet)"
        case .wrongCards(let victim, let received):
            "\(victim) closed as exchanged with \(received) cards received, not the other victim's card alone"
        }
    }
}
