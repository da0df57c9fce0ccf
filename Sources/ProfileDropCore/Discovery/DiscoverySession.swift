/// The multicast half of a device, in four parts: the ``Announcer`` (our BEACONs and QUERYs, and
/// answers to others' QUERYs), the ``PeerTable`` (peers heard, in two tiers), the
/// ``InviteeRanking`` (whom to invite next, whose invitation to refuse) and the ``HostReputation``
/// (back-offs and failure counts per host). This type routes each input to the parts it concerns,
/// in the order the protocol's random draws fix, and closes them together. It also keeps what the
/// device's ended sessions leave (``EndedSessions``), which it learns with the back-offs they set.
struct DiscoverySession {
    private(set) var announcer: Announcer
    private(set) var table: PeerTable
    private(set) var ranking: InviteeRanking
    private(set) var reputation = HostReputation()
    private(set) var isClosed = false
    /// What the device's ended sessions leave: the peer it shows, why it did not pair.
    private(set) var ended = EndedSessions()
    private var lifetime: Duration = .seconds(15)

    init(deviceID: DeviceID, port: UInt16, context: inout SessionContext) {
        let now = context.now
        // Spread the first beacons and queries of devices switched on together. The first query
        // follows the first beacon, so that no datagram tells our id before a beacon tells where
        // we are (a forger learning it from the query could otherwise announce it first).
        let announceAt = now + context.randomDuration(in: .zero ... .milliseconds(100))
        let queryAt = announceAt + context.randomDuration(in: context.timeouts.queryResponseDelay)
        ranking = InviteeRanking(
            inviteAt: now + context.timeouts.announceInitial
                + context.randomDuration(in: context.timeouts.inviteDelay))
        let sequence = UInt32(truncatingIfNeeded: context.random.nextUInt64() >> 33)
        let reach = context.limits.farAbortDistance
        announcer = Announcer(
            deviceID: deviceID, port: port, announceAt: announceAt, queryAt: queryAt, sequence: sequence,
            pose: context.pose, reach: reach)
        table = PeerTable(reach: reach)
    }

    /// What the ranking reads.
    private var view: InviteeRanking.View {
        InviteeRanking.View(table: table, reputation: reputation, pose: announcer.pose, engaged: engaged)
    }

    /// Peers the device holds a live session with: no candidate for another invitation.
    private(set) var engaged: [DeviceID] = []

    /// Whether the table holds a peer none of `sessions` is with: with none, there is nobody to
    /// invite, which is asked after every input and answered here without building the ranking's
    /// view.
    @inline(__always)  // read in place: a call copied the whole discovery session (288 bytes)
    func hasPeerBesides(_ sessions: [ExchangeSession]) -> Bool {
        // By index: iterating the sessions themselves would copy each one to read its peer.
        sessions.isEmpty
            ? !table.peers.isEmpty
            : table.keys.contains { key in !sessions.indices.contains { sessions[$0].peer == key.id } }
    }

    /// Notes the peers of the device's live sessions; assigns only on change, so an unchanged
    /// table costs no allocation.
    mutating func setEngaged(_ sessions: [ExchangeSession]) {
        guard !engaged.elementsEqual(sessions.indices.lazy.map { sessions[$0].peer }) else { return }
        engaged = sessions.indices.map { sessions[$0].peer }
    }

    // MARK: - Reading

    var peers: [DiscoveredPeer] { table.peers }
    var peerCount: Int { table.count }
    var faultyHosts: [FaultyHost] { reputation.faultyHosts }
    var failedHosts: [FailedHost] { reputation.failedHosts }
    /// Earliest time for our next invitation.
    var inviteAt: Instant {
        get { ranking.inviteAt }
        set { ranking.inviteAt = newValue }
    }
    var answerAt: Instant? { isClosed ? nil : announcer.answerAt }
    var motionAnnounceAt: Instant? { announcer.motionAnnounceAt }

    /// How far `peer` is by its hint, from where we are now; nil when it gave no position.
    func hintDistance(_ peer: DiscoveredPeer) -> Double? { table.hintDistance(peer, from: announcer.pose) }

    func isEstablished(peer: DeviceID) -> Bool { table.isEstablished(peer: peer) }
    func isVerified(peer: DeviceID) -> Bool { table.isVerified(peer: peer) }
    func isEstablished(_ source: PeerAddress) -> Bool { table.isEstablished(source) }

