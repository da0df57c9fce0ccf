import ProfileDropCore
import ProfileDropCrypto
import ProfileDropSimulator

/// The identity prober: a stranger on the LAN that tries to recognise the same victim device in two
/// of its runs (same long-term identity secret, fresh device seed and Noise static key each run).
///
/// In each run it stays silent (no BEACON or QUERY, so the victim never invites it), hears the
/// victim's beacons and invites it with a real core device, whose policy shares or declines. As the
/// session's endpoint it records every value the victim sends: device ids, ephemeral and static
/// Noise keys, TOKEN, IDENT, PROOF, COMMIT, NONCE, REVEAL, and what a user gives by sharing (the
/// card's digest, the card, the BOND). Then it looks for a link: any 8-byte window of a value of run
/// 1 in a value of run 2, or a 32-byte value of run 1 that resolves run 2's IDENT.
final class IdentityProber: AdversaryBrain {
    override func keepsOutgoing(_ packet: Packet, device: DeviceID, at time: Instant) -> Bool {
        switch packet {
        case .beacon, .query: false
        case .invite, .accept, .confirm, .busy, .secure, .probe, .probeAck: true
        }
    }
}

/// One way the prober tied the victim's second run to its first.
struct ProberLink: Equatable {
    /// What matched: `"IDENT (run 2) ~ static key (run 1)"`, `"IDENT (run 2) resolved by resolving key (run 1)"`.
    let description: String
    /// Whether it went through something a user gave by sharing (the card, its digest, the BOND).
    let given: Bool
}

/// Both runs of the victim with a prober, and the links found.
struct ProberRuns {
    /// The victim's screens in run 1 and run 2.
    let screens: [VictimScreen]
    /// Whether the prober's device shared (else it declined).
    let proberShares: Bool
    /// What the prober learned in each run.
    let learned: [[AdversaryBrain.Learned]]
    /// The links it found.
    let links: [ProberLink]
    /// Whether the victim's resolving key reached the prober in either run.
    let identityGiven: Bool
    /// Runs in which the victim's card reached the prober.
    let cardsGiven: Int

    static let windowLength = 8

    /// Both runs of seed `runSeed`'s victim. `keepsStaticKey` gives the victim the same Noise static
    /// key in both runs, as version 1 did: a control the prober must catch.
    init(runSeed: UInt64, users: AttackUsers, keepsStaticKey: Bool = false) {
        var drawn = DeterministicRandom(seedMaterial: Simulation.seedMaterial(runSeed, "attacks/prober/plan"))
        proberShares = drawn.uniform(below: 2) == 0
        let identity = DeviceIdentity(
            secret: BLAKE2b.hash(Simulation.seedMaterial(runSeed, "attacks/identity/V"), outputLength: 32))
        let proberIdentity = DeviceIdentity(
            secret: BLAKE2b.hash(
                Simulation.seedMaterial(runSeed, "attacks/identity/prober"), outputLength: 32))
        let card = AttackCards.card(runSeed: runSeed, role: "victim-V")
        var victimKnows: [KnownPeer] = []
        var proberKnows: [KnownPeer] = []
        var screens: [VictimScreen] = []
        var brains: [IdentityProber] = []
        var cardsGiven = 0
        for run in 1...2 {
            let brain = IdentityProber()
            var stage = AttackStage(users: users, victimsKnown: false)
            stage.addVictim(
                name: "V", card: card, identity: identity, knownPeers: victimKnows, pose: VictimPair.poses[0],
                seedMaterial: Simulation.seedMaterial(runSeed, "attacks/prober/run\(run)/victim"),
                staticKeySeedMaterial: keepsStaticKey
                    ? Simulation.seedMaterial(runSeed, "attacks/prober/victim-static-key") : nil)
            stage.addAdversary(
                card: AttackCards.card(runSeed: runSeed, role: "prober"),
                consent: proberShares ? .share : .decline, identity: proberIdentity, knownPeers: proberKnows,
                pose: VictimPair.poses[1],
                seedMaterial: Simulation.seedMaterial(runSeed, "attacks/prober/run\(run)/prober"),
                policy: brain)
            stage.run(until: Instant.zero + AttackStage.timeouts.overall + .seconds(10)) { _ in false }
            // Each side remembers what its exchange gave it, as a real device would across runs.
            victimKnows += stage.victims[0].remembered
            proberKnows += stage.adversaryRemembered
            screens.append(stage.victims[0])
            if stage.adversaryCards.contains(card) { cardsGiven += 1 }
            brains.append(brain)
        }
        self.screens = screens
        self.cardsGiven = cardsGiven
        learned = brains.map(\.learned)
        links = Self.links(first: learned[0], second: learned[1])
        identityGiven = brains.contains { $0.resolvingKeys.contains(identity.resolvingKey) }
    }

