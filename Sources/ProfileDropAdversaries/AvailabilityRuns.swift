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
    /// How each honest device closed, as its user saw it.
    public var closes: [String] = []
    /// Bytes the victims sent to addresses nobody holds (spoofed sources) and the attacker's bytes.
    public var bytesToNowhere = 0
    /// The attacker's bytes.
    public var attackerBytes = 0
    /// Whether the rule asked for an exchange (under attack, or after the malicious session with
    /// time left before the victim's deadline).
    public var exchangeRequired = false
}

/// The availability kinds of `simulate --attacks`: cleartext attackers with a budget in datagrams
/// a second against an honest pair, and malicious authenticated peers against a victim that should
/// then pair with an honest device nearby.
///
/// Breach rules. Cleartext attackers (a budget of at most ``budget`` datagrams a second, drawn per
/// run by ``budget(runSeed:ceiling:)``): the pair does not
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
    static func budget(runSeed: UInt64, ceiling: Int = budget) -> Int {
        var draw = DeterministicRandom(
            seedMaterial: Simulation.seedMaterial(runSeed, "attacks/availability/budget"))
        guard draw.uniform(below: 2) == 0, ceiling > 1 else { return ceiling }
        return 1 + Int(draw.uniform(below: UInt64(ceiling - 1)))
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

    /// How the victim must end the malicious session: the real cause, as its user sees it.
    static func expectedCause(_ behaviour: MaliciousBehaviour) -> SessionEnd {
        switch behaviour {
        case .oversize, .withholdCloseAck: .error(.cardTooLarge)
        case .badIndex: .error(.malformed)
        case .badDigest: .error(.cardDigestMismatch)
        case .fakeAck: .exchanged
        case .neverAck, .falseSack: .timeout(.transferStalled)
        case .slowTransfer: .timeout(.transfer)
        case .consentStall: .timeout(.peerConsent)
        case .slowloris, .withholdInRange: .outOfRange
        case .earlyDecline, .lateDecline: .declined(by: .peer)
        case .falseReceipt: .timeout(.peerConsent)
        }
    }

    /// What a victim may send a peer that withholds every CLOSE_ACK and keeps talking (PROTOCOL.md
    /// 11.4, CLOSE_ACK): a CLOSE for each of its packets at most, plus the closing schedule's own
    /// retransmissions, and nothing after its closing limit (12.6 s).
    static func closeWithholdingBreaches(_ withholding: CloseWithholding) -> [AttackBreach] {
        guard let closedAt = withholding.victimClosedAt else { return [.noCloseToWithholder] }
        var breaches: [AttackBreach] = []
        if withholding.received > withholding.sent + closeScheduleRetransmissions {
            breaches.append(.tooManyCloses(received: withholding.received, sent: withholding.sent))
        }
        if let last = withholding.lastReceivedAt,
            last > closedAt + Timeouts().closingLimit + .milliseconds(200)
        {
            breaches.append(.closeAfterLimit(last - closedAt))
        }
        return breaches
    }

    /// CLOSE's retransmissions on its own timer within the closing limit, at the shortest probe
    /// timeout (10 ms doubling, each wait at most 3.2 s, for 12.6 s).
    static let closeScheduleRetransmissions = 14

    /// A close reason as a short label: the error's code, not its diagnostic.
    static func label(_ reason: CloseReason) -> String {
        SessionEnd(reason).description
    }

    // MARK: - Cleartext attackers

    /// The run of a cleartext attacker that forges on its timer with `behaviour`: the pair, timed
    /// against the same room without it.
    static func cleartextRun(
        runSeed: UInt64, kind: AttackKind, behaviour: CleartextBehaviour, fixedBudget: Int? = nil
    ) -> AttackTrial<NoKindFigures> {
        let pair = VictimPair(runSeed: runSeed)
        var (outcome, result, stage) = startPairRun(pair, runSeed: runSeed, kind: kind)
        // The kind's declared ceiling, so that a new kind's `budget` is what its runs spend.
        let ceiling: Int
        switch kind.adversary.budget {
        case .datagramsPerSecond(let declared): ceiling = declared
        case .devicesOfItsOwn, .sessionsOfItsOwn, .nothingSent:
            preconditionFailure("\(kind): a cleartext run's kind spends datagrams a second")
        }
        let budget = fixedBudget ?? budget(runSeed: runSeed, ceiling: ceiling)
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
        return trial(outcome, result: result, stage: stage, figures: NoKindFigures())
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
                // The victims' own, not a hall's.
                guard stage.victims.contains(where: { $0.member == sent.source }),
                    case .beacon? = try? Packet(datagram: sent.bytes)
                else { continue }
                recorded.append(
                    CleartextAttacker.Recorded(
                        bytes: sent.bytes, source: stage.room.address(of: sent.source), at: stage.room.now))
            }
            return false
        }
        return recorded
    }

    // MARK: - Malicious peers

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
    ///
    /// With other `users`, the pair's users are those (`knownPeers` each victim's records of the
    /// other, for unattended users who share with known peers only), in the calm room and under
    /// attack alike.
    static func startPairRun(
        _ pair: VictimPair, runSeed: UInt64, kind: AttackKind, users: AttackUsers = .careless,
        knownPeers: [[KnownPeer]] = [[], []]
    ) -> (outcome: AttackOutcome, result: AvailabilityResult, stage: AttackStage) {
        let known = knownPeers.allSatisfy { !$0.isEmpty }
        var outcome = AttackOutcome(runSeed: runSeed, kind: kind, users: users)
        var result = AvailabilityResult()
        var calm = AttackStage(users: users, victimsKnown: known)
        pair.addVictims(to: &calm, phase: "availability", knownPeers: knownPeers)
        measureBaseline(calm, from: .zero, result: &result, outcome: &outcome)
        var stage = AttackStage(users: users, victimsKnown: known)
        pair.addVictims(to: &stage, phase: "availability", knownPeers: knownPeers)
        return (outcome, result, stage)
    }

    /// Runs `calm`, the room without the attacker, to the run's limit (calling `step` after each of
    /// its steps), and records the pair's exchange time from `start` as the baseline of `result`; a
    /// pair that did not exchange is a failed setup, noted in `outcome`.
    static func measureBaseline(
        _ calm: AttackStage, from start: Instant, result: inout AvailabilityResult,
        outcome: inout AttackOutcome, step: (inout AttackStage) -> Void = { _ in }
    ) {
        var calm = calm
        calm.run(until: runLimit) { stage in
            step(&stage)
            return false
        }
        result.baseline = exchangeTime(calm.victims, from: start)
        if result.baseline == nil {
            outcome.problems.append(
                "setup: the pair did not exchange without the attacker, so nothing was measured")
        }
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
        _ result: AvailabilityResult, victims: [VictimScreen], who: String, when condition: String
    ) -> AttackBreach? {
        guard result.underAttack != nil else {
            let closes = victims.map { "\($0.name) \($0.closed.map(label) ?? "not closed")" }
            return .noExchange(who: who, condition: condition, closes: closes)
        }
        guard let ratio = result.ratio, ratio > maxRatio else { return nil }
        return .slowExchange(
            who: who, condition: condition, ratio: ratio, underAttack: result.underAttack,
            baseline: result.baseline)
    }

    /// The pair's exchange rule of a run against the pair: when the pair exchanged without the
    /// attacker, it must exchange under attack within ``maxRatio`` times that time.
    static func pairExchangeBreaches<Figures>(_ trial: AttackTrial<Figures>, when condition: String)
        -> [AttackBreach]
    {
        guard let result = trial.outcome.availability, result.baseline != nil,
            let breach = exchangeBreach(result, victims: trial.victims, who: "the pair", when: condition)
        else { return [] }
        return [breach]
    }

    /// A measured availability run: the outcome with the interrupted pairings its victims were shown
    /// and what was measured, the kind's own `figures`, and the victims' screens, for the breach
    /// rules.
    static func trial<Figures>(
        _ outcome: AttackOutcome, result: AvailabilityResult, stage: AttackStage, figures: Figures
    ) -> AttackTrial<Figures> {
        var outcome = outcome
        outcome.interrupted = stage.victims.reduce(0) { $0 + $1.interrupted }
        outcome.availability = result
        return AttackTrial(outcome: outcome, result: figures, victims: stage.victims)
    }

    /// The breaches every availability run shares, after the kind's own: deadlines and memory.
    static func judge(_ outcome: inout AttackOutcome, victims: [VictimScreen]) {
        for victim in victims {
            let deadline = victim.startedAt + overall + deadlineSlack
            guard let closedAt = victim.closedAt else {
                outcome.breaches.append(.notClosed(victim: victim.name, deadline: deadline))
                continue
            }
            if closedAt > deadline {
                outcome.breaches.append(.closedLate(victim: victim.name, at: closedAt, deadline: deadline))
            }
        }
        guard let result = outcome.availability else { return }
        if result.peakPeers > limits.maxPeers {
            outcome.breaches.append(.tooManyPeers(peers: result.peakPeers, bound: limits.maxPeers))
        }
        if result.peakBufferChunks > maxBufferChunks {
            outcome.breaches.append(.bufferTooLarge(chunks: result.peakBufferChunks, bound: maxBufferChunks))
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

    /// A forger's budget of datagrams a second, spent against the current second of the run.
    struct DatagramBudget {
        /// Datagrams a second.
        let perSecond: Int
        private var thisSecond = SecondCounter()

        init(perSecond: Int) {
            precondition(perSecond > 0, "a budget of at least one datagram a second")
            self.perSecond = perSecond
        }

        /// Counts one datagram at `time` if its second has room for it; returns whether it had.
        mutating func spend(at time: Instant) -> Bool { thisSecond.spend(at: time, budget: perSecond) }
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
            for sent in stage.room.lastSent where !stage.crowd.contains(sent.source) {
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
            // A hall's bystanders are measured by nobody.
            guard let member, member != attacker, !stage.crowd.contains(member),
                let device = stage.room.device(member) as? Device
            else {
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
