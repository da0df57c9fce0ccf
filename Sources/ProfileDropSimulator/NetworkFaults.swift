import ProfileDropCore

/// How the simulated LAN misbehaves. Every probability is per delivered copy and drawn from the
/// network's own seeded stream.
public struct NetworkFaults: Equatable, Sendable {
    /// One-way delay every datagram takes.
    public var delay: Duration
    /// Extra delay drawn uniformly from `0...jitter` for every copy.
    public var jitter: Duration
    /// Probability that a copy is lost, in `0...1`.
    public var lossRate: Double
    /// Probability that a copy is delivered twice, in `0...1`.
    public var duplicationRate: Double
    /// Probability that a copy is held back by an extra delay, in `0...1`, which lets later
    /// datagrams overtake it.
    public var reorderRate: Double
    /// Upper bound of the extra delay, drawn uniformly, for a reordered copy.
    public var reorderDelay: Duration
    /// Scheduled windows during which some nodes are cut off from the others.
    public var partitions: [Partition]
    /// Probability that a delivered copy has one random bit flipped, in `0...1`.
    public var corruptionRate: Double = 0

    /// A perfect network with a 2 ms delay.
    public static let none = NetworkFaults()

    /// Creates fault options; the defaults describe a perfect network with a 2 ms delay.
    public init(
        delay: Duration = .milliseconds(2), jitter: Duration = .zero, lossRate: Double = 0,
        duplicationRate: Double = 0, reorderRate: Double = 0, reorderDelay: Duration = .milliseconds(30),
        partitions: [Partition] = []
    ) {
        self.delay = delay
        self.jitter = jitter
        self.lossRate = lossRate
        self.duplicationRate = duplicationRate
        self.reorderRate = reorderRate
        self.reorderDelay = reorderDelay
        self.partitions = partitions
    }

    /// Whether some partition never heals.
    public var hasPermanentPartition: Bool { partitions.contains { $0.end == nil } }

    /// The earliest-starting partition that never heals and puts `first` and `second` on
    /// different sides, if any: from its start on, nothing passes between them again.
    public func permanentCut(between first: Int, _ second: Int) -> Partition? {
        partitions.filter { $0.end == nil && $0.isolated.contains(first) != $0.isolated.contains(second) }
            .min { $0.start < $1.start }
    }

    /// Whether `first` and `second` are on different sides of an active partition at `time`.
    public func isCutOff(_ first: Int, from second: Int, at time: Instant) -> Bool {
        partitions.contains { $0.separates(first, second, at: time) }
    }

    /// A one-line summary for logs, e.g. `delay=2ms jitter=1ms loss=30% dup=0% reorder=0%`.
    public var summary: String {
        var parts = [
            "delay=\(Self.millis(delay))", "jitter=\(Self.millis(jitter))",
            "loss=\(Self.percent(lossRate))", "dup=\(Self.percent(duplicationRate))",
            "reorder=\(Self.percent(reorderRate))/\(Self.millis(reorderDelay))",
        ]
        if corruptionRate > 0 { parts.append("corrupt=\(Self.percent(corruptionRate))") }
        for partition in partitions { parts.append(partition.summary) }
        return parts.joined(separator: " ")
    }

    static func millis(_ duration: Duration) -> String {
        let micros = duration.nanosecondsClamped / 1000
        return micros % 1000 == 0 ? "\(micros / 1000)ms" : "\(micros / 1000).\(pad3(micros % 1000))ms"
    }

    static func percent(_ rate: Double) -> String {
        let tenths = Int((rate * 1000).rounded())
        return tenths % 10 == 0 ? "\(tenths / 10)%" : "\(tenths / 10).\(tenths % 10)%"
    }

    private static func pad3(_ value: UInt64) -> String {
        let text = String(value)
        return String(repeating: "0", count: max(0, 3 - text.count)) + text
    }
}

/// A window of time during which a set of nodes is cut off from every other node. Nodes inside the
/// set still reach each other, as do nodes outside it.
public struct Partition: Equatable, Sendable {
    /// Indices of the isolated nodes, sorted.
    public var isolated: [Int]
    /// When the cut starts.
    public var start: Instant
    /// When it heals; `nil` for a permanent partition.
    public var end: Instant?

    /// Creates a partition window.
    public init(isolated: [Int], start: Instant, end: Instant?) {
        self.isolated = isolated.sorted()
        self.start = start
        self.end = end
    }

    /// Whether the window covers `time` (start inclusive, end exclusive).
    public func isActive(at time: Instant) -> Bool {
        guard time >= start else { return false }
        guard let end else { return true }
        return time < end
    }

    /// Whether this window separates `first` from `second` at `time`.
    public func separates(_ first: Int, _ second: Int, at time: Instant) -> Bool {
        isActive(at: time) && isolated.contains(first) != isolated.contains(second)
    }

    var summary: String {
        let nodes = isolated.map(String.init).joined(separator: ",")
        let until = end.map { "\($0)" } ?? "forever"
        return "partition[\(nodes)]@\(start)-\(until)"
    }
}
