import ProfileDropCrypto

/// Who the peer is and which code both users compare: the recognition and verification facts of a
/// secured session (PROTOCOL.md 6.5), carried by ``Link``.
///
/// Recognition runs from the first ranging round: both sides send IDENT, answer the peer's with
/// PROOF, and know whether the peer is a known peer or a stranger before anyone is asked.
/// Verification runs once both gates are open: the responder commits (COMMIT), the initiator sends
/// its nonce (NONCE), the responder reveals (REVEAL), and both derive the code.
struct Pairing {
    /// What the peer's IDENT and PROOF showed.
    enum PeerRecognition: Equatable {
        /// Nobody we know, or a device that does not want to be recognised.
        case stranger
        /// A known peer that proved the bond.
        case known(KnownPeer)
    }

    let isInitiator: Bool
    let handshakeHash: [UInt8]
    let localIdent: [UInt8]
    var peerIdent: [UInt8]?
    /// The known peer the peer's IDENT names, before its PROOF confirmed it.
    var claimedPeer: KnownPeer?
    /// Our PROOF, computed once the peer's IDENT arrived.
    var localProof: [UInt8]?
    var peerProof: [UInt8]?
    /// Decided when the peer's PROOF arrives.
    var recognition: PeerRecognition?
    /// The known peer the peer's IDENT named but whose bond its PROOF did not prove: an impostor, a
    /// relay between two known peers, a replayed IDENT, or a device that forgot us. Only our user
    /// is told; to the peer we behave as to a stranger, so that it cannot learn whom we know
    /// (PROTOCOL.md 6.5).
    var unprovenClaim: KnownPeer?
    /// The known peer whose resolving key a stranger's BOND named. That bond is never remembered:
    /// it would replace the known peer's record with one the stranger holds.
    var impersonatedInBond: KnownPeer?

    /// Our verification nonce: the responder draws it on entering consenting, the initiator once it
    /// holds the responder's commitment.
    var localNonce: [UInt8]?
    /// The responder's commitment: ours as responder, the peer's as initiator.
    var commitment: [UInt8]?
    /// The peer's nonce: as responder the initiator's NONCE, as initiator the REVEAL that opened the
    /// commitment.
    var peerNonce: [UInt8]?
    /// The code, once both nonces are known.
    var code: String?

    /// Our bond share, drawn when both users agreed with a stranger.
    var localBond: [UInt8]?
    /// The peer's resolving key and bond share.
    var peerBond: (resolvingKey: [UInt8], share: [UInt8])?

    init(isInitiator: Bool, handshakeHash: [UInt8], identity: DeviceIdentity?, random: inout any RandomSource)
    {
        self.isInitiator = isInitiator
        self.handshakeHash = handshakeHash
        // A device without an identity sends random bytes: indistinguishable, never recognised.
        localIdent =
            identity.map { Recognition.ident(for: $0, random: &random) }
            ?? random.bytes(Recognition.identLength)
    }

    /// Whether verification reached the point where the peer may know the code: the initiator sent
    /// its nonce, or the responder received it. A session that ends after this without both
    /// decisions is a visible failed attempt.
    var verificationBegan: Bool { isInitiator ? localNonce != nil : peerNonce != nil }

    /// Whether the consent request can be made: the code is known and so is who the peer is.
    var isReadyForConsent: Bool { code != nil && recognition != nil }

    /// Whether the new pair's bond is complete, or no bond is needed (a known peer).
    var isBondSettled: Bool {
        switch recognition {
        case .known: true
        case .stranger, nil: peerBond != nil
        }
    }

    /// The bond with the peer, once both BOND frames are known.
    func newBond(name: String) -> KnownPeer? {
        guard let localBond, let peerBond else { return nil }
        let key = Recognition.bondKey(
            initiatorShare: isInitiator ? localBond : peerBond.share,
            responderShare: isInitiator ? peerBond.share : localBond, handshakeHash: handshakeHash)
        return KnownPeer(resolvingKey: peerBond.resolvingKey, bondKey: key, name: name)
    }

    // MARK: - Verification steps

