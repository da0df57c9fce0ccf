import ProfileDropCore

/// What a simulation run records for its checkers: one entry per happening an invariant reads, in
/// the order it happened, then how the run ended. The run only records; ``SimulationChecker``
/// judges.
///
/// The run hands each entry to the checker as it records it rather than keeping the whole trace: a
/// crowded room's datagrams would otherwise all be held to the end. A test builds a trace by hand
/// and hands it over the same way (``SimulationChecker/judge(_:end:scenario:options:scanner:)``).
enum SimulationTrace {
    /// One happening of the run. Devices are named by their index in the scenario.
    enum Entry: Sendable {
        /// `device` sent datagram `number`, holding `bytes`, at `time`.
        case sent(device: Int, number: UInt64, bytes: [UInt8], at: Instant)
        /// A copy of datagram `number`, from `source` (nil: an address nobody holds), reached
        /// `recipient`; `altered` when the network changed its bytes on the way.
        case delivered(number: UInt64, source: Int?, recipient: Int, altered: Bool)
        /// `device` verified and acknowledged `card`, from `peer` when the device named it.
        case cardVerified(device: Int, card: ProfileCard, from: Int?)
        /// `device` delivered `card` to its owner at `time`. `sender` is the peer the device named,
        /// or else the one other device that offers this exact card; nil when neither.
        /// `poses`, when the sender is a device of the run: both true poses at that moment.
        case cardReceived(
            device: Int, card: ProfileCard, sender: Int?, poses: (receiver: Pose, sender: Pose)?, at: Instant)
        /// `device` reported closing with `outcome` at `time`; `nextDatagram` is the number the room
        /// would give the next datagram then.
        case closed(device: Int, outcome: CloseReason, nextDatagram: UInt64, at: Instant)
        /// More than `events` events were due at `time`, one instant: the run stopped there.
        case livelock(events: Int, at: Instant)
    }

    /// How the run ended: what the checkers read once it is over.
    struct End: Sendable {
        /// When the run stopped: every device closed, or the time limit.
        let time: Instant
        /// Every device must have closed by this time.
        let closeBound: Instant
        /// Per device: whether the room holds it closed at the end, reported or not.
        let closedInRoom: [Bool]
    }
}

/// An invariant every simulation run must keep, as the checker that judges it names it when
/// broken.
enum SimulationInvariant: CaseIterable, Sendable {
    /// No datagram carries a card's text fields or photo bytes in the clear.
    case noPlaintext
    /// A delivered card was sent by a device of the run.
    case cardFromAPeer
    /// A delivered card is the one its sender offered.
    case cardAsSent
    /// A card is delivered only between devices close and aligned enough, by their true poses.
    case cardWithinReach
    /// The run never has more events at one instant than it can run (a device asking to be woken
    /// "now" forever).
    case noLivelock
    /// A device reports closing once.
    case closesOnce
    /// A device closes as exchanged only holding a card.
    case exchangedWithACard
    /// A device closes by the bound.
    case closesInTime
    /// A device the room holds closed reported how it closed.
    case closeReported
    /// Every device closes.
    case closes
    /// The close rule (PROTOCOL.md 6.7): a device closed as exchanged only if its peer verified its
    /// card ...
    case peerVerified
    /// ... and its peer, if it delivered nothing, was cut off for good ...
    case cutExplainsLoss
    /// ... before the decision reached it ...
    case decisionUnheard
    /// ... and at most one pose-freshness before the decision.
    case decidedWhileFresh
    /// No card is received from farther than ``Swarm/farDistance`` (the swarm's own check).
    case noFarExchange
    /// The close pair of a swarm run whose conditions allow it exchanges (the swarm's own check).
    case closePairExchanges

    /// The part of the checker that judges it. A switch without `default`, so that a new invariant
    /// must name its part; each part's tests then want a trace that breaks it.
    var checker: SimulationChecker.Part {
        switch self {
        case .noPlaintext: .wire
        case .cardFromAPeer, .cardAsSent, .cardWithinReach: .card
        case .noLivelock, .closesOnce, .exchangedWithACard, .closesInTime, .closeReported, .closes: .close
        case .peerVerified, .cutExplainsLoss, .decisionUnheard, .decidedWhileFresh:
            .closeRule
        case .noFarExchange, .closePairExchanges: .swarm
        }
    }
}

/// A broken invariant and the line that says how.
struct SimulationViolation: Equatable, Sendable {
    let invariant: SimulationInvariant
    let text: String
}

/// What the checkers found in one run: the broken invariants, the first
/// ``maximumListed`` of them listed, and the outcomes allowed only by a rule's exception.
struct SimulationFindings {
    /// Violations listed per run; a broken invariant often repeats on every datagram.
    static let maximumListed = 50

    private(set) var violations: [SimulationViolation] = []
    /// Violations past ``maximumListed``, counted only.
    private(set) var unlisted = 0
    private(set) var notes: [String] = []

    /// Notes that `invariant` broke, as `text` says.
    mutating func report(_ invariant: SimulationInvariant, _ text: String) {
        if violations.count < Self.maximumListed {
            violations.append(SimulationViolation(invariant: invariant, text: text))
        } else {
            unlisted += 1
        }
    }

    /// Notes an outcome a rule's exception allowed.
    mutating func note(_ text: String) { notes.append(text) }

    /// One line per listed violation, then how many more there were.
    var lines: [String] {
        violations.map(\.text) + (unlisted > 0 ? ["and \(unlisted) more violations"] : [])
    }
}
