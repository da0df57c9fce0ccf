import ProfileDropCore
import ProfileDropCrypto
import ProfileDropSimulator

/// What the invite forger did, and what its INVITEs did to the invitations they were aimed at.
public struct ForgedInviteResult: Sendable {
    /// INVITEs forged in the bystander's name.
    public var forged = 0
    /// INVITEs seen that the budget left unanswered.
    public var unanswered = 0
    /// Invitations between the victims that took a forged INVITE while they awaited ACCEPT.
    public var invitationsHit = 0
    /// Of those, the ones the invitee ACCEPTed that the inviter never CONFIRMed, with no handshake
    /// of its own with the invitee completed meanwhile: invitations a forged INVITE cancelled.
    public var cancelled = 0
}

/// An observer on an open network that answers each INVITE one victim sends the other with a
/// forged INVITE to the inviter, with a random session id and 32 random bytes for a Noise message:
/// what anyone who reads a BEACON can forge (PROTOCOL.md 11.4, INVITE). It arrives half a latency
/// after the real INVITE left, before the invitee's ACCEPT. It holds no key, and forges at most its
/// budget of datagrams in any second of the run.
///
/// Its name is one of two:
/// - a bystander the inviter has heard for seconds (so an established peer), from the bystander's
///   own address. The victim that joins late is a newcomer, not yet established at the other, so
///   that the other's invitation of it is tentative while the forgeries arrive: until 2026-12-01
///   one such INVITE ended a tentative invitation at once.
/// - the invitee itself, from the invitee's own address: a crossing INVITE (PROTOCOL.md 2). An
///   inviter with the lower id sends its own INVITE again at once, at most once per 100 ms; one with
///   the higher id accepts it beside its invitation, which goes on (until 2026-12-02 it abandoned
///   the invitation, and its ACCEPT reached the real invitee, which had no such session).
final class InviteForger {
    /// In whose name the forgeries come.
    enum Name {
        /// A bystander's, from its address.
        case bystander(DeviceID, PeerAddress)
        /// The invitee's own, from the address the INVITE went to.
        case invitee
    }

    private(set) var budget: Availability.DatagramBudget
    let name: Name
    private var random: DeterministicRandom
    private(set) var forged = 0
    private(set) var unanswered = 0

    init(budget: Int, name: Name, seedMaterial: [UInt8]) {
        self.budget = Availability.DatagramBudget(perSecond: budget)
        self.name = name
        random = DeterministicRandom(seedMaterial: seedMaterial)
    }

    /// The forged INVITE for `invite`, seen leaving participant `inviter` for `destination` at
    /// `time`, from the bystander's or the invitee's address to the inviter; nil when this second's
    /// budget is spent.
    func answer(_ invite: HandshakePacket, from inviter: Int, to destination: PeerAddress, at time: Instant)
        -> ForgedDatagram?
    {
        guard budget.spend(at: time) else {
            unanswered += 1
            return nil
        }
        forged += 1
        let (sender, source): (DeviceID, PeerAddress) =
            switch name {
            case .bystander(let id, let address): (id, address)
            case .invitee: (invite.receiver, destination)
            }
        let forgery = HandshakePacket(
            sessionID: random.nextUInt64(), sender: sender, receiver: invite.sender,
            noiseMessage: random.bytes(X25519.keyLength))
        return ForgedDatagram(bytes: Packet.invite(forgery).encoded(), source: source, recipient: inviter)
    }
}

extension Availability {
    /// Where the bystander stands: on the LAN, far out of reach of both victims (a phone across the
    /// room), so that it is established at the first victim but never a candidate to invite.
    static let bystanderPose = Pose(x: 0, y: 400, heading: 90)

    /// When the second victim is switched on in run `runSeed`: 2.5 to 3.5 s after the first and the
    /// bystander, so that the first victim has heard the bystander 1.5 s (established) and not yet
    /// the newcomer.
    static func newcomerJoin(runSeed: UInt64) -> Instant {
        var draw = DeterministicRandom(
            seedMaterial: Simulation.seedMaterial(runSeed, "attacks/availability/newcomer"))
        return Instant.zero + .milliseconds(2_500 + Int64(draw.uniform(below: 1_001)))
    }

