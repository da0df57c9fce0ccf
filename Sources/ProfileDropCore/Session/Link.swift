/// What both sides of a secured session have told each other, carried from state to state.
///
/// Control frames are idempotent facts (token, in-range, consent, card acknowledgement); each side
/// repeats its facts in every control packet until the peer's RECEIPT (or, for IN_RANGE, its
/// CONSENT) shows it holds them, so losing any one packet delays but never breaks the exchange.
struct Link {
    /// Who the session is with: events about its card name it, as the device may hold several.
    let peer: DeviceID
    var channel: SecureChannel
    let peerParameters: HandshakeParameters
    let localToken: DiscoveryToken
    /// Recognition of the peer and the verification code (PROTOCOL.md 6.5).
    var pairing: Pairing
    /// CONFIRM as sent (initiator only): repeated in front of every ranging round until the
    /// responder is heard, and re-sent when a duplicate ACCEPT shows it was lost.
    var confirmDatagram: [UInt8]?
    /// An authenticated packet from the peer arrived: it holds the session keys, so CONFIRM reached
    /// it.
    var heardFromPeer = false

    var peerToken: DiscoveryToken?
    var localInRange = false
    var peerInRange = false
    var localConsent: ConsentDecision?
    var localOffer: CardOffer?
    var peerConsent: ConsentDecision?
    var peerOffer: CardOffer?
    /// Digest of the peer's card once we verified it.
    var verifiedPeerCard: [UInt8]?
    /// The peer acknowledged our card.
    var peerAckedOurCard = false
    /// What the peer says it holds of ours.
    var peerReceipts: Receipts = []
    /// The peer sent a fact (new or repeated) since our last control frames: our RECEIPT is what
    /// stops it repeating, so the next control packet goes out even with nothing of ours in it.
    var peerSentFact = false

    var lastHeard: Instant
    /// When our control frames last went out (a control packet, or a ranging round carrying them).
    var controlSentAt: Instant?
    var controlAt: Instant
    var controlInterval: Duration
    var rangingSequence: UInt32 = 0
    var peerPose: Pose?
    var peerPoseAt: Instant?
    var lastPeerSequence: UInt32?
    var estimate: ProximityGate.Estimate?
    /// Our proximity gate. It keeps measuring after it first opened: pulling the devices apart
    /// before the exchange is done cancels it.
    var gate: ProximityGate
    /// The next RANGING frame and measurement.
    var rangingAt: Instant
    /// Valid measurements in a row outside the gate's band widened by its hysteresis.
    var consecutiveOutside = 0
    /// When a ranging round last took a measurement: the peer's pose was fresh (it arrived within
    /// three ranging intervals) and the round was no dropout.
    var measuredAt: Instant?
    /// The session's round trip: the handshake's, then the card transfer's samples. The close
    /// times its retransmissions and its drain from it.
    var roundTrip = RoundTripEstimator()
    /// What the input being handled asked to send, gathered into one packet (PROTOCOL.md 6.3,
    /// "one packet per input").
    var pending = PendingPacket()

    /// What we hold of the peer's one-shot facts.
    var receipts: Receipts {
        var receipts: Receipts = []
        if peerToken != nil { receipts.insert(.token) }
        if peerConsent != nil { receipts.insert(.consent) }
        if peerAckedOurCard { receipts.insert(.cardAck) }
        return receipts.union(pairing.receipts)
    }

    /// Our facts the peer does not yet hold, and our receipts.
    func controlFrames() -> [Frame] {
        var frames: [Frame] = []
        appendControlFrames(to: &frames)
        return frames
    }

    /// A control packet's usual number of frames at most, reserved at once rather than grown.
    private static let usualControlFrames = 8

    /// Appends our facts the peer does not yet hold, and our receipts, to `frames`.
    @inline(__always)  // read in place: a call copied the 920-byte link from a mutating caller
    func appendControlFrames(to frames: inout [Frame]) {
        frames.reserveCapacity(frames.count + Self.usualControlFrames)
        appendVerificationFacts(to: &frames)
        if let localConsent, !peerReceipts.contains(.consent) {
            frames.append(.consent(localConsent, localConsent == .share ? localOffer : nil))
        }
        if let bond = pairing.bondFrame(peerReceipts: peerReceipts) { frames.append(bond) }
        if let verifiedPeerCard, !peerReceipts.contains(.cardAck) {
            frames.append(.cardAck(digest: verifiedPeerCard))
        }
        frames.append(.receipt(receipts))
    }

