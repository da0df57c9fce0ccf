import ProfileDropCore
import ProfileDropCrypto
import ProfileDropSimulator

/// What an availability run measured: how much the attacker spent, how long the honest pair took
/// against the same room without it, whether deadlines held, the victims' state, and what their
/// users saw.
public struct AvailabilityResult: Sendable {
    /// The cleartext attacker's budget in datagrams a second (nil for a malicious peer, which sends
    /// what its sessions need).
    public var budget: Int?
    /// The attacker's datagrams in its busiest second of the run.
    public var peakRate = 0
    /// The honest pair's time to exchange in the same room (same seed) without the attacker.
    public var baseline: Duration?
    /// The time measured under attack: for cleartext attackers the pair's time to exchange; for a
    /// malicious peer, from the end of its session to the victim's exchange with the honest device
    /// (for the fake acknowledger, the victim's time to its exchange with it). Nil when no
    /// exchange happened.
    public var underAttack: Duration?
    /// ``underAttack`` over ``baseline``.
    public var ratio: Double? {
        guard let baseline, let underAttack, baseline > .zero else { return nil }
        return underAttack.secondsDouble / baseline.secondsDouble
    }
    /// Honest devices not closed by their overall deadline plus ``Availability/deadlineSlack``.
    public var overruns = 0
    /// The most peers any victim's discovery table held at once.
    public var peakPeers = 0
    /// The most chunks of a peer's card any victim had a buffer for at once.
    public var peakBufferChunks = 0
    /// How the victim ended the malicious peer's session (malicious peers only), as its user saw
    /// it; nil when no such session ended.
    public var attackSessionEnd: String?
    /// When the victim ended that session.
    public var attackSessionEndedAt: Instant?
    /// How each honest device closed, as its user saw it.
    public var closes: [String] = []
    /// Bytes the victims sent to addresses nobody holds (spoofed sources) and the attacker's bytes.
    public var bytesToNowhere = 0
    /// The attacker's bytes.
    public var attackerBytes = 0
    /// Malicious peers: whether it came late, its session live at the victim's overall deadline
    /// unless the victim ended it first.
    public var late = false
    /// Whether the rule asked for an exchange (under attack, or after the malicious session with
    /// time left before the victim's deadline).
    public var exchangeRequired = false
    /// Malicious peers: how many of its sessions the victim ended.
    public var attackSessions = 0
    /// The busy forger: what its BUSYs did.
    public var forgedBusy: ForgedBusyResult?
    /// The invite forger: what its INVITEs did.
    public var forgedInvites: ForgedInviteResult?
    /// The SECURE replayer's copies and the victims' rejections, for that kind.
    public var replayedSecure: ReplayedSecureResult?
    /// The BEACON racer's BEACONs and the invitations they diverted, for that kind.
    public var racedBeacons: RacedBeaconResult?
    /// The close cutter's cut and how the exchange ended, for that kind.
    public var cutClose: CutCloseResult?
}

/// The availability kinds of `simulate --attacks`: cleartext attackers with a budget in datagrams
/// a second against an honest pair, and malicious authenticated peers against a victim that should
/// then pair with an honest device nearby.
///
/// Breach rules. Cleartext attackers (a budget of at most ``budget`` datagrams a second, drawn per
/// run by ``budget(runSeed:)``): the pair does not
/// exchange within ``maxRatio`` times its time in the same room without the attacker; an honest
/// device is not closed by its overall deadline plus ``deadlineSlack``; a victim's discovery table
/// holds more than ``Limits/maxPeers`` peers. Malicious peers: the victim does not end the
/// malicious session with the cause the misbehaviour calls for (``expectedCause(_:)``) before its
/// overall deadline; then it does not exchange with the honest device within ``maxRatio`` times
/// the pair's no-attack time, counted from the end of that session (the fake acknowledger is the
/// exception: an exchange ends a device, and a CARD_ACK cannot be checked, PROTOCOL.md 11.6 item
/// 12, so the victim's exchange with it is the expected end, timed from the start); a deadline is
/// overrun; a victim holds a card buffer over ``Limits/maxCardBytes`` or a discovery table over
/// ``Limits/maxPeers``.
enum Availability {
    /// The cleartext attackers' budget: the breach rule's ceiling.
    static let budget = 50

