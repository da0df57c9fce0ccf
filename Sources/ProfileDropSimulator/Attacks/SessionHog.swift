import ProfileDropCore
import ProfileDropCrypto

extension Availability {
    /// The stages at which a session hog stalls, drawn per run.
    static let hogStalls: [MaliciousBehaviour] = [.consentStall, .withholdInRange, .slowloris]

    /// A strict run against the pair (PROTOCOL.md 11.5): a malicious peer for each victim invites it
    /// right after the victim's first BEACON, before the pair's own first invitation, and then
    /// stalls (the session hog, at a stage drawn per run) or declines after the code (the late
    /// decliner). Whatever the malicious sessions do, the pair must exchange within ``maxRatio``
    /// times its no-attack time, counted from the start: the rule does not wait for the malicious
    /// sessions to end, as a real attacker would not.
    static func hogRun(runSeed: UInt64, kind: AttackKind) -> AttackOutcome {
        let pair = VictimPair(runSeed: runSeed)
        var (outcome, result, stage) = startPairRun(pair, runSeed: runSeed, kind: kind)
        var plan = DeterministicRandom(seedMaterial: Simulation.seedMaterial(runSeed, "attacks/hog/plan"))
        let behaviour: MaliciousBehaviour =
            kind == .lateDecliner
            ? .lateDecline : hogStalls[Int(plan.uniform(below: UInt64(hogStalls.count)))]
        // Each victim's first BEACON goes out within 100 ms of its start; its own first invitation
        // comes after the initial announcement interval, about 270 ms.
        let invitation = Instant.zero + .milliseconds(110)
        var attackers: [Int] = []
        for (index, victim) in stage.victims.enumerated() {
            guard let victimID = stage.room.device(victim.member)?.deviceID else {
                preconditionFailure("the victim is a device")
            }
            attackers.append(
                stage.addSpeaker(
                    MaliciousPeer(
                        behaviour: behaviour, target: victimID,
                        targetAddress: stage.room.address(of: victim.member),
                        card: AttackCards.card(runSeed: runSeed, role: "malicious"),
                        seedMaterial: Simulation.seedMaterial(
                            runSeed, "attacks/hog/\(kind.rawValue)/\(index)"),
                        inviteAt: invitation)))
        }
        var meter = Meter(attacker: attackers[0])
        stage.run(until: runLimit) { stage in
            meter.observe(stage)
            return false
        }
        measurePair(&result, stage: stage, meter: meter)
        outcome.screens = ["malicious peers stall: \(behaviour)"] + stage.victims.map(describe)
        if result.baseline != nil,
            let breach = exchangeBreach(
                result, stage: stage, who: "the pair", when: "beside their malicious peers")
        {
            outcome.breaches.append(breach)
        }
        return finish(outcome, result: result, stage: stage)
    }
}
