import ProfileDropErrors

/// A failure of the Noise layer: a bad protocol name or key set-up, or a peer message that cannot
/// be accepted. Misuse by our own code (writing out of turn, splitting early) is a precondition
/// failure instead, so every thrown error is about configuration or outside input. It reads
/// `noise error <code>: <diagnostic>` on one line.
public typealias NoiseError = CodedError<NoiseErrorCode>

/// What went wrong in the Noise layer, for callers that react differently to different failures.
public enum NoiseErrorCode: String, ErrorCode {
    /// The protocol name does not follow `Noise_<pattern>_<dh>_<cipher>_<hash>`.
    case invalidProtocolName
    /// The handshake pattern or one of its modifiers is not implemented.
    case unsupportedPattern
    /// The DH function is not `25519`.
    case unsupportedDH
    /// The cipher is not `ChaChaPoly`.
    case unsupportedCipher
    /// The hash is not `BLAKE2b`.
    case unsupportedHash
    /// The pattern needs a key (static, remote static, ephemeral or PSK) that was not given.
    case missingKey
    /// Key material had the wrong length, or more PSKs were given than the pattern uses.
    case invalidKey
    /// A message is shorter than its tokens and authentication tags require.
    case messageTooShort
    /// A message exceeds the Noise limit of 65535 bytes.
    case messageTooLong
    /// An authentication tag did not verify.
    case decryptFailed
    /// X25519 produced the all-zero output: the peer sent a small-order public key.
    case weakPublicKey
    /// The nonce reached 2^64-1, which Noise reserves; the key must not be used any more.
    case nonceExhausted

    /// Whether the code says only that this implementation lacks a primitive or pattern.
    public var isUnsupported: Bool {
        switch self {
        case .unsupportedPattern, .unsupportedDH, .unsupportedCipher, .unsupportedHash:
            return true
        case .invalidProtocolName, .missingKey, .invalidKey, .messageTooShort, .messageTooLong,
            .decryptFailed, .weakPublicKey, .nonceExhausted:
            return false
        }
    }

    /// `noise error <code>: <diagnostic>`, on one line: a line break in the diagnostic becomes a
    /// space, as the error travels inside other messages.
    public func describe(_ diagnostic: String) -> String {
        "noise error \(rawValue): \(diagnostic.split(whereSeparator: \.isNewline).joined(separator: " "))"
    }
}

extension NoiseError {
    /// Whether the error only says that this implementation lacks a primitive or pattern, rather than
    /// that anything is wrong: vector runners report such protocols as skipped.
    public var isUnsupported: Bool { code.isUnsupported }
}

/// The Noise limit on any message, handshake or transport.
let noiseMaxMessageLength = 65535