    func hasOtherCandidate(than invitee: DeviceID, now: Instant) -> Bool {
        !isClosed && InviteeRanking.hasOtherCandidate(than: invitee, in: view, now: now)
    }

    func hasEstablishedCandidate(than invitee: DeviceID, now: Instant) -> Bool {
        !isClosed && InviteeRanking.hasEstablishedCandidate(than: invitee, in: view, now: now)
    }

    func hasBetterHeardCandidate(than invitee: DeviceID, now: Instant) -> Bool {
        !isClosed && InviteeRanking.hasBetterHeardCandidate(than: invitee, in: view, now: now)
    }

    func hasAnsweredCandidate(than invitee: DeviceID, now: Instant) -> Bool {
        !isClosed && InviteeRanking.hasAnsweredCandidate(than: invitee, in: view, now: now)
    }

    /// Whether `peer`, held at `source`, could be invited now: a PROBE sent ahead to it may make
    /// it our next invitee (PROTOCOL.md 5, "Probing ahead").
    func isCandidate(_ peer: DeviceID, at source: PeerAddress, now: Instant) -> Bool {
        guard !isClosed, let entry = table.entry(peer), entry.address == source else { return false }
        return InviteeRanking.isCandidate(entry, in: view, now: now)
    }

    func hasEquallyNearCandidate(than invitee: DeviceID, context: SessionContext) -> Bool {
        !isClosed && InviteeRanking.hasEquallyNearCandidate(than: invitee, in: view, context: context)
    }

    func prefersNotToAccept(_ peer: DeviceID, from source: PeerAddress, now: Instant) -> Bool {
        InviteeRanking.prefersNotToAccept(peer, from: source, in: view, now: now)
    }

    func isBackingOff(fromHost ipv4: UInt32, now: Instant) -> Bool {
        reputation.isBackingOff(fromHost: ipv4, now: now)
    }

    func failedSessions(atHost ipv4: UInt32) -> Int { reputation.failedSessions(atHost: ipv4) }

    // Inlined into the device's deadline, which is read after every input: a call would pass the
    // whole session by copy.
    @inline(__always)
    var nextDeadline: Instant? {
        guard !isClosed else { return nil }
        var deadline = announcer.nextDeadline
        if let oldest = table.oldestLastSeen { deadline = min(deadline, oldest + lifetime) }
        return deadline
    }

    @inline(__always)  // as nextDeadline
    var nextInviteCandidateAt: Instant? {
        guard !isClosed else { return nil }
        return ranking.nextCandidateAt(in: view)
    }

    // MARK: - Inputs

    mutating func close() {
        isClosed = true
        announcer.close()
    }

    /// Notes that we moved; see ``Announcer/moved(to:announcing:context:)``.
    mutating func moved(to newPose: Pose, context: SessionContext) {
        announcer.moved(to: newPose, announcing: !isClosed, context: context)
    }

    /// Runs due timers: beacon announcements, queries, delayed answers, peer expiry.
    mutating func runTimers(busy: Bool, quiet: Bool, context: inout SessionContext) {
        guard !isClosed else { return }
        lifetime = context.timeouts.peerLifetime
        let table = table
        let pose = announcer.pose
        let limit = min(context.limits.maxKnownAnswers, Query.maxKnownAnswers)
        announcer.runTimers(
            busy: busy, quiet: quiet, knownAnswers: { table.knownAnswers(from: pose, limit: limit) },
            context: &context)
        self.table.expire(now: context.now, lifetime: lifetime)
    }

    /// Records a peer's beacon; see ``PeerTable/take(_:from:pose:context:)``.
    /// `proven`: the source proved that it receives (PROTOCOL.md 5, "Probing ahead").
    mutating func receive(
        _ beacon: Beacon, from source: PeerAddress, proven: Bool = false, context: inout SessionContext
    )
        throws(ProtocolError)
    {
        guard !isClosed else { return }
        try table.take(beacon, from: source, pose: announcer.pose, proven: proven, context: &context)
    }

    /// Notes that `address` echoed a PROBE sent ahead for the peer of `beacon`; see
    /// ``PeerTable/addressAnswered(_:beacon:pose:context:)``.
    mutating func addressAnswered(_ address: PeerAddress, beacon: Beacon, context: inout SessionContext) {
        guard !isClosed else { return }
        table.addressAnswered(address, beacon: beacon, pose: announcer.pose, context: &context)
    }

    /// Schedules a delayed beacon in answer to a query that does not already list us.
    mutating func receive(_ query: Query, context: inout SessionContext) {
        guard !isClosed else { return }
        announcer.receive(query, context: &context)
    }

