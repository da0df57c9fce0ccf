internal import CSodium

/// Bytes of 64-byte-aligned scratch memory that ``withWipedScratch(byteCount:_:)`` keeps on the
/// stack: one HMAC workspace with an HKDF of a few output blocks (nine with libsodium 1.0.18's
/// 384-byte BLAKE2b state).
let wipedScratchStackCapacity = 2048 - 64

/// Runs `body` with `byteCount` bytes of 64-byte-aligned scratch memory, uninitialised in meaning
/// (callers write before they read), and wipes it with `sodium_memzero` when `body` returns or
/// throws.
///
/// Up to ``wipedScratchStackCapacity`` bytes live on the stack. `withUnsafeTemporaryAllocation`
/// cannot give that: it puts any buffer aligned beyond 16 bytes, as libsodium's BLAKE2b state must
/// be, on the heap through `posix_memalign`, which costs about 400 instructions a call and dozens
/// of calls per exchange. Larger requests still go there.
@inline(__always)
func withWipedScratch<Result>(
    byteCount: Int, _ body: (UnsafeMutableRawBufferPointer) throws -> Result
) rethrows -> Result {
    precondition(byteCount >= 0, "scratch size must not be negative")
    guard byteCount <= wipedScratchStackCapacity else {
        return try withUnsafeTemporaryAllocation(byteCount: byteCount, alignment: 64) { scratch in
            defer { sodium_memzero(scratch.baseAddress, scratch.count) }
            return try body(scratch)
        }
    }
    // 64 bytes more than the capacity, so that a 64-byte-aligned start always fits.
    var storage = InlineArray<2048, UInt8>(repeating: 0)
    return try withUnsafeMutableBytes(of: &storage) { raw in
        // A local's storage always has an address; the guard only unwraps the optional.
        guard let base = raw.baseAddress else { preconditionFailure("stack storage has an address") }
        let start = base.alignedUp(toMultipleOf: 64)
        let scratch = UnsafeMutableRawBufferPointer(start: start, count: byteCount)
        defer { sodium_memzero(start, byteCount) }
        return try body(scratch)
    }
}
