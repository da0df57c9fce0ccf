import ProfileDropCore
import ProfileDropCrypto

/// Where a simulated datagram goes: every other node on the sender's side of any partition, or one
/// node by index.
public enum NetworkDestination: Equatable, Sendable, CustomStringConvertible {
    /// Every node except the sender that is not cut off from it.
    case multicast
    /// The node with this index.
    case unicast(Int)

    public var description: String {
        switch self {
        case .multicast: return "multicast"
        case .unicast(let node): return "node\(node)"
        }
    }
}

/// A copy of a datagram arriving at one node.
public struct Delivery: Equatable, Sendable {
    /// When it arrives.
    public let time: Instant
    /// The sending node.
    public let source: Int
    /// The receiving node.
    public let recipient: Int
    /// The datagram as sent.
    public let bytes: [UInt8]
    /// Which send this copy belongs to, counting from zero across the whole network.
    public let datagramNumber: UInt64
    /// Whether a bit of this copy was flipped in flight (its recipient cannot authenticate it).
    public let corrupted: Bool
}

/// What the test-only impairment hook of ``SimulatedNetwork`` decides for one copy on the link from
/// sender to recipient, before the random ``NetworkFaults`` apply.
public enum LinkImpairment: Equatable, Sendable {
    /// Let the random faults decide.
    case pass
    /// Drop this copy.
    case drop
    /// Add this much delay on top of the random faults.
    case delay(Duration)
}

/// Traffic counters. "Sent" counts what a node transmitted (one multicast counts once); the other
/// counters count copies on their way to one recipient each.
public struct NetworkStatistics: Equatable, Sendable {
    /// Datagrams transmitted, per node.
    public var sentDatagrams: [Int]
    /// Bytes transmitted, per node.
    public var sentBytes: [Int]
    /// Copies handed to a recipient, per recipient.
    public var deliveredDatagrams: [Int]
    /// Copies lost to the random loss rate.
    public var lost = 0
    /// Copies lost because a partition separated sender and recipient.
    public var partitioned = 0
    /// Extra copies created by duplication.
    public var duplicated = 0
    /// Copies that received the reordering delay.
    public var reordered = 0
    /// Copies dropped by the impairment hook.
    public var impaired = 0
    /// Copies delivered with a flipped bit.
    public var corrupted = 0
    /// Multicast datagrams transmitted by all nodes (one per send, not per copy), per whole second
    /// of virtual time: entry `s` counts the sends in `[s, s + 1)` seconds.
    public var multicastPerSecond: [Int] = []

    init(nodeCount: Int) {
        sentDatagrams = Array(filling: 0, count: nodeCount)
        sentBytes = Array(filling: 0, count: nodeCount)
        deliveredDatagrams = Array(filling: 0, count: nodeCount)
    }

    /// Datagrams transmitted by all nodes.
    public var totalSentDatagrams: Int { sentDatagrams.reduce(0, +) }
    /// Bytes transmitted by all nodes.
    public var totalSentBytes: Int { sentBytes.reduce(0, +) }
    /// Copies delivered to all nodes.
    public var totalDeliveredDatagrams: Int { deliveredDatagrams.reduce(0, +) }

    /// Multicast datagrams transmitted by all nodes from whole second `start` on.
    public func multicastDatagrams(fromSecond start: Int) -> Int {
        multicastPerSecond.dropFirst(max(start, 0)).reduce(0, +)
    }
}

/// The simulator's fault model as a room hook: delay, jitter, loss, duplication, reordering,
/// corruption and partitions between nodes (participant indices), drawn from one seeded stream,
/// with traffic counters.
///
/// Every random value of a copy is drawn unconditionally, in a fixed order, so that changing one
/// rate does not shift the draws behind the others and the same sends always give the same fates.
/// A model without any random fault draws nothing: no draw could change a fate, and nothing else
/// reads the stream.
public struct NetworkFaultHook: DatagramHook {
    /// The number of nodes, addressed `0..<nodeCount`.
    public let nodeCount: Int
    /// The fault options in force.
    public let faults: NetworkFaults
    /// Traffic counters so far.
    public private(set) var statistics: NetworkStatistics
    /// A test-only hook consulted for every copy before the random faults; `nil` in normal runs.
    public var impairment:
        ((_ source: Int, _ recipient: Int, _ bytes: [UInt8], _ time: Instant) -> LinkImpairment)?

    private var random: DeterministicRandom
    /// No loss, duplication, reordering, jitter or corruption: every copy's fate is fixed.
    private let isRandomFree: Bool