    /// The budget of the cleartext attacker of run `runSeed`: the ceiling in half the runs, any
    /// rate from 1 a second below it in the others, since a slower attacker may stay under a
    /// threshold (the cookie load, a rate limit) that a faster one trips.
    static func budget(runSeed: UInt64) -> Int {
        var draw = DeterministicRandom(
            seedMaterial: Simulation.seedMaterial(runSeed, "attacks/availability/budget"))
        guard draw.uniform(below: 2) == 0 else { return budget }
        return 1 + Int(draw.uniform(below: UInt64(budget - 1)))
    }
    /// Most times the no-attack time the pair may take.
    static let maxRatio = 2.0
    /// How late after its overall deadline an honest device may close.
    static let deadlineSlack: Duration = .seconds(1)
    /// When the malicious peer invites its victim in an early run.
    static let inviteAt = Instant.zero + .milliseconds(300)

    static var overall: Duration { AttackStage.timeouts.overall }
    static var limits: Limits { Limits() }
    /// Most chunks of a card within ``Limits/maxCardBytes``.
    static var maxBufferChunks: Int {
        (limits.maxCardBytes + WireConstants.chunkSize - 1) / WireConstants.chunkSize
    }
    /// Every run stops here: past every honest device's deadline and its slack.
    static var runLimit: Instant { Instant.zero + overall + deadlineSlack + .seconds(5) }

    /// The cleartext behaviour of `kind`, if it is a cleartext attacker.
    static func cleartext(_ kind: AttackKind) -> CleartextBehaviour? {
        switch kind {
        case .beaconHijack: .hijack
        case .inviteSquatter: .squat
        case .phantomFlood: .phantoms
        case .phantomKeeper: .keptPhantoms
        case .datagramFlood: .flood
        case .beaconReplay: .replay
        case .beaconDisplace: .displace
        case .beaconReflector: .reflector
        default: nil
        }
    }

    /// The malicious behaviour of `kind`, if it is a malicious peer.
    static func malicious(_ kind: AttackKind) -> MaliciousBehaviour? {
        switch kind {
        case .oversizeOffer: .oversize
        case .badChunkIndex: .badIndex
        case .badDigest: .badDigest
        case .fakeAck: .fakeAck
        case .neverAck: .neverAck
        case .falseSack: .falseSack
        case .slowTransfer: .slowTransfer
        case .consentStall: .consentStall
        case .slowloris, .farReturner: .slowloris
        case .closeAckWithholder: .withholdCloseAck
        case .reinviter: .oversize
        case .earlyDecliner: .earlyDecline
        case .falseReceipt: .falseReceipt
        case .inRangeWithholder: .withholdInRange
        default: nil
        }
    }

    /// How the victim must end the malicious session: the real cause, as its user sees it.
    static func expectedCause(_ behaviour: MaliciousBehaviour) -> String {
        switch behaviour {
        case .oversize, .withholdCloseAck: "error: card-too-large"
        case .badIndex: "error: malformed"
        case .badDigest: "error: card-digest-mismatch"
        case .fakeAck: "exchanged"
        case .neverAck, .falseSack: "timeout: transfer stalled"
        case .slowTransfer: "timeout: transfer"
        case .consentStall: "timeout: peer consent"
        case .slowloris, .withholdInRange: "out of range"
        case .earlyDecline, .lateDecline: "declined by peer"
        case .falseReceipt: "timeout: peer consent"
        }
    }

    /// What a victim may send a peer that withholds every CLOSE_ACK and keeps talking (PROTOCOL.md
    /// 11.4, CLOSE_ACK): a CLOSE for each of its packets at most, plus the closing schedule's own
    /// retransmissions, and nothing after its closing limit (12.6 s).
    static func closeWithholdingBreaches(_ withholder: MaliciousPeer) -> [String] {
        guard let closedAt = withholder.victimClosedAt else {
            return ["the victim never sent the CLOSE_ACK withholder a CLOSE"]
        }
        var breaches: [String] = []
        let (sent, received, last) = withholder.afterClose
        if received > sent + closeScheduleRetransmissions {
            breaches.append(
                "V sent the CLOSE_ACK withholder \(received) datagrams after closing, for its \(sent)")
        }
        if let last, last > closedAt + Timeouts().closingLimit + .milliseconds(200) {
            breaches.append(
                "V still sent CLOSE \(last - closedAt) after closing, past its 12.6 s closing limit")
        }
        return breaches
    }

