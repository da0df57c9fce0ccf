import ProfileDropCore
import ProfileDropCrypto
import ProfileDropSimulator

/// What the BEACON racer did, and where the newcomer's invitations went.
public struct RacedBeaconResult: Sendable {
    /// BEACONs sent in a victim's name from the racer's address.
    public var forged = 0
    /// BEACONs the budget left unsent.
    public var unsent = 0
    /// Invitations the newcomer made of the racer's address (a PROBE or an INVITE went there).
    public var diverted = 0
    /// INVITE datagrams the newcomer sent there, retransmissions included: none since wire version
    /// 3, as the dead address never echoes the PROBE.
    public var divertedInvites = 0
    /// The racer's address, named in the BEACONs it raced.
    public var racerAddress: PeerAddress?
}

/// An attacker on the LAN, off the path, that races BEACONs (PROTOCOL.md 11.4, BEACON): it hears
/// every device's multicast, and when a victim it has not heard before speaks, it sends that
/// newcomer the latest BEACON of the other victim, with that victim's id and claims but its own
/// address and port (where nothing answers, or, in the live variant, a device of its own). Hearing
/// the newcomer takes a latency and its BEACON another, so it arrives before the other victim's
/// answer to the newcomer's first QUERY (20 to 120 ms later) and, unless one happens to be due, its
/// next BEACON: the newcomer holds the other victim's id at the racer's address. It then forwards
/// every BEACON the other victim sends, from its address, sequence numbers and all, so that the
/// entry never falls silent. It holds no key, and sends at most its budget of datagrams in any
/// second.
final class BeaconRacer {
    private var budget: Availability.DatagramBudget
    /// Where its BEACONs come from, and the port they name.
    let address: PeerAddress
    /// The victims, as room members.
    private let victims: [Int]
    /// Victims heard so far, in the order they first spoke, with the latest BEACON of each.
    private var heard: [(member: Int, beacon: Beacon?)] = []
    /// Victims that first spoke after another victim's BEACON had been heard: those it raced.
    private var newcomers: [Int] = []
    private(set) var forged = 0
    private(set) var unsent = 0

    init(budget: Int, address: PeerAddress, victims: [Int]) {
        self.budget = Availability.DatagramBudget(perSecond: budget)
        self.address = address
        self.victims = victims
    }

    /// The BEACONs to send for `packet`, which participant `source` multicast at `time`: the race,
    /// when it is a victim speaking for the first time after another victim's BEACON; a forwarded
    /// copy, when it is a BEACON of a victim whose id was raced to a newcomer. Each goes from our
    /// address to a newcomer.
    func heard(_ packet: Packet, from source: Int, at time: Instant) -> [ForgedDatagram] {
        guard victims.contains(source) else { return [] }
        let beacon: Beacon? = if case .beacon(let beacon) = packet { beacon } else { nil }
        var forgeries: [ForgedDatagram] = []
        if let index = heard.firstIndex(where: { $0.member == source }) {
            guard let beacon else { return [] }
            heard[index].beacon = beacon
            for newcomer in newcomers where newcomer != source {
                if let forgery = forge(beacon, to: newcomer, at: time) { forgeries.append(forgery) }
            }
        } else {
            let others = heard.compactMap(\.beacon)
            if !others.isEmpty {
                newcomers.append(source)
                for other in others {
                    if let forgery = forge(other, to: source, at: time) { forgeries.append(forgery) }
                }
            }
            heard.append((source, beacon))
        }
        return forgeries
    }

    /// `beacon` from our address, naming our port; nil when this second's budget is spent.
    private func forge(_ beacon: Beacon, to recipient: Int, at time: Instant) -> ForgedDatagram? {
        guard budget.spend(at: time) else {
            unsent += 1
            return nil
        }
        forged += 1
        var copy = beacon
        copy.port = address.port
        return ForgedDatagram(bytes: Packet.beacon(copy).encoded(), source: address, recipient: recipient)
    }
}

/// A ``BeaconRacer`` as the driver runs it after every step of a room: what it sends goes out from
/// its address, and the newcomer's INVITEs to that address are counted.
struct BeaconRace {
    let racer: BeaconRacer
    /// The newcomer's invitations of the racer's address: their PROBEs' challenges and INVITEs'
    /// session ids.
    private var invitations: [UInt64] = []
    private var divertedInvites = 0

    init(racer: BeaconRacer) { self.racer = racer }

    /// What the race did so far.
    var result: RacedBeaconResult {
        RacedBeaconResult(
            forged: racer.forged, unsent: racer.unsent, diverted: invitations.count,
            divertedInvites: divertedInvites)
    }

