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
    /// ``address`` echoed a PROBE of ours (PROTOCOL.md 5, "Probing ahead"): it receives there, which
    /// no phantom at a spoofed address or a dead port can show. Kept over unanswered newcomers and
    /// invited before any other peer.
    var answered = false
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

    /// Verified, or answered a PROBE with no invitation of it unanswered since: its address
    /// receives, and it is kept and invited first. An id that answers PROBEs but not INVITEs (an
    /// attacker that receives, or a relay of another device's address) loses that at its first
    /// invitation.
    var receives: Bool { verified || (answered && !unanswered) }

    /// Neither established nor suspended: the tier capped at ``Limits/maxUnverifiedPeers``.
    /// Suspended entries are kept apart, so that a disputed id stays remembered (and uninvited)
    /// without taking room from newcomers; there is at most one per unanswered invitation.
    var isUnverified: Bool { !isEstablished && !suspended }
}

/// Discovery's bounded table of peers heard (PROTOCOL.md section 4), sorted by id, in two tiers.
/// **Established** peers were verified by a handshake or heard at one address for at least
/// ``longHeard``; at most `maxPeers - maxUnverifiedPeers` become established by hearing alone.
/// **Unverified** peers, everything else, are at most ``Limits/maxUnverifiedPeers``; a new device
/// id only ever evicts one of these. Reach is judged from `pose`, where we are, which the caller
/// passes in.
struct PeerTable {
    private(set) var peers: [DiscoveredPeer] = []
    /// Each entry's id, address and ``DiscoveredPeer/lastSeen``, in the order of ``peers``: looked
    /// up for every datagram (which entry a BEACON updates, whether a source is established, when
    /// the next entry expires), read here without walking the entries themselves, which are large.
    private(set) var keys: [(id: DeviceID, address: PeerAddress, lastSeen: Instant)] = []
    /// How far a peer may be, by its position, and still be invited or answered: the far-abort
    /// distance (``Limits/farAbortDistance``), beyond which ranging ends early anyway.
    let reach: Double

    /// How long a peer must be heard at one address (first to latest beacon) to be established.
    /// A device's own beacons 0.25, 0.5 and 1 s apart after its start (±10 %) reach it within
    /// about 1.9 s.
    static let longHeard: Duration = .milliseconds(1500)

    init(reach: Double) { self.reach = reach }

    var count: Int { peers.count }

    /// The entry of `peer`, if the table holds it.
    func entry(_ peer: DeviceID) -> DiscoveredPeer? { index(of: peer).map { peers[$0] } }

    /// Where `peer`'s entry is.
    private func index(of peer: DeviceID) -> Int? { keys.firstIndex { $0.id == peer } }

    /// Fills ``keys`` again after entries were removed.
    private mutating func rebuildKeys() {
        keys.removeAll(keepingCapacity: true)
        for peer in peers { keys.append((peer.id, peer.address, peer.lastSeen)) }
    }

    /// How far `peer` is by its hint, from `pose`; nil when it gave no position.
    func hintDistance(_ peer: DiscoveredPeer, from pose: Pose) -> Double? {
        peer.position.map { $0.distance(to: pose) }
    }

    /// Whether `peer` may be near enough to pair: its hint is within ``reach``, or it gave none.
    func isInReach(_ peer: DiscoveredPeer, from pose: Pose) -> Bool {
        (hintDistance(peer, from: pose) ?? 0) <= reach
    }

    /// When the entry heard longest ago was last heard: the next expiry is a lifetime after it.
    @inline(__always)
    var oldestLastSeen: Instant? {
        // A loop, not map and min: the device's deadline is asked after every input, and an array
        // per call was most of its cost.
        var oldest: Instant?
        for key in keys where oldest.map({ key.lastSeen < $0 }) ?? true { oldest = key.lastSeen }
        return oldest
    }

    /// Removes the peers not heard for `lifetime`.
    mutating func expire(now: Instant, lifetime: Duration) {
        // Checked first: removing nothing still costs a pass that rebuilds the array's tail.
        let expired = { (peer: DiscoveredPeer) in now - peer.lastSeen >= lifetime }
        if keys.contains(where: { now - $0.lastSeen >= lifetime }) {
            peers.removeAll(where: expired)
            rebuildKeys()
        }
    }

