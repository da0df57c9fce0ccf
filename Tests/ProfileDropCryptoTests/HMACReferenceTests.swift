import ProfileDropCrypto
import Testing

/// The allocation-free HMAC-BLAKE2b and HKDF against RFC 2104 / RFC 5869 written out over one-shot
/// BLAKE2b calls, on seeded random keys and messages of every interesting length.
@Suite struct HMACReferenceTests {
    /// HMAC(K, m) = H((K' ^ opad) || H((K' ^ ipad) || m)), K' the key (hashed when longer than a
    /// block) zero-padded to 128 bytes.
    static func referenceHMAC(key: [UInt8], message: [UInt8]) -> [UInt8] {
        var block = key.count > BLAKE2b.blockLength ? BLAKE2b.hash(key) : key
        block += [UInt8](repeating: 0, count: BLAKE2b.blockLength - block.count)
        let inner = BLAKE2b.hash(block.map { $0 ^ 0x36 } + message)
        return BLAKE2b.hash(block.map { $0 ^ 0x5c } + inner)
    }

    /// HKDF with an empty info string: T(1) = HMAC(prk, 0x01), T(i) = HMAC(prk, T(i-1) || i).
    static func referenceHKDF(salt: [UInt8], inputKeyMaterial: [UInt8], count: Int) -> [UInt8] {
        let prk = referenceHMAC(key: salt, message: inputKeyMaterial)
        var output: [UInt8] = []
        var previous: [UInt8] = []
        for index in 1...count {
            previous = referenceHMAC(key: prk, message: previous + [UInt8(index)])
            output += previous
        }
        return output
    }

    /// SplitMix64, so that a failure reproduces.
    struct SeededBytes {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var mixed = state
            mixed = (mixed ^ (mixed >> 30)) &* 0xBF58_476D_1CE4_E5B9
            mixed = (mixed ^ (mixed >> 27)) &* 0x94D0_49BB_1331_11EB
            return mixed ^ (mixed >> 31)
        }
        mutating func bytes(_ count: Int) -> [UInt8] {
            (0..<count).map { _ in UInt8(truncatingIfNeeded: next()) }
        }
        mutating func length(upTo limit: Int) -> Int { Int(next() % UInt64(limit + 1)) }

        /// The key of test round `round`: one of each of ``keyLengths`` first, then random ones of
        /// up to `limit` bytes.
        mutating func key(round: Int, upTo limit: Int) -> [UInt8] {
            let lengths = HMACReferenceTests.keyLengths
            return bytes(round < lengths.count ? lengths[round] : length(upTo: limit))
        }
    }

    /// Key lengths around the block size and the hash size.
    static let keyLengths = [0, 1, 32, 63, 64, 65, 127, 128, 129, 200, 256, 300]

    @Test func rawBufferHMACMatchesReference() {
        var random = SeededBytes(state: 1)
        for round in 0..<200 {
            let key = random.key(round: round, upTo: 300)
            let first = random.bytes(random.length(upTo: 300))
            let second = random.bytes(random.length(upTo: 70))
            var tag = [UInt8](repeating: 0, count: HMACBLAKE2b.outputLength)
            key.withUnsafeBytes { keyBytes in
                first.withUnsafeBytes { firstBytes in
                    second.withUnsafeBytes { secondBytes in
                        tag.withUnsafeMutableBytes {
                            HMACBLAKE2b.authenticate(
                                key: keyBytes, first: firstBytes, second: secondBytes, into: $0)
                        }
                    }
                }
            }
            let expected = Self.referenceHMAC(key: key, message: first + second)
            #expect(tag == expected, "key \(key.count) bytes, message \(first.count)+\(second.count) bytes")
            #expect(HMACBLAKE2b.authenticate(key: key, parts: [first, second]) == expected)
        }
    }

    @Test func hkdfMatchesReference() {
        var random = SeededBytes(state: 2)
        for round in 0..<100 {
            let salt = random.key(round: round, upTo: 200)
            let inputKeyMaterial = random.bytes(random.length(upTo: 200))
            // Up to nine blocks the scratch memory is on the stack, beyond on the heap: both ways.
            let count = [1, 2, 3, 4, 8, 9, 10, 255][round % 8]
            var derived: [UInt8] = []
            salt.withUnsafeBytes { saltBytes in
                inputKeyMaterial.withUnsafeBytes { material in
                    HKDFBLAKE2b.withDerivedKeys(salt: saltBytes, inputKeyMaterial: material, count: count) {
                        derived = Array($0)
                    }
                }
            }
            #expect(derived.count == count * HKDFBLAKE2b.blockLength)
            #expect(
                derived == Self.referenceHKDF(salt: salt, inputKeyMaterial: inputKeyMaterial, count: count),
                "salt \(salt.count) bytes, input \(inputKeyMaterial.count) bytes, \(count) blocks")
        }
    }

    @Test func twoPartHashMatchesOneShotAndMayWorkInPlace() {
        var random = SeededBytes(state: 3)
        for _ in 0..<50 {
            let first = random.bytes(64)
            let second = random.bytes(random.length(upTo: 300))
            var running = first
            running.withUnsafeMutableBytes { buffer in
                second.withUnsafeBytes { BLAKE2b.hash(UnsafeRawBufferPointer(buffer), $0, into: buffer) }
            }
            #expect(running == BLAKE2b.hash(first + second))
        }
    }
}
