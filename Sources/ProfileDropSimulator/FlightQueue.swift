import ProfileDropCore

/// The copies a ``Room`` has in flight, earliest first and, among equal times, in the order they
/// were scheduled: the order of an ``EventQueue``.
///
/// A multicast's copies are scheduled together (between ``beginBatch()`` and ``endBatch()``),
/// sorted once and kept as one entry of the heap, so that the heap holds an entry per send in
/// flight rather than one per copy: in a hall of a thousand devices, a thousand times fewer.
/// Popping merges the sorted batches; since no two copies share a sequence number, the merge
/// gives exactly the order of one heap of copies.
struct FlightQueue {
    /// A time and a scheduling number, and where the copy (or, in the heap, the batch) waits.
    private struct Stamp {
        var time: Instant
        var sequence: UInt64
        var index: Int
    }

    /// Copies scheduled together.
    private struct Batch {
        /// In scheduling order; optional, so that a pop moves its copy out (no retain of its bytes
        /// for the copy handed out, no release when the batch is emptied).
        var copies: [InFlightDatagram?] = []
        /// The copies' stamps (`index` into ``copies``), earliest first once the batch closed.
        var stamps: [Stamp] = []
        /// The next stamp to pop.
        var next = 0
    }

    /// One stamp per batch with copies left: its next copy's, `index` naming the batch.
    private var heap: [Stamp] = []
    private var batches: [Batch] = []
    /// Batches popped empty, whose storage the next ones reuse.
    private var freeBatches: [Int] = []
    /// The batch being filled, if one is open.
    private var openBatch: Int?
    private var nextSequence: UInt64 = 0

    /// The number of copies in flight (an open batch's included).
    private(set) var count = 0

    /// The time of the earliest copy (not counting an open batch).
    var nextTime: Instant? { heap.first?.time }

    /// Collects the copies scheduled until ``endBatch()`` into one batch.
    mutating func beginBatch() {
        precondition(openBatch == nil, "a batch is already open")
        openBatch = newBatch()
    }

    /// Closes the open batch: its copies become due in order.
    mutating func endBatch() {
        guard let batch = openBatch else { preconditionFailure("no batch is open") }
        openBatch = nil
        guard !batches[batch].stamps.isEmpty else {
            freeBatches.append(batch)
            return
        }
        batches[batch].stamps.sort { Self.precedes($0, $1) }
        push(batch)
    }

    /// Schedules `copy` at `time`: into the open batch, or as a batch of its own. Taken over, not
    /// borrowed: stored without a copy.
    @inline(__always)  // else its copy is borrowed after all, and copied into the batch
    mutating func schedule(_ copy: consuming InFlightDatagram, at time: Instant) {
        let batch = openBatch ?? newBatch()
        batches[batch].stamps.append(
            Stamp(time: time, sequence: nextSequence, index: batches[batch].copies.count))
        batches[batch].copies.append(copy)
        nextSequence += 1
        count += 1
        if openBatch == nil { push(batch) }
    }

    /// Removes and returns the earliest copy, or nil when none is in flight.
    mutating func pop() -> InFlightDatagram? { heap.isEmpty ? nil : removeFirst() }

    /// Removes and returns the earliest copy; there must be one. Not optional: the room binding an
    /// optional's copy copied it (its bytes retained) and then destroyed the optional.
    mutating func removeFirst() -> InFlightDatagram {
        guard let root = heap.first else { preconditionFailure("no copy in flight") }
        let batch = root.index
        let stamp = batches[batch].stamps[batches[batch].next]
        // Every copy is popped once.
        guard let copy = batches[batch].copies[stamp.index].take() else {
            preconditionFailure("a copy popped twice")
        }
        batches[batch].next += 1
        count -= 1
        if batches[batch].next < batches[batch].stamps.count {
            let following = batches[batch].stamps[batches[batch].next]
            heap[0] = Stamp(time: following.time, sequence: following.sequence, index: batch)
            siftDown(from: 0)
        } else {
            batches[batch].copies.removeAllKeepingStorage()
            batches[batch].stamps.removeAllKeepingStorage()
            batches[batch].next = 0
            freeBatches.append(batch)
            let last = heap.removeLast()
            if !heap.isEmpty {
                heap[0] = last
                siftDown(from: 0)
            }
        }
        return copy
    }

    private mutating func newBatch() -> Int {
        if let free = freeBatches.popLast() { return free }
        batches.append(Batch())
        return batches.count - 1
    }

    private mutating func push(_ batch: Int) {
        let head = batches[batch].stamps[batches[batch].next]
        heap.append(Stamp(time: head.time, sequence: head.sequence, index: batch))
        BinaryHeap.siftUp(
            from: heap.count - 1, precedes: { Self.precedes(heap[$0], heap[$1]) },
            swap: { heap.swapAt($0, $1) })
    }

    private mutating func siftDown(from start: Int) {
        BinaryHeap.siftDown(
            from: start, count: heap.count, precedes: { Self.precedes(heap[$0], heap[$1]) },
            swap: { heap.swapAt($0, $1) })
    }

    private static func precedes(_ lhs: Stamp, _ rhs: Stamp) -> Bool {
        lhs.time != rhs.time ? lhs.time < rhs.time : lhs.sequence < rhs.sequence
    }
}
