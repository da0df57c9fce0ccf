/// A device the discovery session has heard a beacon from.
struct DiscoveredPeer {
    let id: DeviceID
    /// Where it is reached: the source address of the first beacon heard for its id (whose port
    /// field names that same port). Beacons for the id from anywhere else never move it; only a
    /// handshake completed with the id elsewhere, after an invitation here went unanswered while
    /// another address claimed the id, does (PROTOCOL.md section 4, "Conflicts").
    var address: PeerAddress
    /// When its first beacon at ``address`` was heard.
    var firstHeard: Instant
    var lastSeen: Instant
    /// The sequence number of its latest beacon taken; nil right after the address moved.
    var sequence: UInt32?
    /// Beacons taken from it (fresh sequence numbers at ``address``).
    var hearings = 1
    /// The peer's beacon said it is in an exchange.
    var busy: Bool
    /// A handshake with it completed in this run, at ``address``.
    var verified = false
    /// An invitation to ``address`` went unanswered (neither ACCEPT nor BUSY) before it was
    /// verified: it is not long-heard any more, whatever its beacons say.
    var unanswered = false
    /// Unanswered while another address claimed its id: we no longer invite it (its INVITE is still
    /// accepted, and a handshake completed from the claimant moves the entry there).
    var suspended = false
    /// When a beacon for its id last came from another address.
    var conflictAt: Instant?
    /// After a session with it failed, we do not invite it before this time, nor accept its
    /// invitations while another peer is a candidate (``prefersNotToAccept(_:from:now:)``).
    var retryAt: Instant
    /// After it answered BUSY, we do not invite it before this time.
    var busyUntil: Instant
    /// Sessions with it that ended without an exchange.
    var failures = 0
    /// When we last refused its invitation because we were busy: it wanted us, so once free we
    /// invite it first.
    var wantedAt: Instant?
    /// Promoted to long-heard (kept so while it stays answered).
    var longHeard = false
    /// Where its latest beacon said it is; nil when it said nothing (it may be anywhere) or while
    /// contested.
    var position: PositionHint?
    /// The latest beacon taken from it, to tell a duplicate (the network repeated it: harmless)
    /// from another beacon under the same sequence number.
    var lastTaken: Beacon?
    /// When a beacon at its own address last came with a sequence number below the last one taken,
    /// or equal to it with other contents: someone else speaks for that address, ahead of it or
    /// replaying it. For the peer
    /// lifetime after that, its beacons' busy flag and position are not believed (it counts as
    /// free and within reach), so a spoofer cannot hide it by announcing it busy or far away.
    var contestedAt: Instant?

    /// Verified, or heard long enough at one address: invited before any other peer, never
    /// evicted by a new device id, and its datagrams are charged on its own budget.
    var isEstablished: Bool { verified || (longHeard && !unanswered) }

    /// Neither established nor suspended: the tier capped at ``Limits/maxUnverifiedPeers``.
    /// Suspended entries are kept apart, so that a disputed id stays remembered (and uninvited)
    /// without taking room from newcomers; there is at most one per unanswered invitation.
    var isUnverified: Bool { !isEstablished && !suspended }
}

/// A host (an IPv4 address, whatever its ports) whose peer broke a rule or stalled a session.
/// Device ids and static keys are fresh every run, so only the address links a peer that comes
/// back under a new id; and the host completed a handshake there, so it can receive there.
struct FaultyHost {
    let ipv4: UInt32
    /// Sessions from this host that ended by the peer's fault.
    var faults: Int
    /// Until then its invitations are refused and its peers are not invited.
    var until: Instant
}

/// Failed sessions with peers at one host (IPv4 address), whatever their ids: a peer that comes
/// back under a fresh id after each failed session brings its host's count with it.
struct FailedHost {
    let ipv4: UInt32
    var failures: Int
}

