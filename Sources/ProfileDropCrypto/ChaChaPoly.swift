internal import CSodium

/// ChaCha20-Poly1305 in its IETF form (RFC 8439): 256-bit key, 96-bit nonce, 128-bit tag.
public enum ChaChaPoly {
    /// Key length in bytes.
    public static let keyLength = 32
    /// Nonce length in bytes.
    public static let nonceLength = 12
    /// Authentication tag length in bytes.
    public static let tagLength = 16

    /// A symmetric key, wiped from memory when released.
    public struct Key: Sendable, Equatable {
        let secret: SecureBytes

        /// Wraps 32 secret bytes.
        /// - Throws: ``CryptoError/invalidKeyLength(expected:actual:)`` for any other length.
        public init<Bytes: Collection>(rawRepresentation bytes: Bytes) throws where Bytes.Element == UInt8 {
            guard bytes.count == ChaChaPoly.keyLength else {
                throw CryptoError.invalidKeyLength(expected: ChaChaPoly.keyLength, actual: bytes.count)
            }
            secret = SecureBytes(bytes)
        }

        /// Wraps secure bytes that already hold a key, without copying them out of secure memory.
        /// - Throws: ``CryptoError/invalidKeyLength(expected:actual:)`` for any other length.
        public init(secureBytes: SecureBytes) throws {
            guard secureBytes.count == ChaChaPoly.keyLength else {
                throw CryptoError.invalidKeyLength(expected: ChaChaPoly.keyLength, actual: secureBytes.count)
            }
            secret = secureBytes
        }

        /// The first 32 bytes of `source` as a key; `source` is then wiped. For KDF outputs that are
        /// longer than a key, such as Noise's 64-byte HKDF outputs.
        public init(takingPrefixOf source: inout [UInt8]) {
            precondition(source.count >= ChaChaPoly.keyLength, "key material shorter than a key")
            secret = SecureBytes(count: ChaChaPoly.keyLength) { destination in
                source.withUnsafeBytes { bytes in
                    destination.copyMemory(
                        from: UnsafeRawBufferPointer(rebasing: bytes[0..<ChaChaPoly.keyLength]))
                }
            }
            SecureMemory.wipe(&source)
        }

        /// The first 32 bytes of `source` as a key, for KDF outputs longer than a key that live in
        /// scratch memory the caller wipes.
        public init(copyingPrefixOf source: UnsafeRawBufferPointer) {
            precondition(source.count >= ChaChaPoly.keyLength, "key material shorter than a key")
            secret = SecureBytes(
                copying: UnsafeRawBufferPointer(rebasing: source[0..<ChaChaPoly.keyLength]))
        }

        /// A fresh random key.
        public init<Random: RandomSource>(using random: inout Random) {
            secret = SecureBytes(count: ChaChaPoly.keyLength) { random.fill($0) }
        }

        /// The raw key. Copies the secret into an unwiped array: only for explicit exports.
        public var rawRepresentation: [UInt8] { secret.exportBytes() }
    }

    /// A 96-bit nonce. Never reuse one with the same key.
    public struct Nonce: Hashable, Sendable {
        // The 12 bytes as three little-endian words, held inline so that a per-message nonce costs
        // no allocation.
        private let words: (low: UInt32, middle: UInt32, high: UInt32)

        /// Wraps 12 bytes.
        /// - Throws: ``CryptoError/invalidNonceLength(expected:actual:)`` for any other length.
        public init<Bytes: Collection>(rawRepresentation bytes: Bytes) throws where Bytes.Element == UInt8 {
            guard bytes.count == ChaChaPoly.nonceLength else {
                throw CryptoError.invalidNonceLength(expected: ChaChaPoly.nonceLength, actual: bytes.count)
            }
            var packed: (UInt32, UInt32, UInt32) = (0, 0, 0)
            withUnsafeMutableBytes(of: &packed) { _ = $0.initializeMemory(as: UInt8.self, from: bytes) }
            words = (
                UInt32(littleEndian: packed.0), UInt32(littleEndian: packed.1), UInt32(littleEndian: packed.2)
            )
        }

        /// The Noise encoding of a 64-bit counter: 32 zero bits, then the counter little-endian.
        public init(noiseCounter counter: UInt64) {
            words = (0, UInt32(truncatingIfNeeded: counter), UInt32(truncatingIfNeeded: counter >> 32))
        }

        /// The 12 raw bytes.
        public var rawRepresentation: [UInt8] { withUnsafeBytes { Array($0) } }

        /// Calls `body` with the 12 bytes, from the stack.
        func withUnsafeBytes<Result>(_ body: (UnsafeRawBufferPointer) throws -> Result) rethrows -> Result {
            var packed = (words.low.littleEndian, words.middle.littleEndian, words.high.littleEndian)
            return try Swift.withUnsafeBytes(of: &packed, body)
        }

        public static func == (lhs: Nonce, rhs: Nonce) -> Bool { lhs.words == rhs.words }

        public func hash(into hasher: inout Hasher) {
            hasher.combine(words.low)
            hasher.combine(words.middle)
            hasher.combine(words.high)
        }
    }

    /// Encrypts `plaintext` and returns the ciphertext followed by the 16-byte tag.
    public static func seal(
        _ plaintext: some ContiguousBytes, key: Key, nonce: Nonce,
        authenticating associatedData: some ContiguousBytes
    ) -> [UInt8] {
        plaintext.withUnsafeBytes { message in
            associatedData.withUnsafeBytes { ad in seal(message, key: key, nonce: nonce, authenticating: ad) }
        }
    }