    /// The alarm that switches the newcomer on.
    static let newcomerAlarm = 0

    /// The room of an invite forger's run before the newcomer comes: the bystander (member 0) and
    /// victim A (member 1), with the alarm at which B (member 2) is switched on; its users careless
    /// unless `users` says otherwise.
    static func newcomerStage(_ pair: VictimPair, users: AttackUsers = .careless) -> AttackStage {
        var stage = AttackStage(users: users, victimsKnown: false)
        stage.addBystander(
            card: AttackCards.card(runSeed: pair.runSeed, role: "bystander"), pose: bystanderPose,
            seedMaterial: Simulation.seedMaterial(pair.runSeed, "attacks/availability/bystander"))
        addVictim(0, of: pair, to: &stage)
        stage.room.setAlarm(newcomerAlarm, at: newcomerJoin(runSeed: pair.runSeed))
        return stage
    }

    /// Switches victim B on if the last step was the newcomer's alarm.
    static func addNewcomer(_ pair: VictimPair, to stage: inout AttackStage) {
        guard case .alarm(newcomerAlarm)? = stage.lastStep, stage.victims.count == 1 else { return }
        addVictim(1, of: pair, to: &stage)
    }

    /// Adds victim `index` of `pair`, standing at `pose` (its usual place by default).
    static func addVictim(
        _ index: Int, of pair: VictimPair, to stage: inout AttackStage, pose: Pose? = nil
    ) {
        stage.addVictim(
            name: VictimPair.names[index], card: pair.cards[index], identity: pair.identities[index],
            knownPeers: [], pose: pose ?? VictimPair.poses[index],
            seedMaterial: pair.seedMaterial(index, phase: "availability"))
    }

    /// The invite forger's run: the bystander and victim A from the start, victim B from
    /// ``newcomerJoin(runSeed:)``; the pair's time from B's start against the same room without the
    /// forger, as every cleartext attacker, and whether a forged INVITE cancelled an invitation.
    static func inviteForgerRun(runSeed: UInt64) -> AttackTrial<ForgedInviteResult> {
        let kind = AttackKind.inviteForger
        let pair = VictimPair(runSeed: runSeed)
        let join = newcomerJoin(runSeed: pair.runSeed)
        var outcome = AttackOutcome(runSeed: runSeed, kind: kind, users: .careless)
        var result = AvailabilityResult()

        measureBaseline(newcomerStage(pair), from: join, result: &result, outcome: &outcome) {
            addNewcomer(pair, to: &$0)
        }

        var stage = newcomerStage(pair)
        let bystander = 0
        guard let bystanderID = stage.room.device(bystander)?.deviceID else {
            preconditionFailure("the bystander is a device")
        }
        let forger = InviteForger(
            budget: budget(runSeed: runSeed),
            name: .bystander(bystanderID, stage.room.address(of: bystander)),
            seedMaterial: Simulation.seedMaterial(runSeed, "attacks/availability/\(kind.rawValue)"))
        // A, and B once it joins.
        let tapped = [stage.victims[0].member, stage.nextMember]
        let forgery = forgeInvites(
            with: forger, tapping: tapped, into: &stage, outcome: &outcome, result: &result, from: join,
            before: { addNewcomer(pair, to: &$0) })
        outcome.screens = ["B on at \(join)"] + stage.victims.map(describe)
        return trial(outcome, result: result, stage: stage, figures: forgery)
    }

    /// The crossing forger's run: the pair held together from the start, every INVITE between them
    /// answered with an INVITE in the invitee's own name from the invitee's address (PROTOCOL.md
    /// 2, tie-break); the pair's time against the same room without the forger, and whether a
    /// forged INVITE cancelled an invitation.
    static func crossingForgerRun(runSeed: UInt64) -> AttackTrial<ForgedInviteResult> {
        let kind = AttackKind.crossingForger
        let pair = VictimPair(runSeed: runSeed)
        var (outcome, result, stage) = startPairRun(pair, runSeed: runSeed, kind: kind)
        let forger = InviteForger(
            budget: budget(runSeed: runSeed), name: .invitee,
            seedMaterial: Simulation.seedMaterial(runSeed, "attacks/availability/\(kind.rawValue)"))
        let forgery = forgeInvites(
            with: forger, tapping: stage.victims.map(\.member), into: &stage, outcome: &outcome,
            result: &result, from: .zero)
        outcome.screens = stage.victims.map(describe)
        return trial(outcome, result: result, stage: stage, figures: forgery)
    }