/// The multicast half of a device: announces our beacon, browses with queries, answers queries
/// with mDNS-like etiquette, and keeps a bounded table of peers to invite.
///
/// The table has two tiers (PROTOCOL.md section 4). **Established** peers were verified by a
/// handshake or heard at one address for at least ``longHeard``; at most `maxPeers -
/// maxUnverifiedPeers` become established by hearing alone. **Unverified** peers, everything
/// else, are at most ``Limits/maxUnverifiedPeers``; a new device id only ever evicts one of these,
/// and they are invited only when no established peer is a candidate.
struct DiscoverySession {
    private let deviceID: DeviceID
    private let port: UInt16
    private(set) var peers: [DiscoveredPeer] = []  // sorted by id
    /// At most ``Limits/maxFaultyHosts``, in the order they were first blamed.
    private(set) var faultyHosts: [FaultyHost] = []
    /// At most ``Limits/maxFaultyHosts`` hosts whose peers' sessions with us failed after a
    /// completed handshake; when full, the host with the fewest failures is forgotten.
    private(set) var failedHosts: [FailedHost] = []
    private(set) var isClosed = false
    private var announceAt: Instant
    private var announceCount = 0
    private var queryAt: Instant
    private var queryCount = 0
    private(set) var answerAt: Instant?
    private var lastBeaconAt: Instant?
    /// The sequence number of our next beacon.
    private var sequence: UInt32
    /// Where we are, as the device last told us.
    private var pose: Pose
    /// How far a peer may be, by its position, and still be invited or answered: the far-abort
    /// distance (``Limits/farAbortDistance``), beyond which ranging ends early anyway.
    private let reach: Double
    /// The position our latest beacon gave.
    private var announcedPosition: PositionHint?
    /// An extra beacon, due because we moved since the latest one.
    private(set) var motionAnnounceAt: Instant?
    /// Earliest time for our next invitation.
    var inviteAt: Instant

    /// How long a peer must be heard at one address (first to latest beacon) to be established.
    /// A device's own beacons 0.25, 0.5 and 1 s apart after its start (±10 %) reach it within
    /// about 1.9 s.
    static let longHeard: Duration = .milliseconds(1500)
    /// How far we move from the position our latest beacon gave before we announce again, and how
    /// soon after a beacon such an extra one may go: a peer's hint is never staler than this
    /// distance for longer than this time (PROTOCOL.md section 4).
    static let motionStep: Double = 5
    static let motionAnnounceGap: Duration = .milliseconds(500)

    init(deviceID: DeviceID, port: UInt16, context: inout SessionContext) {
        self.deviceID = deviceID
        self.port = port
        let now = context.now
        // Spread the first beacons and queries of devices switched on together. The first query
        // follows the first beacon, so that no datagram tells our id before a beacon tells where
        // we are (a forger learning it from the query could otherwise announce it first).
        announceAt = now + context.randomDuration(in: .zero ... .milliseconds(100))
        queryAt = announceAt + context.randomDuration(in: context.timeouts.queryResponseDelay)
        inviteAt =
            now + context.timeouts.announceInitial + context.randomDuration(in: context.timeouts.inviteDelay)
        sequence = UInt32(truncatingIfNeeded: context.random.nextUInt64() >> 33)
        pose = context.pose
        reach = context.limits.farAbortDistance
    }

    /// Notes that we moved. Once we are ``motionStep`` from the position our latest beacon gave,
    /// an extra beacon goes out, at most one per ``motionAnnounceGap``, so that peers do not judge
    /// our reach on a stale position.
    mutating func moved(to newPose: Pose, context: SessionContext) {
        pose = newPose
        guard !isClosed, motionAnnounceAt == nil, let announced = announcedPosition,
            announced.distance(to: newPose) >= Self.motionStep
        else { return }
        motionAnnounceAt = max(context.now, (lastBeaconAt ?? context.now) + Self.motionAnnounceGap)
    }

    /// How far `peer` is by its hint, from where we are now; nil when it gave no position.
    func hintDistance(_ peer: DiscoveredPeer) -> Double? {
        peer.position.map { $0.distance(to: pose) }
    }

    /// Whether `peer` may be near enough to pair: its hint is within ``reach``, or it gave none.
    private func isInReach(_ peer: DiscoveredPeer) -> Bool {
        (hintDistance(peer) ?? 0) <= reach
    }

