import ProfileDropCore
import ProfileDropCrypto
import ProfileDropSimulator

/// The code grinder: a man in the middle (as ``MITMRelay``, without relaying IDENT) that also tries
/// to make both victims' codes equal.
///
/// It lets A's session with M1 run to its code first (the target). Towards B it plays the responder
/// (B's multicast never reaches its devices, so B invites them): its device commits to a nonce,
/// B answers with its NONCE, and the adversary, which knows both nonces and the handshake hash,
/// computes B's code before B can. If it differs from the target it withholds the REVEAL, closes
/// the session as out of range (which does not end B's device), abandons that device and brings a
/// fresh one, with a new device id, for B to invite again: up to `maxAttempts`, while A's user is
/// still waiting. If the code matches it reveals, and both screens show the same code.
///
/// Grinding is pointless once A's user agreed without comparing (a careless user): then it reveals
/// whatever the code.
final class CodeGrinder: AdversaryBrain {
    let maxAttempts: Int
    private let runSeed: UInt64
    /// A's code, from M1's `.verified`.
    private(set) var target: String?
    /// Whether A's user agreed (its CONSENT reached M1).
    private(set) var sideOneAgreed = false
    private var sideOne: (member: Int, device: DeviceID)?
    /// Our devices towards B, oldest first.
    private var sideTwo: [(member: Int, device: DeviceID)] = []
    /// B's NONCE in each of our sessions with it.
    private var victimNonces: [(session: UInt64, nonce: [UInt8])] = []
    private var aborted: [DeviceID] = []
    private var toRetire: [DeviceID] = []
    /// Sessions with B in which we held B's code in hand and decided: aborted or revealed.
    private var decidedSessions: [UInt64] = []
    /// Whether some attempt's code matched the target.
    private(set) var matched = false
    /// Whether the grinder stopped bringing devices.
    private(set) var gaveUp = false

    init(runSeed: UInt64, maxAttempts: Int) {
        self.runSeed = runSeed
        self.maxAttempts = maxAttempts
    }

    /// Sets up M1 facing A and the first device facing B in `stage`, whose members 0 and 1 are the
    /// victims.
    func addDevices(to stage: inout AttackStage) {
        var hook = PathHook(victims: [0, 1])
        let member = stage.addAdversary(
            card: AttackCards.card(runSeed: runSeed, role: "grinder-1"), consent: .share, identity: nil,
            pose: VictimPair.poses[1], seedMaterial: Simulation.seedMaterial(runSeed, "attacks/grinder/m1"),
            policy: self)
        hook.connect(0, member)
        stage.room.hook = hook
        if let id = stage.room.device(member)?.deviceID { sideOne = (member, id) }
        spawn(in: &stage)
    }

    /// A fresh device facing B: B hears its beacons, it hears none of B's multicast.
    private func spawn(in stage: inout AttackStage) {
        let attempt = sideTwo.count
        let member = stage.addAdversary(
            card: AttackCards.card(runSeed: runSeed, role: "grinder-2"), consent: .share, identity: nil,
            pose: VictimPair.poses[0],
            seedMaterial: Simulation.seedMaterial(runSeed, "attacks/grinder/m2/\(attempt)"), policy: self)
        if var hook = stage.room.hook as? PathHook {
            hook.rules.append(PathHook.Rule(from: member, to: 1, unicastOnly: false))
            hook.rules.append(PathHook.Rule(from: 1, to: member, unicastOnly: true))
            stage.room.hook = hook
        }
        if let id = stage.room.device(member)?.deviceID { sideTwo.append((member, id)) }
    }

    /// Devices brought towards B.
    var devicesBrought: Int { sideTwo.count }

    /// Sessions with B in which the grinder held B's code in hand and decided: aborted or revealed.
    var decidedAttempts: Int { decidedSessions.count }

