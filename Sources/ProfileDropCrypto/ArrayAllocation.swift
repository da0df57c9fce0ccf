// Arrays made at full length without the runtime's metadata lookup.
//
// `Array(repeating:count:)` and `Array(unsafeUninitializedCapacity:initializingWith:)` allocate
// through a generic entry point of the standard library, which looks the storage class up in the
// runtime's metadata cache, under its lock, on every call: about 330 instructions and several
// atomic operations per array. Reserving capacity in an empty array takes the specialised path,
// whose metadata is cached at the call site. A simulated exchange makes a few dozen such arrays
// (keys, digests, random bytes, a transfer's bookkeeping), so the core and the crypto layer make
// them here. PERFORMANCE.md has the measurement.

extension Array {
    /// `count` copies of `value`: `init(repeating:count:)` without its metadata lookup.
    @inlinable
    public init(filling value: Element, count: Int) {
        self.init()
        reserveCapacity(count)
        append(contentsOf: repeatElement(value, count: count))
    }
}

extension Array where Element == UInt8 {
    /// `count` bytes, every one written by `initialize`:
    /// `init(unsafeUninitializedCapacity:initializingWith:)` without its metadata lookup. The bytes
    /// are zeroed first, which costs less than the lookup at the sizes used here.
    @inlinable
    public init(
        byteCount count: Int, initializingWith initialize: (UnsafeMutableRawBufferPointer) throws -> Void
    ) rethrows {
        self.init()
        reserveCapacity(count)
        // Copied from a block of zeros rather than appended byte by byte: the same bytes, but a
        // copy is one loop-free call where a coverage-instrumented build (the fuzz targets) traces
        // a comparison for every byte appended, a few per cent of the device target.
        var remaining = count
        while remaining > 0 {
            let run = Swift.min(remaining, zeroBytes.count)
            append(contentsOf: zeroBytes[..<run])
            remaining -= run
        }
        try withUnsafeMutableBytes(initialize)
    }
}

/// Zeros that ``Swift/Array/init(byteCount:initializingWith:)`` copies from.
@usableFromInline let zeroBytes = [UInt8](repeating: 0, count: 2048)
