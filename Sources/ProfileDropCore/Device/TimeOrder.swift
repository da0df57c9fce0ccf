/// The keys of a bounded table in order of a time each has (then of key), beside the table: the
/// entry a full table gives up, the earliest, is the first. A table of strangers' addresses is full in a crowd, so that it finds its earliest entry
/// for nearly every datagram: without this, by a scan of every entry.
///
/// Sorted by (time, key), so that any two entries are ordered whatever the order they came in.
struct TimeOrder<Key: Comparable> {
    private var entries: [(time: Instant, key: Key)] = []

    var count: Int { entries.count }

    /// The key of the earliest time (the lowest key among equal times).
    var first: (time: Instant, key: Key)? { entries.first }

    /// Adds `key` at `time`; it must not be in the order yet.
    mutating func insert(_ key: Key, at time: Instant) {
        // A key charged now is usually the latest: the search from the end stops at once.
        var index = entries.endIndex
        while index > entries.startIndex, Self.precedes((time, key), entries[index - 1]) { index -= 1 }
        entries.insert((time, key), at: index)
    }

    /// Removes `key`, which was inserted at `time`.
    mutating func remove(_ key: Key, at time: Instant) {
        let index = lowerBound((time, key))
        guard index < entries.endIndex, entries[index].key == key, entries[index].time == time else {
            preconditionFailure("a key removed at another time than it was inserted")
        }
        entries.remove(at: index)
    }

    /// Moves `key` from `old` to `new`.
    mutating func move(_ key: Key, from old: Instant, to new: Instant) {
        guard old != new else { return }
        remove(key, at: old)
        insert(key, at: new)
    }

    /// Removes the earliest entry and returns its key.
    mutating func removeFirst() -> Key? {
        entries.isEmpty ? nil : entries.removeFirst().key
    }

    private static func precedes(_ lhs: (time: Instant, key: Key), _ rhs: (time: Instant, key: Key)) -> Bool {
        lhs.time != rhs.time ? lhs.time < rhs.time : lhs.key < rhs.key
    }

    /// The index of the first entry not preceding `entry`.
    private func lowerBound(_ entry: (time: Instant, key: Key)) -> Int {
        var low = entries.startIndex
        var high = entries.endIndex
        while low < high {
            let middle = low + (high - low) / 2
            if Self.precedes(entries[middle], entry) { low = middle + 1 } else { high = middle }
        }
        return low
    }
}
