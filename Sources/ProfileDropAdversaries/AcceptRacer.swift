import ProfileDropCore
import ProfileDropCrypto
import ProfileDropSimulator

/// An observer on an open network that answers each victim's INVITE with its own valid ACCEPT
/// from the invitee's address, before the invitee's own (PROTOCOL.md 11.4, ACCEPT).
///
/// It learns everything from the INVITE its ``UnicastTap`` shows it: the session id and both
/// device ids. For the invitee it brings up a real core device of its own that claims the
/// invitee's id, stands where the invitee stands (7 cm in front of the initiator), shares its own
/// card and hears only what the tap gives it: a copy of everything the initiator sends to the
/// invitee's address, arriving half a latency after it left. What that device sends goes out from
/// the invitee's address, as fast; it announces nothing. So its ACCEPT comes a round trip before
/// the invitee's, the initiator's handshake completes with it, and every later datagram of the
/// initiator (which goes to the invitee's address, where the invitee cannot read it) reaches it
/// too. The invitee, which accepted the INVITE as well, holds a half-open handshake whose CONFIRM
/// never verifies.
///
/// Nothing is on the path: the victims' datagrams all arrive as sent. Each victim that invites
/// meets the impersonator of the other, so the two screens show the codes of two different
/// sessions.
final class AcceptRacer: AdversaryBrain {
    let runSeed: UInt64
    let tap: UnicastTap
    /// Our device impersonating each victim (by victim index), once that victim was invited.
    private(set) var impersonators: [Int?] = [nil, nil]
    /// Sessions our devices secured.
    private(set) var securedSessions: [UInt64] = []
    /// ACCEPTs the victims sent each other: the genuine answers, which came second.
    private(set) var genuineAccepts: [UInt64] = []

    init(runSeed: UInt64, stage: inout AttackStage) {
        self.runSeed = runSeed
        tap = UnicastTap(victims: stage.victims.map(\.member))
        tap.spoofedDelay = stage.room.latency / 2
        super.init()
        stage.room.hook = TapHook(tap: tap)
    }

    override func secured(_ session: TapSession, device: DeviceID, at time: Instant) {
        super.secured(session, device: device, at: time)
        securedSessions.append(session.sessionID)
    }

    /// The adversary's move after each step: what the tap saw goes to the impersonator of its
    /// destination, brought up at the first INVITE for it.
    func afterStep(_ stage: inout AttackStage) {
        for copy in tap.take() {
            guard
                let target = stage.victims.indices.first(where: {
                    stage.victims[$0].member != copy.source
                        && stage.room.address(of: stage.victims[$0].member) == copy.destination
                })
            else { continue }
            let packet = try? Packet(datagram: copy.bytes)
            if case .accept(let accept)? = packet { genuineAccepts.append(accept.sessionID) }
            if impersonators[target] == nil {
                guard case .invite(let invite)? = packet else { continue }
                impersonators[target] = impersonate(target, id: invite.receiver, in: &stage)
            }
            guard let member = impersonators[target] else { continue }
            stage.room.inject(
                copy.bytes, from: stage.room.address(of: copy.source), to: member, after: tap.spoofedDelay)
        }
    }

    /// Brings up our device claiming victim `target`'s id `id`, where it stands, sending as it.
    private func impersonate(_ target: Int, id: DeviceID, in stage: inout AttackStage) -> Int {
        let name = VictimPair.names[target]
        // Known before it is added, so that nothing it sends on creation leaves under its own address.
        tap.impersonators.append(
            (stage.room.count, stage.room.address(of: stage.victims[target].member)))
        return stage.addAdversary(
            card: AttackCards.card(runSeed: runSeed, role: "racer-\(name)"), consent: .share,
            identity: DeviceIdentity(
                secret: BLAKE2b.hash(
                    Simulation.seedMaterial(runSeed, "attacks/accept-racer/\(name)/identity"),
                    outputLength: 32)),
            pose: VictimPair.poses[target],
            seedMaterial: Simulation.seedMaterial(runSeed, "attacks/accept-racer/\(name)"), policy: self,
            claimedID: id)
    }
}

