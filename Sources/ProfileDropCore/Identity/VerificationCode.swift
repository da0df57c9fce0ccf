import ProfileDropCrypto

/// The six-digit code both users compare, from a commit-then-reveal exchange (PROTOCOL.md 6.5).
///
/// The responder commits to its nonce before it sees the initiator's, and the initiator sends its
/// nonce before it sees the responder's, so neither side (and no man in the middle playing either
/// side) can choose its contribution after seeing the other: the code of a relayed session is a
/// fresh uniform draw, equal to the other victim's with probability 10^-6.
public enum VerificationCode {
    /// Bytes of each side's nonce.
    public static let nonceLength = 32
    /// Bytes of the responder's commitment.
    public static let commitmentLength = 32
    /// Digits of the code.
    public static let digits = 6

    // The labels as bytes once, not converted from a string per call.
    private static let commitLabel = Array("ProfileDrop v2 commit".utf8)
    private static let codeLabel = Array("ProfileDrop v2 code".utf8)

    /// The responder's commitment to `nonce` in the session of `handshakeHash`.
    public static func commitment(handshakeHash: [UInt8], responderNonce nonce: [UInt8]) -> [UInt8] {
        BLAKE2b.hash(
            commitLabel + handshakeHash + nonce, outputLength: commitmentLength)
    }

    /// The code of the session: `digits` decimal digits, zero-padded.
    public static func code(
        handshakeHash: [UInt8], initiatorNonce: [UInt8], responderNonce: [UInt8], digits: Int = digits
    ) -> String {
        precondition((1...18).contains(digits), "a code has 1 to 18 digits")
        let hash = BLAKE2b.hash(
            codeLabel + handshakeHash + initiatorNonce + responderNonce)
        var value: UInt64 = 0
        for byte in hash.prefix(8) { value = value << 8 | UInt64(byte) }
        var modulus: UInt64 = 1
        for _ in 0..<digits { modulus *= 10 }
        let text = String(value % modulus)
        return String(repeating: "0", count: digits - text.count) + text
    }
}
