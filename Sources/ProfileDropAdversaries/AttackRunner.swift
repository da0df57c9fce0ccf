import ProfileDropCore
import ProfileDropCrypto
import ProfileDropSimulator

/// Which adversary an attack run faces.
public enum AttackKind: String, CaseIterable, Sendable {
    /// A man in the middle between two strangers, with two real core devices of its own.
    case mitmRelay = "mitm-relay"
    /// The same man in the middle between two victims that are known peers of each other (an
    /// honest exchange first); it relays their IDENTs, then comes back as a stranger.
    case mitmKnownPeers = "mitm-known-peers"
    /// A man in the middle that aborts and retries B's pairing until B's code equals A's.
    case codeGrinder = "code-grinder"
    /// A stranger that invites the same victim in two of its runs and tries to link them.
    case identityProber = "identity-prober"
    /// An observer of the victims' unicast that answers each INVITE with its own ACCEPT from the
    /// invitee's address, before the invitee's.
    case acceptRacer = "accept-racer"
    /// A stranger that keeps the IDENT, PROOF and BOND one device sent it and replays them to
    /// another, to learn whether the second knows the first (PROTOCOL.md 6.5).
    case replayingProber = "replaying-prober"
    /// A device that victim B once shared with, meeting victim A (B's known peer) as a new device
    /// whose BOND names B's resolving key.
    case identityThief = "identity-thief"
    /// The BEACON racer with a live address: a device of its own that claims A's id, where a
    /// newcomer heard that id first.
    case beaconRaceMITM = "beacon-race-mitm"
    /// Availability, cleartext: forged BEACONs with a victim's id and a dead port.
    case beaconHijack = "beacon-hijack"
    /// Availability, cleartext: INVITEs of random bytes at each victim, from spoofed sources.
    case inviteSquatter = "invite-squatter"
    /// Availability, cleartext: BEACONs of fresh fake ids pointing at a dead port.
    case phantomFlood = "phantom-flood"
    /// Availability, cleartext: BEACONs of four fake ids kept alive, each from its own spoofed
    /// address, so that they become established peers.
    case phantomKeeper = "phantom-keeper"
    /// Availability, cleartext: mixed junk from 256 ports on each of four spoofed addresses.
    case datagramFlood = "datagram-flood"
    /// Availability, cleartext: BEACONs recorded in a previous run or earlier in this one.
    case beaconReplay = "beacon-replay"
    /// Availability, cleartext: BEACONs of each victim's id from its own address, sequence ahead,
    /// saying busy and far away.
    case beaconDisplace = "beacon-displace"
    /// Availability, cleartext: an observer of the victims' unicast that answers each INVITE with a
    /// BUSY from the invitee's address before the real ACCEPT, its reasons in turn (1, 2, retry, 4).
    case busyForger = "busy-forger"
    /// Availability, cleartext: an observer of the victims' unicast that answers each INVITE with an
    /// INVITE to the inviter in the name of a bystander it has long heard, while the invitee, which
    /// joined late, is not yet established there (its invitation tentative).
    case inviteForger = "invite-forger"
    /// Availability, cleartext: an observer of the victims' unicast that answers each INVITE with an
    /// INVITE to the inviter in the invitee's own name, from the invitee's address: a crossing
    /// INVITE, which the tie-break acts on.
    case crossingForger = "crossing-forger"
    /// Availability, cleartext: an observer of the victims' unicast that sends their SECURE packets
    /// back at them, from the address each came from, 1 ms to 3 s after the original: replayed
    /// unchanged, with one bit flipped, or reflected to the sender.
    case secureReplayer = "secure-replayer"
    /// Availability, cleartext: an attacker off the path that answers a newcomer's first datagram
    /// with the other victim's BEACON from its own dead address, before the real one arrives, and
    /// keeps forwarding that victim's BEACONs from there.
    case beaconRacer = "beacon-racer"
    /// Availability, on the path: drops everything one victim sends the other, for good, from a
    /// moment drawn 0 to 4 s after their first SECURE packet; it sends nothing. A cut PROTOCOL.md
    /// 6.7 cannot prevent (in that victim's confirmation hold) leaves the outcomes uneven.
    case closeCutter = "close-cutter"
    /// Availability, malicious peer: offers a card above the victim's limit.
    case oversizeOffer = "oversize-offer"
    /// Availability, malicious peer: sends a chunk outside its offer.
    case badChunkIndex = "bad-chunk-index"
    /// Availability, malicious peer: sends a card that does not match its offer's digest.
    case badDigest = "bad-digest"
    /// Availability, malicious peer: acknowledges the victim's card without receiving it.
    case fakeAck = "fake-ack"
    /// Availability, malicious peer: receives the victim's card and never acknowledges it.
    case neverAck = "never-ack"
    /// Availability, malicious peer: acknowledges every chunk of the victim's card in CARD_SACK
    /// before receiving it, and never sends CARD_ACK.
    case falseSack = "false-sack"
    /// Availability, malicious peer: sends its card one chunk every few seconds.
    case slowTransfer = "slow-transfer"
    /// Availability, malicious peer: completes verification and never decides.
    case consentStall = "consent-stall"
    /// Availability, malicious peer: one RANGING every few seconds, nothing else.
    case slowloris
    /// Availability, malicious peer: offers a card above the limit, then never acknowledges the
    /// victim's CLOSE and keeps talking, drawing a CLOSE for each of its packets.
    case closeAckWithholder = "close-ack-withholder"
    /// Availability, malicious peer: offers a card above the limit, and invites again under a
    /// fresh device id as soon as each session ends.
    case reinviter = "re-inviter"
    /// Availability, malicious peer: claims in every RECEIPT to hold all the victim's facts from the
    /// start, so that the victim repeats none of them.
    case falseReceipt = "false-receipt"
    /// Availability, malicious peer: sends CLOSE(declined) as soon as the handshake completes, and
    /// invites again under a fresh device id as soon as each session ends.
    case earlyDecliner = "early-decliner"
    /// Availability, malicious peer: a slowloris (its sessions end out of range, which blames no
    /// host) that invites again under a fresh device id as soon as each session ends.
    case farReturner = "far-returner"
    /// Availability, malicious peer: ranges honestly, so that the victim's gate opens, and never
    /// sends IN_RANGE, which holds the victim for its ranging window and the extra window an open
    /// gate waits (PROTOCOL.md 6.4).
    case inRangeWithholder = "in-range-withholder"