    /// Sends the racer's answers to what the last step of `stage` sent, arriving two latencies after
    /// it (the racer hears it a latency after it left, and its BEACON takes another), counting them
    /// in `meter`.
    mutating func afterStep(_ stage: inout AttackStage, meter: inout Availability.Meter) {
        for sent in stage.room.lastSent {
            guard let packet = try? Packet(datagram: sent.bytes) else { continue }
            if case .multicast = sent.destination {
                for forged in racer.heard(packet, from: sent.source, at: stage.room.now) {
                    stage.inject(forged, after: stage.room.latency * 2, meter: &meter)
                }
            } else if sent.destination == .unicast(racer.address) {
                // An invitation there starts with a PROBE (wire version 3), which the dead address
                // never answers, so no INVITE follows; each is named by its challenge.
                switch packet {
                case .invite(let invite):
                    divertedInvites += 1
                    if !invitations.contains(invite.sessionID) { invitations.append(invite.sessionID) }
                case .probe(let probe):
                    if !invitations.contains(probe.challenge) { invitations.append(probe.challenge) }
                case .beacon, .query, .accept, .confirm, .busy, .secure, .probeAck:
                    break
                }
            }
        }
    }
}

extension Availability {
    /// Where the newcomer is switched on in a BEACON racer's run: a metre from A, out of reach, so
    /// that neither invites the other until the newcomer is brought to A.
    static let racedNewcomerPose = Pose(x: 7, y: 100, heading: 180)

    /// When the newcomer of run `runSeed` is brought 7 cm in front of A: 1.5 to 3 s after it was
    /// switched on at `join`, as a person opens the app and then holds the phones together.
    static func racedNewcomerMeets(runSeed: UInt64, join: Instant) -> Instant {
        var draw = DeterministicRandom(
            seedMaterial: Simulation.seedMaterial(runSeed, "attacks/availability/beacon-racer/meet"))
        return join + .milliseconds(1_500 + Int64(draw.uniform(below: 1_501)))
    }

    /// The alarm that brings the newcomer to A.
    static let meetingAlarm = 1

    /// The BEACON racer's room with `users`: the bystander and A from the start, B switched on out
    /// of reach at the newcomer's alarm (``newcomerJoin(runSeed:)``) and moved in front of A at the
    /// meeting alarm.
    static func racedStage(_ pair: VictimPair, users: AttackUsers, meet: Instant) -> AttackStage {
        var stage = newcomerStage(pair, users: users)
        stage.room.setAlarm(meetingAlarm, at: meet)
        return stage
    }

    /// Acts on the racer room's alarms: switches B on, then brings it to A.
    static func stepRacedNewcomer(_ pair: VictimPair, in stage: inout AttackStage) {
        guard case .alarm(let alarm)? = stage.lastStep else { return }
        if alarm == newcomerAlarm && stage.victims.count == 1 {
            addVictim(1, of: pair, to: &stage, pose: racedNewcomerPose)
        } else if alarm == meetingAlarm, let newcomer = stage.victims.dropFirst().first?.member {
            stage.room.updatePose(VictimPair.poses[1], of: newcomer)
        }
    }

    /// The BEACON racer's run: the bystander and victim A from the start; victim B switched on a
    /// metre away at ``newcomerJoin(runSeed:)``, so that the racer can answer B's first datagram
    /// with A's BEACON from its own address before A's own reaches B, and brought 7 cm in front of
    /// A 1.5 to 3 s later, so that B, which moved, is the first to see A within reach and invite
    /// it. The pair's time from B's start against the same room without the racer, as every
    /// cleartext attacker, and where B's invitations went.
    static func beaconRacerRun(runSeed: UInt64) -> AttackTrial<RacedBeaconResult> {
        let kind = AttackKind.beaconRacer
        let pair = VictimPair(runSeed: runSeed)
        let join = newcomerJoin(runSeed: pair.runSeed)
        let meet = racedNewcomerMeets(runSeed: runSeed, join: join)
        var outcome = AttackOutcome(runSeed: runSeed, kind: kind, users: .careless)
        var result = AvailabilityResult()

        measureBaseline(
            racedStage(pair, users: .careless, meet: meet), from: join, result: &result, outcome: &outcome
        ) { stepRacedNewcomer(pair, in: &$0) }

        var stage = racedStage(pair, users: .careless, meet: meet)
        let budget = budget(runSeed: runSeed)
        result.budget = budget
        var draw = DeterministicRandom(
            seedMaterial: Simulation.seedMaterial(runSeed, "attacks/availability/\(kind.rawValue)"))
        let racerAddress = PeerAddress(
            ipv4: stage.nextAddress.ipv4, port: 20_000 + UInt16(draw.uniform(below: 20_000)))
        var race = BeaconRace(
            racer: BeaconRacer(
                budget: budget, address: racerAddress, victims: [stage.victims[0].member, stage.nextMember]))
        // The racer is no participant: it only injects, as a spoofer does.
        var meter = Meter(attacker: -1)
        stage.run(until: runLimit) { stage in
            stepRacedNewcomer(pair, in: &stage)
            race.afterStep(&stage, meter: &meter)
            meter.observe(stage)
            return false
        }
        measurePair(&result, stage: stage, meter: meter, from: join)
        var raced = race.result
        raced.racerAddress = racerAddress
        outcome.screens =
            ["B on at \(join), 1 m away; in front of A at \(meet)"] + stage.victims.map(describe)
        if raced.forged == 0 {
            outcome.problems.append("the racer sent no BEACON to the newcomer")
        }
        return trial(outcome, result: result, stage: stage, figures: raced)
    }

