/// Whom discovery invites next, and whose invitation it would rather refuse (PROTOCOL.md section
/// 5): candidates are peers of the ``PeerTable`` not known to be busy, within reach, whose own and
/// host back-offs (``HostReputation``) expired. It holds one time of its own, the earliest for our
/// next invitation; everything else it reads from the table, the reputation and where we are.
struct InviteeRanking {
    /// Earliest time for our next invitation.
    var inviteAt: Instant

    /// The parts of discovery a ranking reads.
    struct View {
        let table: PeerTable
        let reputation: HostReputation
        /// Where we are.
        let pose: Pose
        /// Peers we hold a live session with.
        var engaged: [DeviceID] = []
    }

    /// Whether `peer` could be invited at `now`.
    static func isCandidate(_ peer: DiscoveredPeer, in view: View, now: Instant) -> Bool {
        !peer.busy && !peer.suspended && peer.retryAt <= now && peer.busyUntil <= now
            && !view.engaged.contains(peer.id)
            && !view.reputation.isBackingOff(fromHost: peer.address.ipv4, now: now)
            && view.table.isInReach(peer, from: view.pose)
    }

    /// Picks the next peer to invite, or nil. Candidates are peers not known to be busy whose
    /// back-offs expired; those whose address receives (it answered a PROBE, or a handshake
    /// verified it) come first, then established ones, and unverified ones only when no established
    /// peer is a candidate (then those heard most often first). Among those with the fewest failed
    /// sessions one is drawn at random, so that many devices do not all invite the same peer and
    /// every peer is tried before any is retried. BUSY answers do not count as failures: a busy
    /// peer is retried soon.
    func nextInvitee(in view: View, context: inout SessionContext) -> DiscoveredPeer? {
        // Asked after every input while a candidate place is free, so the common answer (nobody)
        // is found without building the lists below.
        guard context.now >= inviteAt,
            view.table.peers.contains(where: { Self.isCandidate($0, in: view, now: context.now) })
        else { return nil }
        let candidates = view.table.peers.filter { Self.isCandidate($0, in: view, now: context.now) }
        let receiving = candidates.filter(\.receives)
        let established = receiving.isEmpty ? candidates.filter(\.isEstablished) : receiving
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
        if let nearest = least.map({ Self.rank($0, in: view, held: held) }).min() {
            least = least.filter { Self.rank($0, in: view, held: held) == nearest }
        }
        return wanting.max { ($0.wantedAt ?? .zero, $0.id) < ($1.wantedAt ?? .zero, $1.id) }
            ?? least[Int(context.random.uniform(below: UInt64(least.count)))]
    }

    /// A peer's place in the order of nearness: whole centimetres of its hint (a peer with none at
    /// the edge of reach), saturated, and 0 for every hint within `held`, the gate band's far edge
    /// (``nextInvitee(in:context:)``).
    static func rank(_ peer: DiscoveredPeer, in view: View, held: Double) -> Int {
        let distance = view.table.hintDistance(peer, from: view.pose) ?? view.table.reach
        return distance <= held ? 0 : Int(min(max(distance, 0), 1e15).rounded())
    }

    /// Whether `invitee` and another candidate both rank as equally near as any can: both hint
    /// within the gate band's far edge, where ``nextInvitee(in:context:)`` draws between them. An
    /// invitee whose address answered a PROBE ties only with candidates whose address did: the
    /// ranking puts those first, so a phantom claiming our spot does not tie with it.
    static func hasEquallyNearCandidate(than invitee: DeviceID, in view: View, context: SessionContext)
        -> Bool
    {
        let held = context.configuration.gate.distanceBand.upperBound
        guard let chosen = view.table.entry(invitee), rank(chosen, in: view, held: held) == 0 else {
            return false
        }
        return view.table.peers.contains {
            $0.id != invitee && competes($0, with: chosen) && rank($0, in: view, held: held) == 0
                && isCandidate($0, in: view, now: context.now)
        }
    }

    /// Whether `peer` may tie with or outrank `chosen`, our tentative invitee, in the rules that give
    /// a tentative invitation up: a peer whose address answered a PROBE competes only with peers
    /// whose address did, as ``nextInvitee(in:context:)`` invites those first (PROTOCOL.md 5,
    /// "Tentative invitations"). Phantoms never answer, so however near they claim to be and however
    /// long they are kept alive, they do not turn the device away from a peer that answered.
    static func competes(_ peer: DiscoveredPeer, with chosen: DiscoveredPeer?) -> Bool {
        peer.receives || !(chosen?.receives ?? false)
    }