    var peerCount: Int { peers.count }

    // Inlined into the device's deadline, which is read after every input: a call would pass the
    // whole 192-byte session by copy.
    @inline(__always)
    var nextDeadline: Instant? {
        guard !isClosed else { return nil }
        var deadline = min(announceAt, queryAt)
        if let answerAt { deadline = min(deadline, answerAt) }
        if let motionAnnounceAt { deadline = min(deadline, motionAnnounceAt) }
        // A loop, not map and min: the device's deadline is asked after every input, and an array
        // per call was most of its cost.
        var oldest: Instant?
        for peer in peers where oldest.map({ peer.lastSeen < $0 }) ?? true { oldest = peer.lastSeen }
        if let oldest { deadline = min(deadline, oldest + lifetime) }
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
        if let due = motionAnnounceAt, now >= due {
            motionAnnounceAt = nil
            sendBeacon(busy: busy, context: &context)
        }
        if let due = answerAt, now >= due {
            answerAt = nil
            // Suppressed if a beacon went out meanwhile (the asker heard it).
            if lastBeaconAt.map({ now - $0 >= context.timeouts.answerSuppression }) ?? true {
                sendBeacon(busy: busy, context: &context)
            }
        }
        if now >= queryAt {
            // A device in an exchange invites nobody until it ends, so it asks for no answers: the
            // BEACONs it hears keep its table fresh. The schedule runs on meanwhile.
            if !busy { sendQuery(context: &context) }
            let interval = context.timeouts.queryInitial.doubled(queryCount, cap: context.timeouts.queryCap)
            queryCount += 1
            queryAt = now + context.jittered(interval)
        }
        // Checked first: removing nothing still costs a pass that rebuilds the array's tail.
        let expired = { (peer: DiscoveredPeer) in now - peer.lastSeen >= lifetime }
        if peers.contains(where: expired) { peers.removeAll(where: expired) }
    }

    /// Multicasts a QUERY with our position and the ids we already know.
    private func sendQuery(context: inout SessionContext) {
        // Only devices near us answer, so the known answers that matter are the nearest. A peer
        // that gave no position may be anywhere, so it may answer: it is listed first, as if
        // beside us (invitations rank it at the edge of reach instead: it is the least likely to
        // be the phone held against ours).
        let known = peers.sorted {
            (hintDistance($0) ?? 0, $1.lastSeen, $0.id) < (hintDistance($1) ?? 0, $0.lastSeen, $1.id)
        }.prefix(min(context.limits.maxKnownAnswers, Query.maxKnownAnswers)).map(\.id)
        context.send(
            .query(Query(deviceID: deviceID, position: PositionHint(pose), knownAnswers: known.sorted())),
            to: .multicast)
    }

    private mutating func sendBeacon(busy: Bool, context: inout SessionContext) {
        let position = PositionHint(pose)
        context.send(
            .beacon(
                Beacon(deviceID: deviceID, port: port, busy: busy, sequence: sequence, position: position)),
            to: .multicast)
        announcedPosition = position
        motionAnnounceAt = nil
        // Drawn below 2^31 and one more per beacon: 2^31 beacons, decades of them, before it wraps.
        sequence &+= 1
        lastBeaconAt = context.now
    }

