internal import CSodium

/// BLAKE2b (RFC 7693) with its full 64-byte output, as Noise's `BLAKE2b` hash function requires.
///
/// libsodium's `crypto_generichash` defaults to 32 bytes; this type always asks for the length it
/// means. Non-copyable because it owns libsodium's aligned hashing state.
public struct BLAKE2b: ~Copyable {
    /// The Noise HASHLEN for BLAKE2b.
    public static let outputLength = 64
    /// The Noise BLOCKLEN for BLAKE2b, used by HMAC.
    public static let blockLength = 128

    private let state: UnsafeMutableRawPointer
    private let outputLength: Int

    /// Starts an unkeyed hash with `outputLength` bytes of output (1...64).
    public init(outputLength: Int = BLAKE2b.outputLength) {
        precondition((1...BLAKE2b.outputLength).contains(outputLength), "BLAKE2b output length out of range")
        Sodium.ensureInitialized()
        self.outputLength = outputLength
        // libsodium requires 64-byte alignment for this state.
        state = .allocate(byteCount: crypto_generichash_statebytes(), alignment: 64)
        let result = crypto_generichash_init(OpaquePointer(state), nil, 0, outputLength)
        precondition(result == 0, "crypto_generichash_init failed for a valid length")
    }

    deinit {
        sodium_memzero(state, crypto_generichash_statebytes())
        state.deallocate()
    }

    /// Absorbs `data`.
    public mutating func update(_ data: some ContiguousBytes) {
        data.withUnsafeBytes { bytes in
            let result = crypto_generichash_update(
                OpaquePointer(state), bytes.sodiumPointer, UInt64(bytes.count))
            precondition(result == 0, "crypto_generichash_update failed")
        }
    }

    /// Returns the digest, consuming the hasher.
    public consuming func finalize() -> [UInt8] {
        let length = outputLength
        let state = self.state
        return [UInt8](unsafeUninitializedCapacity: length) { output, initialized in
            let result = crypto_generichash_final(OpaquePointer(state), output.sodiumPointer, length)
            precondition(result == 0, "crypto_generichash_final failed")
            initialized = length
        }
    }

    /// One-shot hash of `data`.
    public static func hash(_ data: some ContiguousBytes, outputLength: Int = BLAKE2b.outputLength) -> [UInt8]
    {
        Sodium.ensureInitialized()
        return data.withUnsafeBytes { bytes in
            [UInt8](unsafeUninitializedCapacity: outputLength) { output, initialized in
                let result = crypto_generichash(
                    output.sodiumPointer, outputLength, bytes.sodiumPointer, UInt64(bytes.count), nil, 0)
                precondition(result == 0, "crypto_generichash failed for a valid length")
                initialized = outputLength
            }
        }
    }
}

/// HMAC (RFC 2104) over BLAKE2b with its 128-byte block, as Noise's HKDF requires.
///
/// libsodium 1.0.18 has no HMAC-BLAKE2b, and keyed BLAKE2b is a different function, so HMAC is built
/// here from the incremental hash.
public enum HMACBLAKE2b {
    /// The tag length: BLAKE2b's full 64 bytes.
    public static let outputLength = BLAKE2b.outputLength

    /// Computes HMAC-BLAKE2b(key, parts[0] || parts[1] || ...).
    public static func authenticate(key: some ContiguousBytes, parts: [[UInt8]]) -> [UInt8] {
        key.withUnsafeBytes { authenticate(rawKey: $0, parts: parts) }
    }

    /// Non-generic so that it is compiled once, with no per-call specialisation: Noise's HKDF calls
    /// it 24 times per handshake.
    public static func authenticate(key: [UInt8], parts: [[UInt8]]) -> [UInt8] {
        key.withUnsafeBytes { authenticate(rawKey: $0, parts: parts) }
    }

    private static func authenticate(rawKey: UnsafeRawBufferPointer, parts: [[UInt8]]) -> [UInt8] {
        Sodium.ensureInitialized()
        let blockLength = BLAKE2b.blockLength
        let stateSize = crypto_generichash_statebytes()
        // One stack scratch area: libsodium's 64-byte-aligned hash state, the key block and the pad.
        return withUnsafeTemporaryAllocation(byteCount: stateSize + 2 * blockLength, alignment: 64) {
            scratch in
            defer { sodium_memzero(scratch.baseAddress, scratch.count) }
            let state = OpaquePointer(scratch.baseAddress!)
            let block = UnsafeMutableRawBufferPointer(
                rebasing: scratch[stateSize..<(stateSize + blockLength)])
            let pad = UnsafeMutableRawBufferPointer(rebasing: scratch[(stateSize + blockLength)...])
            // Key block: the key (hashed first if longer than a block), zero-padded to the block length.
            block.initializeMemory(as: UInt8.self, repeating: 0)
            if rawKey.count > blockLength {
                crypto_generichash_init(state, nil, 0, BLAKE2b.outputLength)
                crypto_generichash_update(state, rawKey.sodiumPointer, UInt64(rawKey.count))
                crypto_generichash_final(state, block.sodiumPointer, BLAKE2b.outputLength)
            } else if rawKey.count > 0 {
                block.copyMemory(from: rawKey)
            }

            for index in 0..<blockLength { pad[index] = block[index] ^ 0x36 }
            var innerDigest = [UInt8](repeating: 0, count: BLAKE2b.outputLength)
            crypto_generichash_init(state, nil, 0, BLAKE2b.outputLength)
            crypto_generichash_update(state, pad.sodiumPointer, UInt64(blockLength))
            for part in parts {
                part.withUnsafeBytes {
                    _ = crypto_generichash_update(state, $0.sodiumPointer, UInt64($0.count))
                }
            }
            crypto_generichash_final(state, &innerDigest, BLAKE2b.outputLength)

            for index in 0..<blockLength { pad[index] = block[index] ^ 0x5c }
            var tag = [UInt8](repeating: 0, count: BLAKE2b.outputLength)
            crypto_generichash_init(state, nil, 0, BLAKE2b.outputLength)
            crypto_generichash_update(state, pad.sodiumPointer, UInt64(blockLength))
            crypto_generichash_update(state, innerDigest, UInt64(innerDigest.count))
            crypto_generichash_final(state, &tag, BLAKE2b.outputLength)
            innerDigest.withUnsafeMutableBytes { sodium_memzero($0.baseAddress, $0.count) }
            return tag
        }
    }
}
