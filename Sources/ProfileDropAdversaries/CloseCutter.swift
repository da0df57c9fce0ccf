import ProfileDropCore
import ProfileDropCrypto
import ProfileDropSimulator

/// How a close cutter's run ended.
public enum CutEnding: String, Sendable, CaseIterable {
    /// Both victims closed as exchanged: the cut came too late to matter.
    case both = "both exchanged"
    /// The silenced victim exchanged and the one cut off from it did not: the uneven outcome an
    /// on-path attacker can force by cutting during the silenced side's confirmation hold
    /// (PROTOCOL.md 11.4, CLOSE withheld).
    case silencedOnly = "only the silenced side exchanged"
    /// Neither exchanged: the cut came before either could decide.
    case neither = "neither exchanged"
    /// The victim cut off from the other exchanged and the other did not. It hears everything the
    /// other needs from it, so this is a breach.
    case cutOffOnly = "only the cut-off side exchanged"
}

/// What the close cutter did and what it left.
public struct CutCloseResult: Sendable {
    /// The victim whose datagrams to the other it dropped from the cut on.
    public var silenced = ""
    /// When it cut, after the first SECURE packet it saw.
    public var cutAfter: Duration = .zero
    /// Datagrams it dropped.
    public var dropped = 0
    /// How the run ended.
    public var ending: CutEnding = .neither
    /// How the cut-off victim's session ended, when the silenced one exchanged alone.
    public var cutOffEnd: String?
    /// How long before the silenced victim decided it was cut, when it exchanged.
    public var cutBeforeDecision: Duration?
}

/// An attacker on the path between the victims that, from a moment of its choosing, drops
/// everything one victim (the silenced one) sends to the other (the cut-off one), for good, and
/// sends nothing. It holds no key. The moment is drawn per run, 0 to 4 s after the first SECURE
/// packet it sees, which spans ranging, the code, the cards and the confirmation hold of an
/// exchange whose users share at once; so the runs sample every cut, among them the ones PROTOCOL.md
/// 6.7 cannot prevent (in the silenced side's confirmation hold).
final class CloseCutter {
    let silenced: Int
    let cutOff: Int
    let cutAfter: Duration
    /// When the first SECURE packet between the victims left.
    private(set) var firstSecureAt: Instant?
    private(set) var dropped = 0

    /// The longest wait after the first SECURE packet, in milliseconds.
    static let latestCutMilliseconds: UInt64 = 4_000

    init(silenced: Int, cutOff: Int, cutAfter: Duration) {
        self.silenced = silenced
        self.cutOff = cutOff
        self.cutAfter = cutAfter
    }

    /// Notes the first SECURE packet, from which the cut is timed.
    func saw(_ datagram: OutgoingDatagram, at time: Instant) {
        guard firstSecureAt == nil, case .unicast = datagram.destination, datagram.bytes.count > 3,
            datagram.bytes[3] == PacketType.secure.rawValue
        else { return }
        firstSecureAt = time
    }

    /// Whether `copy` is dropped: it goes from the silenced victim to the cut-off one, and left at
    /// or after the cut.
    func drops(_ copy: InFlightDatagram) -> Bool {
        guard copy.source == silenced, copy.recipient == cutOff, let first = firstSecureAt,
            copy.sentAt >= first + cutAfter
        else { return false }
        dropped += 1
        return true
    }
}

/// The room's hook for a ``CloseCutter``.
struct CutHook: DatagramHook {
    let cutter: CloseCutter

    mutating func sending(_ datagram: OutgoingDatagram, from source: Int, number: UInt64, at time: Instant) {
        cutter.saw(datagram, at: time)
    }

    mutating func route(_ copy: InFlightDatagram) -> DatagramVerdict {
        cutter.drops(copy) ? .drop : .deliver
    }
}