    /// Records a peer's beacon. New peers are reported; room for them is made among the
    /// unverified peers only.
    /// - Throws: `.conflict` when the beacon's port is not its source port, or its id is held at
    ///   another address; `.replayed` when its sequence number is not above the last one taken
    ///   from that peer; `.tableFull` when every entry is established and none can make room.
    ///   Nothing changes then but the note of a conflict.
    mutating func receive(_ beacon: Beacon, from source: PeerAddress, context: inout SessionContext)
        throws(ProtocolError)
    {
        guard !isClosed else { return }
        guard beacon.port == source.port else {
            throw ProtocolError(
                .conflict, "beacon of \(beacon.deviceID) names port \(beacon.port) from \(source)")
        }
        let now = context.now
        if let index = peers.firstIndex(where: { $0.id == beacon.deviceID }) {
            guard peers[index].address == source else {
                peers[index].conflictAt = now
                throw ProtocolError(
                    .conflict, "beacon of \(beacon.deviceID) from \(source); it is at \(peers[index].address)"
                )
            }
            if let last = peers[index].sequence, beacon.sequence <= last {
                if beacon.sequence < last || beacon != peers[index].lastTaken {
                    peers[index].contestedAt = now
                    peers[index].busy = false
                    peers[index].position = nil
                }
                throw ProtocolError(
                    .replayed, "beacon \(beacon.sequence) of \(beacon.deviceID), after \(last)")
            }
            peers[index].sequence = beacon.sequence
            peers[index].lastTaken = beacon
            peers[index].lastSeen = now
            let contested = peers[index].contestedAt.map { now - $0 < context.timeouts.peerLifetime } ?? false
            peers[index].busy = contested ? false : beacon.busy
            peers[index].position = contested ? nil : beacon.position
            peers[index].hearings = peers[index].hearings < Int.max ? peers[index].hearings + 1 : Int.max
            if !peers[index].longHeard, now - peers[index].firstHeard >= Self.longHeard,
                establishedCount < establishedRoom(context.limits)
            {
                peers[index].longHeard = true
            }
            return
        }
        let near = (beacon.position?.distance(to: pose) ?? 0) <= reach
        guard makeRoomForNewcomer(context.limits, near: near) else {
            throw ProtocolError(
                .tableFull,
                near
                    ? "no room for \(beacon.deviceID): every unverified peer was heard more than once, none out of reach"
                    : "no room for \(beacon.deviceID), out of reach: no unverified peer heard once is out of reach too"
            )
        }
        var peer = DiscoveredPeer(
            id: beacon.deviceID, address: source, firstHeard: now, lastSeen: now, sequence: beacon.sequence,
            busy: beacon.busy, retryAt: now, busyUntil: now)
        peer.position = beacon.position
        peer.lastTaken = beacon
        let position = peers.firstIndex { $0.id > beacon.deviceID } ?? peers.endIndex
        peers.insert(peer, at: position)
        context.emit(.peerFound(beacon.deviceID))
    }

    private var unverifiedCount: Int { peers.reduce(0) { $0 + ($1.isUnverified ? 1 : 0) } }
    private var establishedCount: Int { peers.reduce(0) { $0 + ($1.isEstablished ? 1 : 0) } }

    /// At least one, at most the table.
    private func unverifiedCap(_ limits: Limits) -> Int {
        min(max(limits.maxUnverifiedPeers, 1), max(limits.maxPeers, 1))
    }

    /// How many peers may be established by hearing alone.
    private func establishedRoom(_ limits: Limits) -> Int { max(limits.maxPeers, 1) - unverifiedCap(limits) }

    /// The unverified peer to evict first, in ``evictionRank`` order.
    private var weakestUnverified: Int? {
        peers.indices.filter { peers[$0].isUnverified }.min {
            evictionRank($0) < evictionRank($1)
        }
    }

    /// Orders entries for eviction: out of reach first, then fewest hearings, then farthest by hint,
    /// then heard longest ago, then lowest id.
    private func evictionRank(_ index: Int) -> (Int, Int, Double, Instant, DeviceID) {
        let peer = peers[index]
        return (
            isInReach(peer) ? 1 : 0, peer.hearings,
            -(hintDistance(peer) ?? 0),
            peer.lastSeen, peer.id
        )
    }

