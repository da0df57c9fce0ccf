/// A value kept on the heap and shared between copies until one of them changes it, so that
/// moving its owner moves one reference instead of the value's bytes.
///
/// The session's large parts live in these: the device moves its session in and out of an optional,
/// an array and the half-open table several times per input, and with them inline every move was
/// a copy of some hundreds of bytes.
struct CopyOnWriteBox<Value> {
    /// Where the value lives.
    final class Storage {
        // Unchecked at run time: reached only through the box, which makes the storage unique
        // before handing it out for a change, so the owner's static exclusivity covers it. The
        // dynamic check cost some hundreds of instructions per input.
        @exclusivity(unchecked) var value: Value

        init(_ value: Value) { self.value = value }
    }

    private var storage: Storage

    init(_ value: Value) { storage = Storage(value) }

    /// The value: read in place, and changed in place once no other copy shares it.
    var value: Value {
        _read { yield storage.value }
        _modify { yield &uniqueStorage().value }
    }

    /// The storage, copied first if another box shares it. An owner's own `_modify` yields
    /// `uniqueStorage().value` rather than ``value``: a coroutine that calls another one gets a
    /// frame too large for its caller's buffer, which is then allocated on the heap, on every access.
    mutating func uniqueStorage() -> Storage {
        if !isKnownUniquelyReferenced(&storage) { storage = Storage(storage.value) }
        return storage
    }
}
