import ProfileDropCore

/// One kind of adversary of `simulate --attacks`: its name, what it may spend, its run, its breach
/// rule, and what its row and summary line say. A kind is a type conforming to this protocol in a
/// file of its own, with its ``AttackKind`` constant, and one line in ``AttackKind/allCases``.
/// Nothing has a default: the compiler names whatever a new kind leaves out.
protocol AdversaryKind: SendableMetatype {
    /// What a run of this kind measures beyond what every run records (``AttackOutcome``, and for
    /// an availability kind ``AvailabilityResult``): the figures its breach rule, notes and
    /// summary read.
    associatedtype Result: Sendable

    /// The name `--kinds` takes and the tables print.
    static var name: String { get }

    /// What the attacker may spend, which also says how its runs are judged: a confidentiality kind
    /// by what the victims give away, an availability kind against the same room without it.
    static var budget: AttackBudget { get }

    /// The fix this kind waits for while today's protocol still breaches it, which keeps it out of
    /// the default run (`--kinds all` or its name runs it); nil when it passes.
    static var pendingFix: String? { get }

    /// Runs the attack of seed `runSeed` against victims with `users`: measured, not yet judged.
    static func run(runSeed: UInt64, users: AttackUsers) -> AttackTrial<Result>

    /// The kind's breach rule over what its run measured, in the order the breaches print. An
    /// availability kind's runs are judged by ``Availability/judge(_:victims:)`` after this too.
    static func breaches(_ trial: AttackTrial<Result>) -> [AttackBreach]

    /// The notes of the table row of `runs`, all with `users`.
    static func notes(_ runs: [AttackRun<Result>], users: AttackUsers) -> [String]

    /// The kind's parts of a run's one-line summary: for a confidentiality kind between what the
    /// adversary got and what the users saw, for an availability kind between the attacker's rate
    /// and how the devices closed.
    static func summary(_ run: AttackRun<Result>) -> [String]
}

/// What an adversary may spend.
enum AttackBudget: Sendable, Equatable {
    /// Confidentiality: real devices of its own (or copies it sends), against careful, careless and
    /// unattended users. `victims` says whom it faces, and so which columns its row fills.
    case devicesOfItsOwn(victims: AttackedVictims)
    /// Availability, cleartext: at most `ceiling` datagrams a second (the rate is drawn per run,
    /// at or below it, by ``Availability/budget(runSeed:ceiling:)`` unless the kind fixes one).
    case datagramsPerSecond(ceiling: Int)
    /// Availability: authenticated sessions of its own with a victim, sending what they need.
    case sessionsOfItsOwn
    /// Availability, on the path: it drops what it chooses and sends nothing.
    case nothingSent

    /// Whether runs are judged against the same room without the attacker.
    var isAvailability: Bool {
        switch self {
        case .devicesOfItsOwn: false
        case .datagramsPerSecond, .sessionsOfItsOwn, .nothingSent: true
        }
    }
}

/// Whom a confidentiality adversary faces.
enum AttackedVictims: Sendable, Equatable {
    /// Two victims, whose screens may show a code each (the codes column).
    case pair
    /// One victim (the other victim only set it up), so no pair of codes.
    case one
    /// One victim met in two runs, which the adversary tries to link (the links column).
    case oneInTwoRuns
}

/// A run as the kind's ``AdversaryKind/run(runSeed:users:)`` leaves it: the outcome so far, the
/// kind's own figures, and the victims' screens its breach rule reads.
struct AttackTrial<Result: Sendable> {
    /// What every run records; its breaches are those found while running, if any.
    var outcome: AttackOutcome
    /// The kind's own figures.
    var result: Result
    /// What each victim's screen showed in the run judged (empty for a kind that judges only its
    /// figures).
    var victims: [VictimScreen]
}

/// A judged run with the kind's own figures, as notes and summaries read it.
struct AttackRun<Result: Sendable> {
    /// What every run records.
    let outcome: AttackOutcome
    /// The kind's own figures.
    let result: Result
}

/// The figures of a kind that measures nothing beyond what every run of its family records.
struct NoKindFigures: Sendable {}

extension AdversaryKind {
    /// The kind in the registry.
    static var kind: AttackKind { AttackKind(Self.self) }

