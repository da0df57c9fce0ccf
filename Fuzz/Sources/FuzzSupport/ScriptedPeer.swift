import ProfileDropCore
import ProfileDropCrypto
import ProfileDropScriptedPeer

/// A protocol peer written against the public wire and Noise API only: it invites the device under
/// test, completes the XX handshake, and then speaks the secured protocol honestly (token, ranging,
/// in-range, consent and offer, card chunks, acknowledgements, close), while also letting a fuzzer
/// seal arbitrary frames with the real transport key, so fuzzed frames get past authentication.
///
/// A peer made with ``init(respondingTo:cardBytes:seed:)`` plays the other role: it announces
/// itself with ``beacon()``, accepts the device's INVITE, and as responder commits to its nonce
/// (COMMIT) and reveals it (REVEAL) once the device sent its NONCE.
///
/// Its handshake, packets and record of the device's frames are a `ScriptedSession`, which the
/// adversaries' malicious peer shares; this peer checks every claim of the device's against the
/// protocol and chooses what to send.
public struct ScriptedPeer {
    /// Our cleartext device id.
    public var deviceID: DeviceID { session.deviceID }
    /// Where our datagrams come from.
    public let address = PeerAddress(10, 0, 0, 2, port: 5002)
    /// The session we invite the device into; as responder, the session of the device's INVITE.
    public var sessionID: UInt64 { session.sessionID }
    /// Whether the device invites us (``init(respondingTo:cardBytes:seed:)``): we accept, commit and
    /// reveal.
    public var isResponder: Bool { session.isResponder }
    /// Our discovery token.
    public var token: DiscoveryToken { session.token }
    /// Our pose: 7 cm in front of the device, facing it.
    public var pose = Pose(x: 7, y: 0, heading: 180)

    /// The handshake, our keys, and what each side told the other.
    var session: ScriptedSession
    /// The cookie of the device's last BUSY(retry), echoed in our INVITEs.
    var cookie: [UInt8] = []
    /// The next SECURE packet number we use.
    public var nextPacketNumber: UInt64 {
        get { session.nextPacketNumber }
        set { session.nextPacketNumber = newValue }
    }
    var rangingSequence: UInt32 = 0
    var ticks = 0

    /// CARD_CHUNK frames the device sent us, duplicates included.
    public private(set) var chunksReceived = 0
    var peerClosed = false
    var closeAcked = false
    /// Whether the device sent its PROOF.
    var sawPeerProof = false
    /// As responder: the sequence number of our next BEACON.
    var beaconSequence: UInt32 = 1
    /// The verification code, once the device revealed a nonce that opens its commitment (as
    /// responder: once its NONCE came).
    public var code: String? { session.code }
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
        var random = DeterministicRandom(seed: seed)
        let key = X25519.PrivateKey(using: &random)
        let ident = random.bytes(32)
        let bondShare = random.bytes(32)
        let offer = CardOffer(
            length: UInt32(cardBytes.count), chunkSize: UInt16(WireConstants.chunkSize),
            digest: BLAKE2b.hash(cardBytes, outputLength: WireConstants.digestLength))
        session = ScriptedSession(
            isResponder: isResponder, deviceID: DeviceID(rawValue: 0x0123_4567_89AB_CDEF), target: target,
            sessionID: 0x5E55_1011_0000_0001, staticKey: key, token: DiscoveryToken(Array(0xA0..<0xB0)),
            ident: ident, bondShare: bondShare, card: cardBytes, offer: offer, random: random)
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
    public var isSecured: Bool { session.isSecured }

    /// Whether the exchange finished from our side (the device acknowledged our card and we
    /// verified and acknowledged its card, or someone closed).
    public var isFinished: Bool { peerClosed || closeAcked }

    /// Queues INVITE with Noise message 1, and the same INVITE again (with the latest cookie) on
    /// later calls until ACCEPT arrives: the device answers each INVITE once and never repeats its
    /// ACCEPT by itself.
    public mutating func invite() {
        guard !isResponder, !isSecured, let message = session.inviteNoiseMessage() else { return }
        outbox.append(session.handshakeDatagram(.invite, message, cookie: cookie))
    }