extension AttackKind {
    /// An observer of the victims' unicast that answers each INVITE with its own ACCEPT from the
    /// invitee's address, before the invitee's.
    public static let acceptRacer = AcceptRacerAttack.kind
}

/// What the ACCEPT racer won, and what it took.
struct AcceptRaceResult: Sendable {
    /// What it took and what the victims were shown.
    var assessment = Assessment()
    /// Handshakes its devices completed with a victim (races won).
    var racesWon = 0
    /// Handshakes the victims completed, with anyone.
    var victimSessions = 0
    /// ACCEPTs the victims sent each other (genuine answers, second in the race).
    var genuineAccepts = 0
    /// Sessions a victim reported as responder: a genuine half-open handshake that completed, where
    /// it should have ended silently.
    var genuineReported = 0
}

/// The ACCEPT racer: a breach is what it takes from careful or unattended users
/// (``Attacks/assessedBreaches(_:users:)``).
enum AcceptRacerAttack: AdversaryKind {
    static let name = "accept-racer"
    static let budget = AttackBudget.devicesOfItsOwn(victims: .pair)
    static let pendingFix: String? = nil

    /// Strangers who invite each other, an observer racing every INVITE with its own ACCEPT.
    static func run(runSeed: UInt64, users: AttackUsers) -> AttackTrial<AcceptRaceResult> {
        var outcome = AttackOutcome(runSeed: runSeed, kind: kind, users: users)
        var result = AcceptRaceResult()
        let pair = VictimPair(runSeed: runSeed)
        var stage = AttackStage(users: users, victimsKnown: false)
        pair.addVictims(to: &stage, phase: "attack")
        let racer = AcceptRacer(runSeed: runSeed, stage: &stage)
        stage.run(until: Attacks.runLimit) { stage in
            racer.afterStep(&stage)
            return false
        }
        result.racesWon = racer.securedSessions.count
        result.genuineAccepts = racer.genuineAccepts.count
        for victim in stage.victims {
            result.victimSessions += victim.secured.count
            // A half-open handshake is reported only once its CONFIRM verifies, and our devices
            // never invite: a victim's session as responder is a genuine one that completed.
            let log = stage.room.eventLog[victim.member]
            result.genuineReported +=
                log.filter {
                    if case .connecting(_, initiator: false) = $0 { true } else { false }
                }.count
        }
        result.assessment = Attacks.assess(&outcome, stage: stage, adversary: racer, bondKey: nil)
        return AttackTrial(outcome: outcome, result: result, victims: stage.victims)
    }

    static func breaches(_ trial: AttackTrial<AcceptRaceResult>) -> [AttackBreach] {
        Attacks.assessedBreaches(trial.result.assessment, users: trial.outcome.users)
    }

    static func notes(_ runs: [AttackRun<AcceptRaceResult>], users: AttackUsers) -> [String] {
        func sum(_ value: (AcceptRaceResult) -> Int) -> Int { runs.reduce(0) { $0 + value($1.result) } }
        var notes = [
            "ACCEPT races won \(sum(\.racesWon)); victims' handshakes \(sum(\.victimSessions)), "
                + "genuine ACCEPTs second \(sum(\.genuineAccepts)), "
                + "genuine half-open handshakes reported \(sum(\.genuineReported))"
        ]
        if Attacks.given(runs.map(\.outcome), users: users) {
            notes.append("cards and identities given by careless users")
        }
        return notes
    }

    static func summary(_ run: AttackRun<AcceptRaceResult>) -> [String] {
        [
            Attacks.codesSummary(run.outcome),
            "\(run.result.racesWon) ACCEPT races won, \(run.result.victimSessions) victims' handshakes",
        ]
    }
}