    /// CLOSE's retransmissions on its own timer within the closing limit, at the shortest probe
    /// timeout (10 ms doubling, each wait at most 3.2 s, for 12.6 s).
    static let closeScheduleRetransmissions = 14

    /// A close reason as a short label: the error's code, not its diagnostic.
    static func label(_ reason: CloseReason) -> String {
        switch reason {
        case .error(let error): "error: \(error.code.name)"
        default: reason.description
        }
    }

    /// Whether `kind` is a cleartext attacker with a budget: one that forges on its timer, or the
    /// busy forger, which answers what it sees.
    static func isCleartext(_ kind: AttackKind) -> Bool {
        cleartext(kind) != nil || kind == .busyForger || kind == .inviteForger || kind == .crossingForger
            || kind == .secureReplayer || kind == .beaconRacer
    }

    /// Runs the availability run of seed `runSeed` facing `kind`.
    static func run(runSeed: UInt64, kind: AttackKind) -> AttackOutcome {
        if kind == .busyForger { return busyForgerRun(runSeed: runSeed) }
        if kind == .inviteForger { return inviteForgerRun(runSeed: runSeed) }
        if kind == .crossingForger { return crossingForgerRun(runSeed: runSeed) }
        if kind == .secureReplayer { return secureReplayerRun(runSeed: runSeed) }
        if kind == .beaconRacer { return beaconRacerRun(runSeed: runSeed) }
        if kind == .closeCutter { return closeCutterRun(runSeed: runSeed) }
        if kind == .sessionHog || kind == .lateDecliner { return hogRun(runSeed: runSeed, kind: kind) }
        if kind == .beaconReflector { return reflectorRun(runSeed: runSeed) }
        if let behaviour = cleartext(kind) {
            return cleartextRun(runSeed: runSeed, kind: kind, behaviour: behaviour)
        }
        guard let behaviour = malicious(kind) else { preconditionFailure("\(kind) is no availability kind") }
        return maliciousRun(runSeed: runSeed, kind: kind, behaviour: behaviour)
    }

    // MARK: - Cleartext attackers

    private static func cleartextRun(runSeed: UInt64, kind: AttackKind, behaviour: CleartextBehaviour)
        -> AttackOutcome
    {
        let pair = VictimPair(runSeed: runSeed)
        var (outcome, result, stage) = startPairRun(pair, runSeed: runSeed, kind: kind)
        let budget = budget(runSeed: runSeed)
        result.budget = budget
        let attacker = CleartextAttacker(
            behaviour: behaviour, budget: budget,
            targets: stage.victims.map {
                CleartextAttacker.Target(member: $0.member, address: stage.room.address(of: $0.member))
            },
            ownAddress: stage.nextAddress,
            seedMaterial: Simulation.seedMaterial(runSeed, "attacks/availability/\(kind.rawValue)"),
            previousRun: behaviour == .replay ? previousRunBeacons(pair) : [], startAt: .zero)
        let attackerMember = stage.addSpeaker(AttackerSpeaker(attacker: attacker))
        var meter = Meter(attacker: attackerMember)
        run(&stage, with: attacker, meter: &meter)
        measurePair(&result, stage: stage, meter: meter)
        outcome.screens = stage.victims.map(describe)
        if result.baseline != nil,
            let breach = exchangeBreach(
                result, stage: stage, who: "the pair", when: "under \(budget) datagrams/s")
        {
            outcome.breaches.append(breach)
        }
        return finish(outcome, result: result, stage: stage)
    }

    /// Runs `stage` to ``runLimit`` with a cleartext attacker in it: what it forged goes in flight
    /// after each step, and `meter` reads every step.
    static func run(_ stage: inout AttackStage, with attacker: CleartextAttacker, meter: inout Meter) {
        stage.run(until: runLimit) { stage in
            for forged in attacker.pending { stage.inject(forged, after: stage.room.latency, meter: &meter) }
            attacker.pending.removeAll(keepingCapacity: true)
            meter.observe(stage)
            return false
        }
    }