    static func racedBeaconNotes(_ races: [RacedBeaconResult]) -> [String] {
        func sum(_ path: KeyPath<RacedBeaconResult, Int>) -> Int {
            races.reduce(0) { $0 + $1[keyPath: path] }
        }
        let won = races.filter { $0.diverted > 0 }.count
        return [
            "raced BEACONs \(sum(\.forged)), unsent \(sum(\.unsent)); newcomer invited the racer's address "
                + "in \(won) of \(races.count) runs (\(sum(\.diverted)) invitations, \(sum(\.divertedInvites)) INVITEs)"
        ]
    }
}

/// The BEACON racer's device when its address is live: the endpoint of whatever session the race
/// wins it, counting them.
final class RacedImpersonator: AdversaryBrain {
    /// Sessions its device secured with the newcomer.
    private(set) var securedSessions = 0

    override func secured(_ session: TapSession, device: DeviceID, at time: Instant) {
        super.secured(session, device: device, at: time)
        securedSessions += 1
    }
}

extension AttackKind {
    /// The BEACON racer with a live address: a device of its own that claims A's id, where a
    /// newcomer heard that id first.
    public static let beaconRaceMITM = BeaconRaceMITMAttack.kind
    /// Availability, cleartext: an attacker off the path that answers a newcomer's first datagram
    /// with the other victim's BEACON from its own dead address, before the real one arrives, and
    /// keeps forwarding that victim's BEACONs from there.
    public static let beaconRacer = BeaconRacerAttack.kind
}

/// The BEACON racer in the newcomer's room: the pair's exchange rule with A's id raced to B, and
/// the rules every availability run shares.
enum BeaconRacerAttack: AdversaryKind {
    static let name = "beacon-racer"
    static let budget = AttackBudget.datagramsPerSecond(ceiling: Availability.budget)
    static let pendingFix: String? = nil

    static func run(runSeed: UInt64, users: AttackUsers) -> AttackTrial<RacedBeaconResult> {
        Availability.beaconRacerRun(runSeed: runSeed)
    }

    static func breaches(_ trial: AttackTrial<RacedBeaconResult>) -> [AttackBreach] {
        let address = trial.result.racerAddress.map { "\($0)" } ?? "-"
        return Availability.pairExchangeBreaches(trial, when: "with A's id raced to B from \(address)")
    }

    static func notes(_ runs: [AttackRun<RacedBeaconResult>], users: AttackUsers) -> [String] {
        runs.isEmpty ? [] : Availability.racedBeaconNotes(runs.map(\.result))
    }

    static func summary(_ run: AttackRun<RacedBeaconResult>) -> [String] {
        Availability.racedBeaconNotes([run.result])
    }
}

/// Where the live BEACON racer diverted the newcomer, and what it took.
struct RacedMITMResult: Sendable {
    /// What it took and what the victims were shown.
    var assessment = Assessment()
    /// Invitations the newcomer sent to the racer's address.
    var divertedInvitations = 0
    /// Handshakes the racer's device completed.
    var racesWon = 0
    /// Handshakes the victims completed, with anyone.
    var victimSessions = 0
}

/// The BEACON racer as a man in the middle: a breach is what it takes from careful or unattended
/// users (``Attacks/assessedBreaches(_:users:)``).
enum BeaconRaceMITMAttack: AdversaryKind {
    static let name = "beacon-race-mitm"
    static let budget = AttackBudget.devicesOfItsOwn(victims: .pair)
    static let pendingFix: String? = nil

