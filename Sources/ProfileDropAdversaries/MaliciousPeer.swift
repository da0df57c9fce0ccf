import ProfileDropCore
import ProfileDropCrypto
import ProfileDropScriptedPeer
import ProfileDropSimulator

/// How a ``MaliciousPeer`` misbehaves once it holds an authenticated session with its victim.
enum MaliciousBehaviour: Sendable, Equatable {
    /// Offers a card one byte above the victim's limit.
    case oversize
    /// Sends a chunk whose index lies outside its offer.
    case badIndex
    /// Sends a card of the offered length whose bytes do not match the offered digest.
    case badDigest
    /// Acknowledges the victim's card at once, without receiving a chunk of it.
    case fakeAck
    /// Receives the victim's card and never acknowledges it.
    case neverAck
    /// Acknowledges every chunk of the victim's card in CARD_SACK as soon as it knows the offer,
    /// before receiving them, and never sends CARD_ACK: the victim stops sending and waits.
    case falseSack
    /// Offers a card as large as the victim takes and sends one chunk of it every few seconds.
    case slowTransfer
    /// Completes verification, then never sends its decision (it keeps the session alive).
    case consentStall
    /// Sends one RANGING every few seconds after the handshake, and nothing else.
    case slowloris
    /// Offers a card above the limit like ``oversize``, then never acknowledges the victim's CLOSE
    /// and keeps talking for ``MaliciousPeer/withholdingTime``: the victim's closing session
    /// answers each of its packets with CLOSE, and must neither outsend it nor stay longer than
    /// its closing limit.
    case withholdCloseAck
    /// Claims in every RECEIPT to hold every fact of the victim's from the start, so that the victim
    /// never repeats one: it holds none it did not receive.
    case falseReceipt
    /// Sends CLOSE(declined) in its first packet after the handshake, before any code: until
    /// 2026-12-02 that ended the victim's device, not only the session (PROTOCOL.md 11.6, item 10).
    case earlyDecline
    /// Ranges honestly from 7 cm in front of the victim, so that the victim's gate opens, and never
    /// sends IN_RANGE: the victim waits for it to the end of its ranging window, and since
    /// 2026-12-02 up to one more window while its own gate is open (PROTOCOL.md 6.4).
    case withholdInRange
    /// Ranges honestly from 7 cm in front, completes verification, and once it holds the code
    /// sends CONSENT(decline) and CLOSE(declined): a decline after the code, which until protocol
    /// 2.1 ended the victim's whole run (PROTOCOL.md 11.6, item 10).
    case lateDecline

    /// Whether the offer is one byte above the victim's limit.
    var offersTooMuch: Bool { self == .oversize || self == .withholdCloseAck }
}

/// A malicious authenticated peer, on the `ScriptedSession` the fuzz harness's scripted peer also
/// speaks through: it invites its victim, completes the XX handshake with a key of its own, and
/// speaks the secured protocol honestly as initiator (token, identity as a stranger, ranging from
/// 7 cm in front of the victim, the verification nonce, consent, its card, acknowledgements),
/// except for what its ``MaliciousBehaviour`` changes.
///
/// It never beacons, so nobody else invites it. It stops for good once the victim closes the
/// session (it acknowledges the CLOSE) or it gave up the handshake; it invites only once.
struct MaliciousPeer: DatagramSpeaker {
    let behaviour: MaliciousBehaviour
    let targetAddress: PeerAddress
    /// Our claimed pose: 7 cm in front of the victim, facing it.
    let pose = VictimPair.poses[1]
    /// The interval of honest control packets: the victim's ranging interval.
    static let tick: Duration = MeasurementModel.default.sampleInterval
    /// How long a CLOSE_ACK withholder goes on talking after the victim's CLOSE: past the victim's
    /// 12.6 s closing limit.
    static let withholdingTime: Duration = .seconds(15)
    /// How often a slow behaviour sends its one packet: under the victim's idle time.
    static let slowInterval: Duration = .seconds(4)

    /// The handshake, our keys and card, and what each side told the other.
    private var session: ScriptedSession
    private var rangingSequence: UInt32 = 0
    private var ticks = 0
    private var inviteAt: Instant?
    private var invites = 0
    private var tickAt: Instant?
    private var inviteDatagram: [UInt8]?
    /// The slow transfer's next chunk.
    private var slowChunk = 0
    private var outbox: [OutgoingDatagram] = []