    /// Availability, malicious peers, judged strictly: one for each of the pair, each inviting its
    /// victim right after the victim's first BEACON (before the pair invites each other), then
    /// stalling at a stage drawn per run: before IN_RANGE, before its decision, or ranging once
    /// every few seconds.
    case sessionHog = "session-hog"
    /// Availability, malicious peers, judged strictly: one for each of the pair, inviting first,
    /// passing the gate and the code, then declining.
    case lateDecliner = "late-decliner"

    /// Availability, cleartext: BEACONs of eight fake ids from one address nobody holds, which the
    /// victims then invite there; judged by the bytes they send to it against the attacker's.
    case beaconReflector = "beacon-reflector"

    /// Whether the kind's malicious peer comes back under a fresh id after each session.
    var reinvites: Bool { self == .reinviter || self == .earlyDecliner || self == .farReturner }

    /// Whether the kind attacks availability (its runs are measured against the same room without
    /// the attacker) rather than what the victims give away.
    public var isAvailability: Bool {
        switch self {
        case .mitmRelay, .mitmKnownPeers, .codeGrinder, .identityProber, .replayingProber, .acceptRacer,
            .identityThief, .beaconRaceMITM:
            false
        default: true
        }
    }

    /// The user types a kind runs with: the confidentiality kinds with both, the availability kinds
    /// with careless users (they share at once, so that an exchange can complete and be timed).
    public var users: [AttackUsers] { isAvailability ? [.careless] : AttackUsers.allCases }
}

/// What one attack run did: what the adversary got, what the users saw, and the breaches.
public struct AttackOutcome: Sendable {
    /// The run's seed: `profiledrop simulate --attacks --runs 1 --seed <runSeed>` replays it.
    public let runSeed: UInt64
    /// The adversary.
    public let kind: AttackKind
    /// The victims' users.
    public let users: AttackUsers
    /// Victims' cards that reached the adversary.
    public var cards = 0
    /// Victims' long-term identities (resolving keys, and the victims' bond key) that reached it.
    public var identities = 0
    /// Whether both victims' screens showed a code, and whether the two were equal.
    public var codesEqual: Bool?
    /// Pairings the victims were shown as interrupted.
    public var interrupted = 0
    /// Known-peer mismatch warnings the victims were shown.
    public var mismatches = 0
    /// Requests the users declined or left to time out.
    public var declines = 0
    /// Times a victim was shown an adversary's device as its known peer.
    public var adversaryShownKnown = 0
    /// Prober: links between the victim's runs, other than through what a user gave.
    public var links: [String] = []
    /// Prober: links through what a careless user gave by sharing (card, digest, BOND).
    public var givenLinks: [String] = []
    /// Prober: whether the victim's resolving key reached the prober.
    public var identityGiven = false
    /// Prober: whether its device shared (else it declined).
    public var proberShared = false
    /// Replaying prober: the class of B's reaction when it knew M, then when it did not.
    public var replayClasses: [String] = []
    /// Grinder: sessions with B decided on B's code, devices brought, and whether a code matched.
    public var grindAttempts = 0
    /// Grinder: devices brought towards B.
    public var grindDevices = 0
    /// Grinder: whether some attempt matched A's code.
    public var grindMatched = false
    /// Known peers: sessions into which the adversary put the other victim's IDENT.
    public var relayedIdents = 0
    /// Known peers: sessions into which it put the other victim's genuine PROOF.
    public var relayedProofs = 0
    /// Known-peer mismatch warnings, per victim (A, then B).
    public var mismatchesPerVictim: [Int] = []
    /// Sessions the victims closed as `identity-proof-failed`.
    public var proofFailures = 0
    /// Man in the middle: copies between the victims that the adversary kept from arriving.
    public var intercepted = 0
    /// Accept racer: handshakes its devices completed with a victim (races won).
    public var racesWon = 0
    /// Accept racer: handshakes the victims completed, with anyone.
    public var victimSessions = 0
    /// Accept racer: ACCEPTs the victims sent each other (genuine answers, second in the race).
    public var genuineAccepts = 0
    /// Accept racer: sessions a victim reported as responder: a genuine half-open handshake that
    /// completed, where it should have ended silently.
    public var genuineReported = 0
    /// BEACON racer (live): invitations the newcomer sent to the racer's address.
    public var divertedInvitations = 0
    /// Identity thief: sessions in which its BOND named the stolen resolving key.
    public var stolenBonds = 0
    /// The honest meeting that makes the victims known peers did not complete (no attack ran).
    public var setupFailed = false
    /// What kept the run from testing anything (a failed setup): not a breach, but a failure.
    public var problems: [String] = []
    /// One line per victim: what its screen showed.
    public var screens: [String] = []
    /// Availability kinds: what was measured.
    public var availability: AvailabilityResult?
    /// Broken security properties.
    public var breaches: [String] = []
}

