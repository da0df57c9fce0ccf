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
        return [UInt8](byteCount: length) { output in
            let result = crypto_generichash_final(OpaquePointer(state), output.sodiumPointer, length)
            precondition(result == 0, "crypto_generichash_final failed")
        }
    }

    /// One-shot hash of `data`.
    public static func hash(_ data: some ContiguousBytes, outputLength: Int = BLAKE2b.outputLength) -> [UInt8]
    {
        Sodium.ensureInitialized()
        return data.withUnsafeBytes { bytes in
            [UInt8](byteCount: outputLength) { output in
                let result = crypto_generichash(
                    output.sodiumPointer, outputLength, bytes.sodiumPointer, UInt64(bytes.count), nil, 0)
                precondition(result == 0, "crypto_generichash failed for a valid length")
            }
        }
    }

    /// Hashes `first || second` into `output` (1...64 bytes, which is also the digest length) with
    /// the hashing state on the stack, wiped afterwards. `output` may overlap the inputs: it is
    /// written only after both are absorbed, so a running hash can be updated in place, as Noise's
    /// MixHash does.
    public static func hash(
        _ first: UnsafeRawBufferPointer, _ second: UnsafeRawBufferPointer,
        into output: UnsafeMutableRawBufferPointer
    ) {
        precondition((1...BLAKE2b.outputLength).contains(output.count), "BLAKE2b output length out of range")
        Sodium.ensureInitialized()
        withWipedScratch(byteCount: blake2bStateSize) { scratch in
            let state = OpaquePointer(scratch.sodiumPointer)
            crypto_generichash_init(state, nil, 0, output.count)
            crypto_generichash_update(state, first.sodiumPointer, UInt64(first.count))
            crypto_generichash_update(state, second.sodiumPointer, UInt64(second.count))
            crypto_generichash_final(state, output.sodiumPointer, output.count)
        }
    }
}

/// The size of libsodium's BLAKE2b state (which must sit at a 64-byte-aligned address), rounded up
/// to a multiple of 64 so that states laid side by side stay aligned. Swift does not import the
/// over-aligned C struct, so the size is asked for.
let blake2bStateSize = (crypto_generichash_statebytes() + 63) & ~63

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

    /// Non-generic so that it is compiled once, with no per-call specialisation.
    public static func authenticate(key: [UInt8], parts: [[UInt8]]) -> [UInt8] {
        key.withUnsafeBytes { authenticate(rawKey: $0, parts: parts) }
    }

    /// Writes HMAC-BLAKE2b(key, first || second) into the 64 bytes of `tag`, with no heap
    /// allocation; every intermediate value (padded key blocks, inner digest, states) is wiped.
    public static func authenticate(
        key: UnsafeRawBufferPointer, first: UnsafeRawBufferPointer, second: UnsafeRawBufferPointer,
        into tag: UnsafeMutableRawBufferPointer
    ) {
        precondition(tag.count == outputLength, "an HMAC-BLAKE2b tag is 64 bytes")
        Sodium.ensureInitialized()
        HMACWorkspace.with { workspace in
            workspace.setKey(key)
            workspace.beginMessage()
            workspace.absorb(first)
            workspace.absorb(second)
            workspace.finishMessage(into: tag.sodiumPointer)
        }
    }

    private static func authenticate(rawKey: UnsafeRawBufferPointer, parts: [[UInt8]]) -> [UInt8] {
        Sodium.ensureInitialized()
        return [UInt8](byteCount: outputLength) { tag in
            HMACWorkspace.with { workspace in
                workspace.setKey(rawKey)
                workspace.beginMessage()
                for part in parts { part.withUnsafeBytes { workspace.absorb($0) } }
                workspace.finishMessage(into: tag.sodiumPointer)
            }
        }
    }
}

/// HKDF (RFC 5869) over HMAC-BLAKE2b with an empty info string: exactly Noise's `HKDF(ck, ikm, n)`
/// (spec section 4.3) with the chaining key as salt, whose outputs are the 64-byte blocks
/// `T(1) = HMAC(prk, 0x01)`, `T(i) = HMAC(prk, T(i-1) || i)` after `prk = HMAC(salt, ikm)`.
public enum HKDFBLAKE2b {
    /// The length of each output block: BLAKE2b's full 64 bytes.
    public static let blockLength = BLAKE2b.outputLength

