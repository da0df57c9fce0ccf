import ProfileDropCore
import ProfileDropCrypto
import ProfileDropSimulator

/// What the SECURE replayer sent, and what the victims did with it.
public struct ReplayedSecureResult: Sendable {
    /// Copies sent unchanged to their recipient, from their sender's address.
    public var replayed = 0
    /// Copies with one bit flipped, header or ciphertext.
    public var tampered = 0
    /// Copies sent back to their sender, from their recipient's address.
    public var reflected = 0
    /// SECURE packets seen that the budget left alone.
    public var unanswered = 0
    /// The victims' rejected datagrams in the run, by the name of the rule each broke.
    public var rejections: [String: Int] = [:]
    /// Whether the victims' exchange took exactly as long as without the replayer (else a breach).
    public var unchanged = false
}

/// An observer on an open network that sends the victims' own SECURE packets back at them, from
/// the address each came from, 1 ms to 3 s after the original arrived: in turn, one unchanged to
/// its recipient (a replay, in its session or after it), one with a single bit flipped anywhere,
/// header or ciphertext (a tampered packet), and one to its sender (a reflection). It holds no key: what
/// anyone on the path of the victims' unicast can send (PROTOCOL.md 11.4, "Inside SECURE"), at most
/// its budget of datagrams in any second of the run. A copy never arrives before its original: one
/// that did would only be the genuine packet on a faster path, and the victims would rightly act
/// on it sooner.
final class SecureReplayer {
    private enum Mode: CaseIterable {
        case replay, tamper, reflect
    }

    private var budget: Availability.DatagramBudget
    /// The longest a copy comes after its original, in milliseconds.
    static let longestDelayMilliseconds: UInt64 = 3_000
    private var random: DeterministicRandom
    private var turn = 0
    private(set) var result = ReplayedSecureResult()

    init(budget: Int, seedMaterial: [UInt8]) {
        self.budget = Availability.DatagramBudget(perSecond: budget)
        random = DeterministicRandom(seedMaterial: seedMaterial)
    }

    /// What it sends for the SECURE datagram `bytes`, seen going from participant `sender` (at
    /// `senderAddress`) to participant `recipient` (at `recipientAddress`) at `time`, and how long
    /// after the original arrived it arrives; nil when this second's budget is spent.
    func answer(
        _ bytes: [UInt8], from sender: Int, at senderAddress: PeerAddress, to recipient: Int,
        at recipientAddress: PeerAddress, time: Instant
    ) -> (copy: ForgedDatagram, delay: Duration)? {
        guard budget.spend(at: time) else {
            result.unanswered += 1
            return nil
        }
        let delay = Duration.milliseconds(Int64(1 + random.uniform(below: Self.longestDelayMilliseconds)))
        let mode = Mode.allCases[turn % Mode.allCases.count]
        turn += 1
        switch mode {
        case .replay:
            result.replayed += 1
            return (ForgedDatagram(bytes: bytes, source: senderAddress, recipient: recipient), delay)
        case .tamper:
            result.tampered += 1
            var tampered = bytes
            let index = Int(random.uniform(below: UInt64(bytes.count)))
            tampered[index] ^= UInt8(1) << UInt8(random.uniform(below: 8))
            return (ForgedDatagram(bytes: tampered, source: senderAddress, recipient: recipient), delay)
        case .reflect:
            result.reflected += 1
            return (ForgedDatagram(bytes: bytes, source: recipientAddress, recipient: sender), delay)
        }
    }
}

extension Availability {
    /// The SECURE replayer's run: the pair against the same room without it, as every cleartext
    /// attacker. Every copy it sends must change nothing: a breach is a victim's session ending
    /// otherwise than exchanged, or the pair's exchange taking any other time than without the
    /// replayer (beyond ``maxRatio`` times it, the usual breach).
    static func secureReplayerRun(runSeed: UInt64) -> AttackTrial<ReplayedSecureResult> {
        let kind = AttackKind.secureReplayer
        let pair = VictimPair(runSeed: runSeed)
        var (outcome, result, stage) = startPairRun(pair, runSeed: runSeed, kind: kind)
        let tap = UnicastTap(victims: stage.victims.map(\.member))
        stage.room.hook = TapHook(tap: tap)
        let budget = budget(runSeed: runSeed)
        result.budget = budget
        let replayer = SecureReplayer(
            budget: budget,
            seedMaterial: Simulation.seedMaterial(runSeed, "attacks/availability/\(kind.rawValue)"))
        // The replayer is no participant: it only injects, as a spoofer does.
        var meter = Meter(attacker: -1)
        stage.run(until: runLimit) { stage in
            for copy in tap.take() {
                guard case .secure? = try? Packet(datagram: copy.bytes),
                    let recipient = stage.room.member(at: copy.destination),
                    let forged = replayer.answer(
                        copy.bytes, from: copy.source, at: stage.room.address(of: copy.source),
                        to: recipient, at: copy.destination, time: stage.room.now)
                else { continue }
                stage.inject(forged.copy, after: stage.room.latency + forged.delay, meter: &meter)
            }
            meter.observe(stage)
            return false
        }
        measurePair(&result, stage: stage, meter: meter)
        var replays = replayer.result
        replays.unchanged = result.baseline != nil && result.underAttack == result.baseline
        for victim in stage.victims {
            guard let counters = (stage.room.device(victim.member) as? Device)?.counters else { continue }
            for code in ProtocolError.Code.allCases where counters.rejected(code) > 0 {
                replays.rejections[code.name, default: 0] += counters.rejected(code)
            }
        }
        outcome.screens = stage.victims.map(describe)
        if replays.replayed + replays.tampered + replays.reflected == 0 {
            outcome.problems.append("the replayer saw no SECURE packet to send back")
        }
        return trial(outcome, result: result, stage: stage, figures: replays)
    }

