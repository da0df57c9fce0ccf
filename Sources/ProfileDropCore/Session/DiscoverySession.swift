/// A device the discovery session has heard a beacon from.
struct DiscoveredPeer {
    let id: DeviceID
    var address: PeerAddress
    var lastSeen: Instant
    /// The peer's beacon said it is in an exchange.
    var busy: Bool
    /// After a session with it failed, we neither invite it nor accept its invitations before
    /// this time.
    var retryAt: Instant
    /// After it answered BUSY, we do not invite it before this time.
    var busyUntil: Instant
    /// Sessions with it that ended without an exchange.
    var failures = 0
    /// When we last refused its invitation because we were busy: it wanted us, so once free we
    /// invite it first.
    var wantedAt: Instant?
}

/// The multicast half of a device: announces our beacon, browses with queries, answers queries
/// with mDNS-like etiquette, and keeps a bounded table of peers to invite.
struct DiscoverySession {
    private let deviceID: DeviceID
    private let port: UInt16
    private(set) var peers: [DiscoveredPeer] = []  // sorted by id
    private(set) var isClosed = false
    private var announceAt: Instant
    private var announceCount = 0
    private var queryAt: Instant
    private var queryCount = 0
    private var answerAt: Instant?
    private var lastBeaconAt: Instant?
    /// Earliest time for our next invitation.
    var inviteAt: Instant

    init(deviceID: DeviceID, port: UInt16, context: inout SessionContext) {
        self.deviceID = deviceID
        self.port = port
        let now = context.now
        // Spread the first beacons and queries of devices switched on together.
        announceAt = now + context.randomDuration(in: .zero ... .milliseconds(100))
        queryAt = now + context.randomDuration(in: context.timeouts.queryResponseDelay)
        inviteAt =
            now + context.timeouts.announceInitial + context.randomDuration(in: context.timeouts.inviteDelay)
    }

    var peerCount: Int { peers.count }

    var nextDeadline: Instant? {
        guard !isClosed else { return nil }
        var deadline = min(announceAt, queryAt)
        if let answerAt { deadline = min(deadline, answerAt) }
        if let expiry = peers.map(\.lastSeen).min() { deadline = min(deadline, expiry + lifetime) }
        return deadline
    }

    private var lifetime: Duration = .seconds(15)

    mutating func close() {
        isClosed = true
        answerAt = nil
    }

    /// Runs due timers: beacon announcements, queries, delayed answers, peer expiry.
    mutating func runTimers(busy: Bool, context: inout SessionContext) {
        guard !isClosed else { return }
        lifetime = context.timeouts.peerLifetime
        let now = context.now
        if now >= announceAt {
            sendBeacon(busy: busy, context: &context)
            let interval = context.timeouts.announceInitial.doubled(
                announceCount, cap: context.timeouts.announceCap)
            announceCount += 1
            announceAt = now + context.jittered(interval)
        }
        if let due = answerAt, now >= due {
            answerAt = nil
            // Suppressed if a beacon went out meanwhile (the asker heard it).
            if lastBeaconAt.map({ now - $0 >= context.timeouts.answerSuppression }) ?? true {
                sendBeacon(busy: busy, context: &context)
            }
        }
        if now >= queryAt {
            let known = peers.sorted { $0.lastSeen > $1.lastSeen }.prefix(context.limits.maxKnownAnswers).map(
                \.id)
            context.send(.query(Query(deviceID: deviceID, knownAnswers: known.sorted())), to: .multicast)
            let interval = context.timeouts.queryInitial.doubled(queryCount, cap: context.timeouts.queryCap)
            queryCount += 1
            queryAt = now + context.jittered(interval)
        }
        peers.removeAll { now - $0.lastSeen >= lifetime }
    }

    private mutating func sendBeacon(busy: Bool, context: inout SessionContext) {
        context.send(.beacon(Beacon(deviceID: deviceID, port: port, busy: busy)), to: .multicast)
        lastBeaconAt = context.now
    }

    /// Records a peer's beacon. New peers are reported; when the table is full the peer heard
    /// from longest ago makes room.
    mutating func receive(_ beacon: Beacon, from source: PeerAddress, context: inout SessionContext) {
        guard !isClosed else { return }
        let address = PeerAddress(ipv4: source.ipv4, port: beacon.port)
        if let index = peers.firstIndex(where: { $0.id == beacon.deviceID }) {
            peers[index].address = address
            peers[index].lastSeen = context.now
            peers[index].busy = beacon.busy
            return
        }
        if peers.count >= context.limits.maxPeers {
            guard let stalest = peers.indices.min(by: { peers[$0].lastSeen < peers[$1].lastSeen }) else {
                return
            }
            peers.remove(at: stalest)
        }
        let peer = DiscoveredPeer(
            id: beacon.deviceID, address: address, lastSeen: context.now, busy: beacon.busy,
            retryAt: context.now, busyUntil: context.now)
        let position = peers.firstIndex { $0.id > beacon.deviceID } ?? peers.endIndex
        peers.insert(peer, at: position)
        context.emit(.peerFound(beacon.deviceID))
    }

