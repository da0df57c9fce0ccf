import ProfileDropCrypto

/// The device's long-term identity: a secret kept on the device, and the resolving key derived from
/// it, which only known peers learn.
///
/// Version 2 never shows a long-term value to a stranger. The Noise static key is fresh every run;
/// what lets a known peer recognise us is an IDENT frame built from the resolving key with fresh
/// randomness, which nobody else can tell from random bytes (PROTOCOL.md section 11).
public struct DeviceIdentity: Sendable, Equatable {
    /// The resolving key: what a known peer stores to recognise our IDENT frames.
    public let resolvingKey: [UInt8]

    /// An identity from its resolving key, as a capture records it for replay (32 bytes).
    public init(resolvingKey: [UInt8]) {
        precondition(resolvingKey.count == Recognition.keyLength, "a resolving key has 32 bytes")
        self.resolvingKey = resolvingKey
    }

    private static let resolvingKeyLabel = Array("ProfileDrop v2 resolving key".utf8)

    /// Derives the identity from the device's long-term secret (32 bytes or more).
    public init(secret: [UInt8]) {
        precondition(secret.count >= 32, "an identity secret has at least 32 bytes")
        resolvingKey = Array(
            HMACBLAKE2b.authenticate(key: secret, parts: [Self.resolvingKeyLabel])
                .prefix(Recognition.keyLength))
    }
}

/// A peer this device exchanged with before, with the user's consent: the peer's resolving key,
/// the key both sides derived for the pair, and the name to show.
public struct KnownPeer: Sendable, Equatable {
    /// The peer's resolving key (32 bytes), from its BOND frame.
    public var resolvingKey: [UInt8]
    /// The pair's bond key (32 bytes, secret), derived from both BOND frames and the handshake.
    public var bondKey: [UInt8]
    /// The name shown for the peer: its card's dog and owner when it sent a card.
    public var name: String

    /// Creates a known-peer record. Both keys are 32 bytes.
    public init(resolvingKey: [UInt8], bondKey: [UInt8], name: String) {
        precondition(resolvingKey.count == Recognition.keyLength && bondKey.count == Recognition.keyLength)
        self.resolvingKey = resolvingKey
        self.bondKey = bondKey
        self.name = name
    }
}
