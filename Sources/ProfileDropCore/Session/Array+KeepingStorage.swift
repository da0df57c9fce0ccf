extension Array {
    /// Empties the array and keeps its storage for the next fill. For the few elements a packet's
    /// frame list or a room's buffers hold, popping them is several times cheaper than
    /// `removeAll(keepingCapacity: true)`, which goes through the general `replaceSubrange`.
    /// Inlinable, so that the simulator's calls are specialized too.
    @inlinable
    package mutating func removeAllKeepingStorage() {
        while popLast() != nil {}
    }
}