    /// The adversary's move after each step; true once the attack is over.
    func afterStep(_ stage: inout AttackStage) -> Bool {
        for (member, event) in stage.adversaryEvents where member == sideOne?.member {
            if case .verified(let verification) = event, target == nil { target = verification.code }
        }
        for device in toRetire {
            guard let member = sideTwo.first(where: { $0.device == device })?.member else { continue }
            stage.retire(member)
            if var hook = stage.room.hook as? PathHook {
                hook.isolate(member)
                stage.room.hook = hook
            }
        }
        let brokeOff = !toRetire.isEmpty
        toRetire.removeAll()
        let sideOneWaiting = stage.victims[0].closed == nil
        if !gaveUp && !sideOneWaiting {
            gaveUp = true
            // A's user left without agreeing: nothing to match any more, so the device facing B
            // goes too. (After A agreed, B's pairing goes on: there was nothing to grind.)
            if !sideOneAgreed && !matched {
                for entry in sideTwo where !aborted.contains(entry.device) { stage.retire(entry.member) }
            }
        }
        if brokeOff && !gaveUp {
            if sideTwo.count < maxAttempts { spawn(in: &stage) } else { gaveUp = true }
        }
        guard gaveUp || matched else { return false }
        let victimB = stage.stage(of: stage.victims[1].member)
        return stage.victims[1].closed != nil || victimB == .discovering
    }

    override func received(_ frames: [Frame], in session: TapSession, device: DeviceID, at time: Instant) {
        super.received(frames, in: session, device: device, at: time)
        if device == sideOne?.device {
            for case .consent(let decision, _) in frames where decision != .decline { sideOneAgreed = true }
        } else {
            for case .nonce(let nonce) in frames
            where !victimNonces.contains(where: { $0.session == session.sessionID }) {
                victimNonces.append((session.sessionID, nonce))
            }
        }
    }

    override func sending(_ frames: [Frame], in session: TapSession, device: DeviceID, at time: Instant)
        -> [Frame]
    {
        guard device != sideOne?.device else { return frames }
        if aborted.contains(device) { return [] }
        guard
            let revealed = frames.lazy.compactMap({ frame -> [UInt8]? in
                if case .reveal(let nonce) = frame { return nonce }
                return nil
            }).first,
            let handshakeHash = session.handshakeHash,
            let victimNonce = victimNonces.first(where: { $0.session == session.sessionID })?.nonce
        else { return frames }
        guard let target else {
            // A's code is not known yet: keep B's code from B until it is.
            return frames.filter { if case .reveal = $0 { false } else { true } }
        }
        let code = VerificationCode.code(
            handshakeHash: handshakeHash, initiatorNonce: victimNonce, responderNonce: revealed)
        if !decidedSessions.contains(session.sessionID) { decidedSessions.append(session.sessionID) }
        if code == target {
            matched = true
            return frames
        }
        if sideOneAgreed || matched { return frames }
        aborted.append(device)
        toRetire.append(device)
        return [.close(CloseFrame(code: .outOfRange))]
    }
}

/// The grinder's best strategy in isolation, on the code functions alone, so that a code of few
/// digits (where chance is measurable) can be tried many times. The core always shows six digits.
enum GrindingTrials {
    /// Version 2, commit-then-reveal: a grinder playing the responder commits to its nonce before
    /// it sees the victim's; after seeing it, it tries `alternatives` other nonces for one that
    /// gives `target`, but the victim accepts only a REVEAL that opens the commitment. Returns how
    /// many of `trials` sessions showed the target code (each trial's target is the code of an
    /// independent session, as the other victim's screen is).
    static func commitReveal(trials: Int, digits: Int, alternatives: Int, seed: UInt64) -> Int {
        var random = DeterministicRandom(
            seedMaterial: Simulation.seedMaterial(seed, "grinding/commit-reveal"))
        var matches = 0
        for _ in 0..<trials {
            let target = VerificationCode.code(
                handshakeHash: random.bytes(32), initiatorNonce: random.bytes(32),
                responderNonce: random.bytes(32), digits: digits)
            let handshakeHash = random.bytes(32)
            let committed = random.bytes(VerificationCode.nonceLength)
            let commitment = VerificationCode.commitment(
                handshakeHash: handshakeHash, responderNonce: committed)
            let victimNonce = random.bytes(VerificationCode.nonceLength)
            // The grinder now knows everything. If its committed nonce gives the target it reveals
            // it; otherwise it looks for another nonce that does.
            var reveal = committed
            let honest = VerificationCode.code(
                handshakeHash: handshakeHash, initiatorNonce: victimNonce, responderNonce: committed,
                digits: digits)
            for _ in 0..<(honest == target ? 0 : alternatives) {
                let candidate = random.bytes(VerificationCode.nonceLength)
                let code = VerificationCode.code(
                    handshakeHash: handshakeHash, initiatorNonce: victimNonce, responderNonce: candidate,
                    digits: digits)
                if code == target {
                    reveal = candidate
                    break
                }
            }
            // The victim's check (Pairing's REVEAL): a nonce that does not open the commitment fails
            // the session loudly, so only the committed nonce ever gives a code.
            guard
                VerificationCode.commitment(handshakeHash: handshakeHash, responderNonce: reveal)
                    == commitment
            else { continue }
            let shown = VerificationCode.code(
                handshakeHash: handshakeHash, initiatorNonce: victimNonce, responderNonce: reveal,
                digits: digits)
            if shown == target { matches += 1 }
        }
        return matches
    }