    /// Makes room for a new entry if the unverified tier or the table is full; false when no entry
    /// may go. What may go: an unverified entry heard once (so a flood of fresh ids churns only
    /// among those, and a peer heard twice stays until it is heard long enough to be established),
    /// and, for a newcomer within reach, any entry out of reach not verified by a handshake (from
    /// the unverified tier when that is what is full): we would not invite it, and in a room of
    /// more devices than the table holds the near ones must find a place. A newcomer out of reach
    /// displaces only an entry out of reach. Entries out of reach go first (``evictionRank``).
    /// A verified newcomer needs no unverified slot, only room in the table.
    private mutating func makeRoomForNewcomer(_ limits: Limits, verified: Bool = false, near: Bool = true)
        -> Bool
    {
        let tierFull = !verified && unverifiedCount >= unverifiedCap(limits)
        guard tierFull || peers.count >= max(limits.maxPeers, 1) else { return true }
        let evictable = peers.indices.filter { index in
            let peer = peers[index]
            guard !peer.verified, !peer.suspended, !tierFull || peer.isUnverified else { return false }
            let far = !isInReach(peer)
            let heardOnce = peer.isUnverified && peer.hearings <= 1
            return near ? far || heardOnce : far && heardOnce
        }
        guard let weakest = evictable.min(by: { evictionRank($0) < evictionRank($1) }) else {
            return false
        }
        peers.remove(at: weakest)
        return true
    }

    /// Evicts the weakest unverified peers while there are more than the cap (after a demotion).
    private mutating func enforceUnverifiedCap(_ limits: Limits) {
        while unverifiedCount > unverifiedCap(limits), let weakest = weakestUnverified {
            peers.remove(at: weakest)
        }
    }

    /// Whether `source` is the address of an established peer (its datagrams are charged on its own
    /// budget, section 7).
    /// Whether `peer` is an established entry of the table (verified, or heard long enough).
    func isEstablished(peer: DeviceID) -> Bool {
        peers.contains { $0.id == peer && $0.isEstablished }
    }

    /// Whether `peer` completed a handshake with us in this run.
    func isVerified(peer: DeviceID) -> Bool {
        peers.contains { $0.id == peer && $0.verified }
    }

    /// Whether a peer other than `invitee` could be invited right now.
    func hasOtherCandidate(than invitee: DeviceID, now: Instant) -> Bool {
        !isClosed && peers.contains { $0.id != invitee && isCandidate($0, now: now) }
    }

    /// Whether some established peer could be invited right now.
    func hasEstablishedCandidate(now: Instant) -> Bool {
        !isClosed && peers.contains { $0.isEstablished && isCandidate($0, now: now) }
    }

    /// Whether `invitee` was heard once and a candidate more often, with no more failed sessions: the
    /// rank `nextInvitee` gives unverified peers. A real newcomer heard again outranks a phantom's
    /// fresh id, heard once; an invitee heard again is kept, so that ids whose counts leapfrog do not
    /// make the device switch back and forth.
    func hasBetterHeardCandidate(than invitee: DeviceID, now: Instant) -> Bool {
        guard !isClosed, let chosen = peers.first(where: { $0.id == invitee }), chosen.hearings <= 1 else {
            return false
        }
        return peers.contains {
            $0.id != invitee && $0.hearings > chosen.hearings && $0.failures <= chosen.failures
                && isCandidate($0, now: now)
        }
    }

    func isEstablished(_ source: PeerAddress) -> Bool {
        peers.contains { $0.address == source && $0.isEstablished }
    }

    /// Notes a completed handshake with `peer`, whose session address is `address`. At the peer's
    /// table address it verifies the peer. Elsewhere it moves a suspended entry there (the
    /// address first heard never answered, and this one did); any other entry stays as it is.
    mutating func handshakeCompleted(with peer: DeviceID, at address: PeerAddress, context: SessionContext) {
        guard let index = peers.firstIndex(where: { $0.id == peer }) else {
            // A peer we never heard, or lost to churn, that completed a handshake with us: it is
            // live at that address, so it gets a verified entry if an entry may make way for it as
            // for a newcomer within reach.
            guard !isClosed, makeRoomForNewcomer(context.limits, verified: true) else { return }
            var entry = DiscoveredPeer(
                id: peer, address: address, firstHeard: context.now, lastSeen: context.now, sequence: nil,
                busy: false, retryAt: context.now, busyUntil: context.now)
            entry.verified = true
            peers.insert(entry, at: peers.firstIndex { $0.id > peer } ?? peers.endIndex)
            return
        }
        if peers[index].address == address {
            guard !peers[index].verified else { return }
        } else {
            guard peers[index].suspended, !peers[index].verified else { return }
            peers[index].address = address
            peers[index].sequence = nil
            peers[index].conflictAt = nil
            peers[index].lastSeen = context.now
        }
        peers[index].verified = true
        peers[index].unanswered = false
        peers[index].suspended = false
    }

