import ProfileDropCrypto

/// Both sides of version 2's pairing steps in memory, for the handshake benchmark: what a pairing
/// computes on top of the Noise handshake, run through the same code the sessions use.
@_spi(Benchmark)
public enum PairingExercise {
    /// Runs recognition (IDENT, PROOF), verification (COMMIT, NONCE, REVEAL) and, for strangers, the
    /// bond, between an initiator and a responder with these identities and known peers.
    /// - Returns: the code both sides derived (they must agree), or nil when a step failed.
    public static func run(
        handshakeHash: [UInt8], initiator: DeviceIdentity, initiatorKnows: [KnownPeer],
        responder: DeviceIdentity, responderKnows: [KnownPeer], random: inout any RandomSource
    ) -> String? {
        var first = Pairing(
            isInitiator: true, handshakeHash: handshakeHash, identity: initiator, random: &random)
        var second = Pairing(
            isInitiator: false, handshakeHash: handshakeHash, identity: responder, random: &random)
        do {
            _ = try first.absorb(.ident(second.localIdent), knownPeers: initiatorKnows, random: &random)
            _ = try second.absorb(.ident(first.localIdent), knownPeers: responderKnows, random: &random)
            guard let firstProof = first.localProof, let secondProof = second.localProof else { return nil }
            _ = try first.absorb(.proof(secondProof), knownPeers: initiatorKnows, random: &random)
            _ = try second.absorb(.proof(firstProof), knownPeers: responderKnows, random: &random)
            second.beginVerification(random: &random)
            guard let commitment = second.commitment else { return nil }
            _ = try first.absorb(.commit(commitment), knownPeers: initiatorKnows, random: &random)
            first.beginVerification(random: &random)
            guard let nonce = first.localNonce else { return nil }
            _ = try second.absorb(.nonce(nonce), knownPeers: responderKnows, random: &random)
            guard let revealed = second.localNonce else { return nil }
            _ = try first.absorb(.reveal(revealed), knownPeers: initiatorKnows, random: &random)
            if first.recognition == .stranger {
                first.beginBond(identity: initiator, random: &random)
                second.beginBond(identity: responder, random: &random)
                guard let firstBond = first.bondFrame(peerReceipts: []),
                    let secondBond = second.bondFrame(peerReceipts: [])
                else { return nil }
                _ = try first.absorb(secondBond, knownPeers: initiatorKnows, random: &random)
                _ = try second.absorb(firstBond, knownPeers: responderKnows, random: &random)
                guard first.newBond(name: "")?.bondKey == second.newBond(name: "")?.bondKey else {
                    return nil
                }
            }
        } catch {
            return nil
        }
        guard let code = first.code, code == second.code else { return nil }
        return code
    }
}