    /// Runs the attack of seed `runSeed` against `users` and judges it.
    static func outcome(runSeed: UInt64, users: AttackUsers) -> AttackOutcome {
        judged(run(runSeed: runSeed, users: users))
    }

    /// `trial` judged: the kind's breach rule, then for an availability kind the rules every
    /// availability run shares; the kind's figures kept in the outcome.
    static func judged(_ trial: AttackTrial<Result>) -> AttackOutcome {
        var outcome = trial.outcome
        outcome.breaches += breaches(trial)
        if budget.isAvailability { Availability.judge(&outcome, victims: trial.victims) }
        outcome.detail = trial.result
        return outcome
    }

    /// The outcomes of `cell` with this kind's figures.
    static func runs(_ cell: [AttackOutcome]) -> [AttackRun<Result>] {
        cell.compactMap { outcome in
            (outcome.detail as? Result).map { AttackRun(outcome: outcome, result: $0) }
        }
    }

    /// The notes of a table row: `cell`, all of this kind with `users`.
    static func notes(of cell: [AttackOutcome], users: AttackUsers) -> [String] {
        notes(runs(cell), users: users)
    }

    /// The kind's parts of `outcome`'s summary line.
    static func summary(of outcome: AttackOutcome) -> [String] {
        runs([outcome]).flatMap(summary)
    }
}

/// Which adversary an attack run faces: one of the registry, ``allCases``.
public struct AttackKind: Hashable, Sendable, CaseIterable, RawRepresentable, CustomStringConvertible {
    /// The type that implements the kind.
    let adversary: any AdversaryKind.Type

    init(_ adversary: any AdversaryKind.Type) { self.adversary = adversary }

    /// Every kind, in the order of the runner's cells and of `--kinds`: the registry. A new kind is
    /// one line here.
    public static let allCases: [AttackKind] = [
        .mitmRelay,
        .mitmKnownPeers,
        .codeGrinder,
        .identityProber,
        .acceptRacer,
        .replayingProber,
        .identityThief,
        .beaconRaceMITM,
        .beaconHijack,
        .inviteSquatter,
        .phantomFlood,
        .phantomKeeper,
        .datagramFlood,
        .beaconReplay,
        .beaconDisplace,
        .busyForger,
        .inviteForger,
        .crossingForger,
        .secureReplayer,
        .beaconRacer,
        .closeCutter,
        .oversizeOffer,
        .badChunkIndex,
        .badDigest,
        .fakeAck,
        .neverAck,
        .falseSack,
        .slowTransfer,
        .consentStall,
        .slowloris,
        .closeAckWithholder,
        .reinviter,
        .falseReceipt,
        .earlyDecliner,
        .farReturner,
        .inRangeWithholder,
        .sessionHog,
        .sessionHogCareful,
        .sessionHogKnown,
        .lateDecliner,
        .beaconReflector,
        .hallImitator,
    ]

    /// The kind's name, as `--kinds` takes it.
    public var rawValue: String { adversary.name }

    /// The kind named `rawValue`, nil for a name no kind has.
    public init?(rawValue: String) {
        guard let kind = Self.allCases.first(where: { $0.rawValue == rawValue }) else { return nil }
        self = kind
    }

    public var description: String { rawValue }

    public static func == (left: AttackKind, right: AttackKind) -> Bool {
        ObjectIdentifier(left.adversary) == ObjectIdentifier(right.adversary)
    }

    public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(adversary)) }

    /// Whether the kind attacks availability (its runs are measured against the same room without
    /// the attacker) rather than what the victims give away.
    public var isAvailability: Bool { adversary.budget.isAvailability }

    /// The user types a kind runs with: the confidentiality kinds with both, the availability kinds
    /// with careless users (they share at once, so that an exchange can complete and be timed).
    public var users: [AttackUsers] { isAvailability ? [.careless] : AttackUsers.allCases }

    /// Whether the kind's attacker is a cleartext one with a rate budget.
    var isCleartext: Bool {
        switch adversary.budget {
        case .datagramsPerSecond: true
        case .devicesOfItsOwn, .sessionsOfItsOwn, .nothingSent: false
        }
    }
}