    /// Notes that our invitation of `peer` at `address` was never answered: the handshake gave up
    /// without an ACCEPT or a BUSY. An unverified peer loses its long-heard standing (a replayed or
    /// forged beacon stream gets one invitation). If another address claimed its id within the
    /// peer lifetime, the address we hold may be a forger's: no failure is counted against the id
    /// (so we do not refuse the real device), and we stop inviting it.
    mutating func invitationUnanswered(
        to peer: DeviceID, at address: PeerAddress, context: inout SessionContext
    ) {
        if let index = peers.firstIndex(where: { $0.id == peer }), peers[index].address == address,
            !peers[index].verified
        {
            peers[index].unanswered = true
            let disputed =
                peers[index].conflictAt.map { context.now - $0 < context.timeouts.peerLifetime } ?? false
            if disputed {
                peers[index].suspended = true
                enforceUnverifiedCap(context.limits)
                inviteAt = context.now + context.randomDuration(in: context.timeouts.inviteDelay)
                return
            }
        }
        sessionFailed(with: peer, context: &context)
        enforceUnverifiedCap(context.limits)
    }

    /// Schedules a delayed beacon in answer to a query that does not already list us.
    mutating func receive(_ query: Query, context: inout SessionContext) {
        guard !isClosed, answerAt == nil, !query.knownAnswers.contains(deviceID) else { return }
        // Only a device that could pair with the asker answers: in a full room the rest would be a
        // storm, and the asker hears them at their next beacon anyway.
        if let position = query.position, position.distance(to: pose) > reach { return }
        if let last = lastBeaconAt, context.now - last < context.timeouts.answerSuppression { return }
        answerAt = context.now + context.randomDuration(in: context.timeouts.queryResponseDelay)
    }

    /// Picks the next peer to invite, or nil. Candidates are peers not known to be busy whose
    /// back-offs expired; established ones come first, and unverified ones only when no established
    /// peer is a candidate (then those heard most often first). Among those with the fewest failed
    /// sessions one is drawn at random, so that many devices do not all invite the same peer and
    /// every peer is tried before any is retried. BUSY answers do not count as failures: a busy
    /// peer is retried soon.
    mutating func nextInvitee(context: inout SessionContext) -> DiscoveredPeer? {
        guard !isClosed, context.now >= inviteAt else { return nil }
        let candidates = peers.filter { isCandidate($0, now: context.now) }
        let established = candidates.filter(\.isEstablished)
        let pool = established.isEmpty ? candidates : established
        guard let fewest = pool.map(\.failures).min() else { return nil }
        var least = pool.filter { $0.failures == fewest }
        if established.isEmpty, let most = least.map(\.hearings).max() {
            least = least.filter { $0.hearings == most }
        }
        let wanting = least.filter { peer in
            peer.wantedAt.map { context.now - $0 <= context.timeouts.busyBackoff.upperBound * 2 } ?? false
        }
        // Then the nearest by their hints (to the centimetre; a peer with none counts as at the edge
        // of reach), so that two devices held together invite each other before anyone farther.
        // Every hint within the gate band's far edge counts as equally near: a hint is a claim, and
        // a forger's phantom claiming to stand where we stand must at best tie with the device held
        // against us, not outrank it (PROTOCOL.md 11.6 item 6). Whole centimetres, saturated: the
        // reach comes from the configuration, which may be huge.
        let held = context.configuration.gate.distanceBand.upperBound
        if let nearest = least.map({ rank($0, held: held) }).min() {
            least = least.filter { rank($0, held: held) == nearest }
        }
        let chosen =
            wanting.max { ($0.wantedAt ?? .zero, $0.id) < ($1.wantedAt ?? .zero, $1.id) }
            ?? least[Int(context.random.uniform(below: UInt64(least.count)))]
        if let index = peers.firstIndex(where: { $0.id == chosen.id }) { peers[index].wantedAt = nil }
        return chosen
    }

