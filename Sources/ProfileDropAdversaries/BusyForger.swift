import ProfileDropCore
import ProfileDropCrypto
import ProfileDropSimulator

/// What the busy forger did and what the victims did with its BUSYs, against what PROTOCOL.md
/// (5; 11.4, BUSY; 11.6 item 3) says they do.
public struct ForgedBusyResult: Sendable {
    /// BUSYs forged, by reason: in-session (1), unavailable (2), retry (3), stale id (4).
    public var forged = [0, 0, 0, 0]
    /// Of those, the ones the initiator took (it was still awaiting ACCEPT), by reason: it follows a
    /// BUSY(retry) at once and holds the first BUSY(1), (2) or (4) of an invitation for its ACCEPT.
    public var taken = [0, 0, 0, 0]
    /// Of the BUSYs held, the ones the invitee's ACCEPT overruled (the initiator sent CONFIRM), by
    /// reason.
    public var overruled = [0, 0, 0, 0]
    /// Of the BUSYs held, the ones believed when no ACCEPT came in time, by reason.
    public var believed = [0, 0, 0, 0]
    /// INVITEs seen that the budget left unanswered.
    public var unanswered = 0
    /// BUSY(1) and BUSY(2) believed that the initiator's user was shown as the peer being busy.
    public var refusalsShown = 0
    /// From a BUSY(1) or BUSY(2) believed to the initiator's next INVITE of the same peer, when no
    /// session of its own came between.
    public var reinvitations: [Duration] = []
    /// Re-invitations sooner than the BUSY back-off allows.
    public var early = 0
    /// Re-invitations later than the BUSY back-off (and a fresh half-open handshake) explain, with no
    /// session between: the back-off of a failure.
    public var late = 0
    /// INVITEs the initiator sent in answer to forged BUSY(retry), per invitation that took one.
    public var extraInvites: [Int] = []
    /// Forged BUSY(retry) taken past the invitation's three cookies: no INVITE at once, the cookie
    /// kept for the next retransmission.
    public var cookiesPastCap = 0
    /// Invitations that ran out as `timeout: handshake`: forged BUSYs must not make one fail (a
    /// forged cookie past the three is kept for the next retransmission, so the invitee's own,
    /// which comes after it, is carried).
    public var invitationsTimedOut = 0
    /// BUSY(4) believed after which the initiator's table no longer held the peer.
    public var staleForgotten = 0
    /// From a BUSY(4) believed to the peer's next BEACON at the initiator, when that BEACON put it back.
    public var staleBack: [Duration] = []
    /// BUSY(4) after which the peer's next BEACON did not put it back.
    public var staleNotBack = 0
    /// Sessions the victims saw end without an exchange (a failure counted against the peer).
    public var failures = 0
}

/// An observer on an open network that, for each INVITE between the victims that its
/// ``UnicastTap`` shows it, forges a BUSY from the invitee's address (which PROTOCOL.md 5 checks)
/// with the session id and both device ids the INVITE carries, arriving half a latency after the
/// INVITE left: before the real ACCEPT, a full round trip away. Each invitation gets one reason, in
/// turn: in-session (1), unavailable (2), retry (3, with a random cookie) and stale id (4); every
/// INVITE of an invitation, its retransmissions and the INVITEs sent again with a cookie included,
/// gets one BUSY. It holds no key, and forges at most its budget of datagrams in any second of
/// the run (the harness's seconds, those its meter counts).
final class BusyForger {
    static let allReasons: [BusyReason] = [.inSession, .unavailable, .retry, .staleID]

    /// One forged BUSY: the datagram for the driver to inject, from the invitee's address to the
    /// initiator, and what it says.
    struct Forgery {
        let datagram: ForgedDatagram
        let reason: BusyReason
        let sessionID: UInt64

        /// The initiator.
        var recipient: Int { datagram.recipient }
    }

    private var budget: Availability.DatagramBudget
    /// The reasons it gives, in turn.
    let reasons: [BusyReason]
    private var random: DeterministicRandom
    /// The reason of the next invitation, as an index into ``reasons``.
    private var turn: Int
    /// Each invitation seen and its reason.
    private var invitations: [(sessionID: UInt64, reason: BusyReason)] = []
    private(set) var forged = [0, 0, 0, 0]
    private(set) var unanswered = 0

