import ProfileDropCrypto

/// Noise's CipherState (spec section 5.1): a ChaCha20-Poly1305 key and a 64-bit counter nonce.
///
/// Besides the spec's sequential operations it offers ``encrypt(nonce:ad:plaintext:)`` and
/// ``decrypt(nonce:ad:ciphertext:)`` at an explicit nonce for datagram transports, whose messages can
/// arrive out of order; those leave the state untouched and replay protection is the caller's job.
public struct CipherState: Sendable {
    /// The reserved nonce 2^64-1: never used for a message, only by ``rekey()``.
    public static let maxNonce = UInt64.max

    /// The key; readable inside the module and by its tests (the conformance vectors print the
    /// transport keys), never by other modules.
    private(set) var key: ChaChaPoly.Key?
    /// The nonce the next sequential operation will use.
    public private(set) var nonce: UInt64 = 0

    /// A state without a key, in which encryption is the identity (as during a handshake's start).
    public init() {}

    /// A state holding `key`, with nonce 0.
    public init(key: ChaChaPoly.Key) {
        self.key = key
    }

    /// InitializeKey: sets the key (or clears it with nil) and resets the nonce to 0.
    public mutating func initializeKey(_ key: ChaChaPoly.Key?) {
        self.key = key
        nonce = 0
    }

    /// HasKey: whether a key is set.
    public var hasKey: Bool { key != nil }

    /// SetNonce: sets the nonce for the next sequential operation.
    public mutating func setNonce(_ nonce: UInt64) {
        self.nonce = nonce
    }

    /// EncryptWithAd: encrypts at the current nonce and then increments it. Without a key it returns
    /// the plaintext, as the spec requires.
    /// - Throws: `.nonceExhausted` at nonce 2^64-1, `.messageTooLong` past 65535 bytes of output.
    public mutating func encryptWithAd(
        _ ad: some ContiguousBytes, plaintext: some ContiguousBytes
    ) throws -> [UInt8] {
        guard let key else { return plaintext.withUnsafeBytes { Array($0) } }
        let ciphertext = try Self.seal(key: key, nonce: nonce, ad: ad, plaintext: plaintext)
        nonce += 1  // Cannot overflow: seal rejected maxNonce.
        return ciphertext
    }

    /// DecryptWithAd: decrypts at the current nonce and increments it only when the tag verifies.
    /// Without a key it returns the ciphertext.
    /// - Throws: `.decryptFailed`, `.messageTooShort`, `.messageTooLong` or `.nonceExhausted`.
    public mutating func decryptWithAd(
        _ ad: some ContiguousBytes, ciphertext: some ContiguousBytes
    ) throws -> [UInt8] {
        guard let key else { return ciphertext.withUnsafeBytes { Array($0) } }
        let plaintext = try Self.open(key: key, nonce: nonce, ad: ad, ciphertext: ciphertext)
        nonce += 1  // Cannot overflow: open rejected maxNonce.
        return plaintext
    }

    /// Encrypts at an explicit `nonce` without touching the state. Requires a key.
    /// - Throws: `.nonceExhausted` for 2^64-1, `.messageTooLong` past 65535 bytes of output.
    public func encrypt(
        nonce: UInt64, ad: some ContiguousBytes, plaintext: some ContiguousBytes
    ) throws -> [UInt8] {
        guard let key else { preconditionFailure("explicit-nonce encryption needs a key") }
        return try Self.seal(key: key, nonce: nonce, ad: ad, plaintext: plaintext)
    }

    /// Encrypts `plaintext` at an explicit `nonce` into `output`, which holds exactly the ciphertext
    /// and the 16-byte tag; the state is not changed. For a transport that builds a datagram in one
    /// buffer.
    /// - Throws: ``NoiseError`` for the reserved nonce 2^64-1 or a plaintext over the message limit.
    public func encrypt(
        nonce: UInt64, ad: UnsafeRawBufferPointer, plaintext: UnsafeRawBufferPointer,
        into output: UnsafeMutableRawBufferPointer
    ) throws {
        guard let key else { preconditionFailure("explicit-nonce encryption needs a key") }
        try Self.checkSealable(nonce: nonce, length: plaintext.count)
        ChaChaPoly.seal(
            plaintext, key: key, nonce: ChaChaPoly.Nonce(noiseCounter: nonce), authenticating: ad,
            into: output)
    }

    /// Decrypts `ciphertext` at an explicit `nonce` without touching the state: the raw-buffer form,
    /// non-generic, for a transport that opens one datagram after another. Requires a key.
    /// - Throws: `.decryptFailed`, `.messageTooShort`, `.messageTooLong` or `.nonceExhausted`.
    public func decrypt(
        nonce: UInt64, ad: UnsafeRawBufferPointer, ciphertext: UnsafeRawBufferPointer
    ) throws -> [UInt8] {
        guard let key else { preconditionFailure("explicit-nonce decryption needs a key") }
        return try Self.open(key: key, nonce: nonce, ad: ad, ciphertext: ciphertext)
    }