    /// Appends the facts the peer needs to learn its code that it does not yet hold: our token,
    /// IN_RANGE, and the pairing's frames.
    private func appendVerificationFacts(to frames: inout [Frame]) {
        if !peerReceipts.contains(.token) { frames.append(.token(localToken)) }
        if localInRange && !peerReceipts.contains(.consent) { frames.append(.inRange(true)) }
        pairing.appendFrames(peerReceipts: peerReceipts, to: &frames)
    }

    /// The frames of our decline once consenting: the facts the peer still needs for its code,
    /// CONSENT(decline) unless the peer holds our decision, then CLOSE(declined). A CLOSE(declined)
    /// that arrives before the peer's code is known ends only its session (PROTOCOL.md 11.6, item
    /// 10), so the facts come first: a peer that missed our REVEAL or NONCE learns its code from
    /// this packet, and our decline ends its device as it should.
    func declineFrames() -> [Frame] {
        var frames: [Frame] = []
        appendVerificationFacts(to: &frames)
        switch localConsent {
        case nil:
            frames.append(.consent(.decline, nil))
        case .decline:
            if !peerReceipts.contains(.consent) { frames.append(.consent(.decline, nil)) }
        case .share, .receiveOnly:
            // A changed decision is a protocol error at the peer: CLOSE alone says it.
            break
        }
        frames.append(.close(CloseFrame(code: .declined)))
        return frames
    }

    /// Seals and queues `frames` for the peer, after what this input gathered so far.
    mutating func send(_ frames: [Frame], context: inout SessionContext) {
        flush(context: &context)
        context.outbox.push(channel.seal(frames))
    }

    /// Seals and queues a packet of one frame, with no array for it, after what this input
    /// gathered so far.
    mutating func send(_ frame: Frame, context: inout SessionContext) {
        flush(context: &context)
        let packet = CollectionOfOne(frame)
        context.outbox.push(channel.seal(packet.span))
    }

    /// Sends a card chunk once the input has been handled: behind our facts and acknowledgement
    /// when they fit in its packet, so a small card travels with the CONSENT or CARD_ACK in front
    /// of it.
    mutating func sendChunk(_ chunk: Frame) {
        pending.chunks.append(chunk)
    }

    /// Seals what this input gathered, if anything: CARD_SACK, our facts and RECEIPT, RANGING and
    /// the first chunk when they fit in one packet, then each other chunk in a packet of its own.
    /// The session calls it when an input has been handled.
    mutating func flush(context: inout SessionContext) {
        guard !pending.isEmpty else { return }
        // The context's frame list, borrowed without a closure: one that captured `self` here
        // copied the whole link.
        var frames: [Frame] = []
        swap(&frames, &context.frameList)
        defer {
            frames.removeAllKeepingStorage()
            swap(&frames, &context.frameList)
        }
        if pending.control { controlSentAt = context.now }
        appendPending(to: &frames, pose: context.pose)
        var size = 0
        for index in frames.indices { size += frames[index].encodedSize }
        // Only the first chunk joins the other frames; every other chunk has a packet of its own,
        // so that two chunks sent together (a timeout's two probes, which may be the same chunk)
        // are lost independently.
        for index in pending.chunks.indices {
            if !frames.isEmpty
                && (index > 0 || size + pending.chunks[index].encodedSize > WireConstants.maxFramePayload)
            {
                context.outbox.push(channel.seal(frames))
                frames.removeAllKeepingStorage()
            }
            frames.append(pending.chunks[index])
        }
        context.outbox.push(channel.seal(frames))
        discardPending()
    }

    /// Drops what this input gathered: CLOSE, or the answer to one, says all that is left to say.
    mutating func discardPending() {
        pending.control = false
        pending.ranging = false
        pending.cardSack = nil
        // Kept for the next input's chunks.
        pending.chunks.removeAll(keepingCapacity: true)
    }

