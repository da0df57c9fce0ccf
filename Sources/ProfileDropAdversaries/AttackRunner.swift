import ProfileDropCore
import ProfileDropCrypto
import ProfileDropSimulator

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
    /// What kept the run from testing anything (a failed setup): not a breach, but a failure.
    public var problems: [String] = []
    /// One line per victim: what its screen showed.
    public var screens: [String] = []
    /// Availability kinds: what was measured.
    public var availability: AvailabilityResult?
    /// Broken security properties.
    public var breaches: [AttackBreach] = []
    /// The kind's own figures (its ``AdversaryKind/Result``), once judged.
    var detail: (any Sendable)?

    /// The figures of kind `kind`, nil for a run of another kind.
    func result<Kind: AdversaryKind>(of kind: Kind.Type) -> Kind.Result? { detail as? Kind.Result }
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
    /// The hall the runs stood in; nil for the small room.
    public var hall: AttackHall? = nil

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
    /// for (its ``AdversaryKind/pendingFix``): kept in the runner (`--kinds all` or `--kinds NAME`
    /// runs them) but out of the default run, so that CI stays green. The busy forger left when a
    /// refusal came to be held for the invitee's ACCEPT (PROTOCOL.md 5, "Refusals"); the phantom
    /// keeper when the measurement noise came from a stream of its own, so that its no-attack
    /// baseline measures the same noise (PROTOCOL.md 6.4, 11.6 item 6).
    static let pendingFixes: [(kind: AttackKind, fix: String)] = AttackKind.allCases.compactMap { kind in
        kind.adversary.pendingFix.map { (kind, $0) }
    }

    /// The kinds of ``pendingFixes``.
    public static let pendingFixKinds: [AttackKind] = pendingFixes.map(\.kind)

    /// The fix a pending kind waits for, nil for a kind that is not pending.
    static func pendingFix(_ kind: AttackKind) -> String? { kind.adversary.pendingFix }

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

    /// The command that replays the run with seed `runSeed` alone (in `hall`, if given).
    public static func reproduceCommand(
        runSeed: UInt64, kinds: [AttackKind] = defaultKinds, hall: AttackHall? = nil
    ) -> String {
        let selection = kindsArgument(kinds).map { " --kinds \($0)" } ?? ""
        let place = hall.map { " --hall --devices \($0.devices)" } ?? ""
        return "profiledrop simulate --attacks\(place)\(selection) --runs 1 --seed \(runSeed)"
    }

    /// Runs `runs` attack runs of `kinds` from `seed`, in `hall` if given (else in the small room).
    /// With one run, each victim's screen is shown too.
    public static func run(
        runs: Int, seed: UInt64, kinds: [AttackKind] = defaultKinds, hall: AttackHall? = nil
    ) -> AttackReport {
        run(runs: runs, seed: seed, kinds: kinds, hall: hall) {
            runOne(runSeed: $0, kinds: kinds, hall: hall)
        }
    }

    /// Runs `runs` runs of `kinds` from `seed`, each by `perform`.
    static func run(
        runs: Int, seed: UInt64, kinds: [AttackKind] = defaultKinds, hall: AttackHall? = nil,
        perform: (UInt64) -> AttackOutcome
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
        if let hall { lines.append(hall.headerLine) }
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
                breachLines.append(
                    "  reproduce: \(reproduceCommand(runSeed: runSeed, kinds: kinds, hall: hall))")
            }
        }
        if !confidentiality.isEmpty { lines += table(outcomes, kinds: confidentiality) }
        let availability = kinds.filter(\.isAvailability)
        if !availability.isEmpty { lines += availabilityTable(outcomes, kinds: availability) }
        lines += breachLines
        let problems = outcomes.filter { !$0.problems.isEmpty }.count
        if problems > 0 { lines.append("attacks: \(problems) runs could not set up their attack") }
        let report = AttackReport(seed: seed, kinds: kinds, outcomes: outcomes, lines: lines, hall: hall)
        return AttackReport(
            seed: seed, kinds: kinds, outcomes: outcomes, lines: lines + [report.summaryLine], hall: hall)
    }

    /// Runs the one attack run of seed `runSeed` among `kinds`, in `hall` if given.
    public static func runOne(
        runSeed: UInt64, kinds: [AttackKind] = defaultKinds, hall: AttackHall? = nil
    ) -> AttackOutcome {
        let (kind, users) = cell(of: runSeed, kinds: kinds)
        guard let hall else { return runOne(runSeed: runSeed, kind: kind, users: users) }
        // Every stage the run sets up stands in the same hall, drawn from the run's seed.
        return AttackStage.$runHall.withValue((hall, runSeed)) {
            runOne(runSeed: runSeed, kind: kind, users: users)
        }
    }

    /// Runs the run of seed `runSeed` facing `kind` with `users`, whatever cell the seed falls in.
    static func runOne(runSeed: UInt64, kind: AttackKind, users: AttackUsers) -> AttackOutcome {
        kind.adversary.outcome(runSeed: runSeed, users: users)
    }

    static var runLimit: Instant { Instant.zero + AttackStage.timeouts.overall + .seconds(10) }

    /// Fills in what a man in the middle got and what the victims saw, and returns what its breach
    /// rule (``assessedBreaches(_:users:)``) judges.
    static func assess(
        _ outcome: inout AttackOutcome, stage: AttackStage, adversary: AdversaryBrain, bondKey: [UInt8]?
    ) -> Assessment {
        var assessment = Assessment()
        for victim in stage.victims {
            if stage.adversaryCards.contains(victim.card) {
                outcome.cards += 1
                assessment.taken.append(.card(victim: victim.name))
            }
            if adversary.holds(victim.identity.resolvingKey) {
                outcome.identities += 1
                assessment.taken.append(.resolvingKey(victim: victim.name))
            }
            outcome.interrupted += victim.interrupted
            outcome.mismatches += victim.mismatches
            assessment.mismatchesPerVictim.append(victim.mismatches)
            assessment.proofFailures += victim.proofFailures
            outcome.declines += victim.declines
            assessment.adversaryShownKnown += victim.adversaryShownKnown
            outcome.screens.append(describe(victim))
            if victim.adversaryShownKnown > 0 { assessment.shownKnownTo.append(victim.name) }
        }
        if let bondKey, adversary.holds(bondKey) {
            outcome.identities += 1
            assessment.taken.append(.bondKey)
        }
        assessment.intercepted = (stage.room.hook as? PathHook)?.intercepted ?? 0
        if let first = stage.victims[0].latestCode, let second = stage.victims[1].latestCode {
            outcome.codesEqual = first == second
        }
        return assessment
    }

    /// The breach rule of a man in the middle (and of every adversary judged by what it got): a
    /// victim shown its device as a known peer; with careful or unattended `users`, any secret it
    /// took.
    static func assessedBreaches(_ assessment: Assessment, users: AttackUsers) -> [AttackBreach] {
        assessment.shownKnownTo.map { .adversaryShownAsKnown(victim: $0) }
            + (users.withholdFromStrangers ? assessment.taken.map { .secretTaken($0, users: users) } : [])
    }

    /// The summary part every adversary facing a pair has: whether the codes were equal.
    static func codesSummary(_ outcome: AttackOutcome) -> String {
        guard let codesEqual = outcome.codesEqual else { return "codes not both shown" }
        return codesEqual ? "codes equal" : "codes differ"
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
            let equal = cell.filter { $0.codesEqual == true }.count
            let different = cell.filter { $0.codesEqual == false }.count
            var links = "-"
            var codes = "-"
            switch kind.adversary.budget {
            case .devicesOfItsOwn(victims: .pair): codes = "\(equal)/\(different)"
            case .devicesOfItsOwn(victims: .one): break
            case .devicesOfItsOwn(victims: .oneInTwoRuns):
                links = "\(cell.filter { $0.breaches.contains(where: \.isLink) }.count)"
            case .datagramsPerSecond, .sessionsOfItsOwn, .nothingSent:
                preconditionFailure("\(kind) is an availability kind, in the availability table")
            }
            rows.append([
                kind.rawValue, users.rawValue, "\(cell.count)", "\(cell.reduce(0) { $0 + $1.cards })",
                "\(cell.reduce(0) { $0 + $1.identities })", links, codes,
                "\(cell.reduce(0) { $0 + $1.interrupted })", "\(cell.reduce(0) { $0 + $1.mismatches })",
                "\(cell.reduce(0) { $0 + $1.declines })", "\(cell.reduce(0) { $0 + $1.breaches.count })",
                kind.adversary.notes(of: cell, users: users).joined(separator: "; "),
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
}

extension AttackOutcome {
    /// One line: what the adversary got and what the users saw.
    public var summary: String {
        let kindParts = kind.adversary.summary(of: self)
        if let availability { return Availability.summary(availability, kindParts: kindParts) }
        return
            (["adversary got \(cards) cards, \(identities) identities"] + kindParts
            + ["\(interrupted) interrupted, \(mismatches) mismatch warnings, \(declines) declines"])
            .joined(separator: "; ")
    }
}

/// What a man in the middle (or any adversary judged by what it got from a pair) took and what the
/// victims were shown: the figures ``Attacks/assessedBreaches(_:users:)`` judges.
struct Assessment: Sendable {
    /// The secrets the adversary took, in victim order.
    var taken: [TakenSecret] = []
    /// The victims shown an adversary's device as their known peer.
    var shownKnownTo: [String] = []
    /// Times a victim was shown an adversary's device as its known peer.
    var adversaryShownKnown = 0
    /// Known-peer mismatch warnings, per victim (A, then B).
    var mismatchesPerVictim: [Int] = []
    /// Sessions the victims closed as `identity-proof-failed`.
    var proofFailures = 0
    /// Copies between the victims that the adversary kept from arriving (on the path only).
    var intercepted = 0
}

extension AttackBreach {
    /// Whether the breach is a link the identity prober found between the victim's runs.
    var isLink: Bool {
        if case .runsLinked = self { true } else { false }
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
        let kindNotes = kind.adversary.notes(of: cell, users: .careless)
        var notes: [String] = []
        // A malicious peer's own notes (how its sessions ended) lead; other kinds' follow the
        // figures every availability run has.
        switch kind.adversary.budget {
        case .sessionsOfItsOwn: notes += kindNotes
        case .devicesOfItsOwn, .datagramsPerSecond, .nothingSent: break
        }
        let closes = results.flatMap(\.closes)
        if !closes.isEmpty { notes.append("closed: \(Availability.counted(closes))") }
        let interrupted = cell.reduce(0) { $0 + $1.interrupted }
        if interrupted > 0 { notes.append("interrupted pairings shown \(interrupted)") }
        if kind.isCleartext {
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
        switch kind.adversary.budget {
        case .sessionsOfItsOwn: break
        case .devicesOfItsOwn, .datagramsPerSecond, .nothingSent: notes += kindNotes
        }
        let problems = cell.filter { !$0.problems.isEmpty }.count
        if problems > 0 { notes.append("\(problems) runs tested nothing (listed below)") }
        if let fix = pendingFix(kind) { notes.append("pending fix: \(fix)") }
        return notes.joined(separator: "; ")
    }
}

extension Availability {
    /// One line: the exchange time against the no-attack time, the kind's own parts, and how
    /// things ended.
    static func summary(_ result: AvailabilityResult, kindParts: [String]) -> String {
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
        parts += kindParts
        parts.append("closed: \(result.closes.joined(separator: ", "))")
        parts.append(
            "\(result.overruns) overruns, peers ≤\(result.peakPeers), buffer ≤\(result.peakBufferChunks) chunks"
        )
        return parts.joined(separator: "; ")
    }

    /// Each distinct label of `labels` with how often it occurs, in the order each first occurs.
    static func counted(_ labels: [String]) -> String {
        var order: [String] = []
        for label in labels where !order.contains(label) { order.append(label) }
        return order.map { label in "\(label) \(labels.filter { $0 == label }.count)" }.joined(
            separator: ", ")
    }
}

extension String {
    fileprivate func trimmingTrailingSpaces() -> String {
        var text = self
        while text.last == " " { text.removeLast() }
        return text
    }
}