    /// Seals `plaintext` as the next SECURE packet (or at `packetNumber`). Nil before the handshake.
    public mutating func seal(_ plaintext: [UInt8], packetNumber: UInt64? = nil) -> [UInt8]? {
        session.seal(plaintext, packetNumber: packetNumber)
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
            if let confirm = session.confirmDatagram {
                outbox.append(confirm)
                return
            }
            guard session.awaitsHandshakeMessage else { return }
            guard accept.sender == session.target, accept.receiver == deviceID else {
                findings.fail("ACCEPT with wrong ids")
                return
            }
            do {
                let theirs = try session.readAccept(accept)
                findings.check(theirs.receiveWindow > 0, "device announced a zero receive window")
                outbox.append(try session.confirm(with: parameters))
            } catch {
                // Only a forged handshake packet of our session can make the device answer with
                // another handshake's message.
                findings.check(isMisled, "the device's ACCEPT did not verify: \(error)")
            }
        case .invite(let invite) where isResponder && invite.receiver == deviceID:
            accept(invite, &findings)
        case .confirm(let confirm) where isResponder && confirm.sessionID == sessionID:
            guard !isSecured, session.acceptDatagram != nil, session.awaitsHandshakeMessage else { return }
            do {
                let theirs = try session.readConfirm(confirm)
                findings.check(theirs.receiveWindow > 0, "device announced a zero receive window")
            } catch {
                findings.check(isMisled, "the device's CONFIRM did not verify: \(error)")
            }
        case .busy(let busy) where busy.sessionID == sessionID && busy.receiver == deviceID:
            // The device is under load (the fuzzer's INVITEs left half-open handshakes): answer
            // BUSY(retry) with the INVITE again, carrying its cookie. (A BUSY to another receiver
            // answers an INVITE the fuzzer forged in our session's name.)
            if busy.reason == .retry, busy.sender == session.target, !isSecured, busy.cookie != cookie {
                cookie = busy.cookie.allSatisfy { $0 == 0 } ? [] : busy.cookie
                invite()
            }
        case .secure(let secure) where secure.sessionID == sessionID:
            do throws(ScriptedSession.OpenFailure) {
                for frame in try session.open(secure) { absorb(frame, &findings) }
            } catch {
                switch error {
                case .notSecured: findings.fail("SECURE before the handshake completed")
                case .unauthentic: findings.fail("the device's SECURE packet did not authenticate")
                case .malformed: findings.fail("the device sent malformed frames")
                }
            }
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
        guard invite.sender == session.target else {
            findings.fail("INVITE from another device id")
            return
        }
        if let accept = session.acceptDatagram {
            if invite.sessionID == sessionID && !isSecured { outbox.append(accept) }
            return
        }
        do {
            let payload = try session.readInvite(invite)
            findings.check(payload.isEmpty, "the device's INVITE carries a payload")
            outbox.append(try session.accept(with: parameters))
        } catch {
            findings.fail("the device's INVITE did not verify: \(error)")
        }
    }

    private mutating func absorb(_ frame: Frame, _ findings: inout FuzzFindings) {
        switch frame {
        case .token(let token):
            let held = session.peerToken
            findings.check(held == nil || held == token, "the device changed its token")
            session.peerToken = token
        case .ranging(let ranging):
            let held = session.peerToken
            findings.check(held == nil || ranging.token == held, "the device's RANGING token differs")
        case .inRange(let inRange):
            session.takeInRange(inRange)
        case .consent(let decision, let offer):
            session.takeConsent(decision, offer: offer)
        case .cardChunk(let index, let data):
            guard let offer = session.peerOffer, Int(index) < session.peerChunks.count else {
                // After fuzzed frames (say a RECEIPT claiming the offer arrived) we may never
                // have been sent the offer; an honest run always has it.
                findings.check(isMisled, "the device sent chunk \(index) outside its offer")
                return
            }
            let expected =
                Int(index) == session.peerChunks.count - 1
                ? Int(offer.length) - Int(index) * Int(offer.chunkSize) : Int(offer.chunkSize)
            findings.check(data.count == expected, "chunk \(index) has \(data.count) bytes, not \(expected)")
            chunksReceived += 1
            if case .completed(let card) = session.takeChunk(index: index, data: data) {
                findings.check(
                    session.verifiedPeerCard == offer.digest, "the device's card does not match its offer")
                findings.check((try? ProfileCard(decoding: card)) != nil, "the device's card does not decode")
            }
        case .cardSack(let sack):
            session.takeSack(sack)
        case .cardAck(let digest):
            findings.check(digest == session.offer.digest, "the device acknowledged a card we did not send")
        case .close(let close):
            if receivedClose == nil { receivedClose = close }
            peerClosed = true
            outbox.append(contentsOf: seal(Frame.encode([.closeAck])).map { [$0] } ?? [])
        case .closeAck:
            closeAcked = true
        case .receipt(let receipts):
            session.peerReceipts = receipts
        case .ident:
            session.takeIdent()
        case .proof:
            findings.check(session.sawPeerIdent, "the device sent PROOF before IDENT")
            sawPeerProof = true
        case .commit where isResponder:
            findings.fail("the initiator sent COMMIT")
        case .commit(let commitment):
            let held = session.peerCommitment
            findings.check(held == nil || held == commitment, "the device changed its commitment")
            session.takeCommit(commitment)
        case .nonce(let initiatorNonce) where isResponder:
            guard session.nonce != nil, session.commitment != nil else {
                findings.check(isMisled, "the device sent NONCE before our COMMIT")
                return
            }
            let held = session.peerNonce
            findings.check(held == nil || held == initiatorNonce, "the device changed its NONCE")
            session.takeNonce(initiatorNonce)
        case .nonce:
            findings.fail("the responder sent NONCE")
        case .reveal where isResponder:
            findings.fail("the initiator sent REVEAL")
        case .reveal(let revealed):
            guard session.peerCommitment != nil, session.nonce != nil else {
                findings.check(isMisled, "the device revealed before our NONCE")
                return
            }
            findings.check(
                session.opensCommitment(revealed), "the device's REVEAL does not open its commitment")
            session.takeReveal(revealed)
        case .bond:
            findings.check(
                isMisled || (session.peerConsent != nil && session.peerConsent != .decline),
                "the device sent BOND before agreeing")
            session.sawPeerBond = true
        }
    }

