import ProfileDropCore
import ProfileDropCrypto
import ProfileDropSimulator

/// A device that victim B once shared with (its user agreed, so the device holds B's resolving key
/// from B's BOND) and that then meets victim A, B's known peer, as a new device: its BOND names B's
/// resolving key instead of its own. Were A to remember that bond, A's record of B would be replaced
/// by one the thief holds: the thief would pass as B at A, and B fail its PROOF there (PROTOCOL.md
/// 6.5, "Bond"; 11.4, BOND; 11.6 item 21).
final class IdentityThief: AdversaryBrain {
    /// The resolving key its BOND names, once it holds B's.
    var stolenKey: [UInt8]?
    /// Sessions in which it sent a BOND naming the stolen key.
    private(set) var bondSessions: [UInt64] = []

    override func sending(_ frames: [Frame], in session: TapSession, device: DeviceID, at time: Instant)
        -> [Frame]
    {
        guard let stolenKey else { return frames }
        return frames.map { frame in
            guard case .bond(_, let share) = frame else { return frame }
            if !bondSessions.contains(session.sessionID) { bondSessions.append(session.sessionID) }
            return .bond(resolvingKey: stolenKey, share: share)
        }
    }
}

extension AttackKind {
    /// A device that victim B once shared with, meeting victim A (B's known peer) as a new device
    /// whose BOND names B's resolving key.
    public static let identityThief = IdentityThiefAttack.kind
}

/// What the identity thief's BONDs did at A.
struct TheftResult: Sendable {
    /// Sessions in which its BOND named the stolen resolving key.
    var stolenBonds = 0
    /// Whether A remembered a bond under B's resolving key other than the A–B bond.
    var bondReplaced = false
    /// Times A was shown the thief as its known peer.
    var adversaryShownKnown = 0
    /// Sessions A closed as `identity-proof-failed`.
    var proofFailures = 0
    /// The honest meeting that makes the victims known peers did not complete (no attack ran).
    var setupFailed = false
}

/// The identity thief.
enum IdentityThiefAttack: AdversaryKind {
    static let name = "identity-thief"
    static let budget = AttackBudget.devicesOfItsOwn(victims: .one)
    static let pendingFix: String? = nil

    /// The identity thief's run: A and B meet and become known peers; B shares with the thief (an
    /// exchange B's user agreed to); then the thief meets A, with the run's users, as a new device
    /// whose BOND names B's resolving key. A breach is A remembering a bond under B's resolving key
    /// other than the A–B bond, A being shown the thief as its known peer, or A's card reaching the
    /// thief when A's user is careful or unattended.
    static func run(runSeed: UInt64, users: AttackUsers) -> AttackTrial<TheftResult> {
        var outcome = AttackOutcome(runSeed: runSeed, kind: kind, users: users)
        var result = TheftResult()
        let pair = VictimPair(runSeed: runSeed)
        // Unattended victims met at their terminals first: that meeting's users compared codes.
        guard let met = pair.meet(users: users == .unattended ? .careful : users),
            let recordOfB = met[0].first
        else {
            result.setupFailed = true
            outcome.problems.append("setup: the victims' honest exchange did not complete, so no attack ran")
            return AttackTrial(outcome: outcome, result: result, victims: [])
        }
        let thief = IdentityThief()
        let identity = DeviceIdentity(
            secret: BLAKE2b.hash(Simulation.seedMaterial(runSeed, "attacks/identity/thief"), outputLength: 32)
        )
        let card = AttackCards.card(runSeed: runSeed, role: "thief")
        let facing = Pose(x: 7, y: 0, heading: 180)

        var earlier = AttackStage(users: .careless, victimsKnown: false)
        earlier.addVictim(
            name: VictimPair.names[1], card: pair.cards[1], identity: pair.identities[1], knownPeers: met[1],
            pose: Pose(x: 0, y: 0, heading: 0), seedMaterial: pair.seedMaterial(1, phase: "thief/earlier"))
        earlier.addAdversary(
            card: card, consent: .share, identity: identity, pose: facing,
            seedMaterial: Simulation.seedMaterial(runSeed, "attacks/thief/earlier"), policy: thief)
        earlier.run(until: Attacks.runLimit) { _ in false }
        let stolen = pair.identities[1].resolvingKey
        guard thief.resolvingKeys.contains(stolen) else {
            outcome.problems.append("setup: B did not share with the thief, so it holds no key to steal")
            return AttackTrial(outcome: outcome, result: result, victims: [])
        }
        thief.stolenKey = stolen

        var stage = AttackStage(users: users, victimsKnown: true)
        stage.addVictim(
            name: VictimPair.names[0], card: pair.cards[0], identity: pair.identities[0], knownPeers: met[0],
            pose: VictimPair.poses[0], seedMaterial: pair.seedMaterial(0, phase: "thief/attack"))
        stage.addAdversary(
            card: card, consent: .share, identity: identity, pose: facing,
            seedMaterial: Simulation.seedMaterial(runSeed, "attacks/thief/attack"), policy: thief)
        stage.run(until: Attacks.runLimit) { _ in false }

        let victim = stage.victims[0]
        result.stolenBonds = thief.bondSessions.count
        outcome.interrupted = victim.interrupted
        outcome.mismatches = victim.mismatches
        outcome.declines = victim.declines
        result.adversaryShownKnown = victim.adversaryShownKnown
        result.proofFailures = victim.proofFailures
        if stage.adversaryCards.contains(victim.card) { outcome.cards = 1 }
        outcome.screens = [
            Attacks.describe(victim)
                + "; the thief's BOND named B's key in \(thief.bondSessions.count) sessions"
        ]
        result.bondReplaced = victim.remembered.contains {
            $0.resolvingKey == recordOfB.resolvingKey && $0.bondKey != recordOfB.bondKey
        }
        return AttackTrial(outcome: outcome, result: result, victims: stage.victims)
    }

    /// A remembering a bond under B's resolving key other than the A–B bond, A shown the thief as
    /// its known peer, or A's card reaching the thief when A's user is careful or unattended.
    static func breaches(_ trial: AttackTrial<TheftResult>) -> [AttackBreach] {
        (trial.result.bondReplaced ? [.bondReplacedByThief] : [])
            + (trial.result.adversaryShownKnown > 0 ? [.thiefShownAsKnown] : [])
            + (trial.outcome.users.withholdFromStrangers && trial.outcome.cards > 0
                ? [.cardReachedThief] : [])
    }

    static func notes(_ runs: [AttackRun<TheftResult>], users: AttackUsers) -> [String] {
        var notes = [
            "BOND named B's key in \(runs.reduce(0) { $0 + $1.result.stolenBonds }) sessions",
            "adversary shown as known \(runs.reduce(0) { $0 + $1.result.adversaryShownKnown })",
        ]
        let failed = runs.filter(\.result.setupFailed).count
        if failed > 0 { notes.append("honest meeting failed in \(failed) runs") }
        if Attacks.given(runs.map(\.outcome), users: users) {
            notes.append("careless users shared with a new device")
        }
        return notes
    }

    static func summary(_ run: AttackRun<TheftResult>) -> [String] {
        [Attacks.codesSummary(run.outcome)]
    }
}