/// The outcome of `profiledrop simulate --attacks`.
public struct AttackReport: Sendable {
    /// The seed.
    public let seed: UInt64
    /// The kinds that ran.
    public let kinds: [AttackKind]
    /// One outcome per run.
    public let outcomes: [AttackOutcome]
    /// The report for printing: header, the table, breaches with their reproduction commands, and
    /// the summary line last.
    public let lines: [String]

    /// Every breach, in run order.
    public var breaches: Int { outcomes.reduce(0) { $0 + $1.breaches.count } }

    /// Runs that could not test anything (a failed setup).
    public var problems: Int { outcomes.filter { !$0.problems.isEmpty }.count }

    /// Whether nothing broke and every run tested what it should.
    public var passed: Bool { breaches == 0 && problems == 0 }

    /// `attacks: R runs, K kinds, B breaches`.
    public var summaryLine: String {
        "attacks: \(outcomes.count) runs, \(kinds.count) kinds, \(breaches) breaches"
    }
}

/// Adversaries against honest victims on the in-memory room, from one seed, in the style of the
/// swarm: every run draws everything from its own seed, and a run's seed alone replays it.
///
/// A run's kind and users are its seed modulo the number of cells of the kinds that run (each
/// confidentiality kind with careful, careless and unattended users, each availability kind with
/// careless users), and the seeds of a multi-run invocation are chosen to cycle through the cells, so the
/// runs split evenly. The kinds in ``pendingFixKinds`` are left out unless asked for, which changes
/// the cells: a run is replayed with the kinds it ran with (the reproduce line says them).
///
/// A breach is: with careful or unattended users, a victim's card or long-term identity (resolving
/// key, or the victims' bond key) reaching the adversary; with known peers (any users), a victim shown an
/// adversary's device as its known peer; for the prober, a link between the victim's two runs
/// through anything but what a careless user gave by sharing (and, with a careful or unattended
/// user, its identity reaching the prober at all). For the availability kinds, the rules of
/// ``Availability``.
public enum Attacks {
    /// Kinds that still breach on the core they were written against, each with the fix it waits
    /// for: kept in the runner (`--kinds all` or `--kinds NAME` runs them) but out of the default run,
    /// so that CI stays green. None waits now. The busy forger left when a refusal came to be held
    /// for the invitee's ACCEPT (PROTOCOL.md 5, "Refusals"); the phantom keeper when the measurement
    /// noise came from a stream of its own, so that its no-attack baseline measures the same noise
    /// (PROTOCOL.md 6.4, 11.6 item 6).
    static let pendingFixes: [(kind: AttackKind, fix: String)] = [
        (.sessionHog, "no session may hold a device hostage (protocol 2.1)"),
        (.lateDecliner, "a decline ends only its session, before or after the code (protocol 2.1)"),
        (
            .beaconReflector,
            "no amplification: an address proves it receives before any INVITE (protocol 2.1)"
        ),
    ]

    /// The kinds of ``pendingFixes``.
    public static let pendingFixKinds: [AttackKind] = pendingFixes.map(\.kind)

    /// The fix a pending kind waits for, nil for a kind that is not pending.
    static func pendingFix(_ kind: AttackKind) -> String? {
        pendingFixes.first { $0.kind == kind }?.fix
    }

    /// The kinds a plain `--attacks` runs: every kind but the pending ones.
    public static let defaultKinds: [AttackKind] = AttackKind.allCases.filter {
        !pendingFixKinds.contains($0)
    }

    /// Every kind and user type of `kinds`, in the order of a run seed's residue modulo their count.
    public static func cells(of kinds: [AttackKind]) -> [(kind: AttackKind, users: AttackUsers)] {
        kinds.flatMap { kind in kind.users.map { (kind, $0) } }
    }

    /// The cells of the default kinds.
    public static var cells: [(kind: AttackKind, users: AttackUsers)] { cells(of: defaultKinds) }

    /// The kind and users of the run with seed `runSeed` among `kinds`.
    public static func cell(of runSeed: UInt64, kinds: [AttackKind] = defaultKinds) -> (
        kind: AttackKind, users: AttackUsers
    ) {
        let cells = cells(of: kinds)
        return cells[Int(runSeed % UInt64(cells.count))]
    }