    /// The ids a QUERY lists as already known: the nearest from `pose`, at most `limit`, in id
    /// order. A peer that gave no position may be anywhere, so it may answer: it is listed first,
    /// as if beside us (invitations rank it at the edge of reach instead: it is the least likely to
    /// be the phone held against ours).
    func knownAnswers(from pose: Pose, limit: Int) -> [DeviceID] {
        peers.sorted {
            (hintDistance($0, from: pose) ?? 0, $1.lastSeen, $0.id)
                < (hintDistance($1, from: pose) ?? 0, $0.lastSeen, $1.id)
        }.prefix(limit).map(\.id).sorted()
    }

    /// Records a peer's beacon. New peers are reported; room for them is made among the
    /// unverified peers only.
    /// - Throws: `.conflict` when the beacon's port is not its source port, or its id is held at
    ///   another address; `.replayed` when its sequence number is not above the last one taken
    ///   from that peer; `.tableFull` when every entry is established and none can make room.
    ///   Nothing changes then but the note of a conflict.
    mutating func take(
        _ beacon: Beacon, from source: PeerAddress, pose: Pose, proven: Bool = false,
        context: inout SessionContext
    )
        throws(ProtocolError)
    {
        guard beacon.port == source.port else {
            throw ProtocolError(
                .conflict, "beacon of \(beacon.deviceID) names port \(beacon.port) from \(source)")
        }
        let now = context.now
        let answered = proven && !answersFor(host: source.ipv4, besides: beacon.deviceID)
        if let index = index(of: beacon.deviceID) {
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
            keys[index].lastSeen = now
            let contested = peers[index].contestedAt.map { now - $0 < context.timeouts.peerLifetime } ?? false
            peers[index].busy = contested ? false : beacon.busy
            peers[index].position = contested ? nil : beacon.position
            peers[index].hearings = peers[index].hearings < Int.max ? peers[index].hearings + 1 : Int.max
            if answered { peers[index].answered = true }
            if !peers[index].longHeard, now - peers[index].firstHeard >= Self.longHeard,
                establishedCount < establishedRoom(context.limits)
            {
                peers[index].longHeard = true
            }
            return
        }
        let near = (beacon.position?.distance(to: pose) ?? 0) <= reach
        guard makeRoomForNewcomer(context.limits, pose: pose, answered: answered, near: near) else {
            throw ProtocolError(
                .tableFull,
                near
                    ? "no room for \(beacon.deviceID): every unverified peer was heard more than once, none out of reach"
                    : "no room for \(beacon.deviceID), out of reach: no unverified peer heard once is out of reach too"
            )
        }
        insertNew(beacon, from: source, answered: answered, context: &context)
    }

    /// Puts the peer of `beacon`, heard at `source` just now, in its place in id order.
    private mutating func insertNew(
        _ beacon: Beacon, from source: PeerAddress, answered: Bool, context: inout SessionContext
    ) {
        let now = context.now
        var peer = DiscoveredPeer(
            id: beacon.deviceID, address: source, firstHeard: now, lastSeen: now, sequence: beacon.sequence,
            busy: beacon.busy, retryAt: now, busyUntil: now)
        peer.position = beacon.position
        peer.lastTaken = beacon
        peer.answered = answered
        place(peer)
        context.emit(.peerFound(beacon.deviceID))
    }

    /// Inserts `peer`, in no place yet, at its place in id order, in both ``peers`` and ``keys``.
    private mutating func place(_ peer: DiscoveredPeer) {
        let position = keys.firstIndex { $0.id > peer.id } ?? keys.endIndex
        peers.insert(peer, at: position)
        keys.insert((peer.id, peer.address, peer.lastSeen), at: position)
    }

    private var unverifiedCount: Int {
        var count = 0
        for index in peers.indices where peers[index].isUnverified { count += 1 }
        return count
    }
    var establishedCount: Int { peers.reduce(0) { $0 + ($1.isEstablished ? 1 : 0) } }

    /// At least one, at most the table.
    private func unverifiedCap(_ limits: Limits) -> Int {
        min(max(limits.maxUnverifiedPeers, 1), max(limits.maxPeers, 1))
    }

    /// How many peers may be established by hearing alone.
    private func establishedRoom(_ limits: Limits) -> Int { max(limits.maxPeers, 1) - unverifiedCap(limits) }

    /// The unverified peer to evict first, in ``evictionRank`` order.
    private func weakestUnverified(pose: Pose) -> Int? {
        peers.indices.filter { peers[$0].isUnverified }.min {
            evictionRank($0, pose: pose) < evictionRank($1, pose: pose)
        }
    }

