import ProfileDropCore
import ProfileDropCrypto
import ProfileDropSimulator

/// An availability kind whose attacker is one malicious authenticated peer of victim V, which
/// should then pair with an honest device H nearby. The family's run, breach rule, notes and
/// summary are shared; a kind says how its peer misbehaves.
///
/// Breach rule: V ends a malicious session before its overall deadline otherwise than with the
/// cause the misbehaviour calls for (``Availability/expectedCause(_:)``) or as superseded (`declined
/// by us`: V moved its cards with another candidate); V does not exchange with H within
/// ``Availability/maxRatio`` times the pair's no-attack time, counted from H's arrival, whatever
/// the malicious session does and whenever it came (required whenever H arrived with that much
/// time left before V's deadline; the fake acknowledger is the exception: an exchange ends a
/// device, and a CARD_ACK cannot be checked, PROTOCOL.md 11.6 item 12, so V's exchange with it is
/// the expected end, timed from the start); the CLOSE_ACK withholder draws more CLOSEs than
/// ``Availability/closeWithholdingBreaches(_:)`` allows; and the rules every availability run
/// shares.
protocol MaliciousPeerKind: AdversaryKind where Result == MaliciousSessionResult {
    /// How the peer misbehaves once it holds a session with V.
    static var behaviour: MaliciousBehaviour { get }
    /// Whether it invites again under a fresh device id as soon as each session ends.
    static var reinvites: Bool { get }
}

/// What became of a malicious peer's sessions with its victim.
struct MaliciousSessionResult: Sendable {
    /// How the victim ended the malicious peer's first session, as its user saw it; nil when none
    /// ended.
    var attackSessionEnd: SessionEnd?
    /// When the victim ended that session.
    var attackSessionEndedAt: Instant?
    /// Whether it came late, its session live at the victim's overall deadline unless the victim
    /// ended it first.
    var late = false
    /// How many of its sessions the victim ended.
    var attackSessions = 0
    /// The first of its sessions the victim ended before its deadline otherwise than expected, when
    /// the attack had run (its gate opened).
    var wrongEnd: (at: Instant, ended: SessionEnd)?
    /// Whether it held a session the victim never ended.
    var neverEnded = false
    /// Whether its session was live when the victim's run ended, and ended with it.
    var endedWithRun = false
    /// Whether the exchange rule applies: H arrived with time left before V's deadline (for the
    /// fake acknowledger: its session ended as expected with time left).
    var exchangeRequired = false
    /// The CLOSE_ACK withholder's count of what the victim sent it after closing.
    var closeWithholding: CloseWithholding?
}

/// What a victim sent the CLOSE_ACK withholder after closing the session.
struct CloseWithholding: Sendable {
    /// When the victim closed, nil if it never sent a CLOSE.
    var victimClosedAt: Instant?
    /// The withholder's packets after the victim closed.
    var sent = 0
    /// The victim's datagrams after it closed.
    var received = 0
    /// The last of them.
    var lastReceivedAt: Instant?
}

extension MaliciousPeerKind {
    static var budget: AttackBudget { .sessionsOfItsOwn }

    static func run(runSeed: UInt64, users: AttackUsers) -> AttackTrial<MaliciousSessionResult> {
        Availability.maliciousRun(runSeed: runSeed, kind: kind, behaviour: behaviour, reinvites: reinvites)
    }

    static func breaches(_ trial: AttackTrial<MaliciousSessionResult>) -> [AttackBreach] {
        let session = trial.result
        var breaches: [AttackBreach] = []
        if let wrongEnd = session.wrongEnd {
            breaches.append(
                .wrongSessionEnd(
                    at: wrongEnd.at, ended: wrongEnd.ended, expected: Availability.expectedCause(behaviour)))
        }
        if session.neverEnded { breaches.append(.sessionNeverEnded) }
        if let withholding = session.closeWithholding {
            breaches += Availability.closeWithholdingBreaches(withholding)
        }
        let who = behaviour == .fakeAck ? "V and the fake acknowledger" : "V and H"
        if session.exchangeRequired, let result = trial.outcome.availability,
            let breach = Availability.exchangeBreach(
                result, victims: trial.victims, who: who,
                when: behaviour == .fakeAck ? "after the malicious session" : "beside the malicious session")
        {
            breaches.append(breach)
        }
        return breaches
    }