    /// The seed of each run: `seed` first, then values drawn from a stream keyed by `seed`, each
    /// moved to the next cell in turn.
    public static func runSeeds(seed: UInt64, count: Int, kinds: [AttackKind] = defaultKinds) -> [UInt64] {
        var stream = DeterministicRandom(seedMaterial: Simulation.seedMaterial(seed, "attacks/runs"))
        let cellCount = UInt64(cells(of: kinds).count)
        return (0..<count).map { index in
            guard index > 0 else { return seed }
            let value = stream.nextUInt64()
            let cell = (seed % cellCount + UInt64(index)) % cellCount
            return value - value % cellCount + cell
        }
    }

    /// The `--kinds` value that selects `kinds`: nil for the default kinds.
    public static func kindsArgument(_ kinds: [AttackKind]) -> String? {
        if kinds == defaultKinds { return nil }
        if kinds == AttackKind.allCases { return "all" }
        return kinds.map(\.rawValue).joined(separator: ",")
    }

    /// The kinds a `--kinds` value names: `all`, `default`, or names separated by commas (in the
    /// order of ``AttackKind/allCases``); nil for an unknown name.
    public static func kinds(named argument: String) -> [AttackKind]? {
        if argument == "all" { return AttackKind.allCases }
        if argument == "default" { return defaultKinds }
        var named: [AttackKind] = []
        for name in argument.split(separator: ",") {
            guard let kind = AttackKind(rawValue: String(name)) else { return nil }
            named.append(kind)
        }
        let kinds = AttackKind.allCases.filter(named.contains)
        return kinds.isEmpty ? nil : kinds
    }

    /// The command that replays the run with seed `runSeed` alone.
    public static func reproduceCommand(runSeed: UInt64, kinds: [AttackKind] = defaultKinds) -> String {
        let selection = kindsArgument(kinds).map { " --kinds \($0)" } ?? ""
        return "profiledrop simulate --attacks\(selection) --runs 1 --seed \(runSeed)"
    }

    /// Most devices a grinder brings towards B in one run.
    static let grinderAttempts = 32

    /// Runs `runs` attack runs of `kinds` from `seed`. With one run, each victim's screen is shown
    /// too.
    public static func run(runs: Int, seed: UInt64, kinds: [AttackKind] = defaultKinds) -> AttackReport {
        run(runs: runs, seed: seed, kinds: kinds) { runOne(runSeed: $0, kinds: kinds) }
    }

    /// Runs `runs` runs of `kinds` from `seed`, each by `perform`.
    static func run(
        runs: Int, seed: UInt64, kinds: [AttackKind] = defaultKinds, perform: (UInt64) -> AttackOutcome
    ) -> AttackReport {
        precondition(runs >= 0, "run count must not be negative")
        precondition(!kinds.isEmpty, "at least one kind")
        var outcomes: [AttackOutcome] = []
        let confidentiality = kinds.filter { !$0.isAvailability }
        var lines = [
            "attacks: seed=\(seed) runs=\(runs) kinds=\(kinds.map(\.rawValue).joined(separator: ","))"
                + (confidentiality.isEmpty
                    ? "" : " users=" + AttackUsers.allCases.map(\.rawValue).joined(separator: ",")),
            "attacks: a run's seed mod \(cells(of: kinds).count) picks its kind and users; victims 7 cm apart, timers "
                + "\(Instant.zero + AttackStage.timeouts.overall) overall, "
                + "\(Instant.zero + AttackStage.timeouts.consent) consent",
        ]
        let skipped = AttackKind.allCases.filter { !kinds.contains($0) && pendingFixKinds.contains($0) }
        if !skipped.isEmpty {
            lines.append(
                "attacks: pending a fix, not run (--kinds all runs them): "
                    + skipped.map(\.rawValue).joined(separator: ","))
        }
        var breachLines: [String] = []
        for (index, runSeed) in runSeeds(seed: seed, count: runs, kinds: kinds).enumerated() {
            let outcome = perform(runSeed)
            outcomes.append(outcome)
            let heading =
                "run \(index + 1)/\(runs) seed=\(runSeed) \(outcome.kind.rawValue) \(outcome.users.rawValue)"
            if runs == 1 {
                lines.append("\(heading): \(outcome.summary)")
                lines += outcome.screens.map { "  \($0)" }
            }
            if !outcome.breaches.isEmpty || !outcome.problems.isEmpty {
                breachLines.append("\(heading): \(outcome.summary)")
                breachLines += outcome.breaches.map { "  breach: \($0)" }
                breachLines += outcome.problems.map { "  problem: \($0)" }
                breachLines.append("  reproduce: \(reproduceCommand(runSeed: runSeed, kinds: kinds))")
            }
        }
        if !confidentiality.isEmpty { lines += table(outcomes, kinds: confidentiality) }
        let availability = kinds.filter(\.isAvailability)
        if !availability.isEmpty { lines += availabilityTable(outcomes, kinds: availability) }
        lines += breachLines
        let problems = outcomes.filter { !$0.problems.isEmpty }.count
        if problems > 0 { lines.append("attacks: \(problems) runs could not set up their attack") }
        let report = AttackReport(seed: seed, kinds: kinds, outcomes: outcomes, lines: lines)
        return AttackReport(seed: seed, kinds: kinds, outcomes: outcomes, lines: lines + [report.summaryLine])
    }