    /// A forger of `budget` datagrams a second whose invitations get `reasons` in turn, from one
    /// drawn from `seedMaterial`.
    init(budget: Int, seedMaterial: [UInt8], reasons: [BusyReason] = BusyForger.allReasons) {
        precondition(!reasons.isEmpty, "at least one reason")
        self.budget = Availability.DatagramBudget(perSecond: budget)
        self.reasons = reasons
        random = DeterministicRandom(seedMaterial: seedMaterial)
        turn = Int(random.uniform(below: UInt64(reasons.count)))
    }

    /// The index of `reason` in ``allReasons``.
    static func index(_ reason: BusyReason) -> Int { Int(reason.rawValue) - 1 }

    /// The BUSY for `invite`, seen going from participant `initiator` to `invitee` at `time`; nil
    /// when this second's budget is spent.
    func answer(_ invite: HandshakePacket, from initiator: Int, to invitee: PeerAddress, at time: Instant)
        -> Forgery?
    {
        let reason: BusyReason
        if let known = invitations.first(where: { $0.sessionID == invite.sessionID }) {
            reason = known.reason
        } else {
            reason = reasons[turn % reasons.count]
            turn += 1
            invitations.append((invite.sessionID, reason))
        }
        guard budget.spend(at: time) else {
            unanswered += 1
            return nil
        }
        forged[Self.index(reason)] += 1
        let busy = Busy(
            sessionID: invite.sessionID, sender: invite.receiver, receiver: invite.sender, reason: reason,
            cookie: reason == .retry ? random.bytes(WireConstants.cookieLength) : [])
        return Forgery(
            datagram: ForgedDatagram(
                bytes: Packet.busy(busy).encoded(), source: invitee, recipient: initiator),
            reason: reason, sessionID: invite.sessionID)
    }
}

extension Availability {
    /// Most new cookies an invitation takes (PROTOCOL.md 5, "Cookies").
    static let cookieLimit = 3

    /// The busy forger's run: the pair against the same room without it, as every cleartext
    /// attacker, and what its BUSYs did against what PROTOCOL.md says they do (``BusyWatch``).
    /// `reasons` other than all four, in turn, and an observer `withholdingAccepts` (so that its
    /// refusals are believed) are for tests.
    static func busyForgerRun(
        runSeed: UInt64, reasons: [BusyReason] = BusyForger.allReasons, withholdingAccepts: Bool = false
    ) -> AttackTrial<ForgedBusyResult> {
        let kind = AttackKind.busyForger
        let pair = VictimPair(runSeed: runSeed)
        var (outcome, result, stage) = startPairRun(pair, runSeed: runSeed, kind: kind)
        let tap = UnicastTap(victims: stage.victims.map(\.member))
        tap.withholdsAccepts = withholdingAccepts
        stage.room.hook = TapHook(tap: tap)
        let budget = budget(runSeed: runSeed)
        result.budget = budget
        let forger = BusyForger(
            budget: budget,
            seedMaterial: Simulation.seedMaterial(runSeed, "attacks/availability/\(kind.rawValue)"),
            reasons: reasons)
        // The forger is no participant: it only injects, as a spoofer does.
        var meter = Meter(attacker: -1)
        var watch = BusyWatch(stage: stage)
        let delay = stage.room.latency / 2
        stage.run(until: runLimit) { stage in
            let copies = tap.take()
            watch.judge(stage, copies: copies)
            for copy in copies {
                let toVictim = stage.victims.contains {
                    $0.member != copy.source && stage.room.address(of: $0.member) == copy.destination
                }
                guard toVictim, case .invite(let invite)? = try? Packet(datagram: copy.bytes),
                    let forged = forger.answer(
                        invite, from: copy.source, to: copy.destination, at: stage.room.now)
                else { continue }
                let number = stage.inject(forged.datagram, after: delay, meter: &meter)
                watch.inFlight.append((number, forged))
            }
            meter.observe(stage)
            return false
        }
        measurePair(&result, stage: stage, meter: meter)
        var forgery = watch.result
        forgery.forged = forger.forged
        forgery.unanswered = forger.unanswered
        forgery.failures = stage.victims.reduce(0) { $0 + $1.ended.filter { $0.reason != .exchanged }.count }
        forgery.invitationsTimedOut = stage.victims.reduce(0) { total, victim in
            total + victim.ended.filter { $0.reason == .timeout(.handshake) }.count
        }
        outcome.screens = stage.victims.map(describe)
        return trial(outcome, result: result, stage: stage, figures: forgery)
    }

