import ProfileDropCore
import ProfileDropCrypto
import ProfileDropNoise

/// A protocol peer written against the public wire and Noise API only: it invites the device under
/// test, completes the XX handshake, and then speaks the secured protocol honestly (token, ranging,
/// in-range, consent and offer, card chunks, acknowledgements, close), while also letting a fuzzer
/// seal arbitrary frames with the real transport key, so fuzzed frames get past authentication.
///
/// A peer made with ``init(respondingTo:cardBytes:seed:)`` plays the other role: it announces
/// itself with ``beacon()``, accepts the device's INVITE, and as responder commits to its nonce
/// (COMMIT) and reveals it (REVEAL) once the device sent its NONCE.
public struct ScriptedPeer {
    /// Our cleartext device id.
    public let deviceID = DeviceID(rawValue: 0x0123_4567_89AB_CDEF)
    /// Where our datagrams come from.
    public let address = PeerAddress(10, 0, 0, 2, port: 5002)
    /// The session we invite the device into; as responder, the session of the device's INVITE.
    public private(set) var sessionID: UInt64 = 0x5E55_1011_0000_0001
    /// Whether the device invites us (``init(respondingTo:cardBytes:seed:)``): we accept, commit and
    /// reveal.
    public let isResponder: Bool
    /// Our discovery token.
    public let token = DiscoveryToken(Array(0xA0..<0xB0))
    /// Our pose: 7 cm in front of the device, facing it.
    public var pose = Pose(x: 7, y: 0, heading: 180)

    let target: DeviceID
    let staticKey: X25519.PrivateKey
    var noise: HandshakeState
    var random: DeterministicRandom
    var transport: NoiseTransport?
    /// Noise message 1, written once: every INVITE we send carries it.
    var inviteMessage: [UInt8]?
    /// The cookie of the device's last BUSY(retry), echoed in our INVITEs.
    var cookie: [UInt8] = []
    var confirmDatagram: [UInt8]?
    /// The next SECURE packet number we use.
    public var nextPacketNumber: UInt64 = 0
    var rangingSequence: UInt32 = 0
    var ticks = 0

    let card: [UInt8]
    let offer: CardOffer
    var peerToken: DiscoveryToken?
    var peerInRange = false
    var peerConsent: ConsentDecision?
    var peerOffer: CardOffer?
    var peerChunks: [[UInt8]?] = []
    var verifiedPeerCard: [UInt8]?
    var peerReceipts: Receipts = []
    var ackedChunks: Set<Int> = []
    /// CARD_CHUNK frames the device sent us, duplicates included.
    public private(set) var chunksReceived = 0
    var peerClosed = false
    var closeAcked = false

    /// Our IDENT: random bytes, since we are a stranger to the device.
    let ident: [UInt8]
    /// Our PROOF, once the device's IDENT arrived (random: we recognise nobody).
    var proof: [UInt8]?
    var sawPeerIdent = false
    /// Whether the device sent its PROOF.
    var sawPeerProof = false
    /// The device's commitment, our nonce, and the device's revealed nonce.
    var peerCommitment: [UInt8]?
    var nonce: [UInt8]?
    var peerRevealed: [UInt8]?
    /// As responder: our commitment to ``nonce``, and the device's NONCE.
    var commitment: [UInt8]?
    var peerNonce: [UInt8]?
    /// As responder: the ACCEPT we answered the device's INVITE with, sent again for every INVITE
    /// of the session, and the sequence number of our next BEACON.
    var acceptDatagram: [UInt8]?
    var beaconSequence: UInt32 = 1
    /// The verification code, once the device revealed a nonce that opens its commitment.
    public private(set) var code: String?
    var handshakeHash: [UInt8] = []
    var bondShare: [UInt8]
    var sawPeerBond = false
    /// The parameters our handshake message carries (CONFIRM as initiator, ACCEPT as responder):
    /// an honest peer's unless a test claims others, which any peer may (PROTOCOL.md 11.4, CONFIRM).
    public var parameters = HandshakeParameters(maxCardBytes: 512 * 1024, receiveWindow: 64)
    /// The resolving key our BOND names: our IDENT's bytes unless a test claims another device's
    /// (one it learnt by bonding with that device).
    public var bondResolvingKey: [UInt8]?

