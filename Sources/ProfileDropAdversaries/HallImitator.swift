import ProfileDropCore

extension AttackKind {
    /// Availability, cleartext: BEACONs of a thousand fake ids, each from its own spoofed address
    /// once a second, as a conference hall sends them, so that the victims' budget of unknown
    /// sources rises to its ceiling (PROTOCOL.md 7, rule 3) and every phantom is parsed.
    public static let hallImitator = HallImitatorAttack.kind
}

/// The one flood that raises the global budget: a sender that repeats a hall's worth of spoofed
/// addresses at a device's pace. Its rate is fixed, not drawn: every victim hears each of the
/// ``CleartextAttacker/imitatedHall`` phantoms once a second.
///
/// Breach rule: the pair does not exchange within ``Availability/maxRatio`` times its time in the
/// same room without the attacker, and the rules every availability run shares. The pair finds
/// each other by probing ahead (PROTOCOL.md 5, "Probing ahead"; 11.6 item 22): the partner is the
/// one candidate whose address echoes a PROBE.
enum HallImitatorAttack: AdversaryKind {
    static let name = "hall-imitator"
    /// Each phantom once a second to each of the two victims.
    static let rate = 2 * CleartextAttacker.imitatedHall
    static let budget = AttackBudget.datagramsPerSecond(ceiling: rate)
    static let pendingFix: String? = nil

    static func run(runSeed: UInt64, users: AttackUsers) -> AttackTrial<NoKindFigures> {
        Availability.cleartextRun(runSeed: runSeed, kind: kind, behaviour: .hallImitation, fixedBudget: rate)
    }

    static func breaches(_ trial: AttackTrial<NoKindFigures>) -> [AttackBreach] {
        Availability.pairExchangeBreaches(trial, when: "under \(rate) datagrams/s")
    }

    static func notes(_ runs: [AttackRun<NoKindFigures>], users: AttackUsers) -> [String] { [] }

    static func summary(_ run: AttackRun<NoKindFigures>) -> [String] { [] }
}
