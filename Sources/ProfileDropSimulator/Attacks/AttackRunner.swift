import ProfileDropCore
import ProfileDropCrypto

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
    /// Grinder: sessions with B decided on B's code, devices brought, and whether a code matched.
    public var grindAttempts = 0
    /// Grinder: devices brought towards B.
    public var grindDevices = 0
    /// Grinder: whether some attempt matched A's code.
    public var grindMatched = false
    /// Known peers: sessions into which the adversary put the other victim's IDENT.
    public var relayedIdents = 0
    /// Man in the middle: copies between the victims that the adversary kept from arriving.
    public var intercepted = 0
    /// The honest meeting that makes the victims known peers did not complete (no attack ran).
    public var setupFailed = false
    /// What kept the run from testing anything (a failed setup): not a breach, but a failure.
    public var problems: [String] = []
    /// One line per victim: what its screen showed.
    public var screens: [String] = []
    /// Broken security properties.
    public var breaches: [String] = []
}

/// The outcome of `profiledrop simulate --attacks`.
public struct AttackReport: Sendable {
    /// The seed.
    public let seed: UInt64
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
        "attacks: \(outcomes.count) runs, \(AttackKind.allCases.count) kinds, \(breaches) breaches"
    }
}

/// Adversaries against two honest victims on the in-memory room, from one seed, in the style of
/// the swarm: every run draws everything from its own seed, and a run's seed alone replays it.
///
/// A run's kind and users are its seed modulo 8 (kind, then careful or careless), and the seeds of
/// a multi-run invocation are chosen to cycle through the eight, so the runs split evenly.
///
/// A breach is: with careful users, a victim's card or long-term identity (resolving key, or the
/// victims' bond key) reaching the adversary; with known peers (any users), a victim shown an
/// adversary's device as its known peer; for the prober, a link between the victim's two runs
/// through anything but what a careless user gave by sharing (and, with a careful user, its
/// identity reaching the prober at all).
public enum Attacks {
    /// Every kind and user type, in the order of a run seed's residue modulo their count.
    public static let cells: [(kind: AttackKind, users: AttackUsers)] = AttackKind.allCases.flatMap { kind in
        AttackUsers.allCases.map { (kind, $0) }
    }

    /// The kind and users of the run with seed `runSeed`.
    public static func cell(of runSeed: UInt64) -> (kind: AttackKind, users: AttackUsers) {
        cells[Int(runSeed % UInt64(cells.count))]
    }

    /// The seed of each run: `seed` first, then values drawn from a stream keyed by `seed`, each
    /// moved to the next cell in turn.
    public static func runSeeds(seed: UInt64, count: Int) -> [UInt64] {
        var stream = DeterministicRandom(seedMaterial: Simulation.seedMaterial(seed, "attacks/runs"))
        let cellCount = UInt64(cells.count)
        return (0..<count).map { index in
            guard index > 0 else { return seed }
            let value = stream.nextUInt64()
            let cell = (seed % cellCount + UInt64(index)) % cellCount
            return value - value % cellCount + cell
        }
    }

    /// The command that replays the run with seed `runSeed` alone.
    public static func reproduceCommand(runSeed: UInt64) -> String {
        "profiledrop simulate --attacks --runs 1 --seed \(runSeed)"
    }

    /// Most devices a grinder brings towards B in one run.
    static let grinderAttempts = 32

    /// Runs `runs` attack runs from `seed`. With one run, each victim's screen is shown too.
    public static func run(runs: Int, seed: UInt64) -> AttackReport {
        run(runs: runs, seed: seed, perform: runOne(runSeed:))
    }