    /// Orders entries for eviction: out of reach first, then those that do not receive (neither
    /// answered nor verified) before those that do, then fewest
    /// hearings, then farthest by hint, then heard longest ago, then lowest id.
    private func evictionRank(_ index: Int, pose: Pose) -> (Int, Int, Int, Double, Instant, DeviceID) {
        let peer = peers[index]
        return (
            isInReach(peer, from: pose) ? 1 : 0, peer.receives ? 1 : 0, peer.hearings,
            -(hintDistance(peer, from: pose) ?? 0),
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
    /// A verified newcomer needs no unverified slot, only room in the table. An entry that answered
    /// a PROBE is never an entry heard once that may go (only out of reach may it), and for a
    /// newcomer that answered one (`answered`), any entry that did not and no handshake verified
    /// may go, however often it was heard: a peer shown to receive is kept over phantoms, which
    /// cannot be.
    mutating func makeRoomForNewcomer(
        _ limits: Limits, pose: Pose, verified: Bool = false, answered: Bool = false, near: Bool = true
    )
        -> Bool
    {
        let tableFull = peers.count >= max(limits.maxPeers, 1)
        // Room in the table: only a full unverified tier makes an entry go.
        if !tableFull {
            guard !verified, unverifiedCount >= unverifiedCap(limits) else { return true }
        }
        // One pass over the entries, each rank computed once: a crowd's every new BEACON asks this
        // of a full table. In a full table, whether the unverified tier is full too decides which
        // entries may go, so the weakest is kept both ways: among all that may go, and among the
        // unverified ones.
        typealias Weakest = (index: Int, rank: (Int, Int, Int, Double, Instant, DeviceID))
        var unverified = 0
        var weakestOfAll: Weakest?
        var weakestUnverified: Weakest?
        for index in peers.indices {
            let peer = peers[index]
            if peer.isUnverified { unverified += 1 }
            // With room in the table the tier is full: only unverified entries may go.
            guard !peer.verified, !peer.suspended, tableFull || peer.isUnverified else { continue }
            let far = !isInReach(peer, from: pose)
            let heardOnce = peer.isUnverified && !peer.receives && peer.hearings <= 1
            // Only a newcomer within reach gets here with `answered`: it is one we would invite.
            let outranked = answered && !peer.receives
            guard near ? far || heardOnce || outranked : far && heardOnce else { continue }
            let rank = evictionRank(index, pose: pose)
            if tableFull, weakestOfAll.map({ rank < $0.rank }) ?? true { weakestOfAll = (index, rank) }
            if peer.isUnverified, weakestUnverified.map({ rank < $0.rank }) ?? true {
                weakestUnverified = (index, rank)
            }
        }
        let tierFull = !verified && unverified >= unverifiedCap(limits)
        guard tierFull || tableFull else { return true }
        guard let weakest = (tierFull ? weakestUnverified : weakestOfAll)?.index else { return false }
        peers.remove(at: weakest)
        keys.remove(at: weakest)
        return true
    }

    /// Evicts the weakest unverified peers while there are more than the cap (after a demotion).
    mutating func enforceUnverifiedCap(_ limits: Limits, pose: Pose) {
        while unverifiedCount > unverifiedCap(limits), let weakest = weakestUnverified(pose: pose) {
            peers.remove(at: weakest)
            keys.remove(at: weakest)
        }
    }

    /// Whether `peer` is an established entry of the table (verified, or heard long enough).
    func isEstablished(peer: DeviceID) -> Bool {
        index(of: peer).map { peers[$0].isEstablished } ?? false
    }

    /// Whether `peer` completed a handshake with us in this run.
    func isVerified(peer: DeviceID) -> Bool {
        index(of: peer).map { peers[$0].verified } ?? false
    }

    /// Whether `source` is the address of an established peer (its datagrams are charged on its own
    /// budget, section 7).
    func isEstablished(_ source: PeerAddress) -> Bool {
        keys.indices.contains { keys[$0].address == source && peers[$0].isEstablished }
    }

    /// Notes a completed handshake with `peer`, whose session address is `address`. At the peer's
    /// table address it verifies the peer. Elsewhere it moves a suspended entry there (the
    /// address first heard never answered, and this one did); any other entry stays as it is. A
    /// peer we never heard, or lost to churn, gets a verified entry (unless `closed`) if an entry
    /// may make way for it as for a newcomer within reach: it is live at that address.
    mutating func handshakeCompleted(
        with peer: DeviceID, at address: PeerAddress, closed: Bool, pose: Pose, context: SessionContext
    ) {
        guard let index = index(of: peer) else {
            guard !closed, makeRoomForNewcomer(context.limits, pose: pose, verified: true) else { return }
            var entry = DiscoveredPeer(
                id: peer, address: address, firstHeard: context.now, lastSeen: context.now, sequence: nil,
                busy: false, retryAt: context.now, busyUntil: context.now)
            entry.verified = true
            place(entry)
            return
        }
        if peers[index].address == address {
            guard !peers[index].verified else { return }
        } else {
            guard peers[index].suspended, !peers[index].verified else { return }
            peers[index].address = address
            keys[index].address = address
            peers[index].sequence = nil
            peers[index].conflictAt = nil
            peers[index].lastSeen = context.now
            keys[index].lastSeen = context.now
        }
        peers[index].verified = true
        peers[index].unanswered = false
        peers[index].suspended = false
    }

    /// Notes that our invitation of `peer` at `address` was never answered. An unverified peer
    /// loses its long-heard standing (a replayed or forged beacon stream gets one invitation). If
    /// another address claimed its id within the peer lifetime, the entry is suspended and this
    /// returns true: the address we hold may be a forger's, so no failure is counted against the id.
    mutating func invitationUnanswered(
        to peer: DeviceID, at address: PeerAddress, pose: Pose, context: SessionContext
    ) -> Bool {
        guard let index = index(of: peer), peers[index].address == address,
            !peers[index].verified
        else { return false }
        peers[index].unanswered = true
        let disputed =
            peers[index].conflictAt.map { context.now - $0 < context.timeouts.peerLifetime } ?? false
        guard disputed else { return false }
        peers[index].suspended = true
        enforceUnverifiedCap(context.limits, pose: pose)
        return true
    }

    /// Whether an entry other than `peer` at host `ipv4` is answered (and no invitation of it went
    /// unanswered since). A host answers for one id at a time: an attacker that receives at its
    /// own address answers every PROBE on any port, and would otherwise hold every unverified
    /// place with ids it answers for.
    private func answersFor(host ipv4: UInt32, besides peer: DeviceID) -> Bool {
        keys.indices.contains {
            keys[$0].address.ipv4 == ipv4 && keys[$0].id != peer && peers[$0].answered
                && !peers[$0].unanswered
        }
    }

    /// Notes that `address` echoed a PROBE we sent ahead for the peer that sent `beacon`
    /// (PROTOCOL.md 5, "Probing ahead"): that peer's entry at that address is answered, unless
    /// another id at that host is (``answersFor(host:besides:)``). When the peer's entry was evicted meanwhile (a flood churns the entries heard once faster than a round trip),
    /// it comes back answered from `beacon`, if an entry may make way for it as for a newcomer that
    /// answered; a peer we hold at another address is left as it is.
    mutating func addressAnswered(
        _ address: PeerAddress, beacon: Beacon, pose: Pose, context: inout SessionContext
    ) {
        guard !answersFor(host: address.ipv4, besides: beacon.deviceID) else { return }
        if let index = index(of: beacon.deviceID) {
            if keys[index].address == address { peers[index].answered = true }
            return
        }
        guard beacon.port == address.port else { return }
        let near = (beacon.position?.distance(to: pose) ?? 0) <= reach
        guard makeRoomForNewcomer(context.limits, pose: pose, answered: true, near: near) else { return }
        insertNew(beacon, from: address, answered: true, context: &context)
    }

    /// Counts a failed session against `peer` and backs off from it: from
    /// ``Timeouts/retryBackoff``, doubled per failure, up to ``Timeouts/retryBackoffCap``.
    mutating func sessionFailed(with peer: DeviceID, context: inout SessionContext) {
        guard let index = index(of: peer) else { return }
        peers[index].failures += 1
        let backoff = context.timeouts.retryBackoff.doubled(
            peers[index].failures - 1, cap: context.timeouts.retryBackoffCap)
        peers[index].retryAt = context.now + context.jittered(backoff, spread: 0.2)
    }

    /// Backs off briefly from `peer` after it answered BUSY.
    mutating func peerBusy(_ peer: DeviceID, context: inout SessionContext) {
        guard let index = index(of: peer) else { return }
        peers[index].busyUntil = context.now + context.randomDuration(in: context.timeouts.busyBackoff)
    }

    /// Notes when `peer`'s invitation was refused only because we were busy (nil: no longer).
    mutating func setWanted(_ peer: DeviceID, at time: Instant?) {
        if let index = index(of: peer) { peers[index].wantedAt = time }
    }

    /// Removes `peer` at `address`.
    mutating func remove(_ peer: DeviceID, at address: PeerAddress) {
        peers.removeAll { $0.id == peer && $0.address == address }
        rebuildKeys()
    }
}
