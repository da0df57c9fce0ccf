/// Sizes and numbers fixed by PROTOCOL.md.
public enum WireConstants {
    /// The first two bytes of every datagram: ASCII "PD".
    public static let magic: (UInt8, UInt8) = (0x50, 0x44)
    /// The wire version this implementation speaks, in every header and in the Noise prologue:
    /// protocol 2.1 is wire version 3 (PROTOCOL.md 3.5).
    public static let version: UInt8 = 3
    /// The protocol's name for ``version``, as PROTOCOL.md and `profiledrop version` give it.
    public static let protocolName = "2.1"
    /// No datagram is longer than this.
    public static let maxDatagramSize = 1200
    /// Magic, version and type.
    public static let headerSize = 4
    /// Header, session id, packet number and ciphertext length: the associated data of a SECURE
    /// datagram.
    public static let secureHeaderSize = 22
    /// The Poly1305 tag.
    public static let tagSize = 16
    /// The most plaintext frame bytes one SECURE datagram can carry.
    public static let maxFramePayload = maxDatagramSize - secureHeaderSize - tagSize
    /// Discovery tokens are this long.
    public static let tokenLength = 16
    /// IDENT, PROOF, COMMIT, NONCE and REVEAL bodies, and each half of BOND, are this long.
    public static let identityFieldLength = 32
    /// Card digests (BLAKE2b-256) are this long.
    public static let digestLength = 32
    /// CARD_CHUNK header: type, index, length.
    public static let chunkFrameOverhead = 5
    /// Card bytes per chunk: the frame payload minus room for a CARD_SACK and small frames that
    /// may share the datagram.
    public static let chunkSize = 1120
    /// Longest CARD_SACK bitmap in bytes (256 chunks past the cumulative point).
    public static let maxSackBitmap = 32
    /// The cookie of BUSY(retry) and INVITE (PROTOCOL.md 5).
    public static let cookieLength = 16
    /// An INVITE is padded with zero bytes to at least this length, so that no answer to it
    /// (ACCEPT, 133 bytes; BUSY, at most 45) is larger than the INVITE itself (PROTOCOL.md 3).
    public static let inviteMinimumSize = 144
    /// PROBE and PROBE_ACK: header and challenge. Smaller than the smallest BEACON (19) and QUERY
    /// (28), so that a probe paid by what an address sent never exceeds it (PROTOCOL.md 5).
    public static let probeSize = 12
    /// A QUERY is padded with zero bytes to at least this length: one longer than the largest BEACON
    /// (27) that answers it from every device in reach, so that a multicast QUERY heard by N devices
    /// costs at most N times its bytes (PROTOCOL.md 4).
    public static let queryMinimumSize = 28
    /// The Noise protocol used for every exchange session.
    public static let noiseProtocolName = "Noise_XX_25519_ChaChaPoly_BLAKE2b"
    /// The ASCII label that starts the Noise prologue.
    public static let prologueLabel = Array("ProfileDrop".utf8)
}

/// The datagram types (byte 3 of the header).
public enum PacketType: UInt8, CaseIterable, Sendable {
    /// Multicast announcement.
    case beacon = 1
    /// Multicast browse query with known answers.
    case query = 2
    /// Unicast invitation carrying Noise XX message 1.
    case invite = 3
    /// Acceptance carrying Noise XX message 2.
    case accept = 4
    /// Noise XX message 3.
    case confirm = 5
    /// Refusal: the device is in another exchange or does not want this one.
    case busy = 6
    /// An encrypted packet of frames.
    case secure = 7
    /// Return routability: a challenge the receiver echoes (PROTOCOL.md 5).
    case probe = 8
    /// The echo of a PROBE's challenge.
    case probeAck = 9
}

/// The frame types inside SECURE packets.
public enum FrameType: UInt8, CaseIterable, Sendable {
    /// Our discovery token.
    case token = 1
    /// Our pose and token, for the peer's proximity measurement.
    case ranging = 2
    /// Whether our proximity gate has opened.
    case inRange = 3
    /// Our consent decision and, when we share, the card offer.
    case consent = 4
    /// A piece of our card.
    case cardChunk = 5
    /// Which chunks of the peer's card we hold.
    case cardSack = 6
    /// We verified the peer's card.
    case cardAck = 7
    /// We are closing the session.
    case close = 8
    /// We saw the peer's CLOSE.
    case closeAck = 9
    /// Which of the peer's one-shot frames we hold.
    case receipt = 10
    /// Our resolvable identity: fresh random bytes a known peer can recognise.
    case ident = 11
    /// Proof that we hold the bond key of the peer we recognised (random bytes otherwise).
    case proof = 12
    /// The responder's commitment to its verification nonce.
    case commit = 13
    /// The initiator's verification nonce.
    case nonce = 14
    /// The responder's verification nonce, opening its commitment.
    case reveal = 15
    /// Our resolving key and bond share, sent once both users agreed.
    case bond = 16
}