    /// What PROTOCOL.md says a forged BUSY does, broken: a back-off that is not the BUSY's own
    /// (5: 0.5–1.5 s, no failure), more than three INVITEs for forged cookies in one invitation
    /// (5, "Cookies"), a peer forgotten for BUSY(4) that its next BEACON does not bring back (5,
    /// "Stale ids").
    static func forgedBusyBreaches(_ forgery: ForgedBusyResult) -> [AttackBreach] {
        var breaches: [AttackBreach] = []
        if forgery.early > 0 { breaches.append(.reinvitedTooSoon(forgery.early)) }
        if forgery.late > 0 { breaches.append(.reinvitedTooLate(forgery.late)) }
        if let most = forgery.extraInvites.max(), most > cookieLimit {
            breaches.append(.tooManyCookieInvites(most))
        }
        if forgery.invitationsTimedOut > 0 {
            breaches.append(.invitationsTimedOut(forgery.invitationsTimedOut))
        }
        if forgery.staleNotBack > 0 { breaches.append(.staleIDNotBack(forgery.staleNotBack)) }
        return breaches
    }
}

/// Follows, step by step, what each forged BUSY did at the initiator it reached.
struct BusyWatch {
    /// Forged BUSYs in flight: the datagram number of each and what it was.
    var inFlight: [(number: UInt64, forged: BusyForger.Forgery)] = []
    private var counts = ForgedBusyResult()

    /// What was seen so far.
    var result: ForgedBusyResult {
        var result = counts
        result.extraInvites = retried.map(\.extra)
        return result
    }
    private let members: [Int]
    /// Per victim: how many of its events were read.
    private var cursors: [Int]
    /// Per victim: a forged BUSY(1/2) it believed, until its next invitation: when, which session, and
    /// whether something else could hold that invitation back meanwhile (a session of its own, or
    /// the peer inviting it, busy in its BEACONs until that invitation ends).
    private var awaitingInvite: [(at: Instant, sessionID: UInt64, intervened: Bool)?]
    /// Per victim: a forged BUSY(4) it believed, until the peer's next BEACON.
    private var awaitingBeacon: [Instant?]
    /// Per victim: the forged BUSY(1), (2) or (4) it holds for its invitation's ACCEPT, until the
    /// invitation goes on (CONFIRM) or the BUSY is believed.
    private var held: [BusyForger.Forgery?]
    /// Per invitation that took a forged BUSY(retry): the INVITEs sent in answer.
    private var retried: [(sessionID: UInt64, extra: Int)] = []
    /// The latest re-invitation the BUSY back-off explains, with a fresh half-open handshake of
    /// ours (which holds invitations back for 500 ms) after it; a failure's back-off is 3.2 s or more.
    private let window: Duration

    init(stage: AttackStage) {
        members = stage.victims.map(\.member)
        cursors = members.map { stage.room.eventLog[$0].count }
        awaitingInvite = members.map { _ in nil }
        awaitingBeacon = members.map { _ in nil }
        held = members.map { _ in nil }
        let timeouts = AttackStage.timeouts
        window = timeouts.busyBackoff.upperBound + timeouts.handshakeRetransmit * 2 + .milliseconds(10)
    }