    /// Appends the gathered frames. The facts are those of now, not of when they were asked for:
    /// a fact learned later in the same input travels too.
    @inline(__always)  // read in place: a call copied the 920-byte link on every flush
    private func appendPending(to frames: inout [Frame], pose: Pose) {
        if let sack = pending.cardSack { frames.append(.cardSack(sack)) }
        if pending.control { appendControlFrames(to: &frames) }
        if pending.ranging { frames.append(rangingFrame(pose: pose)) }
    }

    /// Asks for a control packet now (after `extra`, if any) and schedules the next one, `interval`
    /// later, or a doubled interval up to the cap when `backOff` is set. The packet is sealed when
    /// the input has been handled, with whatever else the input sends (``flush(context:)``).
    ///
    /// A packet due on the back-off timer (`backOff` set) that would carry our RECEIPT alone, when
    /// the peer sent no fact since our last one, is idle and not sent: the peer holds all our
    /// facts, and our receipts tell it nothing new (PROTOCOL.md 6.3, idle packets).
    mutating func sendControl(extra: CardSack? = nil, backOff: Bool, context: inout SessionContext) {
        let idle = backOff && !peerSentFact && !pending.control && hasOnlyReceipt(context: &context)
        if !idle {
            pending.control = true
            if let extra { pending.cardSack = extra }
            peerSentFact = false
        }
        let base = context.configuration.measurement.sampleInterval
        // Doubled by addition: `* 2` is the generic 128-bit multiplication.
        controlInterval =
            backOff ? min(controlInterval + controlInterval, max(context.timeouts.controlCap, base)) : base
        controlAt = context.now + controlInterval
    }

    /// Whether our control frames would be RECEIPT alone: the peer holds all our facts.
    func hasOnlyReceipt(context: inout SessionContext) -> Bool {
        // In the context's frame list, not an array per check.
        context.withFrameList { frames, _ in
            appendControlFrames(to: &frames)
            // appendControlFrames always ends with RECEIPT.
            return frames.count == 1
        }
    }

    /// Makes the next control packet go out at the base interval (something changed).
    mutating func controlSoon(context: SessionContext) {
        controlInterval = context.configuration.measurement.sampleInterval
        controlAt = min(controlAt, context.now)
    }

    /// Frames that the current state acts on, after the link absorbed the shared facts.
    struct Inbound {
        var chunks: [(index: UInt16, data: ArraySlice<UInt8>)] = []
        var sacks: [CardSack] = []
        var close: CloseFrame?
        var closeAck = false
        /// A new fact arrived.
        var learned = false
    }