    /// Runs `stage` with `forger` answering every INVITE between the victims that a tap of the
    /// unicast of `members` shows (calling `before` first at each step), then measures the pair from
    /// `start`, for ``forgedInviteBreaches(_:)`` to judge.
    private static func forgeInvites(
        with forger: InviteForger, tapping members: [Int], into stage: inout AttackStage,
        outcome: inout AttackOutcome,
        result: inout AvailabilityResult, from start: Instant,
        before: (inout AttackStage) -> Void = { _ in }
    ) -> ForgedInviteResult {
        let tap = UnicastTap(victims: members)
        stage.room.hook = TapHook(tap: tap)
        result.budget = forger.budget.perSecond
        // The forger is no participant: it only injects, as a spoofer does.
        var meter = Meter(attacker: -1)
        var watch = InvitationWatch()
        let delay = stage.room.latency / 2
        stage.run(until: runLimit) { stage in
            before(&stage)
            for copy in tap.take() {
                guard let packet = try? Packet(datagram: copy.bytes) else { continue }
                watch.saw(packet, from: copy.source, at: stage.room.now)
                guard case .invite(let invite) = packet, stage.room.member(at: copy.destination) != nil,
                    let forged = forger.answer(
                        invite, from: copy.source, to: copy.destination, at: stage.room.now)
                else { continue }
                stage.inject(forged, after: delay, meter: &meter)
                watch.hit(invite.sessionID, of: copy.source)
            }
            meter.observe(stage)
            return false
        }
        measurePair(&result, stage: stage, meter: meter, from: start)
        var forgery = watch.judge(stage.victims)
        forgery.forged = forger.forged
        forgery.unanswered = forger.unanswered
        if forgery.invitationsHit == 0 {
            outcome.problems.append("no forged INVITE reached an invitation between the victims")
        }
        return forgery
    }

    /// The breach rule of the INVITE forgers: an invitation a forged INVITE cancelled, or the pair
    /// not exchanging within 2× its time without the forger.
    static func forgedInviteBreaches(_ trial: AttackTrial<ForgedInviteResult>) -> [AttackBreach] {
        let forgery = trial.result
        return
            (forgery.cancelled > 0
            ? [.invitationsCancelled(forgery.cancelled, of: forgery.invitationsHit)] : [])
            + pairExchangeBreaches(
                trial, when: "under \(trial.outcome.availability?.budget ?? 0) forged INVITEs/s")
    }

    static func forgedInviteNotes(_ forgeries: [ForgedInviteResult]) -> [String] {
        func sum(_ path: KeyPath<ForgedInviteResult, Int>) -> Int {
            forgeries.reduce(0) { $0 + $1[keyPath: path] }
        }
        return [
            "forged INVITEs \(sum(\.forged)), unanswered \(sum(\.unanswered)); invitations hit "
                + "\(sum(\.invitationsHit)), cancelled \(sum(\.cancelled))"
        ]
    }
}

/// Follows the victims' handshakes as the tap shows them, to tell whether a forged INVITE ended an
/// invitation: the invitee ACCEPTed it, and the inviter neither CONFIRMed it nor completed another
/// handshake with the invitee meanwhile (the tie-break's and a half-open handshake's ways of giving
/// an invitation up).
struct InvitationWatch {
    private struct Invitation {
        let inviter: Int
        let sessionID: UInt64
        let invitee: DeviceID
        let sentAt: Instant
        var hit = false
        var acceptedAt: Instant?
        var confirmed = false
    }

    private var invitations: [Invitation] = []

