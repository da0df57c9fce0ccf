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
            hash = name + [UInt8](filling: 0, count: Self.hashLength - name.count)
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
        inputKeyMaterial.withUnsafeBytes { mixKey(rawInputKeyMaterial: $0) }
    }

    /// MixKey with input key material that is itself secret, such as a DH output, so that it never
    /// leaves secure memory.
    public mutating func mixKey(_ inputKeyMaterial: SecureBytes) {
        inputKeyMaterial.withUnsafeBytes { mixKey(rawInputKeyMaterial: $0) }
    }

    private mutating func mixKey(rawInputKeyMaterial: UnsafeRawBufferPointer) {
        let length = Self.hashLength
        // The outputs live in wiped scratch memory; only the new `ck` and the cipher key are kept.
        let (newChainingKey, cipherKey) = NoiseHKDF.withOutputs(
            chainingKey: chainingKey, inputKeyMaterial: rawInputKeyMaterial, count: 2
        ) { outputs in
            (
                SecureBytes(copying: UnsafeRawBufferPointer(rebasing: outputs[0..<length])),
                // HASHLEN is 64, so cipher keys are the first 32 bytes of an output (spec section 5.2).
                ChaChaPoly.Key(copyingPrefixOf: UnsafeRawBufferPointer(rebasing: outputs[length...]))
            )
        }
        chainingKey = newChainingKey
        cipherState.initializeKey(cipherKey)
    }

    /// MixHash: `h = HASH(h || data)`, updating `h` in place.
    public mutating func mixHash(_ data: some ContiguousBytes) {
        data.withUnsafeBytes { bytes in
            hash.withUnsafeMutableBytes { running in
                BLAKE2b.hash(UnsafeRawBufferPointer(running), bytes, into: running)
            }
        }
    }

    /// MixKeyAndHash: `ck, temp_h, temp_k = HKDF(ck, ikm, 3)`; mixes `temp_h` into the hash and keys
    /// the cipher with `temp_k[0..<32]`. Used for PSKs.
    public mutating func mixKeyAndHash(_ inputKeyMaterial: [UInt8]) {
        let length = Self.hashLength
        let (newChainingKey, cipherKey) = inputKeyMaterial.withUnsafeBytes { material in
            NoiseHKDF.withOutputs(chainingKey: chainingKey, inputKeyMaterial: material, count: 3) { outputs in
                mixHash(UnsafeRawBufferPointer(rebasing: outputs[length..<(2 * length)]))
                return (
                    SecureBytes(copying: UnsafeRawBufferPointer(rebasing: outputs[0..<length])),
                    ChaChaPoly.Key(
                        copyingPrefixOf: UnsafeRawBufferPointer(rebasing: outputs[(2 * length)...]))
                )
            }
        }
        chainingKey = newChainingKey
        cipherState.initializeKey(cipherKey)
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
        let length = Self.hashLength
        return NoiseHKDF.withOutputs(
            chainingKey: chainingKey, inputKeyMaterial: UnsafeRawBufferPointer(start: nil, count: 0), count: 2
        ) { outputs in
            (
                CipherState(
                    key: ChaChaPoly.Key(
                        copyingPrefixOf: UnsafeRawBufferPointer(rebasing: outputs[0..<length]))),
                CipherState(
                    key: ChaChaPoly.Key(copyingPrefixOf: UnsafeRawBufferPointer(rebasing: outputs[length...]))
                )
            )
        }
    }
}

/// HKDF as Noise defines it (spec section 4.3), over HMAC-BLAKE2b: RFC 5869's HKDF with `ck` as the
/// salt and an empty info string.
enum NoiseHKDF {
    /// Hands `body` the `count` (2 or 3) outputs of 64 bytes each, back to back, in scratch memory
    /// that is wiped afterwards: `temp_key = HMAC(ck, ikm)`, `output1 = HMAC(temp_key, 0x01)`,
    /// `output2 = HMAC(temp_key, output1 || 0x02)`, `output3 = HMAC(temp_key, output2 || 0x03)`.
    static func withOutputs<Result>(
        chainingKey: SecureBytes, inputKeyMaterial: UnsafeRawBufferPointer, count: Int,
        _ body: (UnsafeRawBufferPointer) -> Result
    ) -> Result {
        precondition(count == 2 || count == 3, "Noise HKDF yields two or three outputs")
        var result: Result?
        chainingKey.withUnsafeBytes { salt in
            HKDFBLAKE2b.withDerivedKeys(salt: salt, inputKeyMaterial: inputKeyMaterial, count: count) {
                result = body($0)
            }
        }
        guard let result else { preconditionFailure("HKDF always calls its body") }
        return result
    }

    /// The outputs as arrays, which are not wiped: for tests only.
    static func derive(chainingKey: SecureBytes, inputKeyMaterial: [UInt8], count: Int) -> [[UInt8]] {
        inputKeyMaterial.withUnsafeBytes { material in
            withOutputs(chainingKey: chainingKey, inputKeyMaterial: material, count: count) { outputs in
                (0..<count).map {
                    Array(outputs[($0 * SymmetricState.hashLength)..<(($0 + 1) * SymmetricState.hashLength)])
                }
            }
        }
    }
}
