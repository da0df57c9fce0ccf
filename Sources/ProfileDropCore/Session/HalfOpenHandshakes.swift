import ProfileDropCrypto

/// The responder's side of invitations (PROTOCOL.md 5, "Half-open handshakes" and "Cookies"): the
/// handshakes it accepted whose CONFIRM has not arrived, run side by side and bounded, and the
/// stateless cookie it asks of an inviter while any of them is open.
///
/// A half-open handshake never blocks pairing with someone else: a device holds up to
/// ``capacity`` of them, one per source address, evicting the oldest; the first whose CONFIRM
/// verifies becomes the exchange session and the others are dropped. None of them counts as a
/// session with a peer: one that expires ends silently, with no failure and no back-off, since its
/// sender proved nothing.
struct HalfOpenHandshakes {
    /// Half-open handshakes kept side by side.
    static let capacity = 4
    /// BUSY(retry) answers an initiator follows in one invitation.
    static let cookieRetries = 3

    /// Responder sessions still handshaking, oldest first.
    private(set) var sessions: [ExchangeSession] = []
    /// While a half-open handshake that began alone is this young, new INVITEs are refused with
    /// BUSY(1): its CONFIRM is a round trip away (PROTOCOL.md 5).
    private var freshUntil: Instant?
    /// The per-run cookie key, drawn from the device's random source the first time a cookie is
    /// computed (so a run that is never under load draws nothing for it).
    private var secret: [UInt8]?

    /// Whether the device is under load: a half-open handshake exists, so an INVITE that would start
    /// another must carry a valid cookie.
    var isUnderLoad: Bool { !sessions.isEmpty }

    /// Whether a half-open handshake that began alone is still in its fresh period at `now`.
    func isFresh(at now: Instant) -> Bool {
        guard let freshUntil, !sessions.isEmpty else { return false }
        return now < freshUntil
    }

    /// How long a responder keeps a half-open handshake: as long as an initiator keeps inviting
    /// (its retransmissions and the final wait, 7.75 s by default).
    static func lifetime(_ timeouts: Timeouts) -> Duration {
        timeouts.handshakeRetransmit * ((1 << min(max(timeouts.handshakeAttempts, 1), 16)) - 1)
    }

    /// The fresh period: two first retransmission timeouts (500 ms), which covers the initiator's
    /// first INVITE retransmission should our ACCEPT be lost.
    static func freshPeriod(_ timeouts: Timeouts) -> Duration { timeouts.handshakeRetransmit * 2 }

    /// The earliest instant a half-open handshake expires or the fresh period ends; nil if none.
    @inline(__always)  // asked after every input: with nothing open, a call cost more than the answer
    func nextDeadline(now: Instant) -> Instant? {
        // Asked after every input, and almost always with nothing open: no array for the answer.
        guard !sessions.isEmpty else { return nil }
        var deadline: Instant?
        for session in sessions { deadline = Instant.earliest(deadline, session.nextDeadline) }
        if let freshUntil, freshUntil > now { deadline = Instant.earliest(deadline, freshUntil) }
        return deadline
    }

    /// Keeps `session`, just accepted: it replaces the half-open handshake of the same source
    /// address, and evicts the oldest one when ``capacity`` are open. One accepted while none was
    /// open starts the fresh period.
    mutating func admit(_ session: ExchangeSession, context: SessionContext) {
        if sessions.isEmpty { freshUntil = context.now + Self.freshPeriod(context.timeouts) }
        sessions.removeAll { $0.peerAddress == session.peerAddress }
        if sessions.count >= Self.capacity { sessions.removeFirst(sessions.count - Self.capacity + 1) }
        sessions.append(session)
    }

    /// Stores back the half-open handshake at `index` after it handled a datagram.
    mutating func update(_ session: ExchangeSession, at index: Int) { sessions[index] = session }

    /// Takes out the handshake at `index`, which completed.
    mutating func remove(at index: Int) { sessions.remove(at: index) }

    /// Drops the half-open handshakes at `offsets` of ``sessions``.
    mutating func remove(atOffsets offsets: [Int]) {
        sessions = sessions.indices.filter { !offsets.contains($0) }.map { sessions[$0] }
        if sessions.isEmpty { freshUntil = nil }
    }

    /// Drops every half-open handshake (a session was secured, or the device closed).
    mutating func removeAll() {
        sessions.removeAll()
        freshUntil = nil
    }