    /// A value for a fuzzed pairing frame: mostly the honest one, so the fuzzer gets past the checks.
    public func pairingField(_ type: FrameType, _ input: inout FuzzBytes) -> [UInt8] {
        let honest: [UInt8]? =
            switch type {
            case .ident: session.ident
            case .proof: session.proof
            case .nonce: session.nonce
            case .commit, .reveal, .bond: session.peerCommitment
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
        let peerReceipts = session.peerReceipts
        var frames: [Frame] = []
        if !peerReceipts.contains(.token) && !withheld.contains(.token) { frames.append(.token(token)) }
        if !peerReceipts.contains(.ident) && !withheld.contains(.ident) {
            frames.append(.ident(session.ident))
        }
        // Without our IDENT, our PROOF would be an error: withholding IDENT withholds PROOF too.
        if let proof = session.proof, !peerReceipts.contains(.proof),
            withheld.isDisjoint(with: [.ident, .proof])
        {
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
            if inRange && session.peerInRange && session.nonce == nil { session.drawCommitment() }
            if let nonce = session.nonce, let commitment = session.commitment {
                if session.peerNonce == nil {
                    if !withheld.contains(.commit) { frames.append(.commit(commitment)) }
                } else if !peerReceipts.contains(.verification) && !withheld.contains(.reveal) {
                    frames.append(.reveal(nonce))
                }
            }
        } else if inRange, let nonce = session.nonce, session.peerRevealed == nil,
            !peerReceipts.contains(.verification), !withheld.contains(.nonce)
        {
            frames.append(.nonce(nonce))
        }
        let consenting = inRange && session.peerInRange && code != nil && !withheld.contains(.consent)
        if consenting && !peerReceipts.contains(.consent) { frames.append(.consent(.share, session.offer)) }
        if consenting, session.peerAgreed, !peerReceipts.contains(.bond), !withheld.contains(.bond) {
            frames.append(.bond(resolvingKey: bondResolvingKey ?? session.ident, share: session.bondShare))
        }
        let acknowledges = !withheld.contains(.acknowledgements)
        if acknowledges, let verified = session.verifiedPeerCard { frames.append(.cardAck(digest: verified)) }
        if acknowledges, let sack = session.sack { frames.append(.cardSack(sack)) }
        frames.append(.receipt(session.receipts))
        // A peer that withholds a step is never done (an honest one closes once it is).
        let done = session.verifiedPeerCard != nil && session.allChunksAcknowledged && withheld.isEmpty
        if done { frames.append(.close(CloseFrame(code: .exchanged))) }
        send(frames)
        if consenting, session.peerAgreed, !withheld.contains(.chunks) {
            for index in session.unacknowledgedChunks {
                if let chunk = session.chunk(index) { send([chunk]) }
            }
        }
    }
}