    /// Runs the one attack run of seed `runSeed` among `kinds`.
    public static func runOne(runSeed: UInt64, kinds: [AttackKind] = defaultKinds) -> AttackOutcome {
        let (kind, users) = cell(of: runSeed, kinds: kinds)
        return runOne(runSeed: runSeed, kind: kind, users: users)
    }

    /// Runs the run of seed `runSeed` facing `kind` with `users`, whatever cell the seed falls in.
    static func runOne(runSeed: UInt64, kind: AttackKind, users: AttackUsers) -> AttackOutcome {
        switch kind {
        case .mitmRelay: return manInTheMiddle(runSeed: runSeed, users: users, known: false)
        case .mitmKnownPeers: return manInTheMiddle(runSeed: runSeed, users: users, known: true)
        case .codeGrinder: return grinder(runSeed: runSeed, users: users)
        case .identityProber: return prober(runSeed: runSeed, users: users)
        case .replayingProber: return replayingProber(runSeed: runSeed, users: users)
        case .acceptRacer: return acceptRacer(runSeed: runSeed, users: users)
        case .identityThief: return identityThief(runSeed: runSeed, users: users)
        case .beaconRaceMITM: return beaconRaceMITM(runSeed: runSeed, users: users)
        default: return Availability.run(runSeed: runSeed, kind: kind)
        }
    }

    static var runLimit: Instant { Instant.zero + AttackStage.timeouts.overall + .seconds(10) }

    private static func manInTheMiddle(runSeed: UInt64, users: AttackUsers, known: Bool) -> AttackOutcome {
        var outcome = AttackOutcome(
            runSeed: runSeed, kind: known ? .mitmKnownPeers : .mitmRelay, users: users)
        let pair = VictimPair(runSeed: runSeed)
        var knownPeers: [[KnownPeer]] = [[], []]
        if known {
            // Unattended victims met at their terminals first: that meeting's users compared codes.
            guard let met = pair.meet(users: users == .unattended ? .careful : users) else {
                outcome.setupFailed = true
                outcome.problems.append(
                    "setup: the victims' honest exchange did not complete, so no attack ran")
                return outcome
            }
            knownPeers = met
        }
        var stage = AttackStage(users: users, victimsKnown: known)
        pair.addVictims(to: &stage, phase: "attack", knownPeers: knownPeers)
        let adversary = MITMRelay(relaysIdentities: known)
        adversary.addDevices(to: &stage, runSeed: runSeed, phase: "attack")
        stage.run(until: runLimit) { _ in false }
        outcome.relayedIdents = adversary.identRelayedSessions.count
        outcome.relayedProofs = adversary.proofRelayedSessions.count
        assess(&outcome, stage: stage, adversary: adversary, bondKey: knownPeers[0].first?.bondKey)
        return outcome
    }

    private static func grinder(runSeed: UInt64, users: AttackUsers) -> AttackOutcome {
        var outcome = AttackOutcome(runSeed: runSeed, kind: .codeGrinder, users: users)
        let pair = VictimPair(runSeed: runSeed)
        var stage = AttackStage(users: users, victimsKnown: false)
        pair.addVictims(to: &stage, phase: "attack")
        let adversary = CodeGrinder(runSeed: runSeed, maxAttempts: grinderAttempts)
        adversary.addDevices(to: &stage)
        stage.run(until: runLimit) { adversary.afterStep(&$0) }
        outcome.grindAttempts = adversary.decidedAttempts
        outcome.grindDevices = adversary.devicesBrought
        outcome.grindMatched = adversary.matched
        assess(&outcome, stage: stage, adversary: adversary, bondKey: nil)
        return outcome
    }

