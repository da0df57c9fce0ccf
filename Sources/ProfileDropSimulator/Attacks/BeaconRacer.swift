import ProfileDropCore
import ProfileDropCrypto

/// What the BEACON racer did, and where the newcomer's invitations went.
public struct RacedBeaconResult: Sendable {
    /// BEACONs sent in a victim's name from the racer's address.
    public var forged = 0
    /// BEACONs the budget left unsent.
    public var unsent = 0
    /// Invitations (session ids) the newcomer sent to the racer's address.
    public var diverted = 0
    /// INVITE datagrams the newcomer sent there, retransmissions included.
    public var divertedInvites = 0
}

/// An attacker on the LAN, off the path, that races BEACONs (PROTOCOL.md 11.4, BEACON): it hears
/// every device's multicast, and when a victim it has not heard before speaks, it sends that
/// newcomer the latest BEACON of the other victim, with that victim's id and claims but its own
/// address and a port where nothing answers. Hearing the newcomer takes a latency and its BEACON
/// another, so it arrives before the other victim's answer to the newcomer's first QUERY (20 to
/// 120 ms later) and, unless one happens to be due, its next BEACON: the newcomer holds the other
/// victim's id at the racer's address. It then forwards every BEACON the other victim sends, from
/// its address, sequence numbers and all, so that the entry never falls silent. It holds no key,
/// and sends at most its budget of datagrams in any second.
final class BeaconRacer {
    /// One forged BEACON for the driver to inject.
    struct Forged {
        let bytes: [UInt8]
        /// The newcomer.
        let recipient: Int
    }

    /// Datagrams a second.
    let budget: Int
    /// Where its BEACONs come from, and the port they name: nobody answers there.
    let address: PeerAddress
    /// The victims, as room members.
    private let victims: [Int]
    /// Victims heard so far, in the order they first spoke.
    private var heard: [Int] = []
    /// Victims that first spoke after another victim's BEACON had been heard: those it raced.
    private var newcomers: [Int] = []
    private var thisSecond = Availability.SecondCounter()
    private(set) var forged = 0
    private(set) var unsent = 0

    init(budget: Int, address: PeerAddress, victims: [Int]) {
        precondition(budget > 0, "a budget of at least one datagram a second")
        self.budget = budget
        self.address = address
        self.victims = victims
    }

    /// The BEACONs to send for `sent`, which participant `sent.source` multicast at `time`: the
    /// race, when it is a victim speaking for the first time after another victim's BEACON; a
    /// forwarded copy, when it is a BEACON of a victim whose id was raced to a newcomer.
    func heard(_ sent: SentDatagram, at time: Instant, latestBeacons: [Int: Beacon]) -> [Forged] {
        guard sent.destination == .multicast, victims.contains(sent.source) else { return [] }
        var forgeries: [Forged] = []
        if !heard.contains(sent.source) {
            heard.append(sent.source)
            let others = victims.filter { $0 != sent.source && latestBeacons[$0] != nil }
            if !others.isEmpty {
                newcomers.append(sent.source)
                for other in others {
                    if let beacon = latestBeacons[other],
                        let forgery = forge(beacon, to: sent.source, at: time)
                    {
                        forgeries.append(forgery)
                    }
                }
            }
        } else if case .beacon(let beacon)? = try? Packet(datagram: sent.bytes) {
            for newcomer in newcomers where newcomer != sent.source {
                if let forgery = forge(beacon, to: newcomer, at: time) { forgeries.append(forgery) }
            }
        }
        return forgeries
    }

