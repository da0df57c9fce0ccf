import ProfileDropCore
import ProfileDropCrypto
import ProfileDropSimulator

extension Availability {
    /// The stages at which a session hog stalls, drawn per run.
    static let hogStalls: [MaliciousBehaviour] = [
        .slowloris, .withholdInRange, .consentStall, .falseReceipt, .neverAck, .falseSack, .slowTransfer,
    ]

    /// A strict run against the pair (PROTOCOL.md 11.5): a malicious peer for each victim invites it
    /// right after the victim's first BEACON, before the pair's own first invitation, and then
    /// stalls (the session hog, at a stage drawn per run) or declines after the code (the late
    /// decliner). Whatever the malicious sessions do, the pair must exchange within ``maxRatio``
    /// times its no-attack time, counted from the start: the rule does not wait for the malicious
    /// sessions to end, as a real attacker would not.
    /// Every peer stalls with `behaviour`, or (nil) at a stage drawn per run.
    /// The pair's users are `users`: careless (`--yes`), careful (asked, comparing codes), or
    /// unattended known peers (`--yes-known`, who met before as careful users).
    static func hogRun(
        runSeed: UInt64, kind: AttackKind, behaviour fixed: MaliciousBehaviour?, users: AttackUsers
    ) -> AttackTrial<NoKindFigures> {
        let pair = VictimPair(runSeed: runSeed)
        var knownPeers: [[KnownPeer]] = [[], []]
        if users == .unattended {
            guard let met = pair.meet(users: .careful) else {
                var outcome = AttackOutcome(runSeed: runSeed, kind: kind, users: users)
                outcome.problems.append("setup: the victims' first meeting did not exchange")
                let stage = AttackStage(users: users, victimsKnown: true)
                return trial(outcome, result: AvailabilityResult(), stage: stage, figures: NoKindFigures())
            }
            knownPeers = met
        }
        var (outcome, result, stage) = startPairRun(
            pair, runSeed: runSeed, kind: kind, users: users, knownPeers: knownPeers)
        var plan = DeterministicRandom(seedMaterial: Simulation.seedMaterial(runSeed, "attacks/hog/plan"))
        let behaviour = fixed ?? hogStalls[Int(plan.uniform(below: UInt64(hogStalls.count)))]
        // Each victim's first BEACON goes out within 100 ms of its start; its own first invitation
        // comes after the initial announcement interval, about 270 ms.
        let invitation = Instant.zero + .milliseconds(110)
        var attackers: [Int] = []
        for (index, victim) in stage.victims.enumerated() {
            guard let victimID = stage.room.device(victim.member)?.deviceID else {
                preconditionFailure("the victim is a device")
            }
            attackers.append(
                stage.addSpeaker(
                    MaliciousPeer(
                        behaviour: behaviour, target: victimID,
                        targetAddress: stage.room.address(of: victim.member),
                        card: AttackCards.card(runSeed: runSeed, role: "malicious"),
                        seedMaterial: Simulation.seedMaterial(
                            runSeed, "attacks/hog/\(kind.rawValue)/\(index)"),
                        inviteAt: invitation)))
        }
        var meter = Meter(attacker: attackers[0])
        stage.run(until: runLimit) { stage in
            meter.observe(stage)
            return false
        }
        measurePair(&result, stage: stage, meter: meter)
        outcome.screens = ["malicious peers stall: \(behaviour)"] + stage.victims.map(describe)
        return trial(outcome, result: result, stage: stage, figures: NoKindFigures())
    }
}

extension Availability {
    /// The reflector's budget in datagrams a second: slow, as a reflection needs no more.
    static let reflectorBudget = 2

    /// The BEACON reflector (PROTOCOL.md 5, "Amplification"): two idle victims 3 m apart, never
    /// pairing, hear the reflector's phantoms for their whole run. A breach is any byte beyond the
    /// attacker's own that the victims send to the reflection's target, which never proved it
    /// receives: the attacker's multicast, heard by N devices, may cost at most N times its bytes,
    /// and the meter counts each victim's copy of a BEACON as one of the attacker's datagrams.
    static func reflectorRun(runSeed: UInt64) -> AttackTrial<NoKindFigures> {
        var outcome = AttackOutcome(runSeed: runSeed, kind: .beaconReflector, users: .careless)
        var result = AvailabilityResult()
        result.budget = reflectorBudget
        var stage = AttackStage(users: .careless, victimsKnown: false)
        for (index, name) in ["A", "B"].enumerated() {
            stage.addVictim(
                name: name, card: AttackCards.card(runSeed: runSeed, role: "victim-\(name)"),
                identity: DeviceIdentity(
                    secret: BLAKE2b.hash(
                        Simulation.seedMaterial(runSeed, "attacks/reflector/identity/\(name)"),
                        outputLength: 32)),
                knownPeers: [], pose: Pose(x: Double(300 * index), y: 0, heading: 0),
                seedMaterial: Simulation.seedMaterial(runSeed, "attacks/reflector/\(name)"))
        }
        let attacker = CleartextAttacker(
            behaviour: .reflector, budget: reflectorBudget,
            targets: stage.victims.map {
                CleartextAttacker.Target(member: $0.member, address: stage.room.address(of: $0.member))
            },
            ownAddress: stage.nextAddress,
            seedMaterial: Simulation.seedMaterial(runSeed, "attacks/reflector/attacker"), startAt: .zero)
        let attackerMember = stage.addSpeaker(AttackerSpeaker(attacker: attacker))
        var meter = Meter(attacker: attackerMember)
        run(&stage, with: attacker, meter: &meter)
        meter.fill(&result, stage: stage)
        outcome.screens = stage.victims.map(describe)
        let ratio =
            result.attackerBytes > 0 ? Double(result.bytesToNowhere) / Double(result.attackerBytes) : 0
        outcome.screens.append(
            "reflector sent \(result.attackerBytes) bytes; the victims sent its target \(result.bytesToNowhere) "
                + "(\(format(ratio))×)")
        return trial(outcome, result: result, stage: stage, figures: NoKindFigures())
    }
}