    /// Absorbs authenticated frames into the shared facts. With `live` false (the session is
    /// closing or draining) the facts still count, but nothing is reported: the user already saw
    /// how the session ended, and a late acknowledgement must not read as progress.
    /// - Throws: ``ProtocolError`` when the peer contradicts itself (another token, another
    ///   consent, an acknowledgement of a card we did not send) or offers a card over our limit.
    mutating func absorb(_ frames: [Frame], live: Bool, context: inout SessionContext) throws(ProtocolError)
        -> Inbound
    {
        lastHeard = context.now
        heardFromPeer = true
        var inbound = Inbound()
        // By index: `for frame in frames` copies each frame, retaining its payload.
        for index in frames.indices {
            if frames[index].isFact { peerSentFact = true }
            switch frames[index] {
            case .token(let token):
                if let peerToken {
                    guard peerToken == token else {
                        throw ProtocolError(.tokenMismatch, "peer sent a second token")
                    }
                } else {
                    peerToken = token
                    inbound.learned = true
                }
            case .ranging(let ranging):
                // Without the token it cannot be checked; the peer repeats both.
                guard let peerToken else { continue }
                guard ranging.token == peerToken else {
                    throw ProtocolError(.tokenMismatch, "ranging frame carries a token other than the peer's")
                }
                if let last = lastPeerSequence, ranging.sequence <= last { continue }
                lastPeerSequence = ranging.sequence
                peerPose = ranging.pose
                peerPoseAt = context.now
            case .inRange(let inRange):
                if inRange && !peerInRange {
                    peerInRange = true
                    inbound.learned = true
                }
            case .consent(let decision, let offer):
                if let peerConsent {
                    guard peerConsent == decision, peerOffer == offer else {
                        throw ProtocolError(.unexpectedMessage, "peer changed its consent")
                    }
                } else {
                    if let offer, Int(offer.length) > context.limits.maxCardBytes {
                        throw ProtocolError(
                            .cardTooLarge,
                            "offer of \(offer.length) bytes exceeds \(context.limits.maxCardBytes)")
                    }
                    peerConsent = decision
                    peerOffer = offer
                    // A peer consents only once both were in range.
                    peerInRange = true
                    inbound.learned = true
                }
            case .cardChunk(let index, let data):
                inbound.chunks.append((index, data))
            case .cardSack(let sack):
                inbound.sacks.append(sack)
            case .cardAck(let digest):
                guard let localOffer, localOffer.digest == digest else {
                    throw ProtocolError(.cardDigestMismatch, "peer acknowledged a card we did not send")
                }
                if !peerAckedOurCard {
                    peerAckedOurCard = true
                    inbound.learned = true
                    if live { context.emit(.acknowledged) }
                }
            case .ident, .proof, .nonce, .reveal:
                if try pairing.absorb(
                    frames[index], knownPeers: context.configuration.knownPeers, random: &context.random)
                {
                    inbound.learned = true
                    // Our user hears of a failed proof at once; the peer sees nothing of it.
                    if case .proof = frames[index], let claimed = pairing.unprovenClaim {
                        context.emit(.knownPeerMismatch(name: claimed.name))
                    }
                }
            case .commit:
                if try pairing.absorb(
                    frames[index], knownPeers: context.configuration.knownPeers, random: &context.random)
                {
                    // The responder commits only in consenting, once both gates were open.
                    peerInRange = true
                    inbound.learned = true
                }
            case .bond:
                guard let peerConsent, peerConsent != .decline else {
                    throw ProtocolError(.unexpectedMessage, "BOND before the peer agreed")
                }
                if try pairing.absorb(
                    frames[index], knownPeers: context.configuration.knownPeers, random: &context.random)
                {
                    inbound.learned = true
                    // Once per peer: a known peer that failed its PROOF was warned about already.
                    if let impersonated = pairing.impersonatedInBond,
                        pairing.unprovenClaim?.resolvingKey != impersonated.resolvingKey
                    {
                        context.emit(.knownPeerMismatch(name: impersonated.name))
                    }
                }
            case .close(let close):
                inbound.close = close
            case .closeAck:
                inbound.closeAck = true
            case .receipt(let receipts):
                // A receipt counts only for a fact we have sent: a peer claiming to hold our consent
                // before we decided would otherwise stop us from ever sending it.
                var sent: Receipts = pairing.sentFacts.union(.token)
                if localConsent != nil { sent.insert(.consent) }
                if verifiedPeerCard != nil { sent.insert(.cardAck) }
                peerReceipts.formUnion(receipts.intersection(sent))
            }
        }
        return inbound
    }
}

extension Frame {
    /// Whether the frame states one of the facts its sender repeats until the peer shows it holds
    /// them (PROTOCOL.md 6.3): a frame our next control packet's RECEIPT answers.
    var isFact: Bool {
        switch self {
        case .token, .inRange, .consent, .cardAck, .ident, .proof, .commit, .nonce, .reveal, .bond: true
        case .ranging, .cardChunk, .cardSack, .close, .closeAck, .receipt: false
        }
    }
}

/// What one input asked a session to send, sealed as one packet once the input has been handled:
/// a control packet, a ranging round and a CARD_SACK due together go out together.
struct PendingPacket {
    /// Our facts and RECEIPT.
    var control = false
    /// The ranging round's RANGING.
    var ranging = false
    /// A selective acknowledgement, in front.
    var cardSack: CardSack?
    /// Card chunks, behind the rest.
    var chunks: [Frame] = []

    var isEmpty: Bool { !control && !ranging && cardSack == nil && chunks.isEmpty }
}