    private static func prober(runSeed: UInt64, users: AttackUsers) -> AttackOutcome {
        var outcome = AttackOutcome(runSeed: runSeed, kind: .identityProber, users: users)
        let runs = ProberRuns(runSeed: runSeed, users: users)
        outcome.proberShared = runs.proberShares
        outcome.identityGiven = runs.identityGiven
        outcome.identities = runs.identityGiven ? 1 : 0
        outcome.cards = runs.cardsGiven
        outcome.links = runs.links.filter { !$0.given }.map(\.description)
        outcome.givenLinks = runs.links.filter(\.given).map(\.description)
        for (run, screen) in runs.screens.enumerated() {
            outcome.interrupted += screen.interrupted
            outcome.mismatches += screen.mismatches
            outcome.declines += screen.declines
            outcome.screens.append("run \(run + 1): " + describe(screen))
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
        for link in outcome.links {
            outcome.breaches.append("the prober linked the victim's two runs: \(link)")
        }
        if users.withholdFromStrangers && runs.identityGiven {
            outcome.breaches.append(
                "the victim's resolving key reached the prober although its user did not agree")
        }
        if users.withholdFromStrangers && runs.cardsGiven > 0 {
            outcome.breaches.append("the victim's card reached the prober although its user did not agree")
        }
        return outcome
    }

    /// Fills in what a man in the middle got and what the victims saw, and the breaches.
    static func assess(
        _ outcome: inout AttackOutcome, stage: AttackStage, adversary: AdversaryBrain, bondKey: [UInt8]?
    ) {
        var taken: [String] = []
        for victim in stage.victims {
            if stage.adversaryCards.contains(victim.card) {
                outcome.cards += 1
                taken.append("\(victim.name)'s card")
            }
            if adversary.holds(victim.identity.resolvingKey) {
                outcome.identities += 1
                taken.append("\(victim.name)'s resolving key")
            }
            outcome.interrupted += victim.interrupted
            outcome.mismatches += victim.mismatches
            outcome.mismatchesPerVictim.append(victim.mismatches)
            outcome.proofFailures += victim.proofFailures
            outcome.declines += victim.declines
            outcome.adversaryShownKnown += victim.adversaryShownKnown
            outcome.screens.append(describe(victim))
            if victim.adversaryShownKnown > 0 {
                outcome.breaches.append("\(victim.name) was shown the adversary as its known peer")
            }
        }
        if let bondKey, adversary.holds(bondKey) {
            outcome.identities += 1
            taken.append("the victims' bond key")
        }
        outcome.intercepted = (stage.room.hook as? PathHook)?.intercepted ?? 0
        if let first = stage.victims[0].latestCode, let second = stage.victims[1].latestCode {
            outcome.codesEqual = first == second
        }
        if outcome.users.withholdFromStrangers {
            let users = outcome.users == .careful ? "the users compare codes" : "nobody agreed to share"
            for item in taken {
                outcome.breaches.append("\(item) reached the adversary although \(users)")
            }
        }
    }

    static func describe(_ screen: VictimScreen) -> String {
        let codes = screen.codes.isEmpty ? "no code" : "codes \(screen.codes.joined(separator: ","))"
        return
            "\(screen.name): \(codes), \(screen.interrupted) interrupted, \(screen.mismatches) mismatch warnings, "
            + "\(screen.shares) shared, \(screen.declines) declined, closed: "
            + (screen.closed.map { "\($0)" } ?? "no")
    }

    // MARK: - The table

    private static func table(_ outcomes: [AttackOutcome], kinds: [AttackKind]) -> [String] {
        var rows: [[String]] = [
            [
                "kind", "users", "runs", "cards", "identities", "links", "codes equal/differ", "interrupted",
                "mismatch",
                "declines", "breaches", "notes",
            ]
        ]
        for (kind, users) in cells(of: kinds) {
            let cell = outcomes.filter { $0.kind == kind && $0.users == users }
            let prober = kind == .identityProber
            let twoVictims = !prober && kind != .identityThief
            let equal = cell.filter { $0.codesEqual == true }.count
            let different = cell.filter { $0.codesEqual == false }.count
            rows.append([
                kind.rawValue, users.rawValue, "\(cell.count)", "\(cell.reduce(0) { $0 + $1.cards })",
                "\(cell.reduce(0) { $0 + $1.identities })",
                prober ? "\(cell.filter { !$0.links.isEmpty }.count)" : "-",
                twoVictims ? "\(equal)/\(different)" : "-",
                "\(cell.reduce(0) { $0 + $1.interrupted })", "\(cell.reduce(0) { $0 + $1.mismatches })",
                "\(cell.reduce(0) { $0 + $1.declines })", "\(cell.reduce(0) { $0 + $1.breaches.count })",
                notes(kind: kind, users: users, cell),
            ])
        }
        return layOut(rows)
    }

    /// Rows as columns: names left, numbers right, the last column (notes) as it is.
    static func layOut(_ rows: [[String]]) -> [String] {
        let widths = rows[0].indices.map { column in rows.map { $0[column].count }.max() ?? 0 }
        return rows.map { row in
            row.enumerated().map { column, text in
                let pad = String(repeating: " ", count: widths[column] - text.count)
                // Names left, numbers right, notes as they are.
                if column == row.count - 1 { return text }
                return column < 2 ? text + pad : pad + text
            }.joined(separator: "  ").trimmingTrailingSpaces()
        }
    }

    private static func notes(kind: AttackKind, users: AttackUsers, _ cell: [AttackOutcome]) -> String {
        var notes: [String] = []
        let given = users == .careless && cell.contains { $0.cards + $0.identities > 0 }
        switch kind {
        case .mitmRelay:
            notes.append("victims' datagrams intercepted \(cell.reduce(0) { $0 + $1.intercepted })")
            if given { notes.append("cards and identities given by careless users") }
        case .mitmKnownPeers:
            notes.append("IDENT relayed in \(cell.reduce(0) { $0 + $1.relayedIdents }) sessions")
            notes.append("genuine PROOF relayed in \(cell.reduce(0) { $0 + $1.relayedProofs })")
            notes.append("identity-proof-failed \(cell.reduce(0) { $0 + $1.proofFailures })")
            notes.append("adversary shown as known \(cell.reduce(0) { $0 + $1.adversaryShownKnown })")
            let failed = cell.filter(\.setupFailed).count
            if failed > 0 { notes.append("honest meeting failed in \(failed) runs") }
            if given { notes.append("given to a stranger by careless users") }
        case .codeGrinder:
            let attempts = cell.reduce(0) { $0 + $1.grindAttempts }
            let most = cell.map(\.grindAttempts).max() ?? 0
            notes.append("grind attempts \(attempts) (at most \(most) in a run)")
            notes.append("matches \(cell.filter(\.grindMatched).count)")
            if given { notes.append("careless users agreed before any comparison") }
        case .acceptRacer:
            let won = cell.reduce(0) { $0 + $1.racesWon }
            notes.append(
                "ACCEPT races won \(won); victims' handshakes \(cell.reduce(0) { $0 + $1.victimSessions }), "
                    + "genuine ACCEPTs second \(cell.reduce(0) { $0 + $1.genuineAccepts }), "
                    + "genuine half-open handshakes reported \(cell.reduce(0) { $0 + $1.genuineReported })")
            if given { notes.append("cards and identities given by careless users") }
        case .beaconRaceMITM:
            notes.append(
                "invitations to the racer's address \(cell.reduce(0) { $0 + $1.divertedInvitations }); "
                    + "handshakes the racer completed \(cell.reduce(0) { $0 + $1.racesWon }), "
                    + "victims' handshakes \(cell.reduce(0) { $0 + $1.victimSessions })")
            if given { notes.append("cards and identities given by careless users") }
        case .identityThief:
            notes.append("BOND named B's key in \(cell.reduce(0) { $0 + $1.stolenBonds }) sessions")
            notes.append("adversary shown as known \(cell.reduce(0) { $0 + $1.adversaryShownKnown })")
            let failed = cell.filter(\.setupFailed).count
            if failed > 0 { notes.append("honest meeting failed in \(failed) runs") }
            if given { notes.append("careless users shared with a new device") }
        case .replayingProber:
            let test = replayIndependence(cell)
            notes.append(
                "reaction differed with the secret in \(cell.filter { !$0.breaches.isEmpty }.count); "
                    + "chi-squared \((test.statistic * 100).rounded() / 100)"
                    + " (df \(test.degreesOfFreedom), \(test.rejectsIndependence ? "dependent" : "independent") at 0.01)"
            )
        case .identityProber:
            notes.append("prober shared in \(cell.filter(\.proberShared).count)")
            let identities = cell.filter(\.identityGiven).count
            if identities > 0 { notes.append("identity given by careless user in \(identities)") }
            let cards = cell.filter { !$0.givenLinks.isEmpty }.count
            if cards > 0 { notes.append("linked through what careless users gave in \(cards)") }
        default:
            break
        }
        return notes.joined(separator: "; ")
    }
}

extension AttackOutcome {
    /// One line: what the adversary got and what the users saw.
    public var summary: String {
        if let availability { return Availability.summary(availability, kind: kind) }
        var parts = ["adversary got \(cards) cards, \(identities) identities"]
        if kind == .identityProber {
            parts.append(links.isEmpty ? "no link" : "\(links.count) links")
            if !givenLinks.isEmpty { parts.append("\(givenLinks.count) links through what the user gave") }
            if identityGiven { parts.append("identity given by careless user") }
        } else if let codesEqual {
            parts.append(codesEqual ? "codes equal" : "codes differ")
        } else {
            parts.append("codes not both shown")
        }
        if kind == .codeGrinder { parts.append("\(grindAttempts) grind attempts") }
        if kind == .acceptRacer {
            parts.append("\(racesWon) ACCEPT races won, \(victimSessions) victims' handshakes")
        }
        if kind == .beaconRaceMITM {
            parts.append(
                "\(divertedInvitations) invitations to the racer's address, \(racesWon) handshakes with it, "
                    + "\(victimSessions) victims' handshakes")
        }
        parts.append("\(interrupted) interrupted, \(mismatches) mismatch warnings, \(declines) declines")
        return parts.joined(separator: "; ")
    }
}

extension Attacks {
    /// The availability rows: runs, the attacker's busiest second, the exchange time against the
    /// same room without the attacker (median and worst), missed exchanges, deadline overruns, the
    /// victims' peak state against its bound, breaches, and what the victims' users saw.
    static func availabilityTable(_ outcomes: [AttackOutcome], kinds: [AttackKind]) -> [String] {
        var rows: [[String]] = [
            [
                "kind", "runs", "datagrams/s", "exchange ×no-attack median/max", "no exchange", "overruns",
                "peers/32", "buffer/\(Availability.maxBufferChunks)", "breaches", "victims saw; notes",
            ]
        ]
        for kind in kinds {
            let cell = outcomes.filter { $0.kind == kind }
            let results = cell.compactMap(\.availability)
            let ratios = results.compactMap(\.ratio).sorted()
            let median = ratios.isEmpty ? "-" : Availability.format(ratios[(ratios.count - 1) / 2])
            let worst = ratios.last.map(Availability.format) ?? "-"
            let required = results.filter(\.exchangeRequired)
            rows.append([
                kind.rawValue, "\(cell.count)", "\(results.map(\.peakRate).max() ?? 0)", "\(median)/\(worst)",
                "\(required.filter { $0.underAttack == nil }.count)",
                "\(results.reduce(0) { $0 + $1.overruns })",
                "\(results.map(\.peakPeers).max() ?? 0)", "\(results.map(\.peakBufferChunks).max() ?? 0)",
                "\(cell.reduce(0) { $0 + $1.breaches.count })", availabilityNotes(kind: kind, cell),
            ])
        }
        return layOut(rows)
    }

