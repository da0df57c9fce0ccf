/// libsodium declares its buffer parameters non-null even when the length is zero, while an empty
/// Swift buffer may have no base address. These helpers hand libsodium a valid pointer either way.
extension UnsafeRawBufferPointer {
    @inline(__always)
    var sodiumPointer: UnsafePointer<UInt8> {
        if let base = baseAddress { return base.assumingMemoryBound(to: UInt8.self) }
        return UnsafeRawPointer(emptyBufferSentinel).assumingMemoryBound(to: UInt8.self)
    }
}

extension UnsafeMutableRawBufferPointer {
    @inline(__always)
    var sodiumPointer: UnsafeMutablePointer<UInt8> {
        if let base = baseAddress { return base.assumingMemoryBound(to: UInt8.self) }
        return emptyBufferSentinel.assumingMemoryBound(to: UInt8.self)
    }
}

extension UnsafeMutableBufferPointer where Element == UInt8 {
    @inline(__always)
    var sodiumPointer: UnsafeMutablePointer<UInt8> {
        baseAddress ?? emptyBufferSentinel.assumingMemoryBound(to: UInt8.self)
    }
}

// Never read or written through: libsodium touches zero bytes of it.
nonisolated(unsafe) private let emptyBufferSentinel = UnsafeMutableRawPointer.allocate(
    byteCount: 16, alignment: 16)
