/// A datagram or frame that could not be accepted, or a session that failed because of its peer.
///
/// Every error caused by outside input is one of these; the core never traps on what it receives.
/// The code is stable (it travels in CLOSE frames as its ``Code/wireValue``) and the diagnostic is one
/// line for logs.
public struct ProtocolError: Error, Equatable, Hashable, Sendable, CustomStringConvertible {
    /// The kind of failure.
    public enum Code: UInt16, CaseIterable, Equatable, Hashable, Sendable {
        /// The datagram or frame ended before a field was complete.
        case truncated = 1
        /// The datagram does not start with the ProfileDrop magic.
        case badMagic = 2
        /// The header names a protocol version this implementation does not speak.
        case unsupportedVersion = 3
        /// Unknown datagram or frame type.
        case unknownType = 4
        /// A field holds a value outside its allowed range.
        case malformed = 5
        /// The datagram or a declared length exceeds a limit.
        case oversized = 6
        /// Bytes follow the last field of a message whose length is fixed by its fields.
        case trailingBytes = 7
        /// A unicast datagram names a session this device does not have (or no longer has).
        case unknownSession = 8
        /// AEAD authentication failed: spoofed, corrupted or tampered.
        case authenticationFailed = 9
        /// The packet number was already received, or a BEACON's sequence number is not above the
        /// last one heard from its device.
        case replayed = 10
        /// The packet number is older than the replay window.
        case tooOld = 11
        /// The Noise handshake failed (bad message, bad key).
        case handshakeFailed = 12
        /// A ranging frame carried a discovery token other than the one received in the channel.
        case tokenMismatch = 13
        /// A card offer is larger than this device accepts.
        case cardTooLarge = 14
        /// The reassembled card does not hash to the offered digest.
        case cardDigestMismatch = 15
        /// The reassembled card is not a valid card encoding.
        case cardInvalid = 16
        /// A message arrived that the session's state does not allow.
        case unexpectedMessage = 17
        /// A source sent more than its share of datagrams and was throttled.
        case rateLimited = 18
        /// The peer table or another bounded table is full.
        case tableFull = 19
        /// The datagram came from this device itself (multicast loopback).
        case ownDatagram = 20
        /// The responder's revealed nonce does not open its commitment.
        case commitmentMismatch = 21
        /// The peer presented the identity of a known peer but could not prove the bond.
        case identityProofFailed = 22
        /// A BEACON names a device id the peer table holds at another address, or names a port
        /// other than the one it came from: the address first heard for an id stays.
        case conflict = 23

        /// The value sent in CLOSE frames.
        public var wireValue: UInt16 { rawValue }

        /// A short stable name for logs and counters.
        public var name: String {
            switch self {
            case .truncated: "truncated"
            case .badMagic: "bad-magic"
            case .unsupportedVersion: "unsupported-version"
            case .unknownType: "unknown-type"
            case .malformed: "malformed"
            case .oversized: "oversized"
            case .trailingBytes: "trailing-bytes"
            case .unknownSession: "unknown-session"
            case .authenticationFailed: "authentication-failed"
            case .replayed: "replayed"
            case .tooOld: "too-old"
            case .handshakeFailed: "handshake-failed"
            case .tokenMismatch: "token-mismatch"
            case .cardTooLarge: "card-too-large"
            case .cardDigestMismatch: "card-digest-mismatch"
            case .cardInvalid: "card-invalid"
            case .unexpectedMessage: "unexpected-message"
            case .rateLimited: "rate-limited"
            case .tableFull: "table-full"
            case .ownDatagram: "own-datagram"
            case .commitmentMismatch: "commitment-mismatch"
            case .identityProofFailed: "identity-proof-failed"
            case .conflict: "conflict"
            }
        }
    }

    /// The kind of failure.
    public let code: Code
    /// One line saying exactly what was wrong.
    public let diagnostic: String

    /// Creates an error; line breaks in `diagnostic` become spaces.
    public init(_ code: Code, _ diagnostic: String) {
        self.code = code
        // Most diagnostics are plain ASCII without line breaks: kept as they are, without walking
        // their characters. Read from the string's contiguous storage when it has one: a crowd's
        // refusals make this a hot path.
        let isPlainByte = { (byte: UInt8) in byte >= 0x20 ? byte < 0x80 : (byte < 0x0A || byte > 0x0D) }
        let isPlain =
            diagnostic.utf8.withContiguousStorageIfAvailable { $0.allSatisfy(isPlainByte) }
            ?? diagnostic.utf8.allSatisfy(isPlainByte)
        self.diagnostic = isPlain ? diagnostic : String(diagnostic.map { $0.isNewline ? " " : $0 })
    }

    /// `<code name>: <diagnostic>`.
    public var description: String { "\(code.name): \(diagnostic)" }
}
