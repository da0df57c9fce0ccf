import ProfileDropCrypto

/// Private recognition of known peers: IDENT, PROOF and the bond (PROTOCOL.md section 6.5).
///
/// IDENT is 16 fresh random bytes and a 16-byte tag of them under the sender's resolving key: a
/// stranger sees 32 random bytes every session, a known peer finds the key that makes the tag match.
/// IDENT is not bound to the session, so a man in the middle may relay it; PROOF is: a tag of the
/// handshake hash under the pair's bond key, which only the two bonded devices hold, so a relay
/// between two known peers fails loudly.
enum Recognition {
    static let keyLength = 32
    static let identLength = 32
    static let proofLength = 32
    private static let nonceLength = 16

    /// A fresh IDENT for `identity`.
    static func ident(for identity: DeviceIdentity, random: inout some RandomSource) -> [UInt8] {
        let nonce = random.bytes(nonceLength)
        return nonce + identTag(nonce: nonce, resolvingKey: identity.resolvingKey)
    }

    /// The known peer whose resolving key produced `ident`, if any.
    static func resolve(_ ident: [UInt8], among peers: [KnownPeer]) -> KnownPeer? {
        guard ident.count == identLength else { return nil }
        let nonce = Array(ident.prefix(nonceLength))
        let tag = Array(ident.suffix(nonceLength))
        // Every record is tried, match or not, so that the time taken does not say which matched.
        var match: KnownPeer?
        for peer in peers
        where ConstantTime.equals(identTag(nonce: nonce, resolvingKey: peer.resolvingKey), tag) {
            if match == nil { match = peer }
        }
        return match
    }

    /// Our PROOF: bound to this handshake and our role under the bond key, or random bytes for a
    /// peer we do not know, so a stranger cannot tell the two apart.
    static func proof(
        bond: KnownPeer?, handshakeHash: [UInt8], senderIsInitiator: Bool, random: inout some RandomSource
    ) -> [UInt8] {
        // Drawn whether or not it is used: what a device draws next (its nonces, its jitter) must not
        // depend on whether it recognised the peer.
        let randomProof = random.bytes(proofLength)
        guard let bond else { return randomProof }
        return expectedProof(
            bondKey: bond.bondKey, handshakeHash: handshakeHash, senderIsInitiator: senderIsInitiator)
    }

    static func expectedProof(bondKey: [UInt8], handshakeHash: [UInt8], senderIsInitiator: Bool) -> [UInt8] {
        Array(
            HMACBLAKE2b.authenticate(
                key: bondKey,
                parts: [proofLabel, [senderIsInitiator ? 0 : 1], handshakeHash]
            ).prefix(proofLength))
    }

    /// The bond key of a new pair, from both BOND shares and the handshake that carried them.
    static func bondKey(initiatorShare: [UInt8], responderShare: [UInt8], handshakeHash: [UInt8]) -> [UInt8] {
        Array(
            HMACBLAKE2b.authenticate(
                key: initiatorShare + responderShare,
                parts: [bondLabel, handshakeHash]
            ).prefix(keyLength))
    }

    // The labels as bytes once, not converted from a string per call.
    private static let proofLabel = Array("ProfileDrop v2 proof".utf8)
    private static let bondLabel = Array("ProfileDrop v2 bond".utf8)
    private static let identLabel = Array("ProfileDrop v2 ident".utf8)

    private static func identTag(nonce: [UInt8], resolvingKey: [UInt8]) -> [UInt8] {
        Array(
            HMACBLAKE2b.authenticate(key: resolvingKey, parts: [identLabel, nonce])
                .prefix(nonceLength))
    }
}