    /// A version 1 style code: a hash of the transcript whose last input (CONFIRM's payload) the
    /// grinder picks after seeing everything else. It tries up to `candidates` payloads per
    /// session. Returns how many of `trials` sessions showed the target code.
    static func lastInputChosen(trials: Int, digits: Int, candidates: Int, seed: UInt64) -> Int {
        var random = DeterministicRandom(seedMaterial: Simulation.seedMaterial(seed, "grinding/last-input"))
        var matches = 0
        for _ in 0..<trials {
            let target = VerificationCode.code(
                handshakeHash: random.bytes(32), initiatorNonce: [], responderNonce: [], digits: digits)
            let transcript = random.bytes(200)
            for _ in 0..<candidates {
                let payload = random.bytes(7)
                let code = VerificationCode.code(
                    handshakeHash: BLAKE2b.hash(transcript + payload), initiatorNonce: [], responderNonce: [],
                    digits: digits)
                if code == target {
                    matches += 1
                    break
                }
            }
        }
        return matches
    }
}

extension AttackKind {
    /// A man in the middle that aborts and retries B's pairing until B's code equals A's.
    public static let codeGrinder = CodeGrinderAttack.kind
}

/// What the grinder tried, and what it took.
struct GrindResult: Sendable {
    /// What it took and what the victims were shown.
    var assessment = Assessment()
    /// Sessions with B decided on B's code.
    var attempts = 0
    /// Devices brought towards B.
    var devices = 0
    /// Whether some attempt matched A's code.
    var matched = false
}

/// The code grinder: a breach is what it takes from careful or unattended users, whatever code it
/// ground to (``Attacks/assessedBreaches(_:users:)``).
enum CodeGrinderAttack: AdversaryKind {
    static let name = "code-grinder"
    static let budget = AttackBudget.devicesOfItsOwn(victims: .pair)
    static let pendingFix: String? = nil
    /// Most devices a grinder brings towards B in one run.
    static let attempts = 32

    static func run(runSeed: UInt64, users: AttackUsers) -> AttackTrial<GrindResult> {
        var outcome = AttackOutcome(runSeed: runSeed, kind: kind, users: users)
        var result = GrindResult()
        let pair = VictimPair(runSeed: runSeed)
        var stage = AttackStage(users: users, victimsKnown: false)
        pair.addVictims(to: &stage, phase: "attack")
        let adversary = CodeGrinder(runSeed: runSeed, maxAttempts: attempts)
        adversary.addDevices(to: &stage)
        stage.run(until: Attacks.runLimit) { adversary.afterStep(&$0) }
        result.attempts = adversary.decidedAttempts
        result.devices = adversary.devicesBrought
        result.matched = adversary.matched
        result.assessment = Attacks.assess(&outcome, stage: stage, adversary: adversary, bondKey: nil)
        return AttackTrial(outcome: outcome, result: result, victims: stage.victims)
    }

    static func breaches(_ trial: AttackTrial<GrindResult>) -> [AttackBreach] {
        Attacks.assessedBreaches(trial.result.assessment, users: trial.outcome.users)
    }

    static func notes(_ runs: [AttackRun<GrindResult>], users: AttackUsers) -> [String] {
        let attempts = runs.reduce(0) { $0 + $1.result.attempts }
        let most = runs.map(\.result.attempts).max() ?? 0
        var notes = [
            "grind attempts \(attempts) (at most \(most) in a run)",
            "matches \(runs.filter(\.result.matched).count)",
        ]
        if Attacks.given(runs.map(\.outcome), users: users) {
            notes.append("careless users agreed before any comparison")
        }
        return notes
    }

    static func summary(_ run: AttackRun<GrindResult>) -> [String] {
        [Attacks.codesSummary(run.outcome), "\(run.result.attempts) grind attempts"]
    }
}
