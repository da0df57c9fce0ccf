internal import CSodium

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A source of random bytes, injected wherever randomness is needed so that tests, the simulator
/// and capture replay can run deterministically.
public protocol RandomSource {
    /// Fills `buffer` with random bytes.
    mutating func fill(_ buffer: UnsafeMutableRawBufferPointer)

    /// Returns a uniformly random 64-bit value: the next 8 bytes, read as a native-endian integer.
    /// A requirement so that a buffered source can hand it out without a general ``fill(_:)``.
    mutating func nextUInt64() -> UInt64
}

extension RandomSource {
    /// Returns `count` random bytes.
    public mutating func bytes(_ count: Int) -> [UInt8] {
        [UInt8](byteCount: count) { fill($0) }
    }

    /// Returns a uniformly random 64-bit value: the next 8 bytes, read as a native-endian integer.
    public mutating func nextUInt64() -> UInt64 {
        var value: UInt64 = 0
        withUnsafeMutableBytes(of: &value) { fill($0) }
        return value
    }

    /// Returns a uniformly random integer in `0..<bound` without modulo bias. `bound` must be positive.
    public mutating func uniform(below bound: UInt64) -> UInt64 {
        precondition(bound > 0, "uniform(below:) needs a positive bound")
        // Lemire's multiply-shift with rejection of the biased low range.
        var product = nextUInt64().multipliedFullWidth(by: bound)
        if product.low < bound {
            let threshold = (0 &- bound) % bound
            while product.low < threshold {
                product = nextUInt64().multipliedFullWidth(by: bound)
            }
        }
        return product.high
    }

    /// Returns a uniformly random double in `[0, 1)` with 53 bits of precision.
    public mutating func unitDouble() -> Double {
        Double(nextUInt64() >> 11) * 0x1.0p-53
    }

    /// Returns a normally distributed double with mean 0 and standard deviation 1 (Box–Muller).
    public mutating func standardNormal() -> Double {
        // 1 - u keeps the logarithm's argument in (0, 1].
        let u1 = 1.0 - unitDouble()
        let u2 = unitDouble()
        return (-2.0 * log(u1)).squareRoot() * cos(2.0 * Double.pi * u2)
    }
}

/// The operating system's cryptographic generator, through `randombytes_buf`.
public struct SystemRandom: RandomSource, Sendable {
    /// The system generator; initialises libsodium if needed.
    public init() { Sodium.ensureInitialized() }

    /// Fills `buffer` from `randombytes_buf`.
    public mutating func fill(_ buffer: UnsafeMutableRawBufferPointer) {
        guard let base = buffer.baseAddress, buffer.count > 0 else { return }
        randombytes_buf(base, buffer.count)
    }
}

/// A seeded generator: the ChaCha20 (IETF) keystream under a key derived from the seed.
///
/// The same seed yields the same byte stream on every platform, which is what makes a simulation
/// or a replay reproducible from one number. It is a cryptographic stream, so keys drawn from it in
/// tests are still well formed; it must not be used for real keys, since the seed is public.
public struct DeterministicRandom: RandomSource, Sendable {
    private static let blockBytes = 64
    private static let bufferBytes = 1024

    private let key: [UInt8]
    private var counter: UInt32 = 0
    private var nonceHigh: UInt64 = 0
    private var buffer: [UInt8] = []
    private var position: Int = 0

    /// Creates a generator from a 64-bit seed, as printed by the simulator.
    public init(seed: UInt64) {
        var seedBytes = [UInt8](filling: 0, count: 8)
        for index in 0..<8 { seedBytes[index] = UInt8(truncatingIfNeeded: seed >> (8 * UInt64(index))) }
        self.init(seedMaterial: seedBytes)
    }

    private static let keyLabel = Array("ProfileDrop deterministic random".utf8)

    /// Creates a generator from arbitrary seed material, hashed down to a ChaCha20 key.
    public init(seedMaterial: [UInt8]) {
        Sodium.ensureInitialized()
        // The hash of label and material, absorbed one after the other: no concatenated copy.
        key = [UInt8](byteCount: 32) { key in
            Self.keyLabel.withUnsafeBytes { label in
                seedMaterial.withUnsafeBytes { material in BLAKE2b.hash(label, material, into: key) }
            }
        }
    }

    /// Fills `destination` with the next bytes of the keystream.
    public mutating func fill(_ destination: UnsafeMutableRawBufferPointer) {
        var written = 0
        while written < destination.count {
            if position == buffer.count { refill() }
            let take = Swift.min(destination.count - written, buffer.count - position)
            buffer.withUnsafeBytes { source in
                UnsafeMutableRawBufferPointer(rebasing: destination[written..<(written + take)])
                    .copyMemory(from: UnsafeRawBufferPointer(rebasing: source[position..<(position + take)]))
            }
            written += take
            position += take
        }
    }

    /// The next 8 bytes of the keystream as a native-endian integer, as ``fill(_:)`` would give them,
    /// read straight from the buffer when it holds them: the simulator draws several per datagram.
    public mutating func nextUInt64() -> UInt64 {
        guard buffer.count - position >= 8 else {
            var value: UInt64 = 0
            withUnsafeMutableBytes(of: &value) { fill($0) }
            return value
        }
        let value = buffer.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: position, as: UInt64.self) }
        position += 8
        return value
    }

    private mutating func refill() {
        let blocks = UInt32(Self.bufferBytes / Self.blockBytes)
        if counter > UInt32.max - blocks {
            // Move to a fresh nonce long before the 32-bit block counter could wrap.
            counter = 0
            nonceHigh &+= 1
        }
        // The keystream is the encryption of zeros, written over the buffer in place: no arrays
        // per refill.
        if buffer.count == Self.bufferBytes {
            buffer.withUnsafeMutableBytes { _ = $0.initializeMemory(as: UInt8.self, repeating: 0) }
        } else {
            buffer = [UInt8](filling: 0, count: Self.bufferBytes)
        }
        // Nonce: 4 zero bytes, then `nonceHigh` little-endian; three 32-bit words lie without padding.
        var nonce: (UInt32, UInt32, UInt32) = (
            0, UInt32(truncatingIfNeeded: nonceHigh).littleEndian,
            UInt32(truncatingIfNeeded: nonceHigh >> 32).littleEndian
        )
        let result = withUnsafeBytes(of: &nonce) { nonceBytes in
            buffer.withUnsafeMutableBytes { stream in
                crypto_stream_chacha20_ietf_xor_ic(
                    stream.sodiumPointer, stream.sodiumPointer, UInt64(Self.bufferBytes),
                    nonceBytes.sodiumPointer, counter, key)
            }
        }
        precondition(result == 0, "crypto_stream_chacha20_ietf_xor_ic cannot fail for valid lengths")
        counter += blocks
        position = 0
    }
}
