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
        try advancing(plaintext) { key, nonce in
            try Self.seal(key: key, nonce: nonce, ad: ad, plaintext: plaintext)
        }
    }

    /// DecryptWithAd: decrypts at the current nonce and increments it only when the tag verifies.
    /// Without a key it returns the ciphertext.
    /// - Throws: `.decryptFailed`, `.messageTooShort`, `.messageTooLong` or `.nonceExhausted`.
    public mutating func decryptWithAd(
        _ ad: some ContiguousBytes, ciphertext: some ContiguousBytes
    ) throws -> [UInt8] {
        try advancing(ciphertext) { key, nonce in
            try Self.open(key: key, nonce: nonce, ad: ad, ciphertext: ciphertext)
        }
    }

    /// A sequential operation: `operation` with the key at the current nonce, which then moves on
    /// unless it threw. Without a key, `input` as it is.
    private mutating func advancing(
        _ input: some ContiguousBytes, _ operation: (ChaChaPoly.Key, UInt64) throws -> [UInt8]
    ) rethrows -> [UInt8] {
        guard let key else { return input.withUnsafeBytes { Array($0) } }
        let output = try operation(key, nonce)
        nonce += 1  // Cannot overflow: seal and open reject maxNonce.
        return output
    }

    /// Encrypts at an explicit `nonce` without touching the state. Requires a key.
    /// - Throws: `.nonceExhausted` for 2^64-1, `.messageTooLong` past 65535 bytes of output.
    public func encrypt(
        nonce: UInt64, ad: some ContiguousBytes, plaintext: some ContiguousBytes
    ) throws -> [UInt8] {
        try Self.seal(key: explicitKey("encryption"), nonce: nonce, ad: ad, plaintext: plaintext)
    }

    /// Decrypts at an explicit `nonce` without touching the state. Requires a key.
    /// - Throws: `.decryptFailed`, `.messageTooShort`, `.messageTooLong` or `.nonceExhausted`.
    public func decrypt(
        nonce: UInt64, ad: some ContiguousBytes, ciphertext: some ContiguousBytes
    ) throws -> [UInt8] {
        try Self.open(key: explicitKey("decryption"), nonce: nonce, ad: ad, ciphertext: ciphertext)
    }

    /// Decrypts `ciphertext` at an explicit `nonce` without touching the state: the raw-buffer form,
    /// non-generic, for a transport that opens one datagram after another. Requires a key.
    /// - Throws: `.decryptFailed`, `.messageTooShort`, `.messageTooLong` or `.nonceExhausted`.
    public func decrypt(
        nonce: UInt64, ad: UnsafeRawBufferPointer, ciphertext: UnsafeRawBufferPointer
    ) throws -> [UInt8] {
        try Self.open(key: explicitKey("decryption"), nonce: nonce, ad: ad, ciphertext: ciphertext)
    }

    /// Encrypts `plaintext` at an explicit `nonce` into `output`, which holds exactly the ciphertext
    /// and the 16-byte tag; the state is not changed. For a transport that builds a datagram in one
    /// buffer.
    /// - Throws: ``NoiseError`` for the reserved nonce 2^64-1 or a plaintext over the message limit.
    public func encrypt(
        nonce: UInt64, ad: UnsafeRawBufferPointer, plaintext: UnsafeRawBufferPointer,
        into output: UnsafeMutableRawBufferPointer
    ) throws {
        try Self.seal(
            key: explicitKey("encryption"), nonce: nonce, ad: ad, plaintext: plaintext, into: output)
    }

    /// Decrypts `ciphertext` at an explicit `nonce` into `output`, which holds exactly the
    /// plaintext (the ciphertext less its 16-byte tag); the state is not changed. For a transport
    /// that opens datagrams into one buffer it reuses. Requires a key.
    /// - Throws: `.decryptFailed`, `.messageTooShort`, `.messageTooLong` or `.nonceExhausted`.
    public func decrypt(
        nonce: UInt64, ad: UnsafeRawBufferPointer, ciphertext: UnsafeRawBufferPointer,
        into output: UnsafeMutableRawBufferPointer
    ) throws {
        let key = explicitKey("decryption")
        try Self.checkOpenable(nonce: nonce, length: ciphertext.count)
        try Self.open(key: key, nonce: nonce, ad: ad, ciphertext: ciphertext, into: output)
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

    /// The key, which the explicit-nonce operations require: calling one without is a programming
    /// error, not a peer's doing.
    private func explicitKey(_ operation: String) -> ChaChaPoly.Key {
        guard let key else { preconditionFailure("explicit-nonce \(operation) needs a key") }
        return key
    }

    /// Every encryption: the checks, then the ciphertext and tag in a new array.
    private static func seal(
        key: ChaChaPoly.Key, nonce: UInt64, ad: some ContiguousBytes, plaintext: some ContiguousBytes
    ) throws -> [UInt8] {
        try plaintext.withUnsafeBytes { plaintext in
            try ad.withUnsafeBytes { ad in
                try [UInt8](byteCount: plaintext.count + ChaChaPoly.tagLength) { output in
                    try seal(key: key, nonce: nonce, ad: ad, plaintext: plaintext, into: output)
                }
            }
        }
    }

    /// Every encryption into a buffer sized for the ciphertext and tag, after the checks.
    private static func seal(
        key: ChaChaPoly.Key, nonce: UInt64, ad: UnsafeRawBufferPointer, plaintext: UnsafeRawBufferPointer,
        into output: UnsafeMutableRawBufferPointer
    ) throws {
        try checkSealable(nonce: nonce, length: plaintext.count)
        ChaChaPoly.seal(
            plaintext, key: key, nonce: ChaChaPoly.Nonce(noiseCounter: nonce), authenticating: ad,
            into: output)
    }

    /// Throws unless a plaintext of `length` bytes may be sealed at `nonce`.
    private static func checkSealable(nonce: UInt64, length: Int) throws {
        try checkNonce(nonce)
        guard length <= noiseMaxMessageLength - ChaChaPoly.tagLength else {
            throw NoiseError(
                .messageTooLong,
                "plaintext of \(length) bytes exceeds the 65535-byte Noise message limit with its tag")
        }
    }

    /// Every decryption: the checks, then the plaintext in a new array.
    private static func open(
        key: ChaChaPoly.Key, nonce: UInt64, ad: some ContiguousBytes, ciphertext: some ContiguousBytes
    ) throws -> [UInt8] {
        try ciphertext.withUnsafeBytes { ciphertext in
            try checkOpenable(nonce: nonce, length: ciphertext.count)
            return try ad.withUnsafeBytes { ad in
                try [UInt8](byteCount: ciphertext.count - ChaChaPoly.tagLength) { output in
                    try open(key: key, nonce: nonce, ad: ad, ciphertext: ciphertext, into: output)
                }
            }
        }
    }

    /// Decrypts into a buffer sized for the plaintext; the caller has made the checks. A tag that
    /// does not verify is `.decryptFailed`.
    private static func open(
        key: ChaChaPoly.Key, nonce: UInt64, ad: UnsafeRawBufferPointer, ciphertext: UnsafeRawBufferPointer,
        into output: UnsafeMutableRawBufferPointer
    ) throws {
        do {
            try ChaChaPoly.open(
                ciphertext, key: key, nonce: ChaChaPoly.Nonce(noiseCounter: nonce), authenticating: ad,
                into: output)
        } catch {
            throw NoiseError(.decryptFailed, "authentication tag did not verify at nonce \(nonce)")
        }
    }

    /// Throws unless a ciphertext of `length` bytes may be opened at `nonce`.
    private static func checkOpenable(nonce: UInt64, length: Int) throws {
        try checkNonce(nonce)
        guard length <= noiseMaxMessageLength else {
            throw NoiseError(.messageTooLong, "ciphertext of \(length) bytes exceeds the 65535-byte limit")
        }
        guard length >= ChaChaPoly.tagLength else {
            throw NoiseError(
                .messageTooShort, "ciphertext of \(length) bytes cannot hold a 16-byte authentication tag")
        }
    }

    /// Throws for the reserved nonce 2^64-1.
    private static func checkNonce(_ nonce: UInt64) throws {
        guard nonce != maxNonce else {
            throw NoiseError(.nonceExhausted, "nonce 2^64-1 is reserved; the key is used up")
        }
    }
}