    /// Creates the model for `nodeCount` nodes whose faults draw from `random`.
    public init(nodeCount: Int, faults: NetworkFaults, random: DeterministicRandom) {
        precondition(nodeCount >= 0, "a network needs a non-negative node count")
        for partition in faults.partitions {
            precondition(partition.isolated.allSatisfy { (0..<nodeCount).contains($0) }, "partition node")
        }
        self.nodeCount = nodeCount
        self.faults = faults
        self.random = random
        isRandomFree =
            faults.lossRate <= 0 && faults.duplicationRate <= 0 && faults.reorderRate <= 0
            && faults.corruptionRate <= 0 && faults.jitter.nanosecondsClamped == 0
        statistics = NetworkStatistics(nodeCount: nodeCount)
    }

    /// Counts the send.
    public mutating func sending(
        _ datagram: OutgoingDatagram, from source: Int, number: UInt64, at time: Instant
    ) {
        statistics.sentDatagrams[source] += 1
        statistics.sentBytes[source] += datagram.bytes.count
        if case .multicast = datagram.destination {
            let second = Int(time.nanoseconds / 1_000_000_000)
            if statistics.multicastPerSecond.count <= second {
                statistics.multicastPerSecond.append(
                    contentsOf: repeatElement(0, count: second + 1 - statistics.multicastPerSecond.count))
            }
            statistics.multicastPerSecond[second] += 1
        }
    }

    /// Cuts, impairs, loses, delays, reorders, duplicates and corrupts one copy.
    public mutating func route(_ copy: InFlightDatagram) -> DatagramVerdict {
        guard let source = copy.source else { return .deliver }
        let recipient = copy.recipient
        let time = copy.sentAt
        if faults.isCutOff(source, from: recipient, at: time) {
            statistics.partitioned += 1
            return .drop
        }
        var extra = Duration.zero
        if let impairment {
            switch impairment(source, recipient, copy.bytes, time) {
            case .pass: break
            case .drop:
                statistics.impaired += 1
                return .drop
            case .delay(let added): extra = added
            }
        }
        if isRandomFree { return .arriveAt(time + faults.delay + extra) }
        let lossDraw = random.unitDouble()
        let duplicateDraw = random.unitDouble()
        let reorderDraw = random.unitDouble()
        let reorderExtra = uniformDuration(upTo: faults.reorderDelay)
        let jitterFirst = uniformDuration(upTo: faults.jitter)
        let jitterSecond = uniformDuration(upTo: faults.jitter)
        if lossDraw < faults.lossRate {
            statistics.lost += 1
            return .drop
        }
        var base = time + faults.delay + extra
        if reorderDraw < faults.reorderRate {
            statistics.reordered += 1
            base = base + reorderExtra
        }
        let first = corrupted(copy.bytes)
        guard duplicateDraw < faults.duplicationRate else {
            // An unchanged copy keeps its payload: no copy of the arrival to build and take apart.
            guard first.corrupted else { return .arriveAt(base + jitterFirst) }
            return .arrival(Arrival(copy, at: base + jitterFirst, bytes: first.bytes, altered: true))
        }
        let arrival = Arrival(copy, at: base + jitterFirst, bytes: first.bytes, altered: first.corrupted)
        statistics.duplicated += 1
        let second = corrupted(copy.bytes)
        return .arrivals([
            arrival, Arrival(copy, at: base + jitterSecond, bytes: second.bytes, altered: second.corrupted),
        ])
    }

    /// Drops a copy whose sender and recipient became separated by a partition while it was in
    /// flight; counts the others as delivered.
    public mutating func arrives(_ copy: InFlightDatagram, at time: Instant) -> Bool {
        if let source = copy.source, faults.isCutOff(source, from: copy.recipient, at: time) {
            statistics.partitioned += 1
            return false
        }
        statistics.deliveredDatagrams[copy.recipient] += 1
        return true
    }

    /// `bytes`, with one random bit flipped at the corruption rate. Draws nothing when the rate is
    /// zero, so that runs without corruption keep the draws they always had.
    private mutating func corrupted(_ bytes: [UInt8]) -> (bytes: [UInt8], corrupted: Bool) {
        guard faults.corruptionRate > 0, !bytes.isEmpty else { return (bytes, false) }
        let draw = random.unitDouble()
        let bit = Int(random.uniform(below: UInt64(bytes.count) * 8))
        guard draw < faults.corruptionRate else { return (bytes, false) }
        statistics.corrupted += 1
        var flipped = bytes
        flipped[bit / 8] ^= 1 << UInt8(bit % 8)
        return (flipped, true)
    }

    private mutating func uniformDuration(upTo bound: Duration) -> Duration {
        let limit = bound.nanosecondsClamped
        guard limit > 0 else {
            _ = random.nextUInt64()
            return .zero
        }
        let nanos = limit == .max ? random.nextUInt64() : random.uniform(below: limit + 1)
        return .nanoseconds(Int64(clamping: nanos))
    }
}