    /// Encrypts `message` and returns the ciphertext followed by the 16-byte tag: the raw-buffer
    /// form, non-generic so that callers in other modules pay no unspecialised generic dispatch per
    /// message.
    public static func seal(
        _ message: UnsafeRawBufferPointer, key: Key, nonce: Nonce,
        authenticating ad: UnsafeRawBufferPointer
    ) -> [UInt8] {
        [UInt8](byteCount: message.count + tagLength) { output in
            seal(message, key: key, nonce: nonce, authenticating: ad, into: output)
        }
    }

    /// Encrypts `message` into `output`, which holds exactly the ciphertext and the 16-byte tag: for
    /// a caller that builds a datagram in one buffer, with no ciphertext array to copy into it.
    public static func seal(
        _ message: UnsafeRawBufferPointer, key: Key, nonce: Nonce,
        authenticating ad: UnsafeRawBufferPointer, into output: UnsafeMutableRawBufferPointer
    ) {
        precondition(output.count == message.count + tagLength, "the output holds the ciphertext and its tag")
        Sodium.ensureInitialized()
        key.secret.withUnsafeBytes { keyBytes in
            nonce.withUnsafeBytes { nonceBytes in
                var outputLength: UInt64 = 0
                let result = crypto_aead_chacha20poly1305_ietf_encrypt(
                    output.sodiumPointer, &outputLength,
                    message.sodiumPointer, UInt64(message.count),
                    ad.sodiumPointer, UInt64(ad.count),
                    nil, nonceBytes.sodiumPointer, keyBytes.sodiumPointer)
                precondition(result == 0, "ChaCha20-Poly1305 encryption cannot fail for valid lengths")
            }
        }
    }

    /// Verifies and decrypts `ciphertext` (ciphertext followed by the tag).
    /// - Throws: ``CryptoError/ciphertextTooShort(minimum:actual:)`` when there is no room for a tag,
    ///   ``CryptoError/authenticationFailed`` when the tag does not verify.
    public static func open(
        _ ciphertext: some ContiguousBytes, key: Key, nonce: Nonce,
        authenticating associatedData: some ContiguousBytes
    ) throws -> [UInt8] {
        try ciphertext.withUnsafeBytes { sealed in
            try associatedData.withUnsafeBytes { ad in
                try open(sealed, key: key, nonce: nonce, authenticating: ad)
            }
        }
    }

    /// Verifies and decrypts `sealed` (ciphertext followed by the tag): the raw-buffer form,
    /// non-generic like the raw-buffer seal.
    /// - Throws: ``CryptoError/ciphertextTooShort(minimum:actual:)`` when there is no room for a tag,
    ///   ``CryptoError/authenticationFailed`` when the tag does not verify.
    public static func open(
        _ sealed: UnsafeRawBufferPointer, key: Key, nonce: Nonce,
        authenticating ad: UnsafeRawBufferPointer
    ) throws -> [UInt8] {
        Sodium.ensureInitialized()
        guard sealed.count >= tagLength else {
            throw CryptoError.ciphertextTooShort(minimum: tagLength, actual: sealed.count)
        }
        return try [UInt8](byteCount: sealed.count - tagLength) { output in
            try decrypt(sealed, key: key, nonce: nonce, authenticating: ad, into: output)
        }
    }

    /// Verifies and decrypts `sealed` (ciphertext followed by the tag) into `output`, which holds
    /// exactly the plaintext: for a caller that opens one packet after another into a buffer of its
    /// own, with no array per packet.
    /// - Throws: ``CryptoError/ciphertextTooShort(minimum:actual:)`` when there is no room for a tag,
    ///   ``CryptoError/authenticationFailed`` when the tag does not verify.
    public static func open(
        _ sealed: UnsafeRawBufferPointer, key: Key, nonce: Nonce,
        authenticating ad: UnsafeRawBufferPointer, into output: UnsafeMutableRawBufferPointer
    ) throws {
        Sodium.ensureInitialized()
        guard sealed.count >= tagLength else {
            throw CryptoError.ciphertextTooShort(minimum: tagLength, actual: sealed.count)
        }
        precondition(output.count == sealed.count - tagLength, "the output holds exactly the plaintext")
        try decrypt(sealed, key: key, nonce: nonce, authenticating: ad, into: output)
    }

    /// Verifies `sealed` and decrypts it into `output`, which holds exactly the plaintext.
    private static func decrypt(
        _ sealed: UnsafeRawBufferPointer, key: Key, nonce: Nonce, authenticating ad: UnsafeRawBufferPointer,
        into output: UnsafeMutableRawBufferPointer
    ) throws {
        var result: Int32 = 0
        key.secret.withUnsafeBytes { keyBytes in
            nonce.withUnsafeBytes { nonceBytes in
                result = crypto_aead_chacha20poly1305_ietf_decrypt(
                    output.sodiumPointer, nil, nil,
                    sealed.sodiumPointer, UInt64(sealed.count),
                    ad.sodiumPointer, UInt64(ad.count),
                    nonceBytes.sodiumPointer, keyBytes.sodiumPointer)
            }
        }
        guard result == 0 else { throw CryptoError.authenticationFailed }
    }
}

/// Byte containers that can lend their contiguous storage; lets the AEAD and hash APIs take arrays
/// and slices without copying.
public protocol ContiguousBytes {
    /// Calls `body` with the bytes.
    func withUnsafeBytes<Result>(_ body: (UnsafeRawBufferPointer) throws -> Result) rethrows -> Result
}

extension Array: ContiguousBytes where Element == UInt8 {}
extension ArraySlice: ContiguousBytes where Element == UInt8 {}
extension UnsafeRawBufferPointer: ContiguousBytes {
    public func withUnsafeBytes<Result>(_ body: (UnsafeRawBufferPointer) throws -> Result) rethrows -> Result
    {
        try body(self)
    }
}