    /// Reads what the last step did: a forged BUSY delivered, a victim's new INVITE, the peer's
    /// BEACON after a BUSY(4). `copies` are the victims' unicast of the step.
    mutating func judge(_ stage: AttackStage, copies: [UnicastTap.Copy]) {
        var events: [[DeviceEvent]] = []
        for (index, member) in members.enumerated() {
            let log = stage.room.eventLog[member]
            events.append(Array(log[cursors[index]...]))
            cursors[index] = log.count
        }
        for (index, list) in events.enumerated() {
            for event in list {
                switch event {
                case .connecting(_, initiator: false), .secured:
                    // A session of its own (its own invitation's `connecting` is the re-invitation).
                    if awaitingInvite[index] != nil { awaitingInvite[index]?.intervened = true }
                case .closed:
                    awaitingInvite[index] = nil
                    awaitingBeacon[index] = nil
                    held[index] = nil
                case .connecting(_, initiator: true), .advertising, .peerFound, .peerBusy, .verified,
                    .pairingInterrupted, .knownPeerMismatch, .peerRemembered, .incompatiblePeer, .ranging,
                    .inRange,
                    .consentRequested, .exchanging, .cardVerified, .cardReceived, .acknowledged,
                    .sessionEnded,
                    .datagramRejected:
                    break
                }
            }
            settleHeld(index, events: list, copies: copies, stage: stage)
        }
        if case .delivered(let copy)? = stage.lastStep {
            if let position = inFlight.firstIndex(where: { $0.number == copy.number }) {
                let forged = inFlight.remove(at: position).forged
                if let index = members.firstIndex(of: forged.recipient) {
                    delivered(forged, to: index, events: events[index], copies: copies, stage: stage)
                }
            } else if copy.multicast, let source = copy.source, members.contains(source),
                let index = members.firstIndex(of: copy.recipient), let since = awaitingBeacon[index],
                case .beacon? = try? Packet(datagram: copy.bytes)
            {
                awaitingBeacon[index] = nil
                if peersSeen(stage, index) > 0 {
                    counts.staleBack.append(stage.room.now - since)
                } else {
                    counts.staleNotBack += 1
                }
            }
        }
        for copy in copies {
            guard let index = members.firstIndex(of: copy.source),
                case .invite(let invite)? = try? Packet(datagram: copy.bytes)
            else { continue }
            // The peer invites us: it is busy in its BEACONs (or we hold its fresh half-open
            // handshake) until that invitation ends, which no BUSY of ours decides.
            for other in members.indices where other != index && awaitingInvite[other] != nil {
                awaitingInvite[other]?.intervened = true
            }
            if let refusal = held[index], invite.sessionID != refusal.sessionID { held[index] = nil }
            if let waiting = awaitingInvite[index], invite.sessionID != waiting.sessionID {
                awaitingInvite[index] = nil
                let delay = stage.room.now - waiting.at
                if delay < AttackStage.timeouts.busyBackoff.lowerBound {
                    counts.early += 1
                } else if !waiting.intervened {
                    counts.reinvitations.append(delay)
                    if delay > window { counts.late += 1 }
                }
            }
        }
    }

    private mutating func delivered(
        _ forged: BusyForger.Forgery, to index: Int, events: [DeviceEvent], copies: [UnicastTap.Copy],
        stage: AttackStage
    ) {
        let rejection = events.lazy.compactMap { event -> ProtocolError? in
            if case .datagramRejected(let reason) = event { reason } else { nil }
        }.first
        guard rejection == nil else { return }
        counts.taken[BusyForger.index(forged.reason)] += 1
        switch forged.reason {
        case .inSession, .unavailable, .staleID:
            // The initiator holds only an invitation's first refusal; it ignores the others.
            if held[index] == nil { held[index] = forged }
        case .retry:
            let sent = copies.filter { copy in
                guard copy.source == forged.recipient,
                    case .invite(let invite)? = try? Packet(datagram: copy.bytes)
                else { return false }
                return invite.sessionID == forged.sessionID
            }.count
            // Past the cap a cookie sends nothing at once; it is kept for the next retransmission.
            if sent == 0 { counts.cookiesPastCap += 1 }
            if let position = retried.firstIndex(where: { $0.sessionID == forged.sessionID }) {
                retried[position].extra += sent
            } else {
                retried.append((forged.sessionID, sent))
            }
        }
    }

    /// What became of the refusal victim `index` holds, after the step that gave it `events` and
    /// sent `copies`: overruled when its CONFIRM for that invitation went out; believed when it showed
    /// the peer busy (BUSY 1 or 2) or no longer holds the peer (BUSY 4).
    private mutating func settleHeld(
        _ index: Int, events: [DeviceEvent], copies: [UnicastTap.Copy], stage: AttackStage
    ) {
        guard let refusal = held[index] else { return }
        let reason = BusyForger.index(refusal.reason)
        let confirmed = copies.contains { copy in
            guard copy.source == refusal.recipient,
                case .confirm(let confirm)? = try? Packet(datagram: copy.bytes)
            else { return false }
            return confirm.sessionID == refusal.sessionID
        }
        if confirmed {
            held[index] = nil
            counts.overruled[reason] += 1
            return
        }
        switch refusal.reason {
        case .inSession, .unavailable:
            guard events.contains(where: { if case .peerBusy = $0 { true } else { false } }) else { return }
            counts.refusalsShown += 1
            awaitingInvite[index] = (stage.room.now, refusal.sessionID, false)
        case .staleID:
            guard peersSeen(stage, index) == 0 else { return }
            counts.staleForgotten += 1
            awaitingBeacon[index] = stage.room.now
        case .retry:
            preconditionFailure("BUSY(retry) is followed at once, never held")
        }
        held[index] = nil
        counts.believed[reason] += 1
    }

