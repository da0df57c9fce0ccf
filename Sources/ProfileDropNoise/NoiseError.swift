/// A failure of the Noise layer: a bad protocol name or key set-up, or a peer message that cannot
/// be accepted. Misuse by our own code (writing out of turn, splitting early) is a precondition
/// failure instead, so every thrown error is about configuration or outside input.
public struct NoiseError: Error, Equatable, Sendable {
    /// What went wrong, for callers that react differently to different failures.
    public enum Code: String, Equatable, Sendable {
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
    }

    /// The kind of failure.
    public let code: Code
    /// One line for logs and error messages, saying what exactly was wrong.
    public let diagnostic: String

    /// Creates an error with a one-line diagnostic.
    public init(_ code: Code, _ diagnostic: String) {
        self.code = code
        self.diagnostic = diagnostic
    }

    /// Whether the error only says that this implementation lacks a primitive or pattern, rather than
    /// that anything is wrong: vector runners report such protocols as skipped.
    public var isUnsupported: Bool {
        switch code {
        case .unsupportedPattern, .unsupportedDH, .unsupportedCipher, .unsupportedHash:
            return true
        case .invalidProtocolName, .missingKey, .invalidKey, .messageTooShort, .messageTooLong,
            .decryptFailed, .weakPublicKey, .nonceExhausted:
            return false
        }
    }
}

extension NoiseError: CustomStringConvertible {
    /// `noise error <code>: <diagnostic>` on one line.
    public var description: String {
        let line = diagnostic.split(whereSeparator: \.isNewline).joined(separator: " ")
        return "noise error \(code.rawValue): \(line)"
    }
}

/// The Noise limit on any message, handshake or transport.
let noiseMaxMessageLength = 65535
