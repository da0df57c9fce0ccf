internal import CSodium

/// Immutable secret bytes in memory owned by this object and wiped with `sodium_memzero` when the
/// last reference goes away.
///
/// A class, so that copying a key copies a reference rather than leaving unwiped duplicates of the
/// secret behind in freed array storage.
public final class SecureBytes: @unchecked Sendable {
    // Written only during init; never mutated afterwards, hence safe to share across threads.
    private let storage: UnsafeMutableRawBufferPointer

    /// The number of secret bytes held.
    public let count: Int

    /// Creates a buffer of `count` bytes filled in place by `initializer`, so that the secret never
    /// passes through an ordinary array.
    public init(count: Int, initializingWith initializer: (UnsafeMutableRawBufferPointer) throws -> Void)
        rethrows
    {
        precondition(count >= 0, "SecureBytes count must not be negative")
        Sodium.ensureInitialized()
        // At least one byte, so that an empty secret still has a valid base address.
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: Swift.max(count, 1), alignment: 16)
        buffer.initializeMemory(as: UInt8.self, repeating: 0)
        do {
            try initializer(UnsafeMutableRawBufferPointer(rebasing: buffer[0..<count]))
        } catch {
            // Stored properties are not set yet, so deinit will not run: wipe and free here.
            sodium_memzero(buffer.baseAddress, buffer.count)
            buffer.deallocate()
            throw error
        }
        self.count = count
        storage = buffer
    }

    /// Copies an array into a new secure buffer as raw memory. Non-generic: across modules the
    /// generic initialiser below is not specialised and copies byte by byte, which shows in the
    /// handshake benchmark.
    public convenience init(_ bytes: [UInt8]) {
        self.init(count: bytes.count) { buffer in
            bytes.withUnsafeBytes { buffer.copyMemory(from: $0) }
        }
    }

    /// Copies raw bytes, such as a KDF output still in scratch memory, into a new secure buffer.
    public convenience init(copying bytes: UnsafeRawBufferPointer) {
        self.init(count: bytes.count) { buffer in
            if bytes.count > 0 { buffer.copyMemory(from: bytes) }
        }
    }

    /// Copies `bytes` into a new secure buffer.
    public convenience init<Bytes: Collection>(_ bytes: Bytes) where Bytes.Element == UInt8 {
        self.init(count: bytes.count) { buffer in
            _ = buffer.initializeMemory(as: UInt8.self, from: bytes)
        }
    }

    deinit {
        sodium_memzero(storage.baseAddress, storage.count)
        storage.deallocate()
    }

    /// Calls `body` with a read-only view of the secret bytes.
    @inline(__always)
    public func withUnsafeBytes<Result>(_ body: (UnsafeRawBufferPointer) throws -> Result) rethrows -> Result
    {
        try body(UnsafeRawBufferPointer(rebasing: storage[0..<count]))
    }

    /// Copies the secret into an ordinary array. Only for tests, vectors and explicitly requested
    /// exports such as key logs: the copy is not wiped.
    public func exportBytes() -> [UInt8] {
        withUnsafeBytes { Array($0) }
    }
}

extension SecureBytes: Equatable {
    /// Constant-time comparison (`sodium_memcmp`); lengths are not secret.
    public static func == (lhs: SecureBytes, rhs: SecureBytes) -> Bool {
        lhs.withUnsafeBytes { l in rhs.withUnsafeBytes { r in ConstantTime.equals(l, r) } }
    }
}

/// Comparisons whose running time does not depend on where the inputs differ.
public enum ConstantTime {
    /// Returns whether `lhs` and `rhs` hold the same bytes. Inputs of different lengths are unequal;
    /// the length itself is not treated as secret.
    public static func equals(_ lhs: UnsafeRawBufferPointer, _ rhs: UnsafeRawBufferPointer) -> Bool {
        Sodium.ensureInitialized()
        guard lhs.count == rhs.count else { return false }
        if lhs.count == 0 { return true }
        return sodium_memcmp(lhs.baseAddress, rhs.baseAddress, lhs.count) == 0
    }

    /// Array convenience for ``equals(_:_:)-(UnsafeRawBufferPointer,UnsafeRawBufferPointer)``.
    public static func equals(_ lhs: [UInt8], _ rhs: [UInt8]) -> Bool {
        lhs.withUnsafeBytes { l in rhs.withUnsafeBytes { r in equals(l, r) } }
    }
}

extension SecureBytes: ContiguousBytes {}

/// Wiping secrets that had to pass through ordinary arrays (KDF outputs, decrypted key material).
public enum SecureMemory {
    /// Overwrites the array's bytes with zeros in a way the optimiser cannot drop.
    public static func wipe(_ bytes: inout [UInt8]) {
        bytes.withUnsafeMutableBytes { buffer in
            guard let base = buffer.baseAddress, buffer.count > 0 else { return }
            sodium_memzero(base, buffer.count)
        }
    }
}