    /// The BEACON racer as a man in the middle (PROTOCOL.md 11.1; 11.6 item 6): its address is live.
    /// A real core device of its own claims A's id, stands where A stands (so 7 cm in front of B once
    /// B is brought there), shares its own card, and hears only what is sent to its address. The
    /// racer sends B, when B first speaks, A's BEACON naming that device's address; B, brought in
    /// front of A, invites it as A, while A's own INVITE from A's address runs beside that
    /// invitation, and the first handshake to complete is B's session. When the racer's does, B
    /// pairs with it and shows a code that A, which paired with nobody, does not.
    static func run(runSeed: UInt64, users: AttackUsers) -> AttackTrial<RacedMITMResult> {
        var outcome = AttackOutcome(runSeed: runSeed, kind: kind, users: users)
        var result = RacedMITMResult()
        let pair = VictimPair(runSeed: runSeed)
        let join = Availability.newcomerJoin(runSeed: runSeed)
        let meet = Availability.racedNewcomerMeets(runSeed: runSeed, join: join)
        var stage = Availability.racedStage(pair, users: users, meet: meet)
        guard let claimed = stage.room.device(stage.victims[0].member)?.deviceID else {
            preconditionFailure("victim A is a device")
        }
        // Its device's own address: it announces nothing there (its multicast is dropped, and it
        // hears none), so B learns it only from the racer's BEACONs.
        let address = stage.nextAddress
        let tap = UnicastTap(victims: [])
        tap.spoofedDelay = stage.room.latency
        tap.impersonators.append((stage.room.count, address))
        stage.room.hook = TapHook(tap: tap)
        let impersonator = RacedImpersonator()
        stage.addAdversary(
            card: AttackCards.card(runSeed: runSeed, role: "beacon-racer"), consent: .share,
            identity: DeviceIdentity(
                secret: BLAKE2b.hash(
                    Simulation.seedMaterial(runSeed, "attacks/beacon-race-mitm/identity"), outputLength: 32)),
            pose: VictimPair.poses[0],
            seedMaterial: Simulation.seedMaterial(runSeed, "attacks/beacon-race-mitm"), policy: impersonator,
            claimedID: claimed)
        // B is the next member: switched on at its alarm, after our device.
        let newcomer = stage.nextMember
        var race = BeaconRace(
            racer: BeaconRacer(
                budget: Availability.budget, address: address, victims: [stage.victims[0].member, newcomer]))
        // What the race sends is counted as in the racer's availability run, but not read: this
        // kind judges whom the newcomer paired with.
        var meter = Availability.Meter(attacker: -1)
        stage.run(until: Attacks.runLimit) { stage in
            Availability.stepRacedNewcomer(pair, in: &stage)
            race.afterStep(&stage, meter: &meter)
            return false
        }
        result.racesWon = impersonator.securedSessions
        result.victimSessions = stage.victims.reduce(0) { $0 + $1.secured.count }
        result.divertedInvitations = race.result.diverted
        outcome.screens.append("B on at \(join), 1 m away; in front of A at \(meet)")
        if race.result.forged == 0 {
            outcome.problems.append("the racer sent no BEACON to the newcomer")
        }
        result.assessment = Attacks.assess(&outcome, stage: stage, adversary: impersonator, bondKey: nil)
        return AttackTrial(outcome: outcome, result: result, victims: stage.victims)
    }

    static func breaches(_ trial: AttackTrial<RacedMITMResult>) -> [AttackBreach] {
        Attacks.assessedBreaches(trial.result.assessment, users: trial.outcome.users)
    }

    static func notes(_ runs: [AttackRun<RacedMITMResult>], users: AttackUsers) -> [String] {
        func sum(_ value: (RacedMITMResult) -> Int) -> Int { runs.reduce(0) { $0 + value($1.result) } }
        var notes = [
            "invitations to the racer's address \(sum(\.divertedInvitations)); "
                + "handshakes the racer completed \(sum(\.racesWon)), "
                + "victims' handshakes \(sum(\.victimSessions))"
        ]
        if Attacks.given(runs.map(\.outcome), users: users) {
            notes.append("cards and identities given by careless users")
        }
        return notes
    }

    static func summary(_ run: AttackRun<RacedMITMResult>) -> [String] {
        [
            Attacks.codesSummary(run.outcome),
            "\(run.result.divertedInvitations) invitations to the racer's address, \(run.result.racesWon) "
                + "handshakes with it, \(run.result.victimSessions) victims' handshakes",
        ]
    }
}
