import ProfileDropCore
import ProfileDropCrypto
import ProfileDropSimulator

/// The replaying prober (PROTOCOL.md 6.5, 11.3): a stranger that meets device M once, keeps the
/// IDENT, PROOF and (when M's user shared) BOND that M sent it, and replays them in its own name to
/// device B, to learn from B's reaction whether B knows M.
///
/// Each run plays B twice from the same seeds: once knowing M, once knowing someone else instead.
/// Everything B sends the prober (each datagram's type, size and time, and the frames it carries,
/// CLOSE codes included) is recorded as the prober sees it. Any difference between the two is a
/// breach: the reaction told who knows whom, and so links B's runs.
final class IdentityReplayer: AdversaryBrain {
    /// What it replays in place of its own.
    var replayed: (ident: [UInt8], proof: [UInt8]?, bond: (resolvingKey: [UInt8], share: [UInt8])?)?
    /// What the victim sent, in order, as the prober can tell it apart.
    private(set) var observed: [String] = []

    override func keepsOutgoing(_ packet: Packet, device: DeviceID, at time: Instant) -> Bool {
        // Silent, as the identity prober: it invites and is never invited.
        switch packet {
        case .beacon, .query: false
        case .invite, .accept, .confirm, .busy, .secure, .probe, .probeAck: true
        }
    }

    override func keepsIncoming(
        _ packet: Packet, from source: PeerAddress, device: DeviceID, at time: Instant
    ) -> Bool {
        observed.append("\(time.nanoseconds) \(packet.type) \(packet.encoded().count)")
        return super.keepsIncoming(packet, from: source, device: device, at: time)
    }

    override func received(_ frames: [Frame], in session: TapSession, device: DeviceID, at time: Instant) {
        super.received(frames, in: session, device: device, at: time)
        observed.append("\(time.nanoseconds) frames \(Self.observable(frames))")
    }

    /// The frames of one packet as a prober can tell them apart: each frame's type, and a CLOSE
    /// with its codes.
    static func observable(_ frames: [Frame]) -> String {
        frames.map { frame in
            if case .close(let close) = frame {
                "CLOSE(\(close.code) \(close.errorCode))"
            } else {
                "\(frame.type)"
            }
        }.joined(separator: ",")
    }

    override func sending(_ frames: [Frame], in session: TapSession, device: DeviceID, at time: Instant)
        -> [Frame]
    {
        guard let replayed else { return frames }
        return frames.map { frame in
            switch frame {
            case .ident: .ident(replayed.ident)
            case .proof(let own): .proof(replayed.proof ?? own)
            case .bond(let resolvingKey, let share):
                replayed.bond.map { .bond(resolvingKey: $0.resolvingKey, share: $0.share) }
                    ?? .bond(resolvingKey: resolvingKey, share: share)
            case .token, .ranging, .inRange, .commit, .nonce, .reveal, .consent, .cardChunk, .cardSack,
                .cardAck, .close, .closeAck, .receipt:
                frame
            }
        }
    }
}

/// One replaying prober run: the harvest from M, then B knowing M and B not knowing M.
struct ReplayRuns {
    /// What the prober took from M: whether it got an IDENT, a PROOF and a BOND.
    let harvested: (ident: Bool, proof: Bool, bond: Bool)
    /// B's reaction as the prober saw it, when B knew M and when it did not.
    let reactionKnowing: [String]
    let reactionNotKnowing: [String]
    /// B's screen in each of the two plays.
    let screens: [VictimScreen]
    /// Whether the prober's device shared (else it declined).
    let proberShares: Bool
    /// Plays in which B's card reached the prober (a careless B shares with any stranger).
    let cardsGiven: Int

    /// A coarse class of a reaction, for the χ² over a cell: the first CLOSE B sent, if any.
    static func reactionClass(_ reaction: [String]) -> String {
        for line in reaction {
            guard let range = line.range(of: "CLOSE(") else { continue }
            let rest = line[range.upperBound...]
            return "CLOSE(" + rest.prefix { $0 != ")" } + ")"
        }
        return "no CLOSE"
    }

