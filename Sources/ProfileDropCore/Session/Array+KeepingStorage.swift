extension Array {
    /// Empties the array and keeps its storage for the next fill. For the few frames of a packet,
    /// popping them is several times cheaper than `removeAll(keepingCapacity: true)`, which goes
    /// through the general `replaceSubrange`. (The simulator has its own copy: a generic method
    /// of another module is not specialized.)
    mutating func removeAllKeepingStorage() {
        while popLast() != nil {}
    }
}