    /// A peer's place in the order of nearness: whole centimetres of its hint (a peer with none at
    /// the edge of reach), saturated, and 0 for every hint within `held`, the gate band's far edge
    /// (``nextInvitee(context:)``).
    private func rank(_ peer: DiscoveredPeer, held: Double) -> Int {
        let distance = hintDistance(peer) ?? reach
        return distance <= held ? 0 : Int(min(max(distance, 0), 1e15).rounded())
    }

    /// Whether `invitee` and another candidate both rank as equally near as any can: both hint
    /// within the gate band's far edge, where ``nextInvitee(context:)`` draws between them.
    func hasEquallyNearCandidate(than invitee: DeviceID, context: SessionContext) -> Bool {
        let held = context.configuration.gate.distanceBand.upperBound
        guard !isClosed, let chosen = peers.first(where: { $0.id == invitee }), rank(chosen, held: held) == 0
        else { return false }
        return peers.contains {
            $0.id != invitee && rank($0, held: held) == 0 && isCandidate($0, now: context.now)
        }
    }

    /// Notes that we refused `peer`'s invitation only because we were busy.
    mutating func refusedWhileBusy(_ peer: DeviceID, context: SessionContext) {
        if let index = peers.firstIndex(where: { $0.id == peer }) { peers[index].wantedAt = context.now }
    }

    private func isCandidate(_ peer: DiscoveredPeer, now: Instant) -> Bool {
        !peer.busy && !peer.suspended && peer.retryAt <= now && peer.busyUntil <= now
            && !isBackingOff(fromHost: peer.address.ipv4, now: now) && isInReach(peer)
    }

    /// Whether a peer at host `ipv4` broke a rule or stalled a session recently enough that we still
    /// back off from the host (PROTOCOL.md section 5, "Faulty hosts").
    func isBackingOff(fromHost ipv4: UInt32, now: Instant) -> Bool {
        faultyHosts.contains { $0.ipv4 == ipv4 && $0.until > now }
    }

    /// Backs off from the host of `address` after a session its peer ended by its fault: from
    /// ``Timeouts/retryBackoff``, doubled per fault, up to ``Timeouts/retryBackoffCap``: an honest
    /// peer on a lossy link is never held off longer by its host than by its id. A full table
    /// forgets the host whose back-off ends first.
    mutating func peerFaulted(at address: PeerAddress, context: inout SessionContext) {
        let index: Int
        if let found = faultyHosts.firstIndex(where: { $0.ipv4 == address.ipv4 }) {
            index = found
            faultyHosts[index].faults =
                faultyHosts[index].faults < Int.max ? faultyHosts[index].faults + 1 : Int.max
        } else {
            if faultyHosts.count >= max(context.limits.maxFaultyHosts, 1),
                let soonest = faultyHosts.indices.min(by: { faultyHosts[$0].until < faultyHosts[$1].until })
            {
                faultyHosts.remove(at: soonest)
            }
            faultyHosts.append(FaultyHost(ipv4: address.ipv4, faults: 1, until: context.now))
            index = faultyHosts.endIndex - 1
        }
        let backoff = context.timeouts.retryBackoff.doubled(
            faultyHosts[index].faults - 1, cap: context.timeouts.retryBackoffCap)
        faultyHosts[index].until = context.now + context.jittered(backoff, spread: 0.2)
    }

