import ProfileDropCore

/// A deterministic priority queue of timed events: earliest time first, and among equal times the
/// one scheduled first.
///
/// The sequence number makes the order total, so two runs that schedule the same events in the same
/// order pop them in the same order, whatever the heap's internal layout.
public struct EventQueue<Payload> {
    /// One scheduled event.
    public struct Entry {
        /// When the event fires.
        public let time: Instant
        /// Position in scheduling order; breaks ties between equal times.
        public let sequence: UInt64
        /// What happens.
        public let payload: Payload
    }

    private var heap: [Entry] = []
    private var nextSequence: UInt64 = 0

    /// Creates an empty queue.
    public init() {}

    /// The number of pending events.
    public var count: Int { heap.count }

    /// Whether no event is pending.
    public var isEmpty: Bool { heap.isEmpty }

    /// The time of the earliest pending event.
    public var nextTime: Instant? { heap.first?.time }

    /// The earliest pending event, without removing it.
    public var first: Entry? { heap.first }

    /// Schedules `payload` at `time`.
    public mutating func schedule(_ payload: Payload, at time: Instant) {
        heap.append(Entry(time: time, sequence: nextSequence, payload: payload))
        nextSequence += 1
        siftUp(from: heap.count - 1)
    }

    /// Removes and returns the earliest event.
    public mutating func pop() -> Entry? {
        guard !heap.isEmpty else { return nil }
        heap.swapAt(0, heap.count - 1)
        let entry = heap.removeLast()
        if !heap.isEmpty { siftDown(from: 0) }
        return entry
    }

    /// Removes and returns the earliest event if it fires at or before `time`.
    public mutating func pop(notAfter time: Instant) -> Entry? {
        guard let head = heap.first, head.time <= time else { return nil }
        return pop()
    }

    private static func precedes(_ lhs: Entry, _ rhs: Entry) -> Bool {
        lhs.time != rhs.time ? lhs.time < rhs.time : lhs.sequence < rhs.sequence
    }

    private mutating func siftUp(from start: Int) {
        var child = start
        while child > 0 {
            let parent = (child - 1) / 2
            guard Self.precedes(heap[child], heap[parent]) else { return }
            heap.swapAt(child, parent)
            child = parent
        }
    }

    private mutating func siftDown(from start: Int) {
        var parent = start
        while true {
            let left = 2 * parent + 1
            let right = left + 1
            var best = parent
            if left < heap.count && Self.precedes(heap[left], heap[best]) { best = left }
            if right < heap.count && Self.precedes(heap[right], heap[best]) { best = right }
            if best == parent { return }
            heap.swapAt(parent, best)
            parent = best
        }
    }
}