    /// Whether the fuzzer sealed frames in our name, so the device may rightly act on claims we
    /// never made honestly.
    public var isMisled = false

    /// Steps of an honest peer that a stalling one withholds, while its rounds keep the session
    /// alive (every ``tick()`` still sends RANGING and the facts it does not withhold).
    public struct Withheld: OptionSet, Sendable {
        /// The set's bits.
        public let rawValue: Int
        /// The set with these bits.
        public init(rawValue: Int) { self.rawValue = rawValue }
        /// NONCE: the device, as responder, never learns the code.
        public static let nonce = Withheld(rawValue: 1)
        /// CONSENT (so BOND too): the device never learns our decision.
        public static let consent = Withheld(rawValue: 2)
        /// CARD_CHUNK: our card never comes.
        public static let chunks = Withheld(rawValue: 4)
        /// CARD_SACK and CARD_ACK: the device never learns that its card arrived.
        public static let acknowledgements = Withheld(rawValue: 8)
        /// IDENT (so PROOF too: the device never sends PROOF without our IDENT, nor we ours).
        public static let ident = Withheld(rawValue: 16)
        /// PROOF: the device never learns whether we are a known peer.
        public static let proof = Withheld(rawValue: 32)
        /// As responder, COMMIT: the device, as initiator, never sends its NONCE.
        public static let commit = Withheld(rawValue: 64)
        /// As responder, REVEAL: the device, as initiator, never learns the code.
        public static let reveal = Withheld(rawValue: 128)
        /// BOND: the device never holds our bond share.
        public static let bond = Withheld(rawValue: 256)
        /// TOKEN: the device cannot check our RANGING, so it ignores it.
        public static let token = Withheld(rawValue: 512)
        /// RANGING: the device gets no pose of ours to measure.
        public static let ranging = Withheld(rawValue: 1024)
    }

    /// What this peer withholds; nothing for an honest peer.
    public var withheld: Withheld = []
    /// The first CLOSE the device sent us, if any.
    public private(set) var receivedClose: CloseFrame?

    /// Datagrams ready for the device, in order. The fuzzer may drop, corrupt or reorder them.
    public var outbox: [[UInt8]] = []

    /// A peer that will invite `target` and offer `card`.
    public init(target: DeviceID, card: ProfileCard, seed: UInt64) {
        self.init(target: target, cardBytes: card.encoded(), seed: seed)
    }

    /// A peer that will invite `target` and offer `cardBytes` as its card, whatever they hold: a
    /// card no honest device would send, to check how the device refuses it.
    public init(target: DeviceID, cardBytes: [UInt8], seed: UInt64) {
        self.init(target: target, cardBytes: cardBytes, seed: seed, isResponder: false)
    }

    /// A peer that announces itself to `target` with ``beacon()``, waits for the device's INVITE and
    /// answers it as responder, offering `cardBytes` as its card.
    public init(respondingTo target: DeviceID, cardBytes: [UInt8], seed: UInt64) {
        self.init(target: target, cardBytes: cardBytes, seed: seed, isResponder: true)
    }

    private init(target: DeviceID, cardBytes: [UInt8], seed: UInt64, isResponder: Bool) {
        self.target = target
        self.isResponder = isResponder
        var random = DeterministicRandom(seed: seed)
        let key = X25519.PrivateKey(using: &random)
        staticKey = key
        ident = random.bytes(32)
        bondShare = random.bytes(32)
        self.random = random
        self.card = cardBytes
        self.offer = CardOffer(
            length: UInt32(self.card.count), chunkSize: UInt16(WireConstants.chunkSize),
            digest: BLAKE2b.hash(self.card, outputLength: WireConstants.digestLength))
        // As responder the session and the prologue come with the device's INVITE; until then the
        // state only holds our key.
        noise = Self.handshakeState(
            role: isResponder ? .responder : .initiator, sessionID: sessionID,
            initiator: isResponder ? target : deviceID, responder: isResponder ? deviceID : target,
            staticKey: key)
    }

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