    /// When the handshake completed.
    private(set) var securedAt: Instant?
    /// When the victim closed the session (we acknowledged), or we gave up the handshake.
    private(set) var endedAt: Instant?
    /// Whether the session ended with the victim's CLOSE (else it never started: BUSY, or no
    /// ACCEPT).
    private(set) var endedByClose = false
    /// When the victim's first CLOSE arrived (a CLOSE_ACK withholder goes on after it).
    private(set) var victimClosedAt: Instant?
    /// After the victim's first CLOSE: the datagrams each side sent the other, and when the
    /// victim's last one arrived.
    private(set) var afterClose = (sent: 0, received: 0, lastReceivedAt: Instant?.none)
    /// Our device id.
    var deviceID: DeviceID { session.deviceID }
    /// The victim's device id.
    var target: DeviceID { session.target }
    /// The verification code, once the victim revealed its nonce.
    var code: String? { session.code }
    /// Datagrams we sent.
    private(set) var sentDatagrams = 0
    /// The IDENT and PROOF we send in place of our own: taken from another session, to replay
    /// (the replaying prober on real sockets, PROTOCOL.md 6.5).
    var replayedIdentity: (ident: [UInt8], proof: [UInt8])?
    /// The victim's IDENT and PROOF, as it sent them.
    private(set) var peerIdentity: (ident: [UInt8]?, proof: [UInt8]?) = (nil, nil)
    /// What the victim sent us, one line per datagram as we can tell it: its type, and for SECURE
    /// the frames it carried (a CLOSE with its codes).
    private(set) var observed: [String] = []

    /// A peer that invites `target` at `targetAddress` at `inviteAt`, offering `card`, its every draw
    /// from `seedMaterial`.
    ///
    /// With `deviceID`, it uses that id instead of drawing one (a peer that comes back).
    init(
        behaviour: MaliciousBehaviour, target: DeviceID, targetAddress: PeerAddress, card: ProfileCard,
        seedMaterial: [UInt8], inviteAt: Instant, deviceID: DeviceID? = nil
    ) {
        self.behaviour = behaviour
        self.targetAddress = targetAddress
        self.inviteAt = inviteAt
        var random = DeterministicRandom(seedMaterial: seedMaterial)
        let drawn = DeviceID(rawValue: random.nextUInt64())
        let sessionID = random.nextUInt64()
        let key = X25519.PrivateKey(using: &random)
        let token = DiscoveryToken(random.bytes(DiscoveryToken.length))
        let ident = random.bytes(WireConstants.identityFieldLength)
        let bondShare = random.bytes(WireConstants.identityFieldLength)
        let bytes: [UInt8]
        switch behaviour {
        case .slowTransfer:
            // As large as the victim takes: random bytes, whose digest we offer.
            bytes = random.bytes(Limits().maxCardBytes)
        case .oversize, .badIndex, .badDigest, .fakeAck, .neverAck, .falseSack, .consentStall, .slowloris,
            .withholdCloseAck, .falseReceipt, .earlyDecline, .withholdInRange, .lateDecline:
            bytes = card.encoded()
        }
        let length = behaviour.offersTooMuch ? UInt32(Limits().maxCardBytes + 1) : UInt32(bytes.count)
        let offer = CardOffer(
            length: length, chunkSize: UInt16(WireConstants.chunkSize),
            digest: BLAKE2b.hash(bytes, outputLength: WireConstants.digestLength))
        session = ScriptedSession(
            isResponder: false, deviceID: deviceID ?? drawn, target: target, sessionID: sessionID,
            staticKey: key, token: token, ident: ident, bondShare: bondShare, card: bytes, offer: offer,
            random: random)
    }

    var nextDeadline: Instant? {
        guard endedAt == nil else { return nil }
        switch (inviteAt, tickAt) {
        case (let invite?, let tick?): return min(invite, tick)
        case (let invite?, nil): return invite
        case (nil, let tick?): return tick
        case (nil, nil): return nil
        }
    }

