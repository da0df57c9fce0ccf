import ProfileDropCore
import ProfileDropCrypto
import ProfileDropSimulator

/// The two victims of a run: who they are for the whole run (a long-term identity from a fixed
/// per-run secret, not from any device's seed) and where they stand, 7 cm apart facing each other.
struct VictimPair {
    static let names = ["A", "B"]
    static let poses = [Pose(x: 0, y: 0, heading: 0), Pose(x: 7, y: 0, heading: 180)]

    let runSeed: UInt64
    let identities: [DeviceIdentity]
    let cards: [ProfileCard]

    init(runSeed: UInt64) {
        self.runSeed = runSeed
        identities = Self.names.map {
            DeviceIdentity(
                secret: BLAKE2b.hash(
                    Simulation.seedMaterial(runSeed, "attacks/identity/\($0)"), outputLength: 32))
        }
        cards = Self.names.map { AttackCards.card(runSeed: runSeed, role: "victim-\($0)") }
    }

    /// The seed material of victim `index`'s device in `phase`: fresh per phase.
    func seedMaterial(_ index: Int, phase: String) -> [UInt8] {
        Simulation.seedMaterial(runSeed, "attacks/\(phase)/victim/\(Self.names[index])")
    }

    /// Adds both victims to `stage`, knowing `knownPeers[i]`.
    func addVictims(to stage: inout AttackStage, phase: String, knownPeers: [[KnownPeer]] = [[], []]) {
        for index in 0..<2 {
            stage.addVictim(
                name: Self.names[index], card: cards[index], identity: identities[index],
                knownPeers: knownPeers[index], pose: Self.poses[index],
                seedMaterial: seedMaterial(index, phase: phase))
        }
    }

    /// An honest exchange between the victims through a plain room with `users` (careful ones see
    /// equal codes and share): each side's `.peerRemembered` record of the other, or nil if it did
    /// not happen.
    func meet(users: AttackUsers) -> [[KnownPeer]]? {
        var stage = AttackStage(users: users, victimsKnown: false)
        addVictims(to: &stage, phase: "meeting")
        stage.run(until: Instant.zero + AttackStage.timeouts.overall) { _ in false }
        let remembered = stage.victims.map(\.remembered)
        guard remembered.allSatisfy({ $0.count == 1 }) else { return nil }
        return remembered
    }
}

/// Cards for attack runs, named after the run so the report can tell whose card reached whom.
enum AttackCards {
    static func card(runSeed: UInt64, role: String) -> ProfileCard {
        let suffix = String(runSeed % 0x1_0000, radix: 16)
        do {
            return try ProfileCard(
                name: "Dog-\(role)-\(suffix)", age: 3, sex: .female, neutered: true, size: .small,
                keywords: ["calm-natured"], owner: "owner-\(role)-\(suffix)")
        } catch {
            preconditionFailure("attack cards are within the card limits: \(error)")
        }
    }
}

/// The man in the middle: it owns the LAN path between the victims (nothing of A reaches B, nor
/// B's of A), and runs two real core devices of its own, M1 facing A and M2 facing B, each claiming
/// to stand 7 cm in front of its victim (the pose of the other victim), sharing its own card. So A
/// pairs with M1 and B with M2, and the adversary is the endpoint of both sessions.
///
/// With `relaysIdentities`, it first tries to pass as each victim's known peer: it puts the IDENT
/// each victim sent it into the session with the other victim (holding that session's first
/// IDENT until it has one, at most 1 s), which it can do only as the endpoint of both sessions.
/// Each victim, taking the other for its known peer, answers with a genuine PROOF made with the
/// pair's bond key; the adversary puts that PROOF into the other session too (leaving its own out
/// until it has one, at most 1 s). There it fails, being bound to the session it was made in
/// (PROTOCOL.md 6.5); a victim that checks it before sending its own gives nothing to relay back.
/// When that fails too, the adversary comes back as a stranger.
final class MITMRelay: AdversaryBrain {
    /// One kind of frame carried from each victim's session into the other victim's.
    private struct FrameRelay {
        /// The frame's bytes, when it is of this kind.
        let bytes: (Frame) -> [UInt8]?
        let frame: ([UInt8]) -> Frame
        /// Whether our device's packet is held whole until the victim's frame is there (IDENT,
        /// which the rest follows), rather than sent without our own frame of the kind (PROOF).
        let holdsPacket: Bool
        /// The latest frame of the kind each victim sent us.
        var fromVictim: [[UInt8]?] = [nil, nil]
        /// Sessions where the relay was given up because the other victim's frame never came.
        var abandoned: [UInt64] = []
        /// Sessions into which we put the other victim's frame.
        var relayedSessions: [UInt64] = []

