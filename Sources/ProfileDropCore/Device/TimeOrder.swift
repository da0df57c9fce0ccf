/// The keys of a bounded table in order of a time each has (then of key), beside the table: the
/// entry a full table gives up, the earliest, is the first. A table of strangers' addresses is
/// full in a crowd, so that it gives up its earliest entry for nearly every datagram: without this
/// order, found by a scan of every entry.
///
/// Sorted by (time, key), so that any two entries are ordered whatever the order they came in.
/// The earliest entries are dropped by moving where the order starts, and a key charged again moves
/// to the end in one shift: a table in a crowd does both for every datagram.
struct TimeOrder<Key: Comparable> {
    private typealias Entry = (time: Instant, key: Key)

    /// The order from ``start`` on; the entries before it were removed.
    private var entries: [Entry] = []
    private var start = 0

    var count: Int { entries.count - start }

    /// The key of the earliest time (the lowest key among equal times).
    var first: (time: Instant, key: Key)? { start < entries.endIndex ? entries[start] : nil }

    /// Adds `key` at `time`; it must not be in the order yet.
    mutating func insert(_ key: Key, at time: Instant) {
        compactIfWasteful()
        let index = insertionIndex((time, key), below: entries.endIndex)
        entries.insert((time, key), at: index)
    }

    /// Moves `key` from `old` to `new`.
    mutating func move(_ key: Key, from old: Instant, to new: Instant) {
        guard old != new else { return }
        let from = position(of: key, at: old)
        let moved: Entry = (new, key)
        entries.withUnsafeMutableBufferPointer { buffer in
            // Where it goes among the others: after every entry that precedes it.
            var to = from
            while to + 1 < buffer.count, Self.precedes(buffer[to + 1], moved) {
                buffer[to] = buffer[to + 1]
                to += 1
            }
            while to > start, Self.precedes(moved, buffer[to - 1]) {
                buffer[to] = buffer[to - 1]
                to -= 1
            }
            buffer[to] = moved
        }
    }

    /// Removes the earliest entry and returns its key.
    mutating func removeFirst() -> Key? {
        guard start < entries.endIndex else { return nil }
        start += 1
        return entries[start - 1].key
    }

    /// Drops the removed entries before ``start`` once they are as many as those left, so that
    /// they cost a shift now and then rather than one per removal.
    private mutating func compactIfWasteful() {
        guard start > 0, start >= count else { return }
        entries.removeFirst(start)
        start = 0
    }

    private static func precedes(_ lhs: Entry, _ rhs: Entry) -> Bool {
        lhs.time != rhs.time ? lhs.time < rhs.time : lhs.key < rhs.key
    }

    /// Where `entry` goes among the entries below `end`: searched from the end, since a key
    /// charged now is usually the latest.
    private func insertionIndex(_ entry: Entry, below end: Int) -> Int {
        var index = end
        while index > start, Self.precedes(entry, entries[index - 1]) { index -= 1 }
        return index
    }

    /// The index of `key`, inserted at `time`.
    private func position(of key: Key, at time: Instant) -> Int {
        var low = start
        var high = entries.endIndex
        while low < high {
            let middle = low + (high - low) / 2
            if Self.precedes(entries[middle], (time, key)) { low = middle + 1 } else { high = middle }
        }
        guard low < entries.endIndex, entries[low].key == key, entries[low].time == time else {
            preconditionFailure("a key looked up at another time than it was inserted")
        }
        return low
    }
}