    /// Picks the next peer to invite, or nil; see ``InviteeRanking/nextInvitee(in:context:)``.
    mutating func nextInvitee(context: inout SessionContext) -> DiscoveredPeer? {
        guard !isClosed, let chosen = ranking.nextInvitee(in: view, context: &context) else { return nil }
        table.setWanted(chosen.id, at: nil)
        return chosen
    }

    /// Notes that we refused `peer`'s invitation only because we were busy: once free, we invite it
    /// first.
    mutating func refusedWhileBusy(_ peer: DeviceID, context: SessionContext) {
        table.setWanted(peer, at: context.now)
    }

    /// Notes a completed handshake; see ``PeerTable/handshakeCompleted(with:at:closed:pose:context:)``.
    mutating func handshakeCompleted(with peer: DeviceID, at address: PeerAddress, context: SessionContext) {
        table.handshakeCompleted(
            with: peer, at: address, closed: isClosed, pose: announcer.pose, context: context)
    }

    /// Notes that our invitation of `peer` at `address` was never answered: the handshake gave up
    /// without an ACCEPT or a BUSY. If another address claimed its id within the peer lifetime, no
    /// failure is counted against the id (so we do not refuse the real device), and we stop
    /// inviting it.
    mutating func invitationUnanswered(
        to peer: DeviceID, at address: PeerAddress, context: inout SessionContext
    ) {
        if table.invitationUnanswered(to: peer, at: address, pose: announcer.pose, context: context) {
            ranking.inviteAt = context.now + context.randomDuration(in: context.timeouts.inviteDelay)
            return
        }
        sessionFailed(with: peer, context: &context)
        table.enforceUnverifiedCap(context.limits, pose: announcer.pose)
    }

    /// Takes the outcome of `session`, which the device took as `ending`: noted in ``ended``, and a
    /// reported end backs off from the peer (PROTOCOL.md 5, "Back-off" and "Faulty hosts"), or
    /// counts an invitation unanswered when neither ACCEPT nor BUSY came from the address we invited.
    mutating func sessionEnded(
        _ outcome: SessionOutcome, of session: ExchangeSession, as ending: EndedSessions.Ending,
        context: inout SessionContext
    ) {
        ended.record(outcome, as: ending)
        guard ending == .reported else { return }
        if session.isInitiator, outcome.reason == .timeout(.handshake) {
            invitationUnanswered(to: outcome.peer, at: session.peerAddress, context: &context)
        } else {
            sessionFailed(with: outcome.peer, context: &context)
            if session.handshakeCompleted { hostSessionFailed(at: session.peerAddress, context: context) }
            if outcome.reason.isPeerFault { peerFaulted(at: session.peerAddress, context: &context) }
        }
    }

    /// Backs off from `peer` after a session that ended without an exchange.
    mutating func sessionFailed(with peer: DeviceID, context: inout SessionContext) {
        table.sessionFailed(with: peer, context: &context)
        ranking.inviteAt = context.now + context.randomDuration(in: context.timeouts.inviteDelay)
    }

    /// Backs off from the host of `address`; see ``HostReputation/peerFaulted(at:context:)``.
    mutating func peerFaulted(at address: PeerAddress, context: inout SessionContext) {
        reputation.peerFaulted(at: address, context: &context)
    }

    /// Counts a failed session at the host of `address`; see
    /// ``HostReputation/hostSessionFailed(at:context:)``.
    mutating func hostSessionFailed(at address: PeerAddress, context: SessionContext) {
        reputation.hostSessionFailed(at: address, context: context)
    }

    /// Removes `peer` when the device at the address we hold for it says it has another id (BUSY
    /// with reason stale id, from that very address): the entry came from a departed device or a
    /// replayed BEACON. A later BEACON of the id, if it is alive elsewhere, adds it again.
    mutating func forget(_ peer: DeviceID, at address: PeerAddress, context: inout SessionContext) {
        table.remove(peer, at: address)
        ranking.inviteAt = context.now + context.randomDuration(in: context.timeouts.inviteDelay)
    }

    /// Backs off briefly from `peer` after it answered BUSY.
    mutating func peerBusy(_ peer: DeviceID, context: inout SessionContext) {
        table.peerBusy(peer, context: &context)
        ranking.inviteAt = context.now + context.randomDuration(in: context.timeouts.inviteDelay)
    }
}