extension AttackKind {
    /// Availability, malicious peers, judged strictly: one for each of the pair, each inviting its
    /// victim right after the victim's first BEACON (before the pair invites each other), then
    /// stalling at a stage drawn per run: before IN_RANGE, before its decision, or ranging once
    /// every few seconds.
    public static let sessionHog = SessionHogAttack.kind
    /// Availability, malicious peers, judged strictly: one for each of the pair, inviting first,
    /// passing the gate and the code, then declining.
    public static let lateDecliner = LateDeclinerAttack.kind
    /// Availability, cleartext: BEACONs of eight fake ids from one address nobody holds, which the
    /// victims then invite there; judged by the bytes they send to it against the attacker's.
    public static let beaconReflector = BeaconReflectorAttack.kind
}

/// The strict runs against the pair (``Availability/hogRun(runSeed:kind:behaviour:)``): the pair
/// must exchange within ``Availability/maxRatio`` times its no-attack time beside their malicious
/// peers, whatever those do. A kind says how its peers stall.
protocol PairHogKind: AdversaryKind where Result == NoKindFigures {
    /// How every peer stalls, or nil for a stage drawn per run.
    static var stall: MaliciousBehaviour? { get }
    /// The pair's users: `--yes`, asked (careful), or unattended known peers (`--yes-known`).
    static var pairUsers: AttackUsers { get }
}

extension PairHogKind {
    static var budget: AttackBudget { .sessionsOfItsOwn }

    static func run(runSeed: UInt64, users: AttackUsers) -> AttackTrial<NoKindFigures> {
        Availability.hogRun(runSeed: runSeed, kind: kind, behaviour: stall, users: pairUsers)
    }

    static func breaches(_ trial: AttackTrial<NoKindFigures>) -> [AttackBreach] {
        Availability.pairExchangeBreaches(trial, when: "beside their malicious peers")
    }

    static func notes(_ runs: [AttackRun<NoKindFigures>], users: AttackUsers) -> [String] { [] }

    static func summary(_ run: AttackRun<NoKindFigures>) -> [String] { [] }
}

enum SessionHogAttack: PairHogKind {
    static let name = "session-hog"
    static let stall: MaliciousBehaviour? = nil
    static let pairUsers = AttackUsers.careless
    static let pendingFix: String? = nil
}

enum LateDeclinerAttack: PairHogKind {
    static let name = "late-decliner"
    static let stall: MaliciousBehaviour? = .lateDecline
    static let pairUsers = AttackUsers.careless
    static let pendingFix: String? = nil
}

/// The BEACON reflector: a breach is any byte beyond the attacker's own that the victims send to
/// the reflection's target (``Availability/reflectorRun(runSeed:)``).
enum BeaconReflectorAttack: AdversaryKind {
    static let name = "beacon-reflector"
    static let budget = AttackBudget.datagramsPerSecond(ceiling: Availability.reflectorBudget)
    static let pendingFix: String? = nil

    static func run(runSeed: UInt64, users: AttackUsers) -> AttackTrial<NoKindFigures> {
        Availability.reflectorRun(runSeed: runSeed)
    }

    static func breaches(_ trial: AttackTrial<NoKindFigures>) -> [AttackBreach] {
        guard let result = trial.outcome.availability, result.bytesToNowhere > result.attackerBytes else {
            return []
        }
        let ratio =
            result.attackerBytes > 0 ? Double(result.bytesToNowhere) / Double(result.attackerBytes) : 0
        return [.amplified(ratio: ratio)]
    }

    static func notes(_ runs: [AttackRun<NoKindFigures>], users: AttackUsers) -> [String] { [] }

    static func summary(_ run: AttackRun<NoKindFigures>) -> [String] { [] }
}