    mutating func handleTimeout(at time: Instant) {
        guard endedAt == nil else { return }
        if let due = inviteAt, time >= due { sendInvite(at: time) }
        if let due = tickAt, time >= due { tick(at: time) }
    }

    mutating func pollTransmit() -> OutgoingDatagram? {
        guard !outbox.isEmpty else { return nil }
        sentDatagrams += 1
        if victimClosedAt != nil { afterClose.sent += 1 }
        return outbox.removeFirst()
    }

    // MARK: - Handshake

    private mutating func sendInvite(at time: Instant) {
        guard !session.isSecured else {
            inviteAt = nil
            return
        }
        guard invites < 5 else {
            // No ACCEPT: the victim is taken. Give up.
            inviteAt = nil
            endedAt = time
            return
        }
        if invites == 0 {
            guard let message = session.inviteNoiseMessage() else {
                preconditionFailure("the first XX message needs nothing but randomness")
            }
            inviteDatagram = session.handshakeDatagram(.invite, message)
        }
        invites += 1
        if let inviteDatagram { queue(inviteDatagram) }
        inviteAt = time + .milliseconds(250) * (1 << (invites - 1))
    }

    private mutating func queue(_ bytes: [UInt8]) {
        outbox.append(OutgoingDatagram(destination: .unicast(targetAddress), bytes: bytes))
    }

    mutating func receive(_ bytes: [UInt8], from source: PeerAddress, at time: Instant) {
        if victimClosedAt != nil, source == targetAddress {
            afterClose.received += 1
            afterClose.lastReceivedAt = time
        }
        guard endedAt == nil, source == targetAddress, let packet = try? Packet(datagram: bytes) else {
            return
        }
        switch packet {
        case .accept(let accept) where accept.sessionID == session.sessionID && accept.sender == target:
            if let confirm = session.confirmDatagram {
                queue(confirm)
                return
            }
            let ours = HandshakeParameters(maxCardBytes: UInt32(Limits().maxCardBytes), receiveWindow: 64)
            guard session.awaitsHandshakeMessage, (try? session.readAccept(accept)) != nil,
                let confirm = try? session.confirm(with: ours)
            else { return }
            queue(confirm)
            securedAt = time
            inviteAt = nil
            tickAt = time
        case .busy(let busy) where busy.sessionID == session.sessionID:
            // Taken: give up.
            endedAt = time
        case .probe(let probe):
            // Answered as an honest device does, so that the victim may invite it too.
            queue(Packet.probeAck(probe).encoded())
        case .secure(let secure) where secure.sessionID == session.sessionID:
            guard let frames = try? session.open(secure) else { return }
            observed.append("SECURE " + IdentityReplayer.observable(frames))
            for frame in frames { absorb(frame, at: time) }
        case .beacon, .query, .invite, .accept, .confirm, .busy, .secure, .probeAck:
            // Not for this session, or nothing it answers.
            break
        }
    }

    /// Seals `frames` as our next SECURE packet and queues it.
    private mutating func send(_ frames: [Frame]) {
        if let datagram = session.seal(Frame.encode(frames)) { queue(datagram) }
    }

    // MARK: - The secured session

    private mutating func absorb(_ frame: Frame, at time: Instant) {
        switch frame {
        case .token(let token):
            session.peerToken = token
        case .inRange(let inRange):
            session.takeInRange(inRange)
        case .consent(let decision, let offer):
            session.takeConsent(decision, offer: offer, maxChunks: 1024)
            session.peerInRange = true
        case .cardChunk(let index, let data):
            session.takeChunk(index: index, data: data)
        case .cardSack(let sack):
            session.takeSack(sack)
        case .close where behaviour == .withholdCloseAck:
            // Never acknowledged: the ticks go on, each drawing the victim's CLOSE again.
            if victimClosedAt == nil { victimClosedAt = time }
        case .close:
            // The victim ended the session: acknowledge, and we are done.
            send([.closeAck])
            endedAt = time
            endedByClose = true
        case .receipt(let receipts):
            session.peerReceipts = receipts
        case .ident(let bytes):
            if peerIdentity.ident == nil { peerIdentity.ident = bytes }
            // A stranger's PROOF: we recognise nobody.
            session.takeIdent()
        case .commit(let commitment):
            session.takeCommit(commitment)
            session.peerInRange = true
        case .reveal(let revealed):
            // The first REVEAL only.
            if session.peerRevealed == nil { session.takeReveal(revealed) }
        case .bond:
            session.sawPeerBond = true
        case .proof(let bytes):
            if peerIdentity.proof == nil { peerIdentity.proof = bytes }
        case .ranging, .cardAck, .closeAck, .nonce:
            break
        }
    }