extension Availability {
    /// The close cutter's run: the pair, whose users share at once, with one direction of their path
    /// cut for good from a drawn moment. No exchange is required (a cut before the decision ends
    /// it). Breaches: the cut-off victim exchanges while the silenced one does not (it hears all
    /// the silenced one needs from it, and the silenced one believes its CLOSE); a victim closes as
    /// exchanged without the other's card, or with a card that is not the other's; a deadline
    /// passes (as in every availability run).
    static func closeCutterRun(runSeed: UInt64) -> AttackTrial<CutCloseResult> {
        let kind = AttackKind.closeCutter
        let pair = VictimPair(runSeed: runSeed)
        var (outcome, result, stage) = startPairRun(pair, runSeed: runSeed, kind: kind)
        var draw = DeterministicRandom(
            seedMaterial: Simulation.seedMaterial(runSeed, "attacks/availability/\(kind.rawValue)"))
        let silencedIndex = Int(draw.uniform(below: 2))
        let cutAfter = Duration.milliseconds(
            Int64(draw.uniform(below: CloseCutter.latestCutMilliseconds + 1)))
        let members = stage.victims.map(\.member)
        let cutter = CloseCutter(
            silenced: members[silencedIndex], cutOff: members[1 - silencedIndex], cutAfter: cutAfter)
        stage.room.hook = CutHook(cutter: cutter)
        // The cutter sends nothing.
        var meter = Meter(attacker: -1)
        stage.run(until: runLimit) { stage in
            meter.observe(stage)
            return false
        }
        measurePair(&result, stage: stage, meter: meter)
        result.exchangeRequired = false
        let silenced = stage.victims[silencedIndex]
        let cutOff = stage.victims[1 - silencedIndex]
        var cut = CutCloseResult(silenced: silenced.name, cutAfter: cutAfter, dropped: cutter.dropped)
        if silenced.closed == .exchanged, let decided = silenced.closedAt, let first = cutter.firstSecureAt {
            cut.cutBeforeDecision = decided - (first + cutAfter)
        }
        switch (silenced.closed == .exchanged, cutOff.closed == .exchanged) {
        case (true, true): cut.ending = .both
        case (true, false):
            cut.ending = .silencedOnly
            // The session that was cut: later invitations into the cut path go unanswered.
            let cutSession = cutOff.ended.last { $0.reason != .timeout(.handshake) }
            cut.cutOffEnd = cutSession.map { label($0.reason) } ?? cutOff.closed.map(label)
        case (false, false): cut.ending = .neither
        case (false, true): cut.ending = .cutOffOnly
        }
        outcome.screens = stage.victims.map(describe)
        if cutter.firstSecureAt == nil {
            outcome.problems.append("the cutter saw no SECURE packet to time its cut from")
        }
        return trial(outcome, result: result, stage: stage, figures: cut)
    }

    /// The close cutter's breach rule: the cut-off victim exchanging while the silenced one does
    /// not, and a victim closing as exchanged without the other's card alone.
    static func cutCloseBreaches(_ trial: AttackTrial<CutCloseResult>) -> [AttackBreach] {
        let cut = trial.result
        var breaches: [AttackBreach] = []
        if cut.ending == .cutOffOnly, let cutOff = trial.victims.first(where: { $0.name != cut.silenced }) {
            breaches.append(.unevenCut(cutOff: cutOff.name, silenced: cut.silenced, cutAfter: cut.cutAfter))
        }
        for (index, victim) in trial.victims.enumerated() where victim.closed == .exchanged {
            let expected = trial.victims[1 - index].card
            if victim.receivedCards != [expected] {
                breaches.append(.wrongCards(victim: victim.name, received: victim.receivedCards.count))
            }
        }
        return breaches
    }

    /// The notes of a cell of close cutter runs: how the runs ended, and when the uneven endings
    /// were cut.
    static func cutCloseNotes(_ results: [CutCloseResult]) -> [String] {
        let endings = CutEnding.allCases.map { ending in
            "\(ending.rawValue) \(results.filter { $0.ending == ending }.count)"
        }
        let uneven = results.filter { $0.ending == .silencedOnly }
        var notes = ["endings: \(endings.joined(separator: ", "))"]
        let before = uneven.compactMap(\.cutBeforeDecision)
        if let least = before.min(), let most = before.max() {
            var ends: [String] = []
            for end in uneven.compactMap(\.cutOffEnd) where !ends.contains(end) { ends.append(end) }
            notes.append(
                "uneven when cut \(seconds(least))–\(seconds(most)) before the silenced side decided; "
                    + "the cut-off side ended \(ends.joined(separator: ", "))")
        }
        let even = results.filter { $0.ending == .both }.compactMap(\.cutBeforeDecision).filter { $0 > .zero }
        if let most = even.max() {
            notes.append("both exchanged when cut up to \(seconds(most)) before the silenced side decided")
        }
        notes.append("datagrams dropped \(results.reduce(0) { $0 + $1.dropped })")
        return notes
    }
}

extension AttackKind {
    /// Availability, on the path: drops everything one victim sends the other, for good, from a
    /// moment drawn 0 to 4 s after their first SECURE packet; it sends nothing. A cut PROTOCOL.md
    /// 6.7 cannot prevent (in that victim's confirmation hold) leaves the outcomes uneven.
    public static let closeCutter = CloseCutterAttack.kind
}

/// The close cutter (``Availability/cutCloseBreaches(_:)``); no exchange is required.
enum CloseCutterAttack: AdversaryKind {
    static let name = "close-cutter"
    static let budget = AttackBudget.nothingSent
    static let pendingFix: String? = nil

    static func run(runSeed: UInt64, users: AttackUsers) -> AttackTrial<CutCloseResult> {
        Availability.closeCutterRun(runSeed: runSeed)
    }

    static func breaches(_ trial: AttackTrial<CutCloseResult>) -> [AttackBreach] {
        Availability.cutCloseBreaches(trial)
    }

    static func notes(_ runs: [AttackRun<CutCloseResult>], users: AttackUsers) -> [String] {
        runs.isEmpty ? [] : Availability.cutCloseNotes(runs.map(\.result))
    }

    static func summary(_ run: AttackRun<CutCloseResult>) -> [String] {
        [
            "\(run.result.silenced) silenced \(Availability.seconds(run.result.cutAfter)) after the first SECURE packet"
        ]
            + Availability.cutCloseNotes([run.result])
    }
}