    /// Entering consenting (both gates open): the responder commits, the initiator answers a
    /// commitment it holds.
    mutating func beginVerification(random: inout any RandomSource) {
        guard localNonce == nil else { return }
        if isInitiator {
            guard commitment != nil else { return }
            localNonce = random.bytes(VerificationCode.nonceLength)
        } else {
            let nonce = random.bytes(VerificationCode.nonceLength)
            localNonce = nonce
            commitment = VerificationCode.commitment(handshakeHash: handshakeHash, responderNonce: nonce)
        }
    }

    /// Draws our bond share when both users agreed and the peer is not known yet.
    mutating func beginBond(identity: DeviceIdentity?, random: inout any RandomSource) {
        guard localBond == nil, recognition == .stranger else { return }
        localBond = random.bytes(Recognition.keyLength)
        // Without an identity there is nothing to be recognised by; a throwaway key keeps the frame.
        localResolvingKey = identity?.resolvingKey ?? random.bytes(Recognition.keyLength)
    }

    /// The resolving key our BOND carries.
    var localResolvingKey: [UInt8]?
    /// The name to remember the peer by: its card's dog and owner, once the card was verified.
    var peerName: String?

    /// The record to remember after an exchange our user agreed to: the new bond, or the known peer
    /// under its latest name.
    var rememberedPeer: KnownPeer? {
        switch recognition {
        case .known(var peer):
            if let peerName { peer.name = peerName }
            return peer
        case .stranger:
            guard impersonatedInBond == nil else { return nil }
            return newBond(name: peerName ?? "a device that sent no card")
        case nil:
            return nil
        }
    }

    // MARK: - Frames

    /// Appends our recognition and verification facts the peer does not yet hold, in packet order,
    /// to `frames` (the packet's list: no array of their own).
    @inline(__always)  // read in place: a call copied the 264-byte pairing
    func appendFrames(peerReceipts: Receipts, to frames: inout [Frame]) {
        if !peerReceipts.contains(.ident) { frames.append(.ident(localIdent)) }
        if let localProof, !peerReceipts.contains(.proof) { frames.append(.proof(localProof)) }
        if isInitiator {
            if let localNonce, peerNonce == nil, !peerReceipts.contains(.verification) {
                frames.append(.nonce(localNonce))
            }
        } else if let localNonce, let commitment {
            // The initiator's NONCE shows it holds the commitment; its receipt shows it holds REVEAL.
            if peerNonce == nil {
                frames.append(.commit(commitment))
            } else if !peerReceipts.contains(.verification) {
                frames.append(.reveal(localNonce))
            }
        }
    }

    /// Our BOND while the peer does not hold it.
    func bondFrame(peerReceipts: Receipts) -> Frame? {
        guard let localBond, let localResolvingKey, !peerReceipts.contains(.bond) else { return nil }
        return .bond(resolvingKey: localResolvingKey, share: localBond)
    }

    /// What we hold of the peer's recognition and verification facts.
    var receipts: Receipts {
        var receipts: Receipts = []
        if peerIdent != nil { receipts.insert(.ident) }
        if peerProof != nil { receipts.insert(.proof) }
        if peerNonce != nil { receipts.insert(.verification) }
        if peerBond != nil { receipts.insert(.bond) }
        return receipts
    }

    /// The receipt bits that count: those of facts we have sent.
    var sentFacts: Receipts {
        var sent: Receipts = [.ident]
        if localProof != nil { sent.insert(.proof) }
        if isInitiator ? localNonce != nil : peerNonce != nil { sent.insert(.verification) }
        if localBond != nil { sent.insert(.bond) }
        return sent
    }