    static func notes(_ runs: [AttackRun<MaliciousSessionResult>], users: AttackUsers) -> [String] {
        let ends = runs.map {
            $0.result.attackSessionEnd.map(\.description)
                ?? ($0.result.endedWithRun ? "with V's run" : "not ended")
        }
        return [
            "malicious session: \(Availability.counted(ends)) (expected \(Availability.expectedCause(behaviour)))"
        ]
    }

    static func summary(_ run: AttackRun<MaliciousSessionResult>) -> [String] {
        run.result.attackSessionEnd.map { ["malicious session ended: \($0)"] } ?? []
    }
}

extension Availability {
    /// The run of a malicious peer with `behaviour` (coming back under fresh ids if it
    /// `reinvites`) against victim V, with the honest device H switched on once the peer holds a
    /// session with V, or 5 s after its invitation at the latest; timed against V and H in the same
    /// room without it.
    static func maliciousRun(
        runSeed: UInt64, kind: AttackKind, behaviour: MaliciousBehaviour, reinvites: Bool
    ) -> AttackTrial<MaliciousSessionResult> {
        var outcome = AttackOutcome(runSeed: runSeed, kind: kind, users: .careless)
        var result = AvailabilityResult()
        var session = MaliciousSessionResult()
        let identities = ["V", "H"].map {
            DeviceIdentity(
                secret: BLAKE2b.hash(
                    Simulation.seedMaterial(runSeed, "attacks/identity/\($0)"), outputLength: 32))
        }
        func add(_ index: Int, to stage: inout AttackStage) {
            let name = ["V", "H"][index]
            stage.addVictim(
                name: name, card: AttackCards.card(runSeed: runSeed, role: "victim-\(name)"),
                identity: identities[index], knownPeers: [], pose: VictimPair.poses[index],
                seedMaterial: Simulation.seedMaterial(runSeed, "attacks/availability/victim/\(name)"))
        }
        var calm = AttackStage(users: .careless, victimsKnown: false)
        add(0, to: &calm)
        add(1, to: &calm)
        calm.run(until: runLimit) { _ in false }
        result.baseline = exchangeTime(calm.victims, from: .zero)
        if result.baseline == nil {
            outcome.problems.append(
                "setup: the victim and the honest device did not exchange without the attacker")
        }

        let (late, invitation) = plan(runSeed: runSeed)
        let honestLatest = invitation + .seconds(5)
        var stage = AttackStage(users: .careless, victimsKnown: false)
        add(0, to: &stage)
        let victim = stage.victims[0].member
        guard let victimID = stage.room.device(victim)?.deviceID else {
            preconditionFailure("the victim is a device")
        }
        let peer = MaliciousPeer(
            behaviour: behaviour, target: victimID, targetAddress: stage.room.address(of: victim),
            card: AttackCards.card(runSeed: runSeed, role: "malicious"),
            seedMaterial: Simulation.seedMaterial(runSeed, "attacks/availability/\(kind.rawValue)"),
            inviteAt: invitation)
        let attackerID = peer.deviceID
        let attackerMember: Int
        if reinvites {
            attackerMember = stage.addSpeaker(
                ReinvitingPeer(
                    behaviour: behaviour, target: victimID, targetAddress: stage.room.address(of: victim),
                    card: AttackCards.card(runSeed: runSeed, role: "malicious"),
                    seedMaterial: Simulation.seedMaterial(runSeed, "attacks/availability/\(kind.rawValue)"),
                    inviteAt: invitation))
        } else {
            attackerMember = stage.addSpeaker(peer)
        }
        // The fake acknowledger's victim ends its run with that exchange: nobody else to meet.
        var honestAdded = behaviour == .fakeAck
        var honestArrival: Instant?
        var meter = Meter(attacker: attackerMember)
        stage.run(until: honestLatest + overall + deadlineSlack + .seconds(2)) { stage in
            if !honestAdded,
                stage.victims[0].secured.contains(where: { $0.peer == attackerID })
                    || stage.room.now >= honestLatest
            {
                honestAdded = true
                honestArrival = stage.room.now
                add(1, to: &stage)
            }
            meter.observe(stage)
            return false
        }
        meter.fill(&result, stage: stage)
        session.late = late
        outcome.screens =
            ["malicious peer invites at \(invitation)" + (late ? " (late)" : "")]
            + stage.victims.map(describe)
        let victimScreen = stage.victims[0]
        // The attacker's sessions: under its id, or (for the re-inviter and the early decliner,
        // which come back under fresh ids) under any id but the honest device's and, in a hall,
        // the bystanders' (a victim there also meets the hall).
        let honestID = stage.victims.count > 1 ? stage.room.device(stage.victims[1].member)?.deviceID : nil
        let bystanderIDs = Set(stage.crowd.compactMap { stage.room.device($0)?.deviceID })
        func attacker(_ peer: DeviceID?) -> Bool {
            guard let peer else { return false }
            return reinvites ? peer != honestID && !bystanderIDs.contains(peer) : peer == attackerID
        }
        let end = victimScreen.ended.first { attacker($0.peer) }
        session.attackSessionEnd = end.map { SessionEnd($0.reason) }
        session.attackSessionEndedAt = end?.at
        let expected = expectedCause(behaviour)
        let deadline = victimScreen.startedAt + overall
        if end != nil {
            // A session still live at the deadline ends however the deadline ends it (judged as an
            // overrun if late). A peer that comes back has every session judged.
            for other in victimScreen.ended where attacker(other.peer) && other.at < deadline {
                // Superseded: V moved its cards with another candidate (PROTOCOL.md 5, "Candidates").
                guard SessionEnd(other.reason) != expected, SessionEnd(other.reason) != .declined(by: .local)
                else { continue }
                if other.reason == .outOfRange, behaviour != .slowloris,
                    !victimScreen.verifiedPeers.contains(where: attacker)
                {
                    // Honest ranging noise kept the victim's gate shut for the whole window, as it
                    // does about one meeting in a thousand: the attack, which begins after the
                    // code, never ran. Not a breach, and nothing tested.
                    outcome.problems.append(
                        "V's gate never opened with the malicious peer (out of range at \(other.at)): "
                            + "its attack, after the code, never ran")
                    break
                }
                session.wrongEnd = (other.at, SessionEnd(other.reason))
                break
            }
            session.attackSessions = victimScreen.ended.filter { attacker($0.peer) }.count
        } else if victimScreen.secured.contains(where: { attacker($0.peer) }) {
            // A session live when V's run ended (its exchange with H, or its deadline) ended with it.
            session.neverEnded = victimScreen.closed == nil
            session.endedWithRun = victimScreen.closed != nil
        } else {
            outcome.problems.append("the malicious peer got no session with V")
        }
        if behaviour == .withholdCloseAck,
            let withholder = stage.room.speaker(attackerMember) as? MaliciousPeer
        {
            session.closeWithholding = CloseWithholding(
                victimClosedAt: withholder.victimClosedAt, sent: withholder.afterClose.sent,
                received: withholder.afterClose.received, lastReceivedAt: withholder.afterClose.lastReceivedAt
            )
        }
        var required = false
        if behaviour == .fakeAck {
            if let end, end.at < deadline, SessionEnd(end.reason) == expected {
                result.underAttack = end.at - invitation
                required = true
            }
        } else if let baseline = result.baseline, let honestArrival {
            // Whatever the malicious session does, and whenever it came: the pair must exchange,
            // when H arrives with the time for it before V's deadline.
            result.underAttack = exchangeTime(stage.victims, from: honestArrival)
            required = honestArrival + baseline * maxRatio <= deadline
        }
        result.exchangeRequired = required && result.baseline != nil
        session.exchangeRequired = required
        return trial(outcome, result: result, stage: stage, figures: session)
    }
}

