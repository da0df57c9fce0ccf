import ProfileDropNoise

/// The encrypted unicast channel of one exchange session after the Noise handshake.
///
/// Each datagram is sealed with the sender's transport key at nonce = packet number, with the
/// cleartext header as associated data. Received packets pass the replay window, then
/// authentication, and only then touch any state.
struct SecureChannel {
    let sessionID: UInt64
    let peerAddress: PeerAddress
    private let sender: CipherState
    private let receiver: CipherState
    private(set) var nextPacketNumber: UInt64 = 0
    private(set) var replay = ReplayWindow()

    init(sessionID: UInt64, peerAddress: PeerAddress, transport: NoiseTransport) {
        self.sessionID = sessionID
        self.peerAddress = peerAddress
        self.sender = transport.sender
        self.receiver = transport.receiver
    }

    /// Seals `frames` into one datagram for the peer.
    mutating func seal(_ frames: [Frame]) -> OutgoingDatagram {
        let payload = Frame.encode(frames)
        precondition(!payload.isEmpty && payload.count <= WireConstants.maxFramePayload, "frame payload size")
        let packetNumber = nextPacketNumber
        nextPacketNumber += 1
        let header = SecurePacket.header(
            sessionID: sessionID, packetNumber: packetNumber,
            ciphertextLength: payload.count + WireConstants.tagSize)
        guard let ciphertext = try? sender.encrypt(nonce: packetNumber, ad: header, plaintext: payload) else {
            // Only nonce 2^64-1 or an oversized payload can fail; both are excluded above.
            preconditionFailure("sealing a packet failed")
        }
        return OutgoingDatagram(destination: .unicast(peerAddress), bytes: header + ciphertext)
    }

    /// Authenticates and decrypts `packet`, records its number, and decodes its frames.
    /// - Throws: `.replayed`/`.tooOld` (window), `.authenticationFailed` (forged or corrupted) without
    ///   changing anything; a malformed payload throws after the number was recorded.
    mutating func open(_ packet: SecurePacket) throws(ProtocolError) -> [Frame] {
        try replay.check(packet.packetNumber)
        let plaintext: [UInt8]
        do {
            plaintext = try receiver.decrypt(
                nonce: packet.packetNumber, ad: packet.header, ciphertext: packet.ciphertext)
        } catch {
            throw ProtocolError(.authenticationFailed, "packet \(packet.packetNumber) failed authentication")
        }
        replay.record(packet.packetNumber)
        return try Frame.decodeAll(plaintext)
    }
}

/// Token buckets per source address for datagrams outside the current session, so that a flood
/// from one source cannot crowd out discovery and invitations. The table is bounded; the source
/// refreshed longest ago is forgotten first.
struct RateLimiter {
    private struct Bucket {
        var tokens: Double
        var updated: Instant
    }

    private let perSecond: Double
    private let burst: Double
    private let capacity: Int
    private var buckets: [PeerAddress: Bucket] = [:]

    init(perSecond: Int, capacity: Int) {
        self.perSecond = Double(max(perSecond, 1))
        self.burst = Double(max(perSecond, 1) * 2)
        self.capacity = max(capacity, 1)
    }

    /// Takes one token for `source`; false when its bucket is empty.
    mutating func admit(_ source: PeerAddress, now: Instant) -> Bool {
        var bucket = buckets[source] ?? Bucket(tokens: burst, updated: now)
        bucket.tokens = min(burst, bucket.tokens + (now - bucket.updated).secondsDouble * perSecond)
        bucket.updated = now
        let admitted = bucket.tokens >= 1
        if admitted { bucket.tokens -= 1 }
        if buckets[source] == nil && buckets.count >= capacity {
            // Evict the stalest source; ties by address keep the choice deterministic.
            if let stalest = buckets.min(by: { ($0.value.updated, $0.key) < ($1.value.updated, $1.key) })?.key
            {
                buckets[stalest] = nil
            }
        }
        buckets[source] = bucket
        return admitted
    }
}