    /// `beacon` from our address, naming our port; nil when this second's budget is spent.
    private func forge(_ beacon: Beacon, to recipient: Int, at time: Instant) -> Forged? {
        guard thisSecond.spend(at: time, budget: budget) else {
            unsent += 1
            return nil
        }
        forged += 1
        var copy = beacon
        copy.port = address.port
        return Forged(bytes: Packet.beacon(copy).encoded(), recipient: recipient)
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

    /// The BEACON racer's room: the bystander and A from the start, B switched on out of reach at
    /// the newcomer's alarm and moved in front of A at the meeting alarm.
    private static func racedStage(_ pair: VictimPair, join: Instant, meet: Instant) -> AttackStage {
        var stage = newcomerStage(pair)
        stage.room.setAlarm(meetingAlarm, at: meet)
        return stage
    }

    /// Acts on the racer room's alarms: switches B on, then brings it to A.
    private static func stepRacedNewcomer(_ pair: VictimPair, in stage: inout AttackStage) {
        switch stage.lastStep {
        case .alarm(newcomerAlarm) where stage.victims.count == 1:
            stage.addVictim(
                name: VictimPair.names[1], card: pair.cards[1], identity: pair.identities[1], knownPeers: [],
                pose: racedNewcomerPose, seedMaterial: pair.seedMaterial(1, phase: "availability"))
        case .alarm(meetingAlarm):
            if let newcomer = stage.victims.dropFirst().first?.member {
                stage.room.updatePose(VictimPair.poses[1], of: newcomer)
            }
        default:
            break
        }
    }

    /// The BEACON racer's run: the bystander and victim A from the start; victim B switched on a
    /// metre away at ``newcomerJoin(runSeed:)``, so that the racer can answer B's first datagram
    /// with A's BEACON from its own address before A's own reaches B, and brought 7 cm in front of
    /// A 1.5 to 3 s later, so that B, which moved, is the first to see A within reach and invite
    /// it. The pair's time from B's start against the same room without the racer, as every
    /// cleartext attacker, and where B's invitations went.
    static func beaconRacerRun(runSeed: UInt64) -> AttackOutcome {
        let kind = AttackKind.beaconRacer
        let pair = VictimPair(runSeed: runSeed)
        let join = newcomerJoin(runSeed: pair.runSeed)
        let meet = racedNewcomerMeets(runSeed: runSeed, join: join)
        var outcome = AttackOutcome(runSeed: runSeed, kind: kind, users: .careless)
        var result = AvailabilityResult()

        var calm = racedStage(pair, join: join, meet: meet)
        calm.run(until: runLimit) { stage in
            stepRacedNewcomer(pair, in: &stage)
            return false
        }
        result.baseline = exchangeTime(calm.victims, from: join)
        if result.baseline == nil {
            outcome.problems.append(
                "setup: the pair did not exchange without the attacker, so nothing was measured")
        }

        var stage = racedStage(pair, join: join, meet: meet)
        let budget = budget(runSeed: runSeed)
        result.budget = budget
        var draw = DeterministicRandom(
            seedMaterial: Simulation.seedMaterial(runSeed, "attacks/availability/\(kind.rawValue)"))
        let racerAddress = PeerAddress(
            ipv4: stage.nextAddress.ipv4, port: 20_000 + UInt16(draw.uniform(below: 20_000)))
        // Members 1 and 2 are the victims (0 is the bystander).
        let racer = BeaconRacer(budget: budget, address: racerAddress, victims: [1, 2])
        var latestBeacons: [Int: Beacon] = [:]
        var invitations: [UInt64] = []
        var racedResult = RacedBeaconResult()
        // The racer is no participant: it only injects, as a spoofer does.
        var meter = Meter(attacker: -1)
        // It hears a datagram a latency after it left, and its own takes another.
        let delay = stage.room.latency * 2
        stage.run(until: runLimit) { stage in
            stepRacedNewcomer(pair, in: &stage)
            for sent in stage.room.lastSent {
                for forged in racer.heard(sent, at: stage.room.now, latestBeacons: latestBeacons) {
                    stage.room.inject(forged.bytes, from: racerAddress, to: forged.recipient, after: delay)
                    meter.countAttack(bytes: forged.bytes.count, at: stage.room.now)
                }
                guard let packet = try? Packet(datagram: sent.bytes) else { continue }
                switch (packet, sent.destination) {
                case (.beacon(let beacon), .multicast):
                    latestBeacons[sent.source] = beacon
                case (.invite(let invite), .unicast(racerAddress)):
                    racedResult.divertedInvites += 1
                    if !invitations.contains(invite.sessionID) { invitations.append(invite.sessionID) }
                default:
                    break
                }
            }
            meter.observe(stage)
            return false
        }
        measurePair(&result, stage: stage, meter: meter, from: join)
        racedResult.forged = racer.forged
        racedResult.unsent = racer.unsent
        racedResult.diverted = invitations.count
        result.racedBeacons = racedResult
        outcome.screens =
            ["B on at \(join), 1 m away; in front of A at \(meet)"] + stage.victims.map(describe)
        if racer.forged == 0 {
            outcome.problems.append("the racer sent no BEACON to the newcomer")
        }
        if result.baseline != nil,
            let breach = exchangeBreach(
                result, stage: stage, who: "the pair", when: "with A's id raced to B from \(racerAddress)")
        {
            outcome.breaches.append(breach)
        }
        return finish(outcome, result: result, stage: stage)
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