    /// Schedules a delayed beacon in answer to a query that does not already list us.
    mutating func receive(_ query: Query, context: inout SessionContext) {
        guard !isClosed, answerAt == nil, !query.knownAnswers.contains(deviceID) else { return }
        if let last = lastBeaconAt, context.now - last < context.timeouts.answerSuppression { return }
        answerAt = context.now + context.randomDuration(in: context.timeouts.queryResponseDelay)
    }

    /// Picks the next peer to invite, or nil. Candidates are peers not known to be busy whose
    /// back-offs expired; among those with the fewest failed sessions one is drawn at random, so
    /// that many devices do not all invite the same peer and every peer is tried before any is
    /// retried. BUSY answers do not count as failures: a busy peer is retried soon.
    mutating func nextInvitee(context: inout SessionContext) -> DiscoveredPeer? {
        guard !isClosed, context.now >= inviteAt else { return nil }
        let candidates = peers.filter { isCandidate($0, now: context.now) }
        guard let fewest = candidates.map(\.failures).min() else { return nil }
        let least = candidates.filter { $0.failures == fewest }
        let wanting = least.filter { peer in
            peer.wantedAt.map { context.now - $0 <= context.timeouts.busyBackoff.upperBound * 2 } ?? false
        }
        let chosen =
            wanting.max { ($0.wantedAt ?? .zero, $0.id) < ($1.wantedAt ?? .zero, $1.id) }
            ?? least[Int(context.random.uniform(below: UInt64(least.count)))]
        if let index = peers.firstIndex(where: { $0.id == chosen.id }) { peers[index].wantedAt = nil }
        return chosen
    }

    /// Notes that we refused `peer`'s invitation only because we were busy.
    mutating func refusedWhileBusy(_ peer: DeviceID, context: SessionContext) {
        if let index = peers.firstIndex(where: { $0.id == peer }) { peers[index].wantedAt = context.now }
    }

    private func isCandidate(_ peer: DiscoveredPeer, now: Instant) -> Bool {
        !peer.busy && peer.retryAt <= now && peer.busyUntil <= now
    }

    /// Whether we refuse an invitation from `peer`: while we back off from it after a failed
    /// session, or while a peer we could invite right now has fewer failed sessions (we would
    /// rather try that one). Either way a far pair does not keep ranging, and two devices held
    /// together that have tried everyone else are free for each other. Only candidates count:
    /// a peer that is busy, backing off or answered BUSY is not one we would try instead, and
    /// counting it (or a phantom id from a corrupted beacon, which never answers) kept a close
    /// pair refusing each other while neither had anyone else to try.
    func prefersNotToAccept(_ peer: DeviceID, now: Instant) -> Bool {
        guard let entry = peers.first(where: { $0.id == peer }) else { return false }
        if entry.retryAt > now { return true }
        let others = peers.filter { $0.id != peer && isCandidate($0, now: now) }
        guard let fewest = others.map(\.failures).min() else { return false }
        return entry.failures > fewest
    }

    /// The earliest time a peer becomes available for an invitation (for the device's deadline).
    var nextInviteCandidateAt: Instant? {
        guard !isClosed else { return nil }
        guard let earliest = peers.filter({ !$0.busy }).map({ max($0.retryAt, $0.busyUntil) }).min() else {
            return nil
        }
        return max(earliest, inviteAt)
    }

    /// Backs off from `peer` after a session that ended without an exchange.
    mutating func sessionFailed(with peer: DeviceID, context: inout SessionContext) {
        if let index = peers.firstIndex(where: { $0.id == peer }) {
            peers[index].failures += 1
            let backoff = context.timeouts.retryBackoff.doubled(
                peers[index].failures - 1, cap: context.timeouts.retryBackoffCap)
            peers[index].retryAt = context.now + context.jittered(backoff, spread: 0.2)
        }
        inviteAt = context.now + context.randomDuration(in: context.timeouts.inviteDelay)
    }

    /// Backs off briefly from `peer` after it answered BUSY.
    mutating func peerBusy(_ peer: DeviceID, context: inout SessionContext) {
        if let index = peers.firstIndex(where: { $0.id == peer }) {
            peers[index].busyUntil = context.now + context.randomDuration(in: context.timeouts.busyBackoff)
        }
        inviteAt = context.now + context.randomDuration(in: context.timeouts.inviteDelay)
    }
}