    /// As responder: queues a BEACON announcing us (no position: within reach), with a fresh
    /// sequence number, so the device invites us.
    public mutating func beacon() {
        guard isResponder else { return }
        let beacon = Beacon(deviceID: deviceID, port: address.port, busy: false, sequence: beaconSequence)
        beaconSequence += 1
        outbox.append(Packet.beacon(beacon).encoded())
    }

    /// Whether the handshake completed.
    public var isSecured: Bool { transport != nil }

    /// Whether the exchange finished from our side (the device acknowledged our card and we
    /// verified and acknowledged its card, or someone closed).
    public var isFinished: Bool { peerClosed || closeAcked }

    /// Queues INVITE with Noise message 1, and the same INVITE again (with the latest cookie) on
    /// later calls until ACCEPT arrives: the device answers each INVITE once and never repeats its
    /// ACCEPT by itself.
    public mutating func invite() {
        guard !isResponder, transport == nil else { return }
        if inviteMessage == nil {
            guard !noise.isComplete, noise.isMyTurnToWrite,
                let message = try? noise.writeMessage(payload: [], random: &random)
            else { return }
            inviteMessage = message
        }
        guard let inviteMessage else { return }
        outbox.append(handshake(.invite, inviteMessage))
    }

    private func handshake(_ type: PacketType, _ message: [UInt8]) -> [UInt8] {
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

    /// Seals `plaintext` as the next SECURE packet (or at `packetNumber`). Nil before the handshake.
    public mutating func seal(_ plaintext: [UInt8], packetNumber: UInt64? = nil) -> [UInt8]? {
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

    /// Queues `frames` in one SECURE packet.
    public mutating func send(_ frames: [Frame]) {
        if let datagram = seal(Frame.encode(frames)) { outbox.append(datagram) }
    }

    /// Takes one datagram the device sent us. Returns broken invariants about it (our device
    /// must only ever send well-formed, authentic packets that fit its own offer).
    public mutating func receive(_ bytes: [UInt8], _ findings: inout FuzzFindings) {
        guard let packet = try? Packet(datagram: bytes) else {
            findings.fail("the device sent an undecodable datagram")
            return
        }
        switch packet {
        case .accept(let accept) where accept.sessionID == sessionID:
            if let confirmDatagram {
                outbox.append(confirmDatagram)
                return
            }
            guard !noise.isComplete, !noise.isMyTurnToWrite else { return }
            guard accept.sender == target, accept.receiver == deviceID else {
                findings.fail("ACCEPT with wrong ids")
                return
            }
            do {
                let parameters = try HandshakeParameters(decoding: try noise.readMessage(accept.noiseMessage))
                findings.check(parameters.receiveWindow > 0, "device announced a zero receive window")
                let ours = self.parameters.encoded()
                let message3 = try noise.writeMessage(payload: ours, random: &random)
                let confirm = handshake(.confirm, message3)
                confirmDatagram = confirm
                outbox.append(confirm)
                handshakeHash = noise.handshakeHash
                transport = noise.split()
            } catch {
                // Only a forged handshake packet of our session can make the device answer with
                // another handshake's message.
                findings.check(isMisled, "the device's ACCEPT did not verify: \(error)")
            }
        case .invite(let invite) where isResponder && invite.receiver == deviceID:
            accept(invite, &findings)
        case .confirm(let confirm) where isResponder && confirm.sessionID == sessionID:
            guard transport == nil, acceptDatagram != nil, !noise.isComplete, !noise.isMyTurnToWrite else {
                return
            }
            do {
                let payload = try noise.readMessage(confirm.noiseMessage)
                let parameters = try HandshakeParameters(decoding: payload)
                findings.check(parameters.receiveWindow > 0, "device announced a zero receive window")
                handshakeHash = noise.handshakeHash
                transport = noise.split()
            } catch {
                findings.check(isMisled, "the device's CONFIRM did not verify: \(error)")
            }
        case .busy(let busy) where busy.sessionID == sessionID && busy.receiver == deviceID:
            // The device is under load (the fuzzer's INVITEs left half-open handshakes): answer
            // BUSY(retry) with the INVITE again, carrying its cookie. (A BUSY to another receiver
            // answers an INVITE the fuzzer forged in our session's name.)
            if busy.reason == .retry, busy.sender == target, transport == nil, busy.cookie != cookie {
                cookie = busy.cookie.allSatisfy { $0 == 0 } ? [] : busy.cookie
                invite()
            }
        case .secure(let secure) where secure.sessionID == sessionID:
            guard let transport else {
                findings.fail("SECURE before the handshake completed")
                return
            }
            guard
                let plaintext = try? transport.receiver.decrypt(
                    nonce: secure.packetNumber, ad: secure.header, ciphertext: secure.ciphertext)
            else {
                findings.fail("the device's SECURE packet did not authenticate")
                return
            }
            guard let frames = try? Frame.decodeAll(plaintext) else {
                findings.fail("the device sent malformed frames")
                return
            }
            for frame in frames { absorb(frame, &findings) }
        case .probe(let probe):
            // The device, inviting us, asks whether we receive at our address: we do.
            outbox.append(Packet.probeAck(probe).encoded())
        case .beacon, .query, .invite, .accept, .confirm, .busy, .secure, .probeAck:
            break
        }
    }

    /// As responder: answers the device's INVITE with ACCEPT (Noise message 2), once per INVITE of
    /// the session we accepted, as a device does.
    private mutating func accept(_ invite: HandshakePacket, _ findings: inout FuzzFindings) {
        guard invite.sender == target else {
            findings.fail("INVITE from another device id")
            return
        }
        if let acceptDatagram {
            if invite.sessionID == sessionID && transport == nil { outbox.append(acceptDatagram) }
            return
        }
        sessionID = invite.sessionID
        noise = Self.handshakeState(
            role: .responder, sessionID: invite.sessionID, initiator: target, responder: deviceID,
            staticKey: staticKey)
        do {
            let payload = try noise.readMessage(invite.noiseMessage)
            findings.check(payload.isEmpty, "the device's INVITE carries a payload")
            let ours = parameters.encoded()
            let message = try noise.writeMessage(payload: ours, random: &random)
            let accept = Packet.accept(
                HandshakePacket(
                    sessionID: invite.sessionID, sender: deviceID, receiver: target, noiseMessage: message)
            ).encoded()
            acceptDatagram = accept
            outbox.append(accept)
        } catch {
            findings.fail("the device's INVITE did not verify: \(error)")
        }
    }

    private mutating func absorb(_ frame: Frame, _ findings: inout FuzzFindings) {
        switch frame {
        case .token(let token):
            findings.check(peerToken == nil || peerToken == token, "the device changed its token")
            peerToken = token
        case .ranging(let ranging):
            findings.check(
                peerToken == nil || ranging.token == peerToken, "the device's RANGING token differs")
        case .inRange(let inRange):
            if inRange { peerInRange = true }
        case .consent(let decision, let offer):
            peerConsent = decision
            if let offer, peerOffer == nil {
                peerOffer = offer
                peerChunks = Array(repeating: nil, count: offer.chunkCount)
            }
        case .cardChunk(let index, let data):
            guard let offer = peerOffer, Int(index) < peerChunks.count else {
                // After fuzzed frames (say a RECEIPT claiming the offer arrived) we may never
                // have been sent the offer; an honest run always has it.
                findings.check(isMisled, "the device sent chunk \(index) outside its offer")
                return
            }
            let expected =
                Int(index) == peerChunks.count - 1
                ? Int(offer.length) - Int(index) * Int(offer.chunkSize) : Int(offer.chunkSize)
            findings.check(data.count == expected, "chunk \(index) has \(data.count) bytes, not \(expected)")
            chunksReceived += 1
            peerChunks[Int(index)] = Array(data)
            if verifiedPeerCard == nil, peerChunks.allSatisfy({ $0 != nil }) {
                let card = peerChunks.flatMap { $0 ?? [] }
                let digest = BLAKE2b.hash(card, outputLength: WireConstants.digestLength)
                findings.check(digest == offer.digest, "the device's card does not match its offer")
                findings.check((try? ProfileCard(decoding: card)) != nil, "the device's card does not decode")
                verifiedPeerCard = digest
            }
        case .cardSack(let sack):
            for index in 0..<offer.chunkCount where sack.covers(index) { ackedChunks.insert(index) }
        case .cardAck(let digest):
            findings.check(digest == offer.digest, "the device acknowledged a card we did not send")
        case .close(let close):
            if receivedClose == nil { receivedClose = close }
            peerClosed = true
            outbox.append(contentsOf: seal(Frame.encode([.closeAck])).map { [$0] } ?? [])
        case .closeAck:
            closeAcked = true
        case .receipt(let receipts):
            peerReceipts = receipts
        case .ident:
            sawPeerIdent = true
            if proof == nil { proof = random.bytes(32) }
        case .proof:
            findings.check(sawPeerIdent, "the device sent PROOF before IDENT")
            sawPeerProof = true
        case .commit where isResponder:
            findings.fail("the initiator sent COMMIT")
        case .commit(let commitment):
            findings.check(
                peerCommitment == nil || peerCommitment == commitment, "the device changed its commitment")
            peerCommitment = commitment
            if nonce == nil { nonce = random.bytes(VerificationCode.nonceLength) }
        case .nonce(let initiatorNonce) where isResponder:
            guard let nonce, commitment != nil else {
                findings.check(isMisled, "the device sent NONCE before our COMMIT")
                return
            }
            findings.check(peerNonce == nil || peerNonce == initiatorNonce, "the device changed its NONCE")
            peerNonce = initiatorNonce
            code = VerificationCode.code(
                handshakeHash: handshakeHash, initiatorNonce: initiatorNonce, responderNonce: nonce)
        case .nonce:
            findings.fail("the responder sent NONCE")
        case .reveal where isResponder:
            findings.fail("the initiator sent REVEAL")
        case .reveal(let revealed):
            guard let peerCommitment, let nonce else {
                findings.check(isMisled, "the device revealed before our NONCE")
                return
            }
            findings.check(
                VerificationCode.commitment(handshakeHash: handshakeHash, responderNonce: revealed)
                    == peerCommitment,
                "the device's REVEAL does not open its commitment")
            peerRevealed = revealed
            code = VerificationCode.code(
                handshakeHash: handshakeHash, initiatorNonce: nonce, responderNonce: revealed)
        case .bond:
            findings.check(
                isMisled || (peerConsent != nil && peerConsent != .decline),
                "the device sent BOND before agreeing")
            sawPeerBond = true
        }
    }

    /// A value for a fuzzed pairing frame: mostly the honest one, so the fuzzer gets past the checks.
    public func pairingField(_ type: FrameType, _ input: inout FuzzBytes) -> [UInt8] {
        let honest: [UInt8]? =
            switch type {
            case .ident: ident
            case .proof: proof
            case .nonce: nonce
            case .commit, .reveal, .bond: peerCommitment
            case .token, .ranging, .inRange, .consent, .cardChunk, .cardSack, .cardAck, .close, .closeAck,
                .receipt:
                nil
            }
        if let honest, input.byte() < 192 { return honest }
        return input.take32()
    }

    /// What an honest peer sends every ranging interval: control facts, ranging, chunks, SACK.
    public mutating func tick() {
        guard isSecured, !isFinished else { return }
        ticks += 1
        var frames: [Frame] = []
        if !peerReceipts.contains(.token) && !withheld.contains(.token) { frames.append(.token(token)) }
        if !peerReceipts.contains(.ident) && !withheld.contains(.ident) { frames.append(.ident(ident)) }
        // Without our IDENT, our PROOF would be an error: withholding IDENT withholds PROOF too.
        if let proof, !peerReceipts.contains(.proof), withheld.isDisjoint(with: [.ident, .proof]) {
            frames.append(.proof(proof))
        }
        rangingSequence += 1
        if !withheld.contains(.ranging) {
            frames.append(.ranging(RangingFrame(sequence: rangingSequence, pose: pose, token: token)))
        }
        let inRange = ticks >= 4
        if inRange && !peerReceipts.contains(.consent) { frames.append(.inRange(true)) }
        if isResponder {
            // We commit once both gates are open (we are in range and hold the device's IN_RANGE),
            // and reveal once we hold the device's NONCE.
            if inRange && peerInRange && nonce == nil {
                let drawn = random.bytes(VerificationCode.nonceLength)
                nonce = drawn
                commitment = VerificationCode.commitment(handshakeHash: handshakeHash, responderNonce: drawn)
            }
            if let nonce, let commitment {
                if peerNonce == nil {
                    if !withheld.contains(.commit) { frames.append(.commit(commitment)) }
                } else if !peerReceipts.contains(.verification) && !withheld.contains(.reveal) {
                    frames.append(.reveal(nonce))
                }
            }
        } else if inRange, let nonce, peerRevealed == nil, !peerReceipts.contains(.verification),
            !withheld.contains(.nonce)
        {
            frames.append(.nonce(nonce))
        }
        let consenting = inRange && peerInRange && code != nil && !withheld.contains(.consent)
        if consenting && !peerReceipts.contains(.consent) { frames.append(.consent(.share, offer)) }
        if consenting, let peerConsent, peerConsent != .decline, !peerReceipts.contains(.bond),
            !withheld.contains(.bond)
        {
            frames.append(.bond(resolvingKey: bondResolvingKey ?? ident, share: bondShare))
        }
        let acknowledges = !withheld.contains(.acknowledgements)
        if acknowledges, let verifiedPeerCard { frames.append(.cardAck(digest: verifiedPeerCard)) }
        if acknowledges, peerOffer != nil {
            let held = peerChunks.prefix { $0 != nil }.count
            frames.append(
                .cardSack(CardSack(count: peerChunks.count, cumulative: held) { peerChunks[$0] != nil }))
        }
        var receipts: Receipts = []
        if peerToken != nil { receipts.insert(.token) }
        if peerConsent != nil { receipts.insert(.consent) }
        if sawPeerIdent { receipts.insert(.ident) }
        if isResponder ? peerNonce != nil : peerRevealed != nil { receipts.insert(.verification) }
        if sawPeerBond { receipts.insert(.bond) }
        frames.append(.receipt(receipts))
        // A peer that withholds a step is never done (an honest one closes once it is).
        let done = verifiedPeerCard != nil && ackedChunks.count == offer.chunkCount && withheld.isEmpty
        if done { frames.append(.close(CloseFrame(code: .exchanged))) }
        send(frames)
        if consenting, peerConsent != nil, peerConsent != .decline, !withheld.contains(.chunks) {
            for index in 0..<offer.chunkCount where !ackedChunks.contains(index) {
                let start = index * Int(offer.chunkSize)
                let end = min(card.count, start + Int(offer.chunkSize))
                send([.cardChunk(index: UInt16(index), data: card[start..<end])])
            }
        }
    }
}