    private func peersSeen(_ stage: AttackStage, _ index: Int) -> Int {
        (stage.room.device(members[index]) as? Device)?.snapshot.peersSeen ?? 0
    }
}

extension Availability {
    /// The busy forger's notes over `forgeries`: what it forged and what was taken, the
    /// re-invitations after BUSY(1/2), the INVITEs forged cookies cost, and BUSY(4)'s peers coming
    /// back.
    static func forgedBusyNotes(_ forgeries: [ForgedBusyResult]) -> [String] {
        func sum(_ values: (ForgedBusyResult) -> Int) -> Int { forgeries.reduce(0) { $0 + values($1) } }
        func byReason(_ values: (ForgedBusyResult) -> [Int], _ reasons: [Int] = [0, 1, 2, 3]) -> String {
            reasons.map { reason in "\(forgeries.reduce(0) { $0 + values($1)[reason] })" }.joined(
                separator: "/")
        }
        var notes = [
            "BUSY 1/2/3/4 forged \(byReason(\.forged)), taken \(byReason(\.taken)); INVITEs unanswered for the budget \(sum(\.unanswered))",
            "BUSY 1/2/4 held for the ACCEPT: overruled by it \(byReason(\.overruled, [0, 1, 3])), believed \(byReason(\.believed, [0, 1, 3]))",
        ]
        let delays = forgeries.flatMap(\.reinvitations)
        if let low = delays.min(), let high = delays.max() {
            notes.append(
                "after BUSY(1/2) re-invited in \(seconds(low))–\(seconds(high)) (\(delays.count) times; "
                    + "sooner than the back-off \(sum(\.early)), later \(sum(\.late)))")
        }
        let extra = forgeries.flatMap(\.extraInvites)
        if let most = extra.max() {
            notes.append(
                "forged cookies cost at most \(most) extra INVITEs an invitation (\(extra.reduce(0, +)) in "
                    + "\(extra.count)), \(sum(\.cookiesPastCap)) past the cap kept for the next retransmission, invitations timed out "
                    + "\(sum(\.invitationsTimedOut))")
        }
        let back = forgeries.flatMap(\.staleBack)
        if sum(\.believed[3]) > 0 {
            notes.append(
                "BUSY(4): peer forgotten \(sum(\.staleForgotten)), back on its next BEACON \(back.count) "
                    + (back.max().map { "(within \(seconds($0)))" } ?? "")
                    + ", not back \(sum(\.staleNotBack))")
        }
        notes.append("sessions failed \(sum(\.failures))")
        return notes
    }
}

extension AttackKind {
    /// Availability, cleartext: an observer of the victims' unicast that answers each INVITE with a
    /// BUSY from the invitee's address before the real ACCEPT, its reasons in turn (1, 2, retry, 4).
    public static let busyForger = BusyForgerAttack.kind
}

/// The busy forger: the pair's exchange rule under its BUSYs, and what PROTOCOL.md says a forged
/// BUSY does (``Availability/forgedBusyBreaches(_:)``).
enum BusyForgerAttack: AdversaryKind {
    static let name = "busy-forger"
    static let budget = AttackBudget.datagramsPerSecond(ceiling: Availability.budget)
    static let pendingFix: String? = nil

    static func run(runSeed: UInt64, users: AttackUsers) -> AttackTrial<ForgedBusyResult> {
        Availability.busyForgerRun(runSeed: runSeed)
    }

    static func breaches(_ trial: AttackTrial<ForgedBusyResult>) -> [AttackBreach] {
        Availability.pairExchangeBreaches(
            trial, when: "under \(trial.outcome.availability?.budget ?? 0) forged BUSYs/s")
            + Availability.forgedBusyBreaches(trial.result)
    }

    static func notes(_ runs: [AttackRun<ForgedBusyResult>], users: AttackUsers) -> [String] {
        runs.isEmpty ? [] : Availability.forgedBusyNotes(runs.map(\.result))
    }

    static func summary(_ run: AttackRun<ForgedBusyResult>) -> [String] {
        Availability.forgedBusyNotes([run.result])
    }
}