    /// Decrypts `ciphertext` at an explicit `nonce` into `output`, which holds exactly the
    /// plaintext (the ciphertext less its 16-byte tag); the state is not changed. For a transport
    /// that opens datagrams into one buffer it reuses. Requires a key.
    /// - Throws: `.decryptFailed`, `.messageTooShort`, `.messageTooLong` or `.nonceExhausted`.
    public func decrypt(
        nonce: UInt64, ad: UnsafeRawBufferPointer, ciphertext: UnsafeRawBufferPointer,
        into output: UnsafeMutableRawBufferPointer
    ) throws {
        guard let key else { preconditionFailure("explicit-nonce decryption needs a key") }
        try Self.checkOpenable(nonce: nonce, length: ciphertext.count)
        do {
            try ChaChaPoly.open(
                ciphertext, key: key, nonce: ChaChaPoly.Nonce(noiseCounter: nonce), authenticating: ad,
                into: output)
        } catch {
            throw NoiseError(.decryptFailed, "authentication tag did not verify at nonce \(nonce)")
        }
    }

    /// Decrypts at an explicit `nonce` without touching the state. Requires a key.
    /// - Throws: `.decryptFailed`, `.messageTooShort`, `.messageTooLong` or `.nonceExhausted`.
    public func decrypt(
        nonce: UInt64, ad: some ContiguousBytes, ciphertext: some ContiguousBytes
    ) throws -> [UInt8] {
        guard let key else { preconditionFailure("explicit-nonce decryption needs a key") }
        return try Self.open(key: key, nonce: nonce, ad: ad, ciphertext: ciphertext)
    }

    /// Rekey (spec sections 4.2 and 11.3): the key becomes the first 32 bytes of
    /// ENCRYPT(k, 2^64-1, empty, 32 zero bytes). The nonce is left as it is.
    public mutating func rekey() {
        guard let key else { preconditionFailure("rekey needs a key") }
        let zeros = [UInt8](filling: 0, count: ChaChaPoly.keyLength)
        var sealed = ChaChaPoly.seal(
            zeros, key: key, nonce: ChaChaPoly.Nonce(noiseCounter: Self.maxNonce), authenticating: [UInt8]())
        let newKey = ChaChaPoly.Key(takingPrefixOf: &sealed)
        self.key = newKey
    }

    private static func seal(
        key: ChaChaPoly.Key, nonce: UInt64, ad: some ContiguousBytes, plaintext: some ContiguousBytes
    ) throws -> [UInt8] {
        try checkSealable(nonce: nonce, length: plaintext.withUnsafeBytes { $0.count })
        let nonce = ChaChaPoly.Nonce(noiseCounter: nonce)
        return plaintext.withUnsafeBytes { message in
            ad.withUnsafeBytes { ad in ChaChaPoly.seal(message, key: key, nonce: nonce, authenticating: ad) }
        }
    }

    /// Throws unless a plaintext of `length` bytes may be sealed at `nonce`.
    private static func checkSealable(nonce: UInt64, length: Int) throws {
        guard nonce != maxNonce else {
            throw NoiseError(.nonceExhausted, "nonce 2^64-1 is reserved; the key is used up")
        }
        guard length <= noiseMaxMessageLength - ChaChaPoly.tagLength else {
            throw NoiseError(
                .messageTooLong,
                "plaintext of \(length) bytes exceeds the 65535-byte Noise message limit with its tag")
        }
    }

    /// Throws unless a ciphertext of `length` bytes may be opened at `nonce`.
    private static func checkOpenable(nonce: UInt64, length: Int) throws {
        guard nonce != maxNonce else {
            throw NoiseError(.nonceExhausted, "nonce 2^64-1 is reserved; the key is used up")
        }
        guard length <= noiseMaxMessageLength else {
            throw NoiseError(.messageTooLong, "ciphertext of \(length) bytes exceeds the 65535-byte limit")
        }
        guard length >= ChaChaPoly.tagLength else {
            throw NoiseError(
                .messageTooShort, "ciphertext of \(length) bytes cannot hold a 16-byte authentication tag")
        }
    }

    private static func open(
        key: ChaChaPoly.Key, nonce: UInt64, ad: some ContiguousBytes, ciphertext: some ContiguousBytes
    ) throws -> [UInt8] {
        try checkOpenable(nonce: nonce, length: ciphertext.withUnsafeBytes { $0.count })
        do {
            let aeadNonce = ChaChaPoly.Nonce(noiseCounter: nonce)
            return try ciphertext.withUnsafeBytes { sealed in
                try ad.withUnsafeBytes { ad in
                    try ChaChaPoly.open(sealed, key: key, nonce: aeadNonce, authenticating: ad)
                }
            }
        } catch {
            throw NoiseError(.decryptFailed, "authentication tag did not verify at nonce \(nonce)")
        }
    }
}