    /// The SECURE replayer's breach rule: a victim's session ending otherwise than exchanged; the
    /// pair's exchange rule; and, within it, any other exchange time than without the replayer.
    static func replayedSecureBreaches(_ trial: AttackTrial<ReplayedSecureResult>) -> [AttackBreach] {
        var breaches: [AttackBreach] = []
        for victim in trial.victims {
            for ended in victim.ended where ended.reason != .exchanged {
                breaches.append(
                    .sessionEndedUnderReplays(
                        victim: victim.name, at: ended.at, ended: SessionEnd(ended.reason)))
            }
        }
        let exchange = pairExchangeBreaches(
            trial, when: "under \(trial.outcome.availability?.budget ?? 0) replayed SECURE packets/s")
        if !exchange.isEmpty {
            breaches += exchange
        } else if let baseline = trial.outcome.availability?.baseline,
            let underAttack = trial.outcome.availability?.underAttack, underAttack != baseline
        {
            // Every copy must be dropped without effect: the run is the no-attack run, to the
            // nanosecond.
            breaches.append(.replaysChangedTheRun(underAttack: underAttack, baseline: baseline))
        }
        return breaches
    }

    /// The notes of a cell of SECURE replayer runs: the copies by kind, the victims' rejections by
    /// rule, and the runs that were the no-attack run exactly.
    static func replayedSecureNotes(_ results: [ReplayedSecureResult]) -> [String] {
        func sum(_ path: KeyPath<ReplayedSecureResult, Int>) -> Int {
            results.reduce(0) { $0 + $1[keyPath: path] }
        }
        var rejections: [String: Int] = [:]
        for result in results { rejections.merge(result.rejections, uniquingKeysWith: +) }
        // Sorted by name: the dictionary's order must not reach the output.
        let rejected = rejections.keys.sorted().map { "\($0) \(rejections[$0] ?? 0)" }
            .joined(separator: ", ")
        let unchanged = results.filter(\.unchanged).count
        return [
            "SECURE copies replayed \(sum(\.replayed)), tampered \(sum(\.tampered)), "
                + "reflected \(sum(\.reflected)), unanswered \(sum(\.unanswered)); "
                + "victims rejected: \(rejected.isEmpty ? "none" : rejected); "
                + "exchange time unchanged in \(unchanged) of \(results.count) runs"
        ]
    }
}

extension AttackKind {
    /// Availability, cleartext: an observer of the victims' unicast that sends their SECURE packets
    /// back at them, from the address each came from, 1 ms to 3 s after the original: replayed
    /// unchanged, with one bit flipped, or reflected to the sender.
    public static let secureReplayer = SecureReplayerAttack.kind
}

/// The SECURE replayer (``Availability/replayedSecureBreaches(_:)``).
enum SecureReplayerAttack: AdversaryKind {
    static let name = "secure-replayer"
    static let budget = AttackBudget.datagramsPerSecond(ceiling: Availability.budget)
    static let pendingFix: String? = nil

    static func run(runSeed: UInt64, users: AttackUsers) -> AttackTrial<ReplayedSecureResult> {
        Availability.secureReplayerRun(runSeed: runSeed)
    }

    static func breaches(_ trial: AttackTrial<ReplayedSecureResult>) -> [AttackBreach] {
        Availability.replayedSecureBreaches(trial)
    }

    static func notes(_ runs: [AttackRun<ReplayedSecureResult>], users: AttackUsers) -> [String] {
        runs.isEmpty ? [] : Availability.replayedSecureNotes(runs.map(\.result))
    }

    static func summary(_ run: AttackRun<ReplayedSecureResult>) -> [String] {
        Availability.replayedSecureNotes([run.result])
    }
}