    /// Absorbs one recognition or verification frame.
    /// - Returns: whether it was new.
    /// - Throws: ``ProtocolError`` when the peer contradicts itself, sends a frame its role or the
    ///   session's progress does not allow, or reveals a nonce its commitment does not match. A
    ///   failed proof of a known identity is no error: it sets ``unprovenClaim``.
    mutating func absorb(
        _ frame: Frame, knownPeers: [KnownPeer], random: inout any RandomSource
    ) throws(ProtocolError) -> Bool {
        switch frame {
        case .ident(let ident):
            guard try Self.first(ident, into: &peerIdent, name: "IDENT") else { return false }
            claimedPeer = Recognition.resolve(ident, among: knownPeers)
            localProof = Recognition.proof(
                bond: claimedPeer, handshakeHash: handshakeHash, senderIsInitiator: isInitiator,
                random: &random)
            return true
        case .proof(let proof):
            guard peerIdent != nil else {
                throw ProtocolError(.unexpectedMessage, "PROOF before the peer's IDENT")
            }
            guard try Self.first(proof, into: &peerProof, name: "PROOF") else { return false }
            guard let claimedPeer else {
                recognition = .stranger
                return true
            }
            let expected = Recognition.expectedProof(
                bondKey: claimedPeer.bondKey, handshakeHash: handshakeHash, senderIsInitiator: !isInitiator)
            guard ConstantTime.equals(expected, proof) else {
                // Closing here would tell whoever replayed or forged the IDENT that we know the
                // identity it named: the session goes on exactly as with a stranger.
                unprovenClaim = claimedPeer
                recognition = .stranger
                return true
            }
            recognition = .known(claimedPeer)
            return true
        case .commit(let commitment):
            guard isInitiator else { throw ProtocolError(.unexpectedMessage, "COMMIT from the initiator") }
            return try Self.first(commitment, into: &self.commitment, name: "COMMIT")
        case .nonce(let nonce):
            guard !isInitiator else { throw ProtocolError(.unexpectedMessage, "NONCE from the responder") }
            guard let localNonce else {
                throw ProtocolError(.unexpectedMessage, "NONCE before our commitment")
            }
            guard try Self.first(nonce, into: &peerNonce, name: "NONCE") else { return false }
            code = VerificationCode.code(
                handshakeHash: handshakeHash, initiatorNonce: nonce, responderNonce: localNonce)
            return true
        case .reveal(let nonce):
            guard isInitiator else { throw ProtocolError(.unexpectedMessage, "REVEAL from the initiator") }
            guard let commitment, let localNonce else {
                throw ProtocolError(.unexpectedMessage, "REVEAL before our NONCE")
            }
            guard
                ConstantTime.equals(
                    VerificationCode.commitment(handshakeHash: handshakeHash, responderNonce: nonce),
                    commitment)
            else {
                throw ProtocolError(
                    .commitmentMismatch, "the revealed nonce does not open the peer's commitment")
            }
            guard try Self.first(nonce, into: &peerNonce, name: "REVEAL") else { return false }
            code = VerificationCode.code(
                handshakeHash: handshakeHash, initiatorNonce: localNonce, responderNonce: nonce)
            return true
        case .bond(let resolvingKey, let share):
            if let peerBond {
                guard peerBond.resolvingKey == resolvingKey, peerBond.share == share else {
                    throw ProtocolError(.unexpectedMessage, "peer sent a second BOND")
                }
                return false
            }
            // A resolving key is no secret: every device its owner bonded with holds it. A stranger's
            // BOND naming a known peer's key would replace that peer's record with a bond the sender
            // holds: the sender would then pass as that peer, and the peer fail its PROOF. The peer
            // itself would have been recognised by its IDENT, not bonded with as a stranger.
            // Ending the session here would tell the sender that we know the key it named: the
            // exchange ends as any other, and only the record is not kept.
            impersonatedInBond = knownPeers.first { ConstantTime.equals($0.resolvingKey, resolvingKey) }
            peerBond = (resolvingKey, share)
            return true
        case .token, .ranging, .inRange, .consent, .cardChunk, .cardSack, .cardAck, .close, .closeAck,
            .receipt:
            preconditionFailure("\(frame.type) is not a pairing frame")
        }
    }

    /// Stores a one-shot fact, or checks that a repetition is identical.
    /// - Returns: whether it was new.
    private static func first(_ value: [UInt8], into slot: inout [UInt8]?, name: String) throws(ProtocolError)
        -> Bool
    {
        if let held = slot {
            guard held == value else { throw ProtocolError(.unexpectedMessage, "peer sent a second \(name)") }
            return false
        }
        slot = value
        return true
    }
}