    /// Expires half-open handshakes whose time is up; they end silently.
    mutating func runTimers(context: inout SessionContext) {
        // Removing from the shared empty array would allocate one of its own, on every timer.
        guard !sessions.isEmpty else { return }
        for index in sessions.indices { sessions[index].handleTimeout(context: &context) }
        sessions.removeAll { $0.nextDeadline == nil }
    }

    // MARK: - Cookies

    /// The cookie for `invite` from `source` in the time bucket `bucket`: the first 16 bytes of
    /// HMAC-BLAKE2b under the per-run secret over a label, the bucket, the source address and port,
    /// the session id and both device ids (PROTOCOL.md 5, "Cookies").
    private mutating func cookie(
        _ invite: HandshakePacket, from source: PeerAddress, bucket: UInt64, random: inout any RandomSource
    ) -> [UInt8] {
        let key: [UInt8]
        if let secret {
            key = secret
        } else {
            key = random.bytes(32)
            secret = key
        }
        return Self.cookie(
            secret: key, bucket: bucket, source: source, sessionID: invite.sessionID, sender: invite.sender,
            receiver: invite.receiver)
    }

    /// The cookie under `secret` for an INVITE of `sessionID` from `sender` to `receiver`, received
    /// from `source` in the time bucket `bucket` (PROTOCOL.md 5, "Cookies").
    static func cookie(
        secret: [UInt8], bucket: UInt64, source: PeerAddress, sessionID: UInt64, sender: DeviceID,
        receiver: DeviceID
    ) -> [UInt8] {
        let message = cookieMessage(
            bucket: bucket, source: source, sessionID: sessionID, sender: sender, receiver: receiver)
        return Array(
            HMACBLAKE2b.authenticate(key: secret, parts: [message]).prefix(WireConstants.cookieLength))
    }

    /// The message a cookie authenticates: ``cookieLabel``, then `bucket`, `source`, `sessionID`,
    /// `sender` and `receiver` as big-endian integers.
    static func cookieMessage(
        bucket: UInt64, source: PeerAddress, sessionID: UInt64, sender: DeviceID, receiver: DeviceID
    ) -> [UInt8] {
        var message = ByteWriter(capacity: 64)
        message.writeBytes(cookieLabel)
        message.writeInteger(bucket)
        message.writeInteger(source.ipv4)
        message.writeInteger(source.port)
        message.writeInteger(sessionID)
        message.writeInteger(sender.rawValue)
        message.writeInteger(receiver.rawValue)
        return message.bytes
    }

    static let cookieLabel = Array("ProfileDrop cookie".utf8)

    /// The time bucket of `now`: cookies are computed over it, and one stays valid in its bucket and
    /// the next, so for at least one half-open lifetime.
    private static func bucket(_ now: Instant, _ timeouts: Timeouts) -> UInt64 {
        let length = max(lifetime(timeouts).nanosecondsClamped, 1)
        return now.nanoseconds / length
    }

    /// The cookie a BUSY(retry) hands the sender of `invite`.
    mutating func cookie(for invite: HandshakePacket, from source: PeerAddress, context: inout SessionContext)
        -> [UInt8]
    {
        cookie(
            invite, from: source, bucket: Self.bucket(context.now, context.timeouts), random: &context.random)
    }

    /// Whether `invite` carries a cookie we handed its source for it, in this time bucket or the
    /// previous one. Compared in constant time. Before the secret is drawn no cookie was handed out,
    /// so none is valid; the secret is drawn by the first ``cookie(for:from:context:)``.
    func hasValidCookie(_ invite: HandshakePacket, from source: PeerAddress, now: Instant, timeouts: Timeouts)
        -> Bool
    {
        guard let secret, invite.cookie.count == WireConstants.cookieLength else { return false }
        let current = Self.bucket(now, timeouts)
        var valid = false
        for bucket in [current, current &- 1] where bucket <= current {
            let expected = Self.cookie(
                secret: secret, bucket: bucket, source: source, sessionID: invite.sessionID,
                sender: invite.sender, receiver: invite.receiver)
            var difference: UInt8 = 0
            for (a, b) in zip(expected, invite.cookie) { difference |= a ^ b }
            if difference == 0 { valid = true }
        }
        return valid
    }
}
