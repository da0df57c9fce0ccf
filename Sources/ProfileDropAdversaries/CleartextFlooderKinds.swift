import ProfileDropCore
import ProfileDropSimulator

/// An availability kind whose attacker forges cleartext datagrams on its own timer, within a budget
/// of at most ``Availability/budget`` datagrams a second drawn per run, against the honest pair.
/// The family's run, breach rule, notes and summary are shared; a kind says what its attacker
/// forges.
///
/// Breach rule: the pair does not exchange within ``Availability/maxRatio`` times its time in the
/// same room without the attacker, and the rules every availability run shares.
protocol CleartextFlooderKind: AdversaryKind where Result == NoKindFigures {
    /// What the attacker forges.
    static var behaviour: CleartextBehaviour { get }
}

extension CleartextFlooderKind {
    static var budget: AttackBudget { .datagramsPerSecond(ceiling: Availability.budget) }

    static func run(runSeed: UInt64, users: AttackUsers) -> AttackTrial<NoKindFigures> {
        Availability.cleartextRun(runSeed: runSeed, kind: kind, behaviour: behaviour)
    }

    static func breaches(_ trial: AttackTrial<NoKindFigures>) -> [AttackBreach] {
        Availability.pairExchangeBreaches(
            trial, when: "under \(trial.outcome.availability?.budget ?? Availability.budget) datagrams/s")
    }

    static func notes(_ runs: [AttackRun<NoKindFigures>], users: AttackUsers) -> [String] { [] }

    static func summary(_ run: AttackRun<NoKindFigures>) -> [String] { [] }
}

extension AttackKind {
    /// Availability, cleartext: forged BEACONs with a victim's id and a dead port.
    public static let beaconHijack = BeaconHijackAttack.kind
    /// Availability, cleartext: INVITEs of random bytes at each victim, from spoofed sources.
    public static let inviteSquatter = InviteSquatterAttack.kind
    /// Availability, cleartext: BEACONs of fresh fake ids pointing at a dead port.
    public static let phantomFlood = PhantomFloodAttack.kind
    /// Availability, cleartext: BEACONs of four fake ids kept alive, each from its own spoofed
    /// address, so that they become established peers.
    public static let phantomKeeper = PhantomKeeperAttack.kind
    /// Availability, cleartext: mixed junk from 256 ports on each of four spoofed addresses.
    public static let datagramFlood = DatagramFloodAttack.kind
    /// Availability, cleartext: BEACONs recorded in a previous run or earlier in this one.
    public static let beaconReplay = BeaconReplayAttack.kind
    /// Availability, cleartext: BEACONs of each victim's id from its own address, sequence ahead,
    /// saying busy and far away.
    public static let beaconDisplace = BeaconDisplaceAttack.kind
}

enum BeaconHijackAttack: CleartextFlooderKind {
    static let name = "beacon-hijack"
    static let behaviour = CleartextBehaviour.hijack
    static let pendingFix: String? = nil
}

enum InviteSquatterAttack: CleartextFlooderKind {
    static let name = "invite-squatter"
    static let behaviour = CleartextBehaviour.squat
    static let pendingFix: String? = nil
}

enum PhantomFloodAttack: CleartextFlooderKind {
    static let name = "phantom-flood"
    static let behaviour = CleartextBehaviour.phantoms
    static let pendingFix: String? = nil
}

enum PhantomKeeperAttack: CleartextFlooderKind {
    static let name = "phantom-keeper"
    static let behaviour = CleartextBehaviour.keptPhantoms
    static let pendingFix: String? = nil
}

enum DatagramFloodAttack: CleartextFlooderKind {
    static let name = "datagram-flood"
    static let behaviour = CleartextBehaviour.flood
    static let pendingFix: String? = nil
}

enum BeaconReplayAttack: CleartextFlooderKind {
    static let name = "beacon-replay"
    static let behaviour = CleartextBehaviour.replay
    static let pendingFix: String? = nil
}

enum BeaconDisplaceAttack: CleartextFlooderKind {
    static let name = "beacon-displace"
    static let behaviour = CleartextBehaviour.displace
    static let pendingFix: String? = nil
}
