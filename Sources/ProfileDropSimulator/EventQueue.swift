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

    /// What the heap orders: small, so that sifting moves a few words whatever the payload.
    private struct Key {
        var time: Instant
        var sequence: UInt64
        /// Where the payload waits in `payloads`.
        var slot: Int
    }

    private var heap: [Key] = []
    /// Payloads by slot; a popped event's slot is reused.
    private var payloads: [Payload?] = []
    private var freeSlots: [Int] = []
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
    public var first: Entry? {
        guard let key = heap.first, let payload = payloads[key.slot] else { return nil }
        return Entry(time: key.time, sequence: key.sequence, payload: payload)
    }

    /// Schedules `payload` at `time`.
    public mutating func schedule(_ payload: consuming Payload, at time: Instant) {
        let slot: Int
        if let free = freeSlots.popLast() {
            slot = free
            payloads[slot] = payload
        } else {
            slot = payloads.count
            payloads.append(payload)
        }
        heap.append(Key(time: time, sequence: nextSequence, slot: slot))
        nextSequence += 1
        heap.withUnsafeMutableBufferPointer { Self.siftUp($0, from: $0.count - 1) }
    }

    /// Removes and returns the earliest event.
    public mutating func pop() -> Entry? {
        guard let key = heap.first else { return nil }
        let last = heap.removeLast()
        if !heap.isEmpty {
            heap.withUnsafeMutableBufferPointer { Self.replaceRoot($0, with: last) }
        }
        guard let payload = payloads[key.slot].take() else {
            preconditionFailure("an empty slot in the heap")
        }
        freeSlots.append(key.slot)
        return Entry(time: key.time, sequence: key.sequence, payload: payload)
    }

    /// Removes and returns the earliest event if it fires at or before `time`.
    public mutating func pop(notAfter time: Instant) -> Entry? {
        guard let head = heap.first, head.time <= time else { return nil }
        return pop()
    }

    private static func precedes(_ lhs: Key, _ rhs: Key) -> Bool {
        lhs.time != rhs.time ? lhs.time < rhs.time : lhs.sequence < rhs.sequence
    }

    /// Moves the key at `start` up to its place, shifting its ancestors down into the hole rather
    /// than swapping.
    private static func siftUp(_ heap: UnsafeMutableBufferPointer<Key>, from start: Int) {
        let key = heap[start]
        var hole = start
        while hole > 0 {
            let parent = (hole - 1) / 2
            guard precedes(key, heap[parent]) else { break }
            heap[hole] = heap[parent]
            hole = parent
        }
        heap[hole] = key
    }

    /// Puts `key` in place of the root, which was popped: the hole the root left goes down to a
    /// leaf along the earlier children (one comparison a level), and `key`, the former last leaf,
    /// rises from there, seldom far. Every heap pops in the same order: keys are totally ordered.
    private static func replaceRoot(_ heap: UnsafeMutableBufferPointer<Key>, with key: Key) {
        let count = heap.count
        var hole = 0
        while true {
            let left = 2 * hole + 1
            guard left < count else { break }
            let right = left + 1
            let child = right < count && precedes(heap[right], heap[left]) ? right : left
            heap[hole] = heap[child]
            hole = child
        }
        heap[hole] = key
        siftUp(heap, from: hole)
    }
}

/// The participants' deadlines in a heap indexed by participant: the earliest first, the lowest
/// participant among equal times, so that a room learns the next deadline without asking every
/// participant, and moves one participant's deadline in logarithmic time after that participant
/// had an input.
struct DeadlineQueue {
    private struct Entry {
        var time: Instant
        var member: Int
    }

    private var heap: [Entry] = []
    /// Each participant's index in `heap`, or nil while it has no deadline.
    private var positions: [Int?] = []

    /// The earliest deadline and its participant (the lowest participant among equal times).
    var first: (member: Int, time: Instant)? { heap.first.map { ($0.member, $0.time) } }

    /// Makes room for participant `positions.count`, without a deadline.
    mutating func addMember() { positions.append(nil) }

    /// Sets participant `member`'s deadline to `time`, or removes it when nil.
    mutating func update(_ member: Int, to time: Instant?) {
        if let position = positions[member] {
            guard let time else {
                remove(at: position)
                return
            }
            guard heap[position].time != time else { return }
            heap[position].time = time
            siftUp(from: position)
            if let moved = positions[member] { siftDown(from: moved) }
        } else if let time {
            heap.append(Entry(time: time, member: member))
            positions[member] = heap.count - 1
            siftUp(from: heap.count - 1)
        }
    }

    /// The lowest participant whose deadline is at or before `time`, or nil if none is: visits only
    /// the entries due by then, since a heap entry is never earlier than its parent.
    func lowestMember(dueBy time: Instant) -> Int? {
        var lowest: Int?
        var pending = heap.isEmpty ? [] : [0]
        while let index = pending.popLast() {
            guard heap[index].time <= time else { continue }
            lowest = min(lowest ?? .max, heap[index].member)
            for child in [2 * index + 1, 2 * index + 2] where child < heap.count { pending.append(child) }
        }
        return lowest
    }

    private static func precedes(_ lhs: Entry, _ rhs: Entry) -> Bool {
        lhs.time != rhs.time ? lhs.time < rhs.time : lhs.member < rhs.member
    }

    private mutating func remove(at position: Int) {
        let last = heap.count - 1
        positions[heap[position].member] = nil
        if position != last {
            heap[position] = heap[last]
            positions[heap[position].member] = position
        }
        heap.removeLast()
        guard position < heap.count else { return }
        let moved = heap[position].member
        siftUp(from: position)
        if positions[moved] == position { siftDown(from: position) }
    }

    private mutating func swap(_ first: Int, _ second: Int) {
        heap.swapAt(first, second)
        positions[heap[first].member] = first
        positions[heap[second].member] = second
    }

    private mutating func siftUp(from start: Int) {
        BinaryHeap.siftUp(
            from: start, precedes: { Self.precedes(heap[$0], heap[$1]) }, swap: { swap($0, $1) })
    }

    private mutating func siftDown(from start: Int) {
        BinaryHeap.siftDown(
            from: start, count: heap.count, precedes: { Self.precedes(heap[$0], heap[$1]) },
            swap: { swap($0, $1) })
    }
}

/// The sift steps of a binary min-heap kept in an array, on indices, shared by the queues above:
/// `precedes(i, j)` compares the entries at two indices and `swap(i, j)` exchanges them (a queue
/// that indexes its entries keeps the index in step there).
enum BinaryHeap {
    /// Moves the entry at `start` up while it precedes its parent.
    @inline(__always)
    static func siftUp(from start: Int, precedes: (Int, Int) -> Bool, swap: (Int, Int) -> Void) {
        var child = start
        while child > 0 {
            let parent = (child - 1) / 2
            guard precedes(child, parent) else { return }
            swap(child, parent)
            child = parent
        }
    }

    /// Moves the entry at `start` down while a child of it precedes it.
    @inline(__always)
    static func siftDown(from start: Int, count: Int, precedes: (Int, Int) -> Bool, swap: (Int, Int) -> Void)
    {
        var parent = start
        while true {
            let left = 2 * parent + 1
            let right = left + 1
            var best = parent
            if left < count && precedes(left, best) { best = left }
            if right < count && precedes(right, best) { best = right }
            if best == parent { return }
            swap(parent, best)
            parent = best
        }
    }
}