    private mutating func tick(at time: Instant) {
        if let closed = victimClosedAt, time >= closed + Self.withholdingTime {
            endedAt = time
            endedByClose = true
            return
        }
        ticks += 1
        tickAt = time + Self.tick
        switch behaviour {
        case .lateDecline where code != nil && session.peerInRange:
            // The code is known on both sides (the victim revealed): decline, then close.
            send(facts() + [.consent(.decline, nil), .close(CloseFrame(code: .declined))])
            endedAt = time
            endedByClose = true
            return
        case .earlyDecline:
            // Our facts, then the decline; the victim's CLOSE_ACK is not needed.
            send(facts() + [.close(CloseFrame(code: .declined))])
            endedAt = time
            endedByClose = true
            return
        case .slowloris:
            tickAt = time + Self.slowInterval
            rangingSequence += 1
            send([.ranging(RangingFrame(sequence: rangingSequence, pose: pose, token: session.token))])
            return
        case .slowTransfer where transferring:
            // Only what keeps the session alive: one packet every few seconds, with one chunk and
            // our outstanding facts.
            tickAt = time + Self.slowInterval
            send(facts())
            if let chunk = session.chunk(slowChunk) {
                send([chunk])
                slowChunk += 1
            }
            return
        case .oversize, .badIndex, .badDigest, .fakeAck, .neverAck, .falseSack, .slowTransfer, .consentStall,
            .withholdCloseAck, .falseReceipt, .withholdInRange, .lateDecline:
            break
        }
        rangingSequence += 1
        send(facts() + [.ranging(RangingFrame(sequence: rangingSequence, pose: pose, token: session.token))])
        guard transferring else { return }
        switch behaviour {
        case .oversize, .withholdCloseAck:
            // The offer was a lie: there is no such card to send.
            return
        case .badIndex:
            // A chunk past the end of our own offer.
            let bogus = UInt16(clamping: session.offer.chunkCount + 3)
            send([.cardChunk(index: bogus, data: session.card.prefix(Int(session.offer.chunkSize)))])
            return
        case .badDigest, .fakeAck, .neverAck, .falseSack, .slowTransfer, .consentStall, .slowloris,
            .falseReceipt, .earlyDecline, .withholdInRange, .lateDecline:
            break
        }
        for index in session.unacknowledgedChunks {
            guard case .cardChunk(let number, let data)? = session.chunk(index) else { continue }
            // For the bad digest, the offered length with other bytes.
            send([
                .cardChunk(
                    index: number, data: behaviour == .badDigest ? ArraySlice(data.map { $0 ^ 0x5A }) : data)
            ])
        }
    }

    /// Whether both of us agreed: cards move.
    private var transferring: Bool {
        decided && session.peerAgreed
    }

    /// Whether we send our decision: once the code is known and both are in range (never, for the
    /// consent stall).
    private var decided: Bool {
        behaviour != .consentStall && behaviour != .lateDecline && ticks >= 4 && session.peerInRange
            && code != nil
    }