    /// Every link between what was learned in run 1 and in run 2, in the order of run 2's values.
    static func links(first: [AdversaryBrain.Learned], second: [AdversaryBrain.Learned]) -> [ProberLink] {
        // Lookups only: which value of run 1 holds each window.
        var windows: [[UInt8]: AdversaryBrain.Learned] = [:]
        for value in first where value.bytes.count >= windowLength {
            for start in 0...(value.bytes.count - windowLength) {
                let window = Array(value.bytes[start..<(start + windowLength)])
                if windows[window] == nil { windows[window] = value }
            }
        }
        var links: [ProberLink] = []
        func note(_ link: ProberLink) { if !links.contains(link) { links.append(link) } }
        for value in second where value.bytes.count >= windowLength {
            for start in 0...(value.bytes.count - windowLength) {
                guard let earlier = windows[Array(value.bytes[start..<(start + windowLength)])] else {
                    continue
                }
                note(
                    ProberLink(
                        description: "\(value.label) (run 2) ~ \(earlier.label) (run 1)",
                        given: value.given || earlier.given))
            }
        }
        let keys = first.filter { $0.bytes.count == 32 }
        for ident in second where ident.label == "IDENT" {
            for key in keys where resolves(ident.bytes, with: key.bytes) {
                note(
                    ProberLink(
                        description: "IDENT (run 2) resolved by \(key.label) (run 1)", given: key.given))
            }
        }
        return links
    }

    /// Whether `ident` is the IDENT of the device whose resolving key is `key`: 16 nonce bytes, then
    /// their tag under the key (PROTOCOL.md 6.5), as a known peer checks it.
    static func resolves(_ ident: [UInt8], with key: [UInt8]) -> Bool {
        guard ident.count == 32 else { return false }
        let tag = HMACBLAKE2b.authenticate(
            key: key, parts: [Array("ProfileDrop v2 ident".utf8), Array(ident.prefix(16))]
        ).prefix(16)
        return Array(tag) == Array(ident.suffix(16))
    }
}

extension AttackKind {
    /// A stranger that invites the same victim in two of its runs and tries to link them.
    public static let identityProber = IdentityProberAttack.kind
}

/// What the identity prober linked and was given.
struct ProbeResult: Sendable {
    /// Links between the victim's runs, other than through what a user gave.
    var links: [String] = []
    /// Links through what a careless user gave by sharing (card, digest, BOND).
    var givenLinks: [String] = []
    /// Whether the victim's resolving key reached the prober.
    var identityGiven = false
    /// Whether its device shared (else it declined).
    var proberShared = false
}

/// The identity prober: a breach is a link between the victim's two runs through anything but
/// what a careless user gave by sharing, and, with a careful or unattended user, its identity or
/// card reaching the prober at all.
enum IdentityProberAttack: AdversaryKind {
    static let name = "identity-prober"
    static let budget = AttackBudget.devicesOfItsOwn(victims: .oneInTwoRuns)
    static let pendingFix: String? = nil

    static func run(runSeed: UInt64, users: AttackUsers) -> AttackTrial<ProbeResult> {
        var outcome = AttackOutcome(runSeed: runSeed, kind: kind, users: users)
        var result = ProbeResult()
        let runs = ProberRuns(runSeed: runSeed, users: users)
        result.proberShared = runs.proberShares
        result.identityGiven = runs.identityGiven
        outcome.identities = runs.identityGiven ? 1 : 0
        outcome.cards = runs.cardsGiven
        result.links = runs.links.filter { !$0.given }.map(\.description)
        result.givenLinks = runs.links.filter(\.given).map(\.description)
        for (run, screen) in runs.screens.enumerated() {
            outcome.interrupted += screen.interrupted
            outcome.mismatches += screen.mismatches
            outcome.declines += screen.declines
            outcome.screens.append("run \(run + 1): " + Attacks.describe(screen))
        }
        outcome.screens.append(
            "prober \(runs.proberShares ? "shared" : "declined"); learned "
                + runs.learned.map { values in
                    var labels: [String] = []
                    for value in values where !labels.contains(value.label) { labels.append(value.label) }
                    return "\(values.count) values (\(labels.joined(separator: ", ")))"
                }.joined(separator: " then ")
                + "; links: "
                + (runs.links.isEmpty ? "none" : runs.links.map(\.description).joined(separator: "; ")))
        return AttackTrial(outcome: outcome, result: result, victims: runs.screens)
    }

    static func breaches(_ trial: AttackTrial<ProbeResult>) -> [AttackBreach] {
        let withheld = trial.outcome.users.withholdFromStrangers
        return trial.result.links.map { .runsLinked($0) }
            + (withheld && trial.result.identityGiven ? [.resolvingKeyReachedProber] : [])
            + (withheld && trial.outcome.cards > 0 ? [.cardReachedProber] : [])
    }

    static func notes(_ runs: [AttackRun<ProbeResult>], users: AttackUsers) -> [String] {
        var notes = ["prober shared in \(runs.filter(\.result.proberShared).count)"]
        let identities = runs.filter(\.result.identityGiven).count
        if identities > 0 { notes.append("identity given by careless user in \(identities)") }
        let cards = runs.filter { !$0.result.givenLinks.isEmpty }.count
        if cards > 0 { notes.append("linked through what careless users gave in \(cards)") }
        return notes
    }

    static func summary(_ run: AttackRun<ProbeResult>) -> [String] {
        let result = run.result
        var parts = [result.links.isEmpty ? "no link" : "\(result.links.count) links"]
        if !result.givenLinks.isEmpty {
            parts.append("\(result.givenLinks.count) links through what the user gave")
        }
        if result.identityGiven { parts.append("identity given by careless user") }
        return parts
    }
}