    private static func availabilityNotes(kind: AttackKind, _ cell: [AttackOutcome]) -> String {
        let results = cell.compactMap(\.availability)
        var notes: [String] = []
        func counted(_ labels: [String]) -> String {
            var order: [String] = []
            for label in labels where !order.contains(label) { order.append(label) }
            return order.map { label in "\(label) \(labels.filter { $0 == label }.count)" }.joined(
                separator: ", ")
        }
        if let behaviour = Availability.malicious(kind) {
            let ends = results.map { $0.attackSessionEnd ?? "not ended" }
            notes.append(
                "malicious session: \(counted(ends)) (expected \(Availability.expectedCause(behaviour)))")
        }
        let closes = results.flatMap(\.closes)
        if !closes.isEmpty { notes.append("closed: \(counted(closes))") }
        let interrupted = cell.reduce(0) { $0 + $1.interrupted }
        if interrupted > 0 { notes.append("interrupted pairings shown \(interrupted)") }
        if Availability.isCleartext(kind) {
            let budgets = results.compactMap(\.budget)
            let slower = results.filter { ($0.budget ?? Availability.budget) < Availability.budget }
            if let low = budgets.min(), let high = budgets.max() {
                let worst = slower.compactMap(\.ratio).max().map(Availability.format) ?? "-"
                notes.append(
                    "budgets \(low)–\(high)/s; \(slower.count) runs below \(Availability.budget)/s, worst \(worst)×"
                )
            }
            let attacker = results.reduce(0) { $0 + $1.attackerBytes }
            let reflected = results.reduce(0) { $0 + $1.bytesToNowhere }
            if attacker > 0 {
                notes.append(
                    "victims sent \(Availability.format(Double(reflected) / Double(attacker)))× its bytes to spoofed sources"
                )
            }
        }
        let forgeries = results.compactMap(\.forgedBusy)
        if !forgeries.isEmpty { notes += Availability.forgedBusyNotes(forgeries) }
        let invites = results.compactMap(\.forgedInvites)
        if !invites.isEmpty { notes += Availability.forgedInviteNotes(invites) }
        let replays = results.compactMap(\.replayedSecure)
        if !replays.isEmpty { notes += Availability.replayedSecureNotes(replays) }
        let races = results.compactMap(\.racedBeacons)
        if !races.isEmpty { notes += Availability.racedBeaconNotes(races) }
        let cuts = results.compactMap(\.cutClose)
        if !cuts.isEmpty { notes += Availability.cutCloseNotes(cuts) }
        let problems = cell.filter { !$0.problems.isEmpty }.count
        if problems > 0 { notes.append("\(problems) runs tested nothing (listed below)") }
        if let fix = pendingFix(kind) { notes.append("pending fix: \(fix)") }
        return notes.joined(separator: "; ")
    }
}

extension Availability {
    /// One line: the exchange time against the no-attack time, and how things ended.
    static func summary(_ result: AvailabilityResult, kind: AttackKind) -> String {
        var parts: [String] = []
        if let ratio = result.ratio {
            parts.append(
                "exchange \(format(ratio))× no-attack (\(seconds(result.underAttack)) against \(seconds(result.baseline)))"
            )
        } else {
            parts.append("no exchange (no-attack \(seconds(result.baseline)))")
        }
        if let budget = result.budget { parts.append("budget \(budget) datagrams/s") }
        parts.append("attacker peak \(result.peakRate) datagrams/s")
        if let end = result.attackSessionEnd { parts.append("malicious session ended: \(end)") }
        if let forgery = result.forgedBusy { parts += forgedBusyNotes([forgery]) }
        if let forgery = result.forgedInvites { parts += forgedInviteNotes([forgery]) }
        if let replays = result.replayedSecure { parts += replayedSecureNotes([replays]) }
        if let races = result.racedBeacons { parts += racedBeaconNotes([races]) }
        if let cut = result.cutClose {
            parts.append("\(cut.silenced) silenced \(seconds(cut.cutAfter)) after the first SECURE packet")
            parts += cutCloseNotes([cut])
        }
        parts.append("closed: \(result.closes.joined(separator: ", "))")
        parts.append(
            "\(result.overruns) overruns, peers ≤\(result.peakPeers), buffer ≤\(result.peakBufferChunks) chunks"
        )
        return parts.joined(separator: "; ")
    }
}

extension String {
    fileprivate func trimmingTrailingSpaces() -> String {
        var text = self
        while text.last == " " { text.removeLast() }
        return text
    }
}