    /// Whether a peer other than `invitee` could be invited at `now`.
    static func hasOtherCandidate(than invitee: DeviceID, in view: View, now: Instant) -> Bool {
        view.table.peers.contains { $0.id != invitee && isCandidate($0, in: view, now: now) }
    }

    /// Whether a peer other than `invitee` whose address answered a PROBE (or a handshake) could
    /// be invited at `now`: ``nextInvitee(in:context:)`` would rank it first.
    static func hasAnsweredCandidate(than invitee: DeviceID, in view: View, now: Instant) -> Bool {
        view.table.peers.contains { $0.id != invitee && $0.receives && isCandidate($0, in: view, now: now) }
    }

    /// Whether some established peer other than `invitee` that competes with it could be invited at
    /// `now`.
    static func hasEstablishedCandidate(than invitee: DeviceID, in view: View, now: Instant) -> Bool {
        let chosen = view.table.entry(invitee)
        return view.table.peers.contains {
            $0.id != invitee && $0.isEstablished && competes($0, with: chosen)
                && isCandidate($0, in: view, now: now)
        }
    }

    /// Whether `invitee` was heard once and a candidate more often, with no more failed sessions: the
    /// rank ``nextInvitee(in:context:)`` gives unverified peers. A real newcomer heard again outranks
    /// a phantom's fresh id, heard once; an invitee heard again is kept, so that ids whose counts
    /// leapfrog do not make the device switch back and forth.
    static func hasBetterHeardCandidate(than invitee: DeviceID, in view: View, now: Instant) -> Bool {
        guard let chosen = view.table.entry(invitee), chosen.hearings <= 1 else { return false }
        return view.table.peers.contains {
            $0.id != invitee && $0.hearings > chosen.hearings && $0.failures <= chosen.failures
                && competes($0, with: chosen) && isCandidate($0, in: view, now: now)
        }
    }

    /// Whether we refuse an invitation from `peer`: while we back off from it after a failed
    /// session and could invite another peer right now, or while a peer we could invite right now
    /// has fewer failed sessions (we would rather try that one). A peer's failed sessions are the
    /// more of its id's and its host's, so a peer that comes back under a fresh id brings them.
    /// Either way a far pair does not keep ranging, and two devices held together that have tried
    /// everyone else are free for each other. With nobody else to try, our back-off does not refuse:
    /// the INVITE shows that the peer's own back-off from us has ended, and the two back-offs end at
    /// different times, so each refusing while its own ran left a pair on a lossy link meeting each
    /// other's back-off for a minute (each lost BUSY cost the inviter a 7.75 s timeout and a doubled
    /// back-off). The pair still retries no faster than the inviter's back-off allows. Only
    /// candidates count: a peer that is busy, backing off or answered BUSY is not one we would try
    /// instead, and counting it (or a phantom id from a corrupted beacon, which never answers) kept
    /// a close pair refusing each other while neither had anyone else to try. For the same reason
    /// only established peers count: unverified ones may be phantoms a forger keeps coming.
    static func prefersNotToAccept(_ peer: DeviceID, from source: PeerAddress, in view: View, now: Instant)
        -> Bool
    {
        let reputation = view.reputation
        if reputation.isBackingOff(fromHost: source.ipv4, now: now) { return true }
        let entry = view.table.entry(peer)
        let failures = reputation.countedFailures(entry?.failures ?? 0, atHost: source.ipv4)
        // Candidates at the inviter's host share its host count, so they tell nothing apart.
        let others = view.table.peers.filter {
            $0.id != peer && $0.isEstablished && $0.address.ipv4 != source.ipv4
                && isCandidate($0, in: view, now: now)
        }
        guard
            let fewest = others.map({ reputation.countedFailures($0.failures, atHost: $0.address.ipv4) })
                .min()
        else { return false }
        return (entry.map { $0.retryAt > now } ?? false) || failures > fewest
    }

    /// The earliest time a peer becomes available for an invitation (for the device's deadline).
    /// Peers out of reach are left out: only a move (ours, or theirs in a beacon) brings them in,
    /// and both are inputs after which invitations are considered anyway.
    @inline(__always)
    func nextCandidateAt(in view: View) -> Instant? {
        var earliest: Instant?
        for peer in view.table.peers
        where !peer.busy && !peer.suspended && !view.engaged.contains(peer.id)
            && view.table.isInReach(peer, from: view.pose)
        {
            let available = max(peer.retryAt, peer.busyUntil, view.reputation.backoffEnd(peer.address.ipv4))
            if earliest.map({ available < $0 }) ?? true { earliest = available }
        }
        guard let earliest else { return nil }
        return max(earliest, inviteAt)
    }
}