    /// Derives `count` output blocks (1...255) and hands them to `body` as one buffer of
    /// `count * 64` bytes. Everything lives in scratch memory that is wiped when `body` returns, so
    /// callers copy what they keep straight into ``SecureBytes`` or keys; on the stack for a few
    /// blocks (nine with libsodium 1.0.18; Noise asks for two or three).
    ///
    /// The pseudorandom key's padded inner and outer blocks are absorbed once and the hashing states
    /// copied for each output block, rather than rebuilt per HMAC. Non-generic on purpose: a generic
    /// result type would cost a runtime metadata lookup per call from other modules.
    public static func withDerivedKeys(
        salt: UnsafeRawBufferPointer, inputKeyMaterial: UnsafeRawBufferPointer, count: Int,
        _ body: (UnsafeRawBufferPointer) throws -> Void
    ) rethrows {
        precondition((1...255).contains(count), "HKDF yields 1 to 255 output blocks")
        Sodium.ensureInitialized()
        let outputBytes = count * blockLength
        try withWipedScratch(byteCount: HMACWorkspace.byteCount + blockLength + outputBytes) { scratch in
            let workspace = HMACWorkspace(scratch)
            let base = scratch.sodiumPointer
            let prk = base + HMACWorkspace.byteCount
            let output = prk + blockLength
            // Extract.
            workspace.setKey(salt)
            workspace.beginMessage()
            workspace.absorb(inputKeyMaterial)
            workspace.finishMessage(into: prk)
            // Expand, with an empty info string.
            workspace.setKey(UnsafeRawBufferPointer(start: prk, count: blockLength))
            var counter: UInt8 = 1
            for index in 0..<count {
                let block = output + index * blockLength
                workspace.beginMessage()
                if index > 0 {
                    workspace.absorb(UnsafeRawBufferPointer(start: block - blockLength, count: blockLength))
                }
                withUnsafeBytes(of: &counter) { workspace.absorb($0) }
                workspace.finishMessage(into: block)
                counter &+= 1
            }
            try body(UnsafeRawBufferPointer(start: output, count: outputBytes))
        }
    }
}

/// HMAC-BLAKE2b over caller-provided scratch memory: the inner and outer hashing states with one
/// key's padded blocks absorbed, a working state they are copied into for each message, the key
/// block and the inner digest. Callers wipe the scratch; ``with(_:)`` does so.
struct HMACWorkspace {
    /// Three 64-byte-aligned states, the 128-byte key block and the 64-byte inner digest.
    static let byteCount = 3 * blake2bStateSize + BLAKE2b.blockLength + BLAKE2b.outputLength

    private let inner: UnsafeMutableRawPointer
    private let outer: UnsafeMutableRawPointer
    private let work: OpaquePointer
    private let keyBlock: UnsafeMutablePointer<UInt8>
    private let innerDigest: UnsafeMutablePointer<UInt8>

    /// Lays the workspace out at the start of `scratch`, which must be 64-byte aligned and at least
    /// ``byteCount`` long.
    init(_ scratch: UnsafeMutableRawBufferPointer) {
        precondition(scratch.count >= Self.byteCount, "HMAC scratch too small")
        precondition(Int(bitPattern: scratch.baseAddress) % 64 == 0, "HMAC scratch not 64-byte aligned")
        let base = scratch.sodiumPointer
        inner = UnsafeMutableRawPointer(base)
        outer = UnsafeMutableRawPointer(base + blake2bStateSize)
        work = OpaquePointer(base + 2 * blake2bStateSize)
        keyBlock = base + 3 * blake2bStateSize
        innerDigest = keyBlock + BLAKE2b.blockLength
    }

    /// Runs `body` with a workspace on the stack, wiped afterwards.
    static func with<Result>(_ body: (HMACWorkspace) throws -> Result) rethrows -> Result {
        try withWipedScratch(byteCount: byteCount) { try body(HMACWorkspace($0)) }
    }

    /// Absorbs `key`'s padded block XOR ipad into the inner state and XOR opad into the outer one.
    /// A key longer than the block is hashed first (RFC 2104).
    func setKey(_ key: UnsafeRawBufferPointer) {
        let blockLength = BLAKE2b.blockLength
        keyBlock.initialize(repeating: 0, count: blockLength)
        if key.count > blockLength {
            crypto_generichash_init(work, nil, 0, BLAKE2b.outputLength)
            crypto_generichash_update(work, key.sodiumPointer, UInt64(key.count))
            crypto_generichash_final(work, keyBlock, BLAKE2b.outputLength)
        } else if key.count > 0 {
            UnsafeMutableRawPointer(keyBlock).copyMemory(from: key.sodiumPointer, byteCount: key.count)
        }
        for index in 0..<blockLength { keyBlock[index] ^= 0x36 }
        crypto_generichash_init(OpaquePointer(inner), nil, 0, BLAKE2b.outputLength)
        crypto_generichash_update(OpaquePointer(inner), keyBlock, UInt64(blockLength))
        // XOR with 0x36 ^ 0x5c turns the ipad block into the opad block.
        for index in 0..<blockLength { keyBlock[index] ^= 0x36 ^ 0x5c }
        crypto_generichash_init(OpaquePointer(outer), nil, 0, BLAKE2b.outputLength)
        crypto_generichash_update(OpaquePointer(outer), keyBlock, UInt64(blockLength))
    }

    /// Starts a message under the current key.
    func beginMessage() {
        UnsafeMutableRawPointer(work).copyMemory(from: inner, byteCount: blake2bStateSize)
    }

    /// Absorbs the next part of the message.
    func absorb(_ bytes: UnsafeRawBufferPointer) {
        crypto_generichash_update(work, bytes.sodiumPointer, UInt64(bytes.count))
    }

    /// Writes the 64-byte tag of the message absorbed since ``beginMessage()``.
    func finishMessage(into tag: UnsafeMutablePointer<UInt8>) {
        crypto_generichash_final(work, innerDigest, BLAKE2b.outputLength)
        UnsafeMutableRawPointer(work).copyMemory(from: outer, byteCount: blake2bStateSize)
        crypto_generichash_update(work, innerDigest, UInt64(BLAKE2b.outputLength))
        crypto_generichash_final(work, tag, BLAKE2b.outputLength)
    }
}
