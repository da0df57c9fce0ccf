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

extension Attacks {
    /// The identity thief's run: A and B meet and become known peers; B shares with the thief (an
    /// exchange B's user agreed to); then the thief meets A, with the run's users, as a new device
    /// whose BOND names B's resolving key. A breach is A remembering a bond under B's resolving key
    /// other than the A–B bond, A being shown the thief as its known peer, or A's card reaching the
    /// thief when A's user is careful or unattended.
    static func identityThief(runSeed: UInt64, users: AttackUsers) -> AttackOutcome {
        var outcome = AttackOutcome(runSeed: runSeed, kind: .identityThief, users: users)
        let pair = VictimPair(runSeed: runSeed)
        // Unattended victims met at their terminals first: that meeting's users compared codes.
        guard let met = pair.meet(users: users == .unattended ? .careful : users),
            let recordOfB = met[0].first
        else {
            outcome.setupFailed = true
            outcome.problems.append("setup: the victims' honest exchange did not complete, so no attack ran")
            return outcome
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
        earlier.run(until: runLimit) { _ in false }
        let stolen = pair.identities[1].resolvingKey
        guard thief.resolvingKeys.contains(stolen) else {
            outcome.problems.append("setup: B did not share with the thief, so it holds no key to steal")
            return outcome
        }
        thief.stolenKey = stolen

        var stage = AttackStage(users: users, victimsKnown: true)
        stage.addVictim(
            name: VictimPair.names[0], card: pair.cards[0], identity: pair.identities[0], knownPeers: met[0],
            pose: VictimPair.poses[0], seedMaterial: pair.seedMaterial(0, phase: "thief/attack"))
        stage.addAdversary(
            card: card, consent: .share, identity: identity, pose: facing,
            seedMaterial: Simulation.seedMaterial(runSeed, "attacks/thief/attack"), policy: thief)
        stage.run(until: runLimit) { _ in false }

        let victim = stage.victims[0]
        outcome.stolenBonds = thief.bondSessions.count
        outcome.interrupted = victim.interrupted
        outcome.mismatches = victim.mismatches
        outcome.declines = victim.declines
        outcome.adversaryShownKnown = victim.adversaryShownKnown
        outcome.proofFailures = victim.proofFailures
        if stage.adversaryCards.contains(victim.card) { outcome.cards = 1 }
        outcome.screens = [
            describe(victim) + "; the thief's BOND named B's key in \(thief.bondSessions.count) sessions"
        ]
        let replaced = victim.remembered.filter {
            $0.resolvingKey == recordOfB.resolvingKey && $0.bondKey != recordOfB.bondKey
        }
        if !replaced.isEmpty {
            outcome.breaches.append(
                "A remembered the thief under known peer B's resolving key: its record of B would be "
                    + "replaced by a bond the thief holds")
        }
        if victim.adversaryShownKnown > 0 {
            outcome.breaches.append("A was shown the thief as its known peer")
        }
        if users.withholdFromStrangers && outcome.cards > 0 {
            outcome.breaches.append("A's card reached the thief although its user did not agree")
        }
        return outcome
    }
}