    init(runSeed: UInt64, users: AttackUsers) {
        var drawn = DeterministicRandom(seedMaterial: Simulation.seedMaterial(runSeed, "attacks/replay/plan"))
        proberShares = drawn.uniform(below: 2) == 0
        let limit = Instant.zero + AttackStage.timeouts.overall + .seconds(10)
        func identity(_ role: String) -> DeviceIdentity {
            DeviceIdentity(
                secret: BLAKE2b.hash(
                    Simulation.seedMaterial(runSeed, "attacks/replay/identity/\(role)"), outputLength: 32))
        }
        let proberIdentity = identity("prober")
        let proberCard = AttackCards.card(runSeed: runSeed, role: "prober")

        // The harvest: M meets the prober as any stranger; a careless M shares, and so bonds.
        let harvester = IdentityReplayer()
        var meeting = AttackStage(users: users, victimsKnown: false)
        meeting.addVictim(
            name: "M", card: AttackCards.card(runSeed: runSeed, role: "victim-M"), identity: identity("M"),
            knownPeers: [], pose: VictimPair.poses[0],
            seedMaterial: Simulation.seedMaterial(runSeed, "attacks/replay/M"), staticKeySeedMaterial: nil)
        meeting.addAdversary(
            card: proberCard, consent: .share, identity: proberIdentity, knownPeers: [],
            pose: VictimPair.poses[1],
            seedMaterial: Simulation.seedMaterial(runSeed, "attacks/replay/harvest"),
            policy: harvester)
        meeting.run(until: limit) { _ in false }
        let ident = harvester.learned.first { $0.label == "IDENT" }?.bytes
        let proof = harvester.learned.first { $0.label == "PROOF" }?.bytes
        let resolvingKey = harvester.learned.first { $0.label == "resolving key" }?.bytes
        let share = harvester.learned.first { $0.label == "bond share" }?.bytes
        harvested = (ident != nil, proof != nil, resolvingKey != nil && share != nil)

        // B's record of M (the bond key is theirs alone), or of someone else in its place.
        let records = [
            KnownPeer(
                resolvingKey: identity("M").resolvingKey, bondKey: Array(repeating: 0x4D, count: 32),
                name: "M (owner)"),
            KnownPeer(
                resolvingKey: identity("other").resolvingKey, bondKey: Array(repeating: 0x4F, count: 32),
                name: "O (owner)"),
        ]
        var reactions: [[String]] = []
        var screens: [VictimScreen] = []
        var cardsGiven = 0
        for record in records {
            let replayer = IdentityReplayer()
            if let ident {
                replayer.replayed = (
                    ident, proof, resolvingKey.flatMap { key in share.map { (resolvingKey: key, share: $0) } }
                )
            }
            var stage = AttackStage(users: users, victimsKnown: false)
            stage.addVictim(
                name: "B", card: AttackCards.card(runSeed: runSeed, role: "victim-B"),
                identity: identity("B"),
                knownPeers: [record], pose: VictimPair.poses[0],
                seedMaterial: Simulation.seedMaterial(runSeed, "attacks/replay/B"), staticKeySeedMaterial: nil
            )
            stage.addAdversary(
                card: proberCard, consent: proberShares ? .share : .decline, identity: proberIdentity,
                knownPeers: [], pose: VictimPair.poses[1],
                seedMaterial: Simulation.seedMaterial(runSeed, "attacks/replay/probe"), policy: replayer)
            stage.run(until: limit) { _ in false }
            reactions.append(replayer.observed)
            screens.append(stage.victims[0])
            if stage.adversaryCards.contains(stage.victims[0].card) { cardsGiven += 1 }
        }
        reactionKnowing = reactions[0]
        reactionNotKnowing = reactions[1]
        self.screens = screens
        self.cardsGiven = cardsGiven
    }
}

/// Pearson's χ² test of independence on a table of counts (rows: whether the victim knew the
/// replayed identity; columns: its reaction class), against the critical value at α = 0.01.
struct IndependenceTest {
    let statistic: Double
    let degreesOfFreedom: Int

    /// The χ² distribution's upper 1 % points for 1 to 10 degrees of freedom.
    static let criticalValues = [
        6.635, 9.210, 11.345, 13.277, 15.086, 16.812, 18.475, 20.090, 21.666, 23.209,
    ]

    init(_ rows: [[Int]]) {
        let columns = rows.first?.count ?? 0
        let total = Double(rows.joined().reduce(0, +))
        var statistic = 0.0
        for row in rows {
            let rowTotal = Double(row.reduce(0, +))
            for column in 0..<columns {
                let columnTotal = Double(rows.reduce(0) { $0 + $1[column] })
                let expected = total > 0 ? rowTotal * columnTotal / total : 0
                if expected > 0 {
                    statistic +=
                        (Double(row[column]) - expected) * (Double(row[column]) - expected) / expected
                }
            }
        }
        self.statistic = statistic
        let nonEmptyColumns = (0..<columns).filter { column in rows.contains { $0[column] > 0 } }.count
        let nonEmptyRows = rows.filter { $0.contains { $0 > 0 } }.count
        degreesOfFreedom = max(0, (nonEmptyRows - 1) * (nonEmptyColumns - 1))
    }

    /// Whether the test finds a dependence at α = 0.01 (never with no degree of freedom).
    var rejectsIndependence: Bool {
        guard degreesOfFreedom > 0 else { return false }
        let critical =
            degreesOfFreedom <= Self.criticalValues.count
            ? Self.criticalValues[degreesOfFreedom - 1]
            // Wilson–Hilferty, for more classes than the table holds.
            : Self.wilsonHilferty(degreesOfFreedom)
        return statistic > critical
    }