    /// Notes a handshake packet participant `source` sent at `time`.
    mutating func saw(_ packet: Packet, from source: Int, at time: Instant) {
        switch packet {
        case .invite(let invite):
            guard !invitations.contains(where: { $0.inviter == source && $0.sessionID == invite.sessionID })
            else { return }
            invitations.append(
                Invitation(
                    inviter: source, sessionID: invite.sessionID, invitee: invite.receiver, sentAt: time))
        case .accept(let accept):
            if let index = invitations.firstIndex(where: {
                $0.inviter != source && $0.sessionID == accept.sessionID && $0.acceptedAt == nil
            }) {
                invitations[index].acceptedAt = time
            }
        case .confirm(let confirm):
            if let index = invitations.firstIndex(where: {
                $0.inviter == source && $0.sessionID == confirm.sessionID
            }) {
                invitations[index].confirmed = true
            }
        case .beacon, .query, .busy, .secure, .probe, .probeAck:
            break
        }
    }

    /// Notes that a forged INVITE went to `inviter` for its invitation `sessionID`.
    mutating func hit(_ sessionID: UInt64, of inviter: Int) {
        if let index = invitations.firstIndex(where: { $0.inviter == inviter && $0.sessionID == sessionID }) {
            invitations[index].hit = true
        }
    }

    /// The invitations hit, and those a forged INVITE cancelled, given the victims' screens.
    func judge(_ screens: [VictimScreen]) -> ForgedInviteResult {
        var result = ForgedInviteResult()
        for invitation in invitations where invitation.hit {
            result.invitationsHit += 1
            guard let acceptedAt = invitation.acceptedAt, !invitation.confirmed,
                let screen = screens.first(where: { $0.member == invitation.inviter })
            else { continue }
            let securedOtherwise = screen.secured.contains {
                $0.peer == invitation.invitee && $0.at >= invitation.sentAt
                    && $0.at <= acceptedAt + .milliseconds(100)
            }
            if !securedOtherwise { result.cancelled += 1 }
        }
        return result
    }
}

extension AttackKind {
    /// Availability, cleartext: an observer of the victims' unicast that answers each INVITE with an
    /// INVITE to the inviter in the name of a bystander it has long heard, while the invitee, which
    /// joined late, is not yet established there (its invitation tentative).
    public static let inviteForger = InviteForgerAttack.kind
    /// Availability, cleartext: an observer of the victims' unicast that answers each INVITE with an
    /// INVITE to the inviter in the invitee's own name, from the invitee's address: a crossing
    /// INVITE, which the tie-break acts on.
    public static let crossingForger = CrossingForgerAttack.kind
}

/// The INVITE forgers: an observer of the victims' unicast answering every INVITE with a forged
/// one. They share their budget, breach rule (``Availability/forgedInviteBreaches(_:)``), notes and
/// summary; a kind says whose name it forges in, by its run.
protocol InviteForgerKind: AdversaryKind where Result == ForgedInviteResult {}

extension InviteForgerKind {
    static var budget: AttackBudget { .datagramsPerSecond(ceiling: Availability.budget) }

    static func breaches(_ trial: AttackTrial<ForgedInviteResult>) -> [AttackBreach] {
        Availability.forgedInviteBreaches(trial)
    }

    static func notes(_ runs: [AttackRun<ForgedInviteResult>], users: AttackUsers) -> [String] {
        runs.isEmpty ? [] : Availability.forgedInviteNotes(runs.map(\.result))
    }

    static func summary(_ run: AttackRun<ForgedInviteResult>) -> [String] {
        Availability.forgedInviteNotes([run.result])
    }
}

/// The invite forger, in a bystander's name.
enum InviteForgerAttack: InviteForgerKind {
    static let name = "invite-forger"
    static let pendingFix: String? = nil

    static func run(runSeed: UInt64, users: AttackUsers) -> AttackTrial<ForgedInviteResult> {
        Availability.inviteForgerRun(runSeed: runSeed)
    }
}

/// The crossing forger, in the invitee's own name.
enum CrossingForgerAttack: InviteForgerKind {
    static let name = "crossing-forger"
    static let pendingFix: String? = nil

    static func run(runSeed: UInt64, users: AttackUsers) -> AttackTrial<ForgedInviteResult> {
        Availability.crossingForgerRun(runSeed: runSeed)
    }
}