    /// Our facts the victim does not yet hold, and our receipts, as an honest initiator sends them.
    private func facts() -> [Frame] {
        let peerReceipts = session.peerReceipts
        var frames: [Frame] = []
        if !peerReceipts.contains(.token) { frames.append(.token(session.token)) }
        if !peerReceipts.contains(.ident) { frames.append(.ident(replayedIdentity?.ident ?? session.ident)) }
        if let proof = session.proof, !peerReceipts.contains(.proof) {
            frames.append(.proof(replayedIdentity?.proof ?? proof))
        }
        let inRange = ticks >= 4 && behaviour != .withholdInRange
        if inRange && !peerReceipts.contains(.consent) { frames.append(.inRange(true)) }
        if inRange, let nonce = session.nonce, session.peerRevealed == nil,
            !peerReceipts.contains(.verification)
        {
            frames.append(.nonce(nonce))
        }
        if decided && !peerReceipts.contains(.consent) { frames.append(.consent(.share, session.offer)) }
        if transferring && !peerReceipts.contains(.bond) {
            frames.append(.bond(resolvingKey: session.ident, share: session.bondShare))
        }
        switch behaviour {
        case .fakeAck:
            // The digest of the victim's offer, repeated from its CONSENT: no chunk needed.
            if transferring, let peerOffer = session.peerOffer, !peerReceipts.contains(.cardAck) {
                frames.append(.cardAck(digest: peerOffer.digest))
            }
        case .neverAck, .falseSack:
            break
        case .oversize, .badIndex, .badDigest, .slowTransfer, .consentStall, .slowloris, .withholdCloseAck,
            .falseReceipt, .earlyDecline, .withholdInRange, .lateDecline:
            if let verified = session.verifiedPeerCard, !peerReceipts.contains(.cardAck) {
                frames.append(.cardAck(digest: verified))
            }
        }
        if behaviour == .falseSack, let peerOffer = session.peerOffer {
            // Every chunk held, none needed.
            frames.append(
                .cardSack(
                    CardSack(count: peerOffer.chunkCount, cumulative: peerOffer.chunkCount) { _ in true }))
        } else if behaviour != .fakeAck, let sack = session.sack {
            frames.append(.cardSack(sack))
        }
        frames.append(.receipt(behaviour == .falseReceipt ? .all : session.receipts))
        return frames
    }
}

/// A malicious peer that comes back: as soon as one session ends it invites the victim again, under
/// a fresh device id (so no back-off kept by id applies), with a fresh session, ephemeral and
/// static key, after ``delay`` (after ``busyDelay`` if the victim answered BUSY or did not answer,
/// which keeps it within the cleartext attackers' budget).
struct ReinvitingPeer: DatagramSpeaker {
    /// How long after a session ended it invites again: less than the victim's own delay before it
    /// invites someone (``Timeouts/inviteDelay``).
    static let delay: Duration = .milliseconds(10)
    /// How long after BUSY, or an INVITE left unanswered, it tries again.
    static let busyDelay: Duration = .milliseconds(100)

    private var current: MaliciousPeer
    private let card: ProfileCard
    private let seedMaterial: [UInt8]
    private var reinviteAt: Instant?
    /// Sessions it started (invitations with a fresh session id).
    private(set) var sessions = 1

    /// A peer that behaves as `behaviour` in every session, the first invited at `inviteAt`.
    init(
        behaviour: MaliciousBehaviour, target: DeviceID, targetAddress: PeerAddress, card: ProfileCard,
        seedMaterial: [UInt8], inviteAt: Instant
    ) {
        self.card = card
        self.seedMaterial = seedMaterial
        current = MaliciousPeer(
            behaviour: behaviour, target: target, targetAddress: targetAddress, card: card,
            seedMaterial: seedMaterial, inviteAt: inviteAt)
    }

    /// The device id of its current session.
    var deviceID: DeviceID { current.deviceID }

    var nextDeadline: Instant? { current.nextDeadline ?? reinviteAt }

    mutating func receive(_ bytes: [UInt8], from source: PeerAddress, at time: Instant) {
        current.receive(bytes, from: source, at: time)
        noteEnd()
    }

    mutating func handleTimeout(at time: Instant) {
        if let due = reinviteAt, time >= due {
            reinviteAt = nil
            sessions += 1
            current = MaliciousPeer(
                behaviour: current.behaviour, target: current.target, targetAddress: current.targetAddress,
                card: card, seedMaterial: seedMaterial + Array("/session/\(sessions)".utf8), inviteAt: time)
        }
        current.handleTimeout(at: time)
        noteEnd()
    }

    mutating func pollTransmit() -> OutgoingDatagram? { current.pollTransmit() }

    private mutating func noteEnd() {
        if reinviteAt == nil, let ended = current.endedAt {
            reinviteAt = ended + (current.endedByClose ? Self.delay : Self.busyDelay)
        }
    }
}
