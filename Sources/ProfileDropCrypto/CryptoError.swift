/// Errors raised by the typed libsodium layer.
///
/// Each case is specific so that callers (and tests) can tell malformed key material from a peer's
/// forged message.
public enum CryptoError: Error, Equatable, Sendable {
    /// Key material had the wrong length.
    case invalidKeyLength(expected: Int, actual: Int)
    /// A nonce had the wrong length.
    case invalidNonceLength(expected: Int, actual: Int)
    /// X25519 produced the all-zero output: the peer's public key is of small order.
    case weakPublicKey
    /// An AEAD tag did not verify: the ciphertext, nonce, key or associated data were altered.
    case authenticationFailed
    /// A ciphertext was shorter than the authentication tag it must carry.
    case ciphertextTooShort(minimum: Int, actual: Int)
}

extension CryptoError: CustomStringConvertible {
    public var description: String {
        switch self {
        case .invalidKeyLength(let expected, let actual):
            return "invalid key length: expected \(expected) bytes, got \(actual)"
        case .invalidNonceLength(let expected, let actual):
            return "invalid nonce length: expected \(expected) bytes, got \(actual)"
        case .weakPublicKey:
            return "X25519 rejected a small-order public key"
        case .authenticationFailed:
            return "authentication failed"
        case .ciphertextTooShort(let minimum, let actual):
            return "ciphertext too short: at least \(minimum) bytes needed, got \(actual)"
        }
    }
}