/// A LAN of `nodeCount` nodes in virtual time, with multicast and unicast, delay, jitter, loss,
/// duplication, reordering and partitions: ``NetworkFaultHook`` with its own queue, for tests of
/// the fault model alone (a ``Room`` runs the same hook for the simulator).
///
/// All randomness comes from the seeded stream given at creation, and pending copies sit in an
/// ``EventQueue``, so the same sends in the same order always yield the same deliveries.
public struct SimulatedNetwork {
    /// The fault model and its counters.
    public private(set) var model: NetworkFaultHook
    /// The number of nodes, addressed `0..<nodeCount`.
    public var nodeCount: Int { model.nodeCount }
    /// The fault options in force.
    public var faults: NetworkFaults { model.faults }
    /// Traffic counters so far.
    public var statistics: NetworkStatistics { model.statistics }
    /// A test-only hook consulted for every copy before the random faults; `nil` in normal runs.
    public var impairment:
        ((_ source: Int, _ recipient: Int, _ bytes: [UInt8], _ time: Instant) -> LinkImpairment)?
    {
        get { model.impairment }
        set { model.impairment = newValue }
    }

    private var pending = EventQueue<Delivery>()
    private var datagramCount: UInt64 = 0

    /// Creates a network of `nodeCount` nodes whose faults draw from `random`.
    public init(nodeCount: Int, faults: NetworkFaults, random: DeterministicRandom) {
        model = NetworkFaultHook(nodeCount: nodeCount, faults: faults, random: random)
    }

    /// The arrival time of the earliest copy in flight.
    public var nextDeliveryTime: Instant? { pending.nextTime }

    /// The number of copies in flight.
    public var inFlight: Int { pending.count }

    /// The number the next send will get (``Delivery/datagramNumber``): datagrams sent so far.
    public var nextDatagramNumber: UInt64 { datagramCount }

    /// Transmits `bytes` from `source` at `time`; copies arrive later through ``nextDelivery(notAfter:)``.
    public mutating func send(
        _ bytes: [UInt8], from source: Int, to destination: NetworkDestination, at time: Instant
    ) {
        precondition((0..<nodeCount).contains(source), "send from an unknown node")
        let number = datagramCount
        datagramCount += 1
        let datagram = OutgoingDatagram(destination: .multicast, bytes: bytes)
        model.sending(datagram, from: source, number: number, at: time)
        switch destination {
        case .multicast:
            for recipient in 0..<nodeCount where recipient != source {
                route(bytes, number: number, from: source, to: recipient, multicast: true, at: time)
            }
        case .unicast(let recipient):
            // A datagram to an address nobody holds vanishes, as on a real LAN.
            guard (0..<nodeCount).contains(recipient) else { return }
            route(bytes, number: number, from: source, to: recipient, multicast: false, at: time)
        }
    }

    /// Removes and returns the earliest copy arriving at or before `time`. A copy whose sender and
    /// recipient became separated by a partition while it was in flight is dropped here.
    public mutating func nextDelivery(notAfter time: Instant) -> Delivery? {
        while let entry = pending.pop(notAfter: time) {
            let delivery = entry.payload
            let copy = InFlightDatagram(
                number: delivery.datagramNumber, source: delivery.source,
                sourceAddress: Simulation.address(ofNode: delivery.source), recipient: delivery.recipient,
                multicast: false, sentAt: delivery.time, bytes: delivery.bytes, altered: delivery.corrupted)
            if model.arrives(copy, at: delivery.time) { return delivery }
        }
        return nil
    }

    private mutating func route(
        _ bytes: [UInt8], number: UInt64, from source: Int, to recipient: Int, multicast: Bool,
        at time: Instant
    ) {
        let copy = InFlightDatagram(
            number: number, source: source, sourceAddress: Simulation.address(ofNode: source),
            recipient: recipient, multicast: multicast, sentAt: time, bytes: bytes, altered: false)
        switch model.route(copy) {
        case .drop: break
        case .deliver, .alter, .delay, .duplicate:
            preconditionFailure("the fault model decides arrivals itself")
        case .arrivals(let arrivals):
            for arrival in arrivals { schedule(arrival, number: number, from: source, to: recipient) }
        case .arrival(let arrival):
            schedule(arrival, number: number, from: source, to: recipient)
        case .arriveAt(let arrivalTime):
            schedule(Arrival(copy, at: arrivalTime), number: number, from: source, to: recipient)
        }
    }

    private mutating func schedule(_ arrival: Arrival, number: UInt64, from source: Int, to recipient: Int) {
        let delivery = Delivery(
            time: arrival.time, source: source, recipient: recipient, bytes: arrival.bytes,
            datagramNumber: number, corrupted: arrival.altered)
        pending.schedule(delivery, at: arrival.time)
    }
}
