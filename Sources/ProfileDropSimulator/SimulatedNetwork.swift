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

    init(nodeCount: Int) {
        sentDatagrams = Array(repeating: 0, count: nodeCount)
        sentBytes = Array(repeating: 0, count: nodeCount)
        deliveredDatagrams = Array(repeating: 0, count: nodeCount)
    }

    /// Datagrams transmitted by all nodes.
    public var totalSentDatagrams: Int { sentDatagrams.reduce(0, +) }
    /// Bytes transmitted by all nodes.
    public var totalSentBytes: Int { sentBytes.reduce(0, +) }
    /// Copies delivered to all nodes.
    public var totalDeliveredDatagrams: Int { deliveredDatagrams.reduce(0, +) }
}

/// A LAN of `nodeCount` nodes in virtual time, with multicast and unicast, delay, jitter, loss,
/// duplication, reordering and partitions.
///
/// All randomness comes from the seeded stream given at creation, and pending copies sit in an
/// ``EventQueue``, so the same sends in the same order always yield the same deliveries.
public struct SimulatedNetwork {
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
    private var pending = EventQueue<Delivery>()
    private var datagramCount: UInt64 = 0

    /// Creates a network of `nodeCount` nodes whose faults draw from `random`.
    public init(nodeCount: Int, faults: NetworkFaults, random: DeterministicRandom) {
        precondition(nodeCount >= 0, "a network needs a non-negative node count")
        for partition in faults.partitions {
            precondition(partition.isolated.allSatisfy { (0..<nodeCount).contains($0) }, "partition node")
        }
        self.nodeCount = nodeCount
        self.faults = faults
        self.random = random
        statistics = NetworkStatistics(nodeCount: nodeCount)
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
        statistics.sentDatagrams[source] += 1
        statistics.sentBytes[source] += bytes.count
        switch destination {
        case .multicast:
            for recipient in 0..<nodeCount where recipient != source {
                route(bytes, number: number, from: source, to: recipient, at: time)
            }
        case .unicast(let recipient):
            // A datagram to an address nobody holds vanishes, as on a real LAN.
            guard (0..<nodeCount).contains(recipient) else { return }
            route(bytes, number: number, from: source, to: recipient, at: time)
        }
    }

    /// Removes and returns the earliest copy arriving at or before `time`. A copy whose sender and
    /// recipient became separated by a partition while it was in flight is dropped here.
    public mutating func nextDelivery(notAfter time: Instant) -> Delivery? {
        while let entry = pending.pop(notAfter: time) {
            let delivery = entry.payload
            if faults.isCutOff(delivery.source, from: delivery.recipient, at: delivery.time) {
                statistics.partitioned += 1
                continue
            }
            statistics.deliveredDatagrams[delivery.recipient] += 1
            return delivery
        }
        return nil
    }

    private mutating func route(
        _ bytes: [UInt8], number: UInt64, from source: Int, to recipient: Int, at time: Instant
    ) {
        if faults.isCutOff(source, from: recipient, at: time) {
            statistics.partitioned += 1
            return
        }
        var extra = Duration.zero
        if let impairment {
            switch impairment(source, recipient, bytes, time) {
            case .pass: break
            case .drop:
                statistics.impaired += 1
                return
            case .delay(let added): extra = added
            }
        }
        // Draw every random value for a copy unconditionally, so that changing one rate does not
        // shift the draws behind the others.
        let lossDraw = random.unitDouble()
        let duplicateDraw = random.unitDouble()
        let reorderDraw = random.unitDouble()
        let reorderExtra = uniformDuration(upTo: faults.reorderDelay)
        let jitterFirst = uniformDuration(upTo: faults.jitter)
        let jitterSecond = uniformDuration(upTo: faults.jitter)
        if lossDraw < faults.lossRate {
            statistics.lost += 1
            return
        }
        var base = time + faults.delay + extra
        if reorderDraw < faults.reorderRate {
            statistics.reordered += 1
            base = base + reorderExtra
        }
        schedule(corrupted(bytes), number: number, from: source, to: recipient, at: base + jitterFirst)
        if duplicateDraw < faults.duplicationRate {
            statistics.duplicated += 1
            schedule(corrupted(bytes), number: number, from: source, to: recipient, at: base + jitterSecond)
        }
    }

    private mutating func schedule(
        _ copy: (bytes: [UInt8], corrupted: Bool), number: UInt64, from source: Int, to recipient: Int,
        at time: Instant
    ) {
        let delivery = Delivery(
            time: time, source: source, recipient: recipient, bytes: copy.bytes, datagramNumber: number,
            corrupted: copy.corrupted)
        pending.schedule(delivery, at: time)
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