    /// The victims' BEACONs in a run before this one (fresh devices, the same addresses).
    private static func previousRunBeacons(_ pair: VictimPair) -> [CleartextAttacker.Recorded] {
        var stage = AttackStage(users: .careless, victimsKnown: false)
        pair.addVictims(to: &stage, phase: "availability/previous-run")
        var recorded: [CleartextAttacker.Recorded] = []
        stage.run(until: Instant.zero + .seconds(2)) { stage in
            for sent in stage.room.lastSent where sent.destination == .multicast {
                guard case .beacon? = try? Packet(datagram: sent.bytes) else { continue }
                recorded.append(
                    CleartextAttacker.Recorded(
                        bytes: sent.bytes, source: stage.room.address(of: sent.source), at: stage.room.now))
            }
            return false
        }
        return recorded
    }

    // MARK: - Malicious peers

    private static func maliciousRun(runSeed: UInt64, kind: AttackKind, behaviour: MaliciousBehaviour)
        -> AttackOutcome
    {
        var outcome = AttackOutcome(runSeed: runSeed, kind: kind, users: .careless)
        var result = AvailabilityResult()
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
        if kind.reinvites {
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
        var meter = Meter(attacker: attackerMember)
        stage.run(until: honestLatest + overall + deadlineSlack + .seconds(2)) { stage in
            if !honestAdded,
                stage.victims[0].secured.contains(where: { $0.peer == attackerID })
                    || stage.room.now >= honestLatest
            {
                honestAdded = true
                add(1, to: &stage)
            }
            meter.observe(stage)
            return false
        }
        meter.fill(&result, stage: stage)
        result.late = late
        outcome.screens =
            ["malicious peer invites at \(invitation)" + (late ? " (late)" : "")]
            + stage.victims.map(describe)
        let victimScreen = stage.victims[0]
        // The attacker's sessions: under its id, or (for the re-inviter and the early decliner,
        // which come back under fresh ids) under any id but the honest device's.
        let honestID = stage.victims.count > 1 ? stage.room.device(stage.victims[1].member)?.deviceID : nil
        func attacker(_ peer: DeviceID?) -> Bool {
            kind.reinvites ? peer != nil && peer != honestID : peer == attackerID
        }
        let end = victimScreen.ended.first { attacker($0.peer) }
        result.attackSessionEnd = end.map { label($0.reason) }
        result.attackSessionEndedAt = end?.at
        let expected = expectedCause(behaviour)
        let deadline = victimScreen.startedAt + overall
        if end != nil {
            // A session still live at the deadline ends however the deadline ends it (judged as an
            // overrun if late). A peer that comes back has every session judged.
            for other in victimScreen.ended where attacker(other.peer) && other.at < deadline {
                guard label(other.reason) != expected else { continue }
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
                outcome.breaches.append(
                    "V ended a malicious session at \(other.at) with \(label(other.reason)), not \(expected)")
                break
            }
            result.attackSessions = victimScreen.ended.filter { attacker($0.peer) }.count
        } else if victimScreen.secured.contains(where: { attacker($0.peer) }) {
            outcome.breaches.append("V never ended the malicious session")
        } else {
            outcome.problems.append("the malicious peer got no session with V")
        }
        if behaviour == .withholdCloseAck,
            let withholder = stage.room.speaker(attackerMember) as? MaliciousPeer
        {
            outcome.breaches += closeWithholdingBreaches(withholder)
        }
        var required = false
        if let end, let baseline = result.baseline, end.at < deadline, label(end.reason) == expected {
            if behaviour == .fakeAck {
                result.underAttack = end.at - invitation
                required = true
            } else {
                result.underAttack = exchangeTime(stage.victims, from: end.at)
                // Judged only when the victim has time left for it before its deadline.
                required = end.at + baseline * maxRatio <= deadline
            }
        }
        result.exchangeRequired = required && result.baseline != nil
        let who = behaviour == .fakeAck ? "V and the fake acknowledger" : "V and H"
        if required,
            let breach = exchangeBreach(result, stage: stage, who: who, when: "after the malicious session")
        {
            outcome.breaches.append(breach)
        }
        return finish(outcome, result: result, stage: stage)
    }

    /// When the malicious peer of run `runSeed` invites its victim: half the runs early
    /// (``inviteAt``); the other half late, 5 to 25 s before the victim's overall deadline, so that
    /// its session is live when the deadline comes.
    static func plan(runSeed: UInt64) -> (late: Bool, invitation: Instant) {
        var plan = DeterministicRandom(
            seedMaterial: Simulation.seedMaterial(runSeed, "attacks/availability/plan"))
        guard plan.uniform(below: 2) == 1 else { return (false, inviteAt) }
        return (
            true, Instant.zero + (overall - Duration.milliseconds(Int64(5_000 + plan.uniform(below: 20_001))))
        )
    }

    // MARK: - Measuring

    /// The start of a run of `kind` against `pair`, whose careless users share at once: the outcome
    /// to fill; the result, timed against the pair's exchange in the same room and seed without any
    /// attacker (a failed setup noted in the outcome when there was none); and the stage with the
    /// pair, for the attacker to join.
    static func startPairRun(_ pair: VictimPair, runSeed: UInt64, kind: AttackKind) -> (
        outcome: AttackOutcome, result: AvailabilityResult, stage: AttackStage
    ) {
        var outcome = AttackOutcome(runSeed: runSeed, kind: kind, users: .careless)
        var result = AvailabilityResult()
        var calm = AttackStage(users: .careless, victimsKnown: false)
        pair.addVictims(to: &calm, phase: "availability")
        calm.run(until: runLimit) { _ in false }
        result.baseline = exchangeTime(calm.victims, from: .zero)
        if result.baseline == nil {
            outcome.problems.append(
                "setup: the pair did not exchange without the attacker, so nothing was measured")
        }
        var stage = AttackStage(users: .careless, victimsKnown: false)
        pair.addVictims(to: &stage, phase: "availability")
        return (outcome, result, stage)
    }

    /// After a run against the pair: its exchange time from `start`, required whenever the pair
    /// exchanged without the attacker, and the meter's figures.
    static func measurePair(
        _ result: inout AvailabilityResult, stage: AttackStage, meter: Meter, from start: Instant = .zero
    ) {
        result.underAttack = exchangeTime(stage.victims, from: start)
        result.exchangeRequired = result.baseline != nil
        meter.fill(&result, stage: stage)
    }

    /// When every device on `screens` closed as exchanged, counted from `start`; nil if one did not.
    static func exchangeTime(_ screens: [VictimScreen], from start: Instant) -> Duration? {
        guard screens.count >= 2, screens.allSatisfy({ $0.closed == .exchanged }) else { return nil }
        return (screens.compactMap(\.closedAt).max() ?? start) - start
    }

    /// The breach of an exchange the rule requires, if any: `who` did not exchange, or took more than
    /// ``maxRatio`` times the pair's no-attack time, `when` (the attack's condition).
    static func exchangeBreach(
        _ result: AvailabilityResult, stage: AttackStage, who: String, when condition: String
    ) -> String? {
        guard result.underAttack != nil else {
            let closes = stage.victims.map { "\($0.name) \($0.closed.map(label) ?? "not closed")" }
            return "\(who) did not exchange \(condition) (\(closes.joined(separator: ", ")))"
        }
        guard let ratio = result.ratio, ratio > maxRatio else { return nil }
        return
            "\(who) took \(format(ratio))× the pair's no-attack time (\(seconds(result.underAttack)) against "
            + "\(seconds(result.baseline))) \(condition)"
    }

    /// The run's outcome with the breaches every availability run shares (deadlines and memory), the
    /// interrupted pairings its victims were shown, and what was measured.
    static func finish(_ outcome: AttackOutcome, result: AvailabilityResult, stage: AttackStage)
        -> AttackOutcome
    {
        var outcome = outcome
        judge(&outcome, result: result, stage: stage)
        outcome.interrupted = stage.victims.reduce(0) { $0 + $1.interrupted }
        outcome.availability = result
        return outcome
    }

    /// The breaches every availability run shares: deadlines and memory.
    private static func judge(_ outcome: inout AttackOutcome, result: AvailabilityResult, stage: AttackStage)
    {
        for victim in stage.victims {
            let deadline = victim.startedAt + overall + deadlineSlack
            guard let closedAt = victim.closedAt else {
                outcome.breaches.append("\(victim.name) was not closed by its deadline \(deadline)")
                continue
            }
            if closedAt > deadline {
                outcome.breaches.append(
                    "\(victim.name) closed at \(closedAt), after its deadline \(deadline)")
            }
        }
        if result.peakPeers > limits.maxPeers {
            outcome.breaches.append(
                "a victim's discovery table held \(result.peakPeers) peers (bound \(limits.maxPeers))")
        }
        if result.peakBufferChunks > maxBufferChunks {
            outcome.breaches.append(
                "a victim held a buffer of \(result.peakBufferChunks) chunks (bound \(maxBufferChunks))")
        }
    }

    /// Datagrams in the current whole second of the run, the seconds an attacker's budget and its
    /// meter count by.
    struct SecondCounter {
        private var second: Int64 = -1
        /// Datagrams counted in the current second.
        private(set) var count = 0

        /// Moves to the second of `time`, starting it at zero if it is a new one.
        mutating func enter(_ time: Instant) {
            let current = (time - .zero).components.seconds
            if current != second {
                second = current
                count = 0
            }
        }

        /// Counts one datagram in the current second.
        mutating func add() { count += 1 }

        /// Counts one datagram at `time` if the second of `time` has room for it under `budget`;
        /// returns whether it had.
        mutating func spend(at time: Instant, budget: Int) -> Bool {
            enter(time)
            guard count < budget else { return false }
            add()
            return true
        }
    }

    /// What the attacker sent and the victims held, step by step.
    struct Meter {
        let attacker: Int
        private var thisSecond = SecondCounter()
        private(set) var peakRate = 0
        private(set) var attackerBytes = 0
        private(set) var bytesToNowhere = 0
        private(set) var peakPeers = 0
        private(set) var peakChunks = 0

        init(attacker: Int) { self.attacker = attacker }

        /// One datagram of the attacker's, sent at `time`.
        mutating func countAttack(bytes: Int, at time: Instant) {
            attackerBytes += bytes
            thisSecond.enter(time)
            thisSecond.add()
            peakRate = max(peakRate, thisSecond.count)
        }

        /// Reads what the stage's last step did: the attacker's sends, the victims' sends to nobody,
        /// and the state of the victim that handled it.
        mutating func observe(_ stage: AttackStage) {
            for sent in stage.room.lastSent {
                if sent.source == attacker {
                    countAttack(bytes: sent.bytes.count, at: stage.room.now)
                } else if sent.recipient == nil, case .unicast = sent.destination {
                    bytesToNowhere += sent.bytes.count
                }
            }
            let member: Int?
            switch stage.lastStep {
            case .delivered(let copy): member = copy.recipient
            case .timeout(let timedOut): member = timedOut
            case .lost, .alarm, nil: member = nil
            }
            guard let member, member != attacker, let device = stage.room.device(member) as? Device else {
                return
            }
            let snapshot = device.snapshot
            peakPeers = max(peakPeers, snapshot.peersSeen)
            peakChunks = max(peakChunks, snapshot.totalReceiveChunks)
        }

        func fill(_ result: inout AvailabilityResult, stage: AttackStage) {
            result.peakRate = peakRate
            result.attackerBytes = attackerBytes
            result.bytesToNowhere = bytesToNowhere
            result.peakPeers = peakPeers
            result.peakBufferChunks = peakChunks
            result.closes = stage.victims.map { "\($0.name) \($0.closed.map(label) ?? "not closed")" }
            result.overruns =
                stage.victims.filter { victim in
                    victim.closedAt.map { $0 > victim.startedAt + overall + deadlineSlack } ?? true
                }.count
        }
    }

    static func describe(_ screen: VictimScreen) -> String {
        let ended = screen.ended.map { "\(label($0.reason)) at \($0.at)" }
        return "\(screen.name) (on at \(screen.startedAt)): sessions ended "
            + (ended.isEmpty ? "none" : ended.joined(separator: ", "))
            + "; \(screen.interrupted) interrupted; closed: "
            + (screen.closed.map { "\(label($0)) at \(screen.closedAt ?? .zero)" } ?? "no")
    }

    static func format(_ value: Double) -> String {
        let hundredths = Int((value * 100).rounded())
        let fraction = hundredths % 100
        return "\(hundredths / 100).\(fraction < 10 ? "0" : "")\(fraction)"
    }

    static func seconds(_ duration: Duration?) -> String {
        guard let duration else { return "-" }
        return format(duration.secondsDouble) + " s"
    }
}