extension AttackKind {
    /// Availability, malicious peer: offers a card above the victim's limit.
    public static let oversizeOffer = OversizeOfferAttack.kind
    /// Availability, malicious peer: sends a chunk outside its offer.
    public static let badChunkIndex = BadChunkIndexAttack.kind
    /// Availability, malicious peer: sends a card that does not match its offer's digest.
    public static let badDigest = BadDigestAttack.kind
    /// Availability, malicious peer: acknowledges the victim's card without receiving it.
    public static let fakeAck = FakeAckAttack.kind
    /// Availability, malicious peer: receives the victim's card and never acknowledges it.
    public static let neverAck = NeverAckAttack.kind
    /// Availability, malicious peer: acknowledges every chunk of the victim's card in CARD_SACK
    /// before receiving it, and never sends CARD_ACK.
    public static let falseSack = FalseSackAttack.kind
    /// Availability, malicious peer: sends its card one chunk every few seconds.
    public static let slowTransfer = SlowTransferAttack.kind
    /// Availability, malicious peer: completes verification and never decides.
    public static let consentStall = ConsentStallAttack.kind
    /// Availability, malicious peer: one RANGING every few seconds, nothing else.
    public static let slowloris = SlowlorisAttack.kind
    /// Availability, malicious peer: offers a card above the limit, then never acknowledges the
    /// victim's CLOSE and keeps talking, drawing a CLOSE for each of its packets.
    public static let closeAckWithholder = CloseAckWithholderAttack.kind
    /// Availability, malicious peer: offers a card above the limit, and invites again under a
    /// fresh device id as soon as each session ends.
    public static let reinviter = ReinviterAttack.kind
    /// Availability, malicious peer: claims in every RECEIPT to hold all the victim's facts from the
    /// start, so that the victim repeats none of them.
    public static let falseReceipt = FalseReceiptAttack.kind
    /// Availability, malicious peer: sends CLOSE(declined) as soon as the handshake completes, and
    /// invites again under a fresh device id as soon as each session ends.
    public static let earlyDecliner = EarlyDeclinerAttack.kind
    /// Availability, malicious peer: a slowloris (its sessions end out of range, which blames no
    /// host) that invites again under a fresh device id as soon as each session ends.
    public static let farReturner = FarReturnerAttack.kind
    /// Availability, malicious peer: ranges honestly, so that the victim's gate opens, and never
    /// sends IN_RANGE, which holds the victim for its ranging window and the extra window an open
    /// gate waits (PROTOCOL.md 6.4).
    public static let inRangeWithholder = InRangeWithholderAttack.kind
}