        /// `frames`, which our device facing victim `side` sends, with its frame of the kind
        /// replaced by the other victim's: held back for at most 1 s from the session's start while
        /// there is none yet, then given up.
        mutating func relaying(_ frames: [Frame], in session: TapSession, side: Int, at time: Instant)
            -> [Frame]
        {
            guard !abandoned.contains(session.sessionID), frames.contains(where: { bytes($0) != nil }) else {
                return frames
            }
            guard let relayed = fromVictim[1 - side] else {
                if let securedAt = session.securedAt, time < securedAt + .seconds(1) {
                    return holdsPacket ? [] : frames.filter { bytes($0) == nil }
                }
                abandoned.append(session.sessionID)
                return frames
            }
            if !relayedSessions.contains(session.sessionID) { relayedSessions.append(session.sessionID) }
            return frames.map { bytes($0) == nil ? $0 : frame(relayed) }
        }
    }

    /// Which victim each of our devices faces: 0 for A, 1 for B.
    private var sides: [(device: DeviceID, side: Int)] = []
    private let relaysIdentities: Bool
    /// Secured sessions so far on each side.
    private var sessionCounts = [0, 0]
    /// The sessions whose IDENT (and then PROOF) we replace.
    private var relayedSessions: [UInt64] = []
    private var idents = FrameRelay(
        bytes: { if case .ident(let bytes) = $0 { bytes } else { nil } }, frame: Frame.ident,
        holdsPacket: true)
    private var proofs = FrameRelay(
        bytes: { if case .proof(let bytes) = $0 { bytes } else { nil } }, frame: Frame.proof,
        holdsPacket: false)

    /// Sessions into which we put the other victim's IDENT.
    var identRelayedSessions: [UInt64] { idents.relayedSessions }
    /// Sessions into which we put the other victim's genuine PROOF.
    var proofRelayedSessions: [UInt64] { proofs.relayedSessions }

    init(relaysIdentities: Bool) { self.relaysIdentities = relaysIdentities }

    /// Sets up both devices in `stage`, whose members 0 and 1 are the victims.
    func addDevices(to stage: inout AttackStage, runSeed: UInt64, phase: String) {
        var hook = PathHook(victims: [0, 1])
        for side in 0..<2 {
            let member = stage.addAdversary(
                card: AttackCards.card(runSeed: runSeed, role: "mitm-\(side + 1)"), consent: .share,
                identity: DeviceIdentity(
                    secret: BLAKE2b.hash(
                        Simulation.seedMaterial(runSeed, "attacks/\(phase)/mitm/\(side)/identity"),
                        outputLength: 32)
                ),
                pose: VictimPair.poses[1 - side],
                seedMaterial: Simulation.seedMaterial(runSeed, "attacks/\(phase)/mitm/\(side)"), policy: self)
            if let id = stage.room.device(member)?.deviceID { sides.append((id, side)) }
            hook.connect(side, member)
        }
        stage.room.hook = hook
    }

    private func side(of device: DeviceID) -> Int? { sides.first { $0.device == device }?.side }

    override func secured(_ session: TapSession, device: DeviceID, at time: Instant) {
        super.secured(session, device: device, at: time)
        guard let side = side(of: device) else { return }
        sessionCounts[side] += 1
        if relaysIdentities && sessionCounts[side] == 1 { relayedSessions.append(session.sessionID) }
    }

    override func received(_ frames: [Frame], in session: TapSession, device: DeviceID, at time: Instant) {
        super.received(frames, in: session, device: device, at: time)
        guard let side = side(of: device) else { return }
        for frame in frames {
            if let ident = idents.bytes(frame) { idents.fromVictim[side] = ident }
            // Only a PROOF made for the known peer the victim took us for is worth relaying.
            if relayedSessions.contains(session.sessionID), let proof = proofs.bytes(frame) {
                proofs.fromVictim[side] = proof
            }
        }
    }

    override func sending(_ frames: [Frame], in session: TapSession, device: DeviceID, at time: Instant)
        -> [Frame]
    {
        guard relayedSessions.contains(session.sessionID), let side = side(of: device) else { return frames }
        let withIdent = idents.relaying(frames, in: session, side: side, at: time)
        // The PROOF follows the IDENT: only into a session that got the other victim's.
        guard idents.relayedSessions.contains(session.sessionID) else { return withIdent }
        return proofs.relaying(withIdent, in: session, side: side, at: time)
    }
}

extension AttackKind {
    /// A man in the middle between two strangers, with two real core devices of its own.
    public static let mitmRelay = MITMRelayAttack.kind
    /// The same man in the middle between two victims that are known peers of each other (an
    /// honest exchange first); it relays their IDENTs, then comes back as a stranger.
    public static let mitmKnownPeers = MITMKnownPeersAttack.kind
}

/// What a man in the middle got, relayed and left the victims to see.
struct ManInTheMiddleResult: Sendable {
    /// What it took and what the victims were shown.
    var assessment = Assessment()
    /// Known peers: sessions into which it put the other victim's IDENT.
    var relayedIdents = 0
    /// Known peers: sessions into which it put the other victim's genuine PROOF.
    var relayedProofs = 0
    /// The honest meeting that makes the victims known peers did not complete (no attack ran).
    var setupFailed = false
}