    /// Runs `runs` runs from `seed`, each by `perform`.
    static func run(runs: Int, seed: UInt64, perform: (UInt64) -> AttackOutcome) -> AttackReport {
        precondition(runs >= 0, "run count must not be negative")
        var outcomes: [AttackOutcome] = []
        var lines = [
            "attacks: seed=\(seed) runs=\(runs) kinds=\(AttackKind.allCases.map(\.rawValue).joined(separator: ","))"
                + " users=careful,careless",
            "attacks: a run's seed mod \(cells.count) picks its kind and users; victims 7 cm apart, timers "
                + "\(Instant.zero + AttackStage.timeouts.overall) overall, "
                + "\(Instant.zero + AttackStage.timeouts.consent) consent",
        ]
        var breachLines: [String] = []
        for (index, runSeed) in runSeeds(seed: seed, count: runs).enumerated() {
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
                breachLines.append("  reproduce: \(reproduceCommand(runSeed: runSeed))")
            }
        }
        lines += table(outcomes)
        lines += breachLines
        let problems = outcomes.filter { !$0.problems.isEmpty }.count
        if problems > 0 { lines.append("attacks: \(problems) runs could not set up their attack") }
        let report = AttackReport(seed: seed, outcomes: outcomes, lines: lines)
        return AttackReport(seed: seed, outcomes: outcomes, lines: lines + [report.summaryLine])
    }

    /// Runs the one attack run of seed `runSeed`.
    public static func runOne(runSeed: UInt64) -> AttackOutcome {
        let (kind, users) = cell(of: runSeed)
        switch kind {
        case .mitmRelay: return manInTheMiddle(runSeed: runSeed, users: users, known: false)
        case .mitmKnownPeers: return manInTheMiddle(runSeed: runSeed, users: users, known: true)
        case .codeGrinder: return grinder(runSeed: runSeed, users: users)
        case .identityProber: return prober(runSeed: runSeed, users: users)
        }
    }

    private static var runLimit: Instant { Instant.zero + AttackStage.timeouts.overall + .seconds(10) }

    private static func manInTheMiddle(runSeed: UInt64, users: AttackUsers, known: Bool) -> AttackOutcome {
        var outcome = AttackOutcome(
            runSeed: runSeed, kind: known ? .mitmKnownPeers : .mitmRelay, users: users)
        let pair = VictimPair(runSeed: runSeed)
        var knownPeers: [[KnownPeer]] = [[], []]
        if known {
            guard let met = pair.meet(users: users) else {
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
        if users == .careful && runs.identityGiven {
            outcome.breaches.append(
                "the victim's resolving key reached the prober although its user declined")
        }
        if users == .careful && runs.cardsGiven > 0 {
            outcome.breaches.append("the victim's card reached the prober although its user declined")
        }
        return outcome
    }

    /// Fills in what a man in the middle got and what the victims saw, and the breaches.
    private static func assess(
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
        if outcome.users == .careful {
            for item in taken {
                outcome.breaches.append("\(item) reached the adversary although the users compare codes")
            }
        }
    }

    private static func describe(_ screen: VictimScreen) -> String {
        let codes = screen.codes.isEmpty ? "no code" : "codes \(screen.codes.joined(separator: ","))"
        return
            "\(screen.name): \(codes), \(screen.interrupted) interrupted, \(screen.mismatches) mismatch warnings, "
            + "\(screen.shares) shared, \(screen.declines) declined, closed: "
            + (screen.closed.map { "\($0)" } ?? "no")
    }

    // MARK: - The table

    private static func table(_ outcomes: [AttackOutcome]) -> [String] {
        var rows: [[String]] = [
            [
                "kind", "users", "runs", "cards", "identities", "links", "codes equal/differ", "interrupted",
                "mismatch",
                "declines", "breaches", "notes",
            ]
        ]
        for (kind, users) in cells {
            let cell = outcomes.filter { $0.kind == kind && $0.users == users }
            let twoVictims = kind != .identityProber
            let equal = cell.filter { $0.codesEqual == true }.count
            let different = cell.filter { $0.codesEqual == false }.count
            rows.append([
                kind.rawValue, users.rawValue, "\(cell.count)", "\(cell.reduce(0) { $0 + $1.cards })",
                "\(cell.reduce(0) { $0 + $1.identities })",
                twoVictims ? "-" : "\(cell.filter { !$0.links.isEmpty }.count)",
                twoVictims ? "\(equal)/\(different)" : "-",
                "\(cell.reduce(0) { $0 + $1.interrupted })", "\(cell.reduce(0) { $0 + $1.mismatches })",
                "\(cell.reduce(0) { $0 + $1.declines })", "\(cell.reduce(0) { $0 + $1.breaches.count })",
                notes(kind: kind, users: users, cell),
            ])
        }
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
        case .identityProber:
            notes.append("prober shared in \(cell.filter(\.proberShared).count)")
            let identities = cell.filter(\.identityGiven).count
            if identities > 0 { notes.append("identity given by careless user in \(identities)") }
            let cards = cell.filter { !$0.givenLinks.isEmpty }.count
            if cards > 0 { notes.append("linked through what careless users gave in \(cards)") }
        }
        return notes.joined(separator: "; ")
    }
}

extension AttackOutcome {
    /// One line: what the adversary got and what the users saw.
    public var summary: String {
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
        parts.append("\(interrupted) interrupted, \(mismatches) mismatch warnings, \(declines) declines")
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