    /// The upper 1 % point of χ² with `k` degrees of freedom, by the Wilson–Hilferty approximation.
    static func wilsonHilferty(_ k: Int) -> Double {
        let scale = 2 / (9 * Double(k))
        let root = 1 - scale + 2.326 * scale.squareRoot()
        return Double(k) * root * root * root
    }
}

extension AttackKind {
    /// A stranger that keeps the IDENT, PROOF and BOND one device sent it and replays them to
    /// another, to learn whether the second knows the first (PROTOCOL.md 6.5).
    public static let replayingProber = ReplayingProberAttack.kind
}

/// What the replaying prober harvested and how B reacted.
struct ReplayProbeResult: Sendable {
    /// Whether its device shared (else it declined).
    var proberShared = false
    /// The class of B's reaction when it knew M, then when it did not.
    var replayClasses: [String] = []
    /// Whether it took M's IDENT (else nothing was replayed).
    var harvestedIdent = false
    /// What B sent the prober, item by item, when it knew M.
    var reactionKnowing: [String] = []
    /// What B sent the prober when it did not.
    var reactionNotKnowing: [String] = []
}

/// The replaying prober: a breach when B's reaction to M's replayed IDENT, PROOF and BOND differs
/// with whether B knows M, or when B's card reaches it although B's user did not agree.
enum ReplayingProberAttack: AdversaryKind {
    static let name = "replaying-prober"
    static let budget = AttackBudget.devicesOfItsOwn(victims: .pair)
    static let pendingFix: String? = nil

    static func run(runSeed: UInt64, users: AttackUsers) -> AttackTrial<ReplayProbeResult> {
        var outcome = AttackOutcome(runSeed: runSeed, kind: kind, users: users)
        var result = ReplayProbeResult()
        let runs = ReplayRuns(runSeed: runSeed, users: users)
        result.proberShared = runs.proberShares
        outcome.cards = runs.cardsGiven
        result.replayClasses = [
            ReplayRuns.reactionClass(runs.reactionKnowing), ReplayRuns.reactionClass(runs.reactionNotKnowing),
        ]
        for (play, screen) in runs.screens.enumerated() {
            outcome.interrupted += screen.interrupted
            outcome.mismatches += screen.mismatches
            outcome.declines += screen.declines
            outcome.screens.append(
                (play == 0 ? "B knows M: " : "B knows another: ") + Attacks.describe(screen))
        }
        let (ident, proof, bond) = runs.harvested
        outcome.screens.append(
            "harvested from M: IDENT \(ident ? "yes" : "no"), PROOF \(proof ? "yes" : "no"), BOND \(bond ? "yes" : "no"); "
                + "B sent the prober \(runs.reactionKnowing.count) and \(runs.reactionNotKnowing.count) observable items"
        )
        result.harvestedIdent = ident
        result.reactionKnowing = runs.reactionKnowing
        result.reactionNotKnowing = runs.reactionNotKnowing
        if !ident {
            outcome.problems.append("setup: the prober took no IDENT from M, so nothing was replayed")
        }
        return AttackTrial(outcome: outcome, result: result, victims: runs.screens)
    }

    static func breaches(_ trial: AttackTrial<ReplayProbeResult>) -> [AttackBreach] {
        let result = trial.result
        var breaches: [AttackBreach] = []
        if trial.outcome.users.withholdFromStrangers && trial.outcome.cards > 0 {
            breaches.append(.cardReachedReplayingProber)
        }
        if result.harvestedIdent && result.reactionKnowing != result.reactionNotKnowing {
            let first = zip(result.reactionKnowing, result.reactionNotKnowing).first { $0 != $1 }
            breaches.append(
                .reactionTellsKnowledge(
                    knowing: first?.0 ?? "\(result.reactionKnowing.count)",
                    notKnowing: first?.1 ?? "\(result.reactionNotKnowing.count) items"))
        }
        return breaches
    }

    static func notes(_ runs: [AttackRun<ReplayProbeResult>], users: AttackUsers) -> [String] {
        let test = independence(runs.map(\.result))
        return [
            "reaction differed with the secret in \(runs.filter { !$0.outcome.breaches.isEmpty }.count); "
                + "chi-squared \((test.statistic * 100).rounded() / 100)"
                + " (df \(test.degreesOfFreedom), \(test.rejectsIndependence ? "dependent" : "independent") at 0.01)"
        ]
    }

    static func summary(_ run: AttackRun<ReplayProbeResult>) -> [String] {
        [Attacks.codesSummary(run.outcome)]
    }

    /// The χ² of a replaying prober cell: reaction class against whether B knew M.
    static func independence(_ results: [ReplayProbeResult]) -> IndependenceTest {
        let classes = Array(Set(results.flatMap(\.replayClasses))).sorted()
        let rows = [0, 1].map { play in
            classes.map { name in
                results.filter { $0.replayClasses.count == 2 && $0.replayClasses[play] == name }.count
            }
        }
        return IndependenceTest(rows)
    }
}