/// The man in the middle between strangers: a breach is what it takes from careful or unattended
/// users (``Attacks/assessedBreaches(_:users:)``).
enum MITMRelayAttack: AdversaryKind {
    static let name = "mitm-relay"
    static let budget = AttackBudget.devicesOfItsOwn(victims: .pair)
    static let pendingFix: String? = nil

    static func run(runSeed: UInt64, users: AttackUsers) -> AttackTrial<ManInTheMiddleResult> {
        Attacks.manInTheMiddle(runSeed: runSeed, users: users, known: false)
    }

    static func breaches(_ trial: AttackTrial<ManInTheMiddleResult>) -> [AttackBreach] {
        Attacks.assessedBreaches(trial.result.assessment, users: trial.outcome.users)
    }

    static func notes(_ runs: [AttackRun<ManInTheMiddleResult>], users: AttackUsers) -> [String] {
        var notes = [
            "victims' datagrams intercepted \(runs.reduce(0) { $0 + $1.result.assessment.intercepted })"
        ]
        if Attacks.given(runs.map(\.outcome), users: users) {
            notes.append("cards and identities given by careless users")
        }
        return notes
    }

    static func summary(_ run: AttackRun<ManInTheMiddleResult>) -> [String] {
        [Attacks.codesSummary(run.outcome)]
    }
}

/// The man in the middle between known peers, relaying their IDENTs and PROOFs: a breach is a
/// victim shown its device as the known peer, or what it takes from careful or unattended users.
enum MITMKnownPeersAttack: AdversaryKind {
    static let name = "mitm-known-peers"
    static let budget = AttackBudget.devicesOfItsOwn(victims: .pair)
    static let pendingFix: String? = nil

    static func run(runSeed: UInt64, users: AttackUsers) -> AttackTrial<ManInTheMiddleResult> {
        Attacks.manInTheMiddle(runSeed: runSeed, users: users, known: true)
    }

    static func breaches(_ trial: AttackTrial<ManInTheMiddleResult>) -> [AttackBreach] {
        Attacks.assessedBreaches(trial.result.assessment, users: trial.outcome.users)
    }

    static func notes(_ runs: [AttackRun<ManInTheMiddleResult>], users: AttackUsers) -> [String] {
        func sum(_ value: (ManInTheMiddleResult) -> Int) -> Int { runs.reduce(0) { $0 + value($1.result) } }
        var notes = [
            "IDENT relayed in \(sum(\.relayedIdents)) sessions",
            "genuine PROOF relayed in \(sum(\.relayedProofs))",
            "identity-proof-failed \(sum(\.assessment.proofFailures))",
            "adversary shown as known \(sum(\.assessment.adversaryShownKnown))",
        ]
        let failed = runs.filter(\.result.setupFailed).count
        if failed > 0 { notes.append("honest meeting failed in \(failed) runs") }
        if Attacks.given(runs.map(\.outcome), users: users) {
            notes.append("given to a stranger by careless users")
        }
        return notes
    }

    static func summary(_ run: AttackRun<ManInTheMiddleResult>) -> [String] {
        [Attacks.codesSummary(run.outcome)]
    }
}

extension Attacks {
    /// Whether careless `users` gave the adversary something in `cell`: their row's note.
    static func given(_ cell: [AttackOutcome], users: AttackUsers) -> Bool {
        users == .careless && cell.contains { $0.cards + $0.identities > 0 }
    }

    /// A man in the middle's run, between strangers or (`known`) between known peers.
    static func manInTheMiddle(runSeed: UInt64, users: AttackUsers, known: Bool)
        -> AttackTrial<ManInTheMiddleResult>
    {
        var outcome = AttackOutcome(
            runSeed: runSeed, kind: known ? .mitmKnownPeers : .mitmRelay, users: users)
        var result = ManInTheMiddleResult()
        let pair = VictimPair(runSeed: runSeed)
        var knownPeers: [[KnownPeer]] = [[], []]
        if known {
            // Unattended victims met at their terminals first: that meeting's users compared codes.
            guard let met = pair.meet(users: users == .unattended ? .careful : users) else {
                result.setupFailed = true
                outcome.problems.append(
                    "setup: the victims' honest exchange did not complete, so no attack ran")
                return AttackTrial(outcome: outcome, result: result, victims: [])
            }
            knownPeers = met
        }
        var stage = AttackStage(users: users, victimsKnown: known)
        pair.addVictims(to: &stage, phase: "attack", knownPeers: knownPeers)
        let adversary = MITMRelay(relaysIdentities: known)
        adversary.addDevices(to: &stage, runSeed: runSeed, phase: "attack")
        stage.run(until: runLimit) { _ in false }
        result.relayedIdents = adversary.identRelayedSessions.count
        result.relayedProofs = adversary.proofRelayedSessions.count
        result.assessment = assess(
            &outcome, stage: stage, adversary: adversary, bondKey: knownPeers[0].first?.bondKey)
        return AttackTrial(outcome: outcome, result: result, victims: stage.victims)
    }
}