enum OversizeOfferAttack: MaliciousPeerKind {
    static let name = "oversize-offer"
    static let behaviour = MaliciousBehaviour.oversize
    static let reinvites = false
    static let pendingFix: String? = nil
}

enum BadChunkIndexAttack: MaliciousPeerKind {
    static let name = "bad-chunk-index"
    static let behaviour = MaliciousBehaviour.badIndex
    static let reinvites = false
    static let pendingFix: String? = nil
}

enum BadDigestAttack: MaliciousPeerKind {
    static let name = "bad-digest"
    static let behaviour = MaliciousBehaviour.badDigest
    static let reinvites = false
    static let pendingFix: String? = nil
}

enum FakeAckAttack: MaliciousPeerKind {
    static let name = "fake-ack"
    static let behaviour = MaliciousBehaviour.fakeAck
    static let reinvites = false
    static let pendingFix: String? = nil
}

enum NeverAckAttack: MaliciousPeerKind {
    static let name = "never-ack"
    static let behaviour = MaliciousBehaviour.neverAck
    static let reinvites = false
    static let pendingFix: String? = nil
}

enum FalseSackAttack: MaliciousPeerKind {
    static let name = "false-sack"
    static let behaviour = MaliciousBehaviour.falseSack
    static let reinvites = false
    static let pendingFix: String? = nil
}

enum SlowTransferAttack: MaliciousPeerKind {
    static let name = "slow-transfer"
    static let behaviour = MaliciousBehaviour.slowTransfer
    static let reinvites = false
    static let pendingFix: String? = nil
}

enum ConsentStallAttack: MaliciousPeerKind {
    static let name = "consent-stall"
    static let behaviour = MaliciousBehaviour.consentStall
    static let reinvites = false
    static let pendingFix: String? = nil
}

enum SlowlorisAttack: MaliciousPeerKind {
    static let name = "slowloris"
    static let behaviour = MaliciousBehaviour.slowloris
    static let reinvites = false
    static let pendingFix: String? = nil
}

enum CloseAckWithholderAttack: MaliciousPeerKind {
    static let name = "close-ack-withholder"
    static let behaviour = MaliciousBehaviour.withholdCloseAck
    static let reinvites = false
    static let pendingFix: String? = nil
}

enum ReinviterAttack: MaliciousPeerKind {
    static let name = "re-inviter"
    static let behaviour = MaliciousBehaviour.oversize
    static let reinvites = true
    static let pendingFix: String? = nil
}

enum FalseReceiptAttack: MaliciousPeerKind {
    static let name = "false-receipt"
    static let behaviour = MaliciousBehaviour.falseReceipt
    static let reinvites = false
    static let pendingFix: String? = nil
}

enum EarlyDeclinerAttack: MaliciousPeerKind {
    static let name = "early-decliner"
    static let behaviour = MaliciousBehaviour.earlyDecline
    static let reinvites = true
    static let pendingFix: String? = nil
}

enum FarReturnerAttack: MaliciousPeerKind {
    static let name = "far-returner"
    static let behaviour = MaliciousBehaviour.slowloris
    static let reinvites = true
    static let pendingFix: String? = nil
}

enum InRangeWithholderAttack: MaliciousPeerKind {
    static let name = "in-range-withholder"
    static let behaviour = MaliciousBehaviour.withholdInRange
    static let reinvites = false
    static let pendingFix: String? = nil
}
