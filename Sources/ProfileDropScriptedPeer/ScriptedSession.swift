import ProfileDropCore
import ProfileDropCrypto
import ProfileDropNoise

/// The secured session of a scripted peer, written against the public wire and Noise API only: the XX
/// handshake in either role, SECURE packets sealed and opened with our packet numbers, what each side
/// has told the other, and the protocol's rules for taking the device's frames in (its card
/// reassembled and hashed, its acknowledgements, the verification code).
///
/// It sends nothing by itself: the fuzz harness's scripted peer and the adversaries' malicious peer
/// each decide what to send and when, and which of the device's claims to check.
package struct ScriptedSession {
    /// Our cleartext device id.
    package let deviceID: DeviceID
    /// The device we speak with.
    package let target: DeviceID
    /// Whether the device invited us: we accept, commit and reveal.
    package let isResponder: Bool
    /// Our session; as responder, that of the device's INVITE once it came.
    package private(set) var sessionID: UInt64
    /// Every draw of ours after the first ones the owner made: ephemeral keys, PROOF, nonces.
    private var random: DeterministicRandom
    private let staticKey: X25519.PrivateKey
    private var noise: HandshakeState
    /// Noise message 1, written once: every INVITE of ours carries it.
    private var inviteMessage: [UInt8]?
    /// The CONFIRM we sent, as initiator: sent again for every repeated ACCEPT.
    package private(set) var confirmDatagram: [UInt8]?
    /// The ACCEPT we sent, as responder: sent again for every INVITE of the session.
    package private(set) var acceptDatagram: [UInt8]?
    /// The keys of both directions, once the handshake completed.
    private var transport: NoiseTransport?
    /// The handshake's hash, which the verification code binds.
    private var handshakeHash: [UInt8] = []
    /// The next SECURE packet number we use.
    package var nextPacketNumber: UInt64 = 0

    /// Our discovery token.
    package let token: DiscoveryToken
    /// Our IDENT: random bytes, since we are a stranger to the device.
    package let ident: [UInt8]
    /// Our half of BOND.
    package let bondShare: [UInt8]
    /// Our card's bytes, whatever they hold.
    package let card: [UInt8]
    /// What we offer; not necessarily ``card``'s length or digest.
    package let offer: CardOffer
    /// Our PROOF, once the device's IDENT arrived (random: we recognise nobody).
    package private(set) var proof: [UInt8]?
    /// Our verification nonce: as initiator, drawn with the device's COMMIT; as responder, with our
    /// commitment.
    package private(set) var nonce: [UInt8]?
    /// As responder: our commitment to ``nonce``.
    package private(set) var commitment: [UInt8]?

    /// The device's token.
    package var peerToken: DiscoveryToken?
    /// Whether we count the device as in range: its IN_RANGE came (or, for a peer that takes them
    /// so, a frame only a device in range sends).
    package var peerInRange = false
    /// The device's decision.
    package private(set) var peerConsent: ConsentDecision?
    /// The device's offer: the first one it sent.
    package private(set) var peerOffer: CardOffer?
    /// The chunks of the device's card we hold, one slot per chunk of its offer.
    package private(set) var peerChunks: [[UInt8]?] = []
    /// The digest of the device's card, once every chunk arrived (whether or not it matches).
    package private(set) var verifiedPeerCard: [UInt8]?
    /// The facts of ours the device says it holds.
    package var peerReceipts: Receipts = []
    /// Which chunks of our offer the device acknowledged in CARD_SACK.
    private var ackedChunks: [Bool]
    /// Whether the device sent its IDENT.
    package private(set) var sawPeerIdent = false
    /// As initiator: the device's commitment.
    package private(set) var peerCommitment: [UInt8]?
    /// As initiator: the nonce the device revealed.
    package private(set) var peerRevealed: [UInt8]?
    /// As responder: the device's NONCE.
    package private(set) var peerNonce: [UInt8]?
    /// Whether the device sent its BOND.
    package var sawPeerBond = false
    /// The verification code, once both nonces are known.
    package private(set) var code: String?

    /// A session between `deviceID` and `target`, in `sessionID` as initiator (as responder the
    /// device's INVITE names it), offering `offer` for `card`.
    package init(
        isResponder: Bool, deviceID: DeviceID, target: DeviceID, sessionID: UInt64,
        staticKey: X25519.PrivateKey, token: DiscoveryToken, ident: [UInt8], bondShare: [UInt8],
        card: [UInt8], offer: CardOffer, random: DeterministicRandom
    ) {
        self.isResponder = isResponder
        self.deviceID = deviceID
        self.target = target
        self.sessionID = sessionID
        self.staticKey = staticKey
        self.token = token
        self.ident = ident
        self.bondShare = bondShare
        self.card = card
        self.offer = offer
        self.random = random
        ackedChunks = Array(repeating: false, count: offer.chunkCount)
        // As responder the session and the prologue come with the device's INVITE; until then the
        // state only holds our key.
        noise = Self.handshakeState(
            role: isResponder ? .responder : .initiator, sessionID: sessionID,
            initiator: isResponder ? target : deviceID, responder: isResponder ? deviceID : target,
            staticKey: staticKey)
    }

    /// A fresh handshake, its prologue written here from PROTOCOL.md 3.3 rather than taken from the
    /// core, so that a device whose prologue drifted fails against this peer.
    private static func handshakeState(
        role: NoiseRole, sessionID: UInt64, initiator: DeviceID, responder: DeviceID,
        staticKey: X25519.PrivateKey
    ) -> HandshakeState {
        var prologue = WireConstants.prologueLabel
        prologue.append(WireConstants.version)
        for value in [sessionID, initiator.rawValue, responder.rawValue] {
            for shift in stride(from: 56, through: 0, by: -8) {
                prologue.append(UInt8(truncatingIfNeeded: value >> UInt64(shift)))
            }
        }
        do {
            return try HandshakeState(
                protocolName: WireConstants.noiseProtocolName, role: role, prologue: prologue,
                staticKey: staticKey, remoteStaticKey: nil)
        } catch {
            preconditionFailure("XX with a static key is valid: \(error)")
        }
    }

    // MARK: - Handshake

    /// Whether the handshake completed.
    package var isSecured: Bool { transport != nil }

    /// Whether the handshake waits for the device's next message (ACCEPT, or CONFIRM as responder).
    package var awaitsHandshakeMessage: Bool { !noise.isComplete && !noise.isMyTurnToWrite }

    /// As initiator: Noise message 1 for our INVITE, written (drawing the ephemeral key) on the first
    /// call and the same after. Nil when it is not ours to write.
    package mutating func inviteNoiseMessage() -> [UInt8]? {
        if let inviteMessage { return inviteMessage }
        guard !noise.isComplete, noise.isMyTurnToWrite,
            let message = try? noise.writeMessage(payload: [], random: &random)
        else { return nil }
        inviteMessage = message
        return message
    }

    /// A handshake packet of our session from us to the device; `cookie` for an INVITE only.
    package func handshakeDatagram(_ type: PacketType, _ message: [UInt8], cookie: [UInt8] = []) -> [UInt8] {
        var packet = HandshakePacket(
            sessionID: sessionID, sender: deviceID, receiver: target, noiseMessage: message)
        switch type {
        case .invite:
            packet.cookie = cookie
            return Packet.invite(packet).encoded()
        case .accept: return Packet.accept(packet).encoded()
        case .confirm: return Packet.confirm(packet).encoded()
        case .beacon, .query, .busy, .secure, .probe, .probeAck:
            preconditionFailure("\(type) is not a handshake packet")
        }
    }

    /// As initiator: reads the device's ACCEPT (Noise message 2) and the parameters it carries.
    package mutating func readAccept(_ accept: HandshakePacket) throws -> HandshakeParameters {
        try HandshakeParameters(decoding: try noise.readMessage(accept.noiseMessage))
    }

    /// As initiator, after ``readAccept(_:)``: CONFIRM (Noise message 3) carrying `parameters`, kept
    /// in ``confirmDatagram``; the handshake is complete.
    package mutating func confirm(with parameters: HandshakeParameters) throws -> [UInt8] {
        let datagram = try writeHandshake(.confirm, carrying: parameters)
        confirmDatagram = datagram
        handshakeHash = noise.handshakeHash
        transport = noise.split()
        return datagram
    }

    /// As responder: starts the handshake in the session of the device's INVITE and reads its Noise
    /// message 1. Returns the message's payload.
    package mutating func readInvite(_ invite: HandshakePacket) throws -> [UInt8] {
        sessionID = invite.sessionID
        noise = Self.handshakeState(
            role: .responder, sessionID: invite.sessionID, initiator: target, responder: deviceID,
            staticKey: staticKey)
        return try noise.readMessage(invite.noiseMessage)
    }

    /// As responder, after ``readInvite(_:)``: ACCEPT (Noise message 2) carrying `parameters`, kept
    /// in ``acceptDatagram``.
    package mutating func accept(with parameters: HandshakeParameters) throws -> [UInt8] {
        let datagram = try writeHandshake(.accept, carrying: parameters)
        acceptDatagram = datagram
        return datagram
    }

    /// Our next Noise message, carrying `parameters`, in a `type` packet.
    private mutating func writeHandshake(_ type: PacketType, carrying parameters: HandshakeParameters) throws
        -> [UInt8]
    {
        handshakeDatagram(type, try noise.writeMessage(payload: parameters.encoded(), random: &random))
    }

    /// As responder: reads the device's CONFIRM (Noise message 3) and the parameters it carries; the
    /// handshake is complete.
    package mutating func readConfirm(_ confirm: HandshakePacket) throws -> HandshakeParameters {
        let parameters = try HandshakeParameters(decoding: try noise.readMessage(confirm.noiseMessage))
        handshakeHash = noise.handshakeHash
        transport = noise.split()
        return parameters
    }

    // MARK: - SECURE packets

    /// Seals `plaintext` as our next SECURE packet (or at `packetNumber`, which leaves the next one
    /// as it is). Nil before the handshake, or for more than a datagram holds.
    package mutating func seal(_ plaintext: [UInt8], packetNumber: UInt64? = nil) -> [UInt8]? {
        guard let transport, plaintext.count <= WireConstants.maxFramePayload else { return nil }
        let number = packetNumber ?? nextPacketNumber
        if packetNumber == nil { nextPacketNumber += 1 }
        let header = SecurePacket.header(
            sessionID: sessionID, packetNumber: number,
            ciphertextLength: plaintext.count + WireConstants.tagSize)
        guard let ciphertext = try? transport.sender.encrypt(nonce: number, ad: header, plaintext: plaintext)
        else { return nil }
        return header + ciphertext
    }

    /// Why a SECURE packet of the device's did not open.
    package enum OpenFailure: Error {
        /// It came before the handshake completed.
        case notSecured
        /// It did not authenticate.
        case unauthentic
        /// Its plaintext is not a sequence of frames.
        case malformed
    }

    /// The frames of the device's SECURE packet.
    package func open(_ secure: SecurePacket) throws(OpenFailure) -> [Frame] {
        guard let transport else { throw .notSecured }
        guard
            let plaintext = try? transport.receiver.decrypt(
                nonce: secure.packetNumber, ad: secure.header, ciphertext: secure.ciphertext)
        else { throw .unauthentic }
        guard let frames = try? Frame.decodeAll(plaintext) else { throw .malformed }
        return frames
    }

    // MARK: - The device's frames

    /// The device's IN_RANGE: once it said so, the device stays in range for us.
    package mutating func takeInRange(_ inRange: Bool) {
        if inRange { peerInRange = true }
    }

    /// The device's CONSENT: its decision, and its offer the first time one comes, for which we hold
    /// room for at most `maxChunks` chunks.
    package mutating func takeConsent(_ decision: ConsentDecision, offer: CardOffer?, maxChunks: Int = .max) {
        peerConsent = decision
        if let offer, peerOffer == nil {
            peerOffer = offer
            peerChunks = Array(repeating: nil, count: min(offer.chunkCount, maxChunks))
        }
    }

    /// What became of a chunk of the device's card.
    package enum ChunkTaken {
        /// No offer of the device's has this chunk: dropped.
        case outsideOffer
        /// Held.
        case held
        /// Held, and the last one missing: the device's whole card, whose digest is now
        /// ``verifiedPeerCard``.
        case completed(card: [UInt8])
    }

    /// Holds chunk `index` of the device's card.
    @discardableResult
    package mutating func takeChunk(index: UInt16, data: ArraySlice<UInt8>) -> ChunkTaken {
        guard peerOffer != nil, Int(index) < peerChunks.count else { return .outsideOffer }
        peerChunks[Int(index)] = Array(data)
        guard verifiedPeerCard == nil, peerChunks.allSatisfy({ $0 != nil }) else { return .held }
        let card = peerChunks.flatMap { $0 ?? [] }
        verifiedPeerCard = BLAKE2b.hash(card, outputLength: WireConstants.digestLength)
        return .completed(card: card)
    }

    /// The device's CARD_SACK: the chunks of our offer it holds.
    package mutating func takeSack(_ sack: CardSack) {
        for index in ackedChunks.indices where sack.covers(index) { ackedChunks[index] = true }
    }

    /// Whether the device acknowledged every chunk of our offer.
    package var allChunksAcknowledged: Bool { !ackedChunks.contains(false) }

    /// The device's IDENT: we answer with a random PROOF, drawn once.
    package mutating func takeIdent() {
        sawPeerIdent = true
        if proof == nil { proof = random.bytes(WireConstants.identityFieldLength) }
    }

    /// As initiator, the device's COMMIT: we draw our nonce, once.
    package mutating func takeCommit(_ commitment: [UInt8]) {
        peerCommitment = commitment
        if nonce == nil { nonce = random.bytes(VerificationCode.nonceLength) }
    }

    /// Whether `revealed` opens the device's commitment.
    package func opensCommitment(_ revealed: [UInt8]) -> Bool {
        VerificationCode.commitment(handshakeHash: handshakeHash, responderNonce: revealed) == peerCommitment
    }

    /// As initiator, the device's REVEAL: the code, once we hold its commitment and our nonce.
    /// Returns whether it was taken.
    @discardableResult
    package mutating func takeReveal(_ revealed: [UInt8]) -> Bool {
        guard peerCommitment != nil, let nonce else { return false }
        peerRevealed = revealed
        code = VerificationCode.code(
            handshakeHash: handshakeHash, initiatorNonce: nonce, responderNonce: revealed)
        return true
    }

    /// As responder: draws our nonce and commits to it.
    package mutating func drawCommitment() {
        let drawn = random.bytes(VerificationCode.nonceLength)
        nonce = drawn
        commitment = VerificationCode.commitment(handshakeHash: handshakeHash, responderNonce: drawn)
    }

    /// As responder, the device's NONCE: the code, once we committed. Returns whether it was taken.
    @discardableResult
    package mutating func takeNonce(_ initiatorNonce: [UInt8]) -> Bool {
        guard let nonce, commitment != nil else { return false }
        peerNonce = initiatorNonce
        code = VerificationCode.code(
            handshakeHash: handshakeHash, initiatorNonce: initiatorNonce, responderNonce: nonce)
        return true
    }

    // MARK: - Our frames

    /// The facts of the device's we hold, for our RECEIPT.
    package var receipts: Receipts {
        var receipts: Receipts = []
        if peerToken != nil { receipts.insert(.token) }
        if peerConsent != nil { receipts.insert(.consent) }
        if sawPeerIdent { receipts.insert(.ident) }
        if isResponder ? peerNonce != nil : peerRevealed != nil { receipts.insert(.verification) }
        if sawPeerBond { receipts.insert(.bond) }
        return receipts
    }

    /// Our CARD_SACK of the device's card: nil before its offer.
    package var sack: CardSack? {
        guard peerOffer != nil else { return nil }
        return CardSack(count: peerChunks.count, cumulative: peerChunks.prefix { $0 != nil }.count) {
            peerChunks[$0] != nil
        }
    }

    /// Whether the device agreed to the exchange (a decision other than decline).
    package var peerAgreed: Bool { peerConsent != nil && peerConsent != .decline }

    /// The chunks of our offer the device has not acknowledged, in order.
    package var unacknowledgedChunks: [Int] { ackedChunks.indices.filter { !ackedChunks[$0] } }

    /// Chunk `index` of our card, if our offer and our card have it.
    package func chunk(_ index: Int) -> Frame? {
        guard ackedChunks.indices.contains(index) else { return nil }
        let start = index * Int(offer.chunkSize)
        guard start < card.count else { return nil }
        let end = min(card.count, start + Int(offer.chunkSize))
        return .cardChunk(index: UInt16(index), data: card[start..<end])
    }
}
