import ProfileDropCrypto

/// Noise's SymmetricState (spec section 5.2): the chaining key, the handshake hash and the
/// CipherState that handshake payloads and static keys are encrypted with.
public struct SymmetricState: Sendable {
    /// HASHLEN for BLAKE2b.
    public static let hashLength = BLAKE2b.outputLength

    /// The cipher for handshake payloads; replaced by every MixKey.
    public private(set) var cipherState = CipherState()
    /// `ck`: secret once the first DH output is mixed in, so it lives in wiped memory.
    private var chainingKey: SecureBytes
    private var hash: [UInt8]

    /// InitializeSymmetric: `h` is the protocol name zero-padded to 64 bytes, or its BLAKE2b hash
    /// when longer; `ck` starts equal to `h`; no cipher key yet.
    public init(protocolName: String) {
        let name = Array(protocolName.utf8)
        if name.count <= Self.hashLength {
            hash = name + [UInt8](repeating: 0, count: Self.hashLength - name.count)
        } else {
            hash = BLAKE2b.hash(name)
        }
        chainingKey = SecureBytes(hash)
    }

    /// GetHandshakeHash: `h`, for channel binding once the handshake is over.
    public var handshakeHash: [UInt8] { hash }

    /// Whether a cipher key has been mixed in, which decides whether static keys travel encrypted.
    public var hasKey: Bool { cipherState.hasKey }

    /// MixKey: `ck, temp_k = HKDF(ck, ikm, 2)`, then the cipher is keyed with `temp_k[0..<32]`.
    public mutating func mixKey(_ inputKeyMaterial: [UInt8]) {
        var outputs = NoiseHKDF.derive(chainingKey: chainingKey, inputKeyMaterial: inputKeyMaterial, count: 2)
        chainingKey = SecureBytes(outputs[0])
        wipe(&outputs[0])
        // HASHLEN is 64, so cipher keys are the first 32 bytes of an output (spec section 5.2).
        cipherState.initializeKey(ChaChaPoly.Key(takingPrefixOf: &outputs[1]))
    }

    /// MixHash: `h = HASH(h || data)`.
    public mutating func mixHash(_ data: some ContiguousBytes) {
        var hasher = BLAKE2b()
        hasher.update(hash)
        hasher.update(data)
        hash = hasher.finalize()
    }

    /// MixKeyAndHash: `ck, temp_h, temp_k = HKDF(ck, ikm, 3)`; mixes `temp_h` into the hash and keys
    /// the cipher with `temp_k[0..<32]`. Used for PSKs.
    public mutating func mixKeyAndHash(_ inputKeyMaterial: [UInt8]) {
        var outputs = NoiseHKDF.derive(chainingKey: chainingKey, inputKeyMaterial: inputKeyMaterial, count: 3)
        chainingKey = SecureBytes(outputs[0])
        wipe(&outputs[0])
        mixHash(outputs[1])
        cipherState.initializeKey(ChaChaPoly.Key(takingPrefixOf: &outputs[2]))
    }

    /// EncryptAndHash: encrypts with `h` as associated data (identity before any key), then mixes the
    /// ciphertext into `h`.
    public mutating func encryptAndHash(_ plaintext: some ContiguousBytes) throws -> [UInt8] {
        let ciphertext = try cipherState.encryptWithAd(hash, plaintext: plaintext)
        mixHash(ciphertext)
        return ciphertext
    }

    /// DecryptAndHash: decrypts with `h` as associated data, then mixes the ciphertext into `h`.
    /// - Throws: ``NoiseError`` when the tag does not verify or the ciphertext is malformed.
    public mutating func decryptAndHash(_ ciphertext: some ContiguousBytes) throws -> [UInt8] {
        let plaintext = try cipherState.decryptWithAd(hash, ciphertext: ciphertext)
        mixHash(ciphertext)
        return plaintext
    }

    /// Split: `temp_k1, temp_k2 = HKDF(ck, empty, 2)`; returns the initiator-to-responder and the
    /// responder-to-initiator cipher states.
    public func split() -> (initiatorToResponder: CipherState, responderToInitiator: CipherState) {
        var outputs = NoiseHKDF.derive(chainingKey: chainingKey, inputKeyMaterial: [], count: 2)
        let first = CipherState(key: ChaChaPoly.Key(takingPrefixOf: &outputs[0]))
        let second = CipherState(key: ChaChaPoly.Key(takingPrefixOf: &outputs[1]))
        return (first, second)
    }
}

/// HKDF as Noise defines it (spec section 4.3), over HMAC-BLAKE2b.
enum NoiseHKDF {
    /// Returns `count` (2 or 3) outputs of 64 bytes each:
    /// `temp_key = HMAC(ck, ikm)`, `output1 = HMAC(temp_key, 0x01)`,
    /// `output2 = HMAC(temp_key, output1 || 0x02)`, `output3 = HMAC(temp_key, output2 || 0x03)`.
    static func derive(chainingKey: SecureBytes, inputKeyMaterial: [UInt8], count: Int) -> [[UInt8]] {
        precondition(count == 2 || count == 3, "Noise HKDF yields two or three outputs")
        var tempKey = HMACBLAKE2b.authenticate(key: chainingKey, parts: [inputKeyMaterial])
        defer { wipe(&tempKey) }
        var outputs: [[UInt8]] = []
        outputs.reserveCapacity(count)
        outputs.append(HMACBLAKE2b.authenticate(key: tempKey, parts: [[0x01]]))
        for index in 2...count {
            outputs.append(
                HMACBLAKE2b.authenticate(key: tempKey, parts: [outputs[index - 2], [UInt8(index)]]))
        }
        return outputs
    }
}

/// Overwrites secret bytes in place before the array is freed.
func wipe(_ bytes: inout [UInt8]) { SecureMemory.wipe(&bytes) }