    /// Whether we refuse an invitation from `peer`: while we back off from it after a failed
    /// session and could invite another peer right now, or while a peer we could invite right now
    /// has fewer failed sessions (we would rather try that one). A peer's failed sessions are the
    /// more of its id's and its host's, so a peer that comes back under a fresh id brings them.
    /// Either way a far pair does not keep ranging, and two devices held together that have tried
    /// everyone else are free for each other. With nobody else to try, our back-off does not refuse: the INVITE shows that the
    /// peer's own back-off from us has ended, and the two back-offs end at different times, so
    /// each refusing while its own ran left a pair on a lossy link meeting each other's back-off
    /// for a minute (each lost BUSY cost the inviter a 7.75 s timeout and a doubled back-off). The
    /// pair still retries no faster than the inviter's back-off allows. Only candidates count:
    /// a peer that is busy, backing off or answered BUSY is not one we would try instead, and
    /// counting it (or a phantom id from a corrupted beacon, which never answers) kept a close
    /// pair refusing each other while neither had anyone else to try. For the same reason only
    /// established peers count: unverified ones may be phantoms a forger keeps coming.
    func prefersNotToAccept(_ peer: DeviceID, from source: PeerAddress, now: Instant) -> Bool {
        if isBackingOff(fromHost: source.ipv4, now: now) { return true }
        let entry = peers.first { $0.id == peer }
        let failures = countedFailures(entry?.failures ?? 0, atHost: source.ipv4)
        // Candidates at the inviter's host share its host count, so they tell nothing apart.
        let others = peers.filter {
            $0.id != peer && $0.isEstablished && $0.address.ipv4 != source.ipv4 && isCandidate($0, now: now)
        }
        guard let fewest = others.map({ countedFailures($0.failures, atHost: $0.address.ipv4) }).min()
        else { return false }
        return (entry.map { $0.retryAt > now } ?? false) || failures > fewest
    }

    /// A peer's failed sessions as the refusal rule counts them: the more of its id's
    /// (`idFailures`) and its host's.
    private func countedFailures(_ idFailures: Int, atHost ipv4: UInt32) -> Int {
        max(idFailures, failedSessions(atHost: ipv4))
    }

    /// Failed sessions after a completed handshake with peers at host `ipv4`, under any id.
    func failedSessions(atHost ipv4: UInt32) -> Int {
        failedHosts.first { $0.ipv4 == ipv4 }?.failures ?? 0
    }

    /// Counts a session with a peer at `address` that ended without an exchange after its handshake
    /// completed: the peer receives there, so the count cannot be pinned on a host by a forged
    /// BEACON. A full table forgets the host with the fewest failures.
    mutating func hostSessionFailed(at address: PeerAddress, context: SessionContext) {
        if let index = failedHosts.firstIndex(where: { $0.ipv4 == address.ipv4 }) {
            failedHosts[index].failures =
                failedHosts[index].failures < Int.max ? failedHosts[index].failures + 1 : Int.max
            return
        }
        if failedHosts.count >= max(context.limits.maxFaultyHosts, 1),
            let fewest = failedHosts.indices.min(by: { failedHosts[$0].failures < failedHosts[$1].failures })
        {
            failedHosts.remove(at: fewest)
        }
        failedHosts.append(FailedHost(ipv4: address.ipv4, failures: 1))
    }

    /// The earliest time a peer becomes available for an invitation (for the device's deadline).
    /// Peers out of reach are left out: only a move (ours, or theirs in a beacon) brings them in,
    /// and both are inputs after which invitations are considered anyway.
    @inline(__always)  // as nextDeadline
    var nextInviteCandidateAt: Instant? {
        guard !isClosed else { return nil }
        var earliest: Instant?
        for peer in peers where !peer.busy && !peer.suspended && isInReach(peer) {
            let available = max(peer.retryAt, peer.busyUntil, hostBackoffEnd(peer.address.ipv4))
            if earliest.map({ available < $0 }) ?? true { earliest = available }
        }
        guard let earliest else { return nil }
        return max(earliest, inviteAt)
    }

    /// When our back-off from host `ipv4` ends (`.zero` when there is none).
    private func hostBackoffEnd(_ ipv4: UInt32) -> Instant {
        faultyHosts.first { $0.ipv4 == ipv4 }?.until ?? .zero
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

    /// Removes `peer` when the device at the address we hold for it says it has another id (BUSY
    /// with reason stale id, from that very address): the entry came from a departed device or a
    /// replayed BEACON. A later BEACON of the id, if it is alive elsewhere, adds it again.
    mutating func forget(_ peer: DeviceID, at address: PeerAddress, context: inout SessionContext) {
        peers.removeAll { $0.id == peer && $0.address == address }
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
