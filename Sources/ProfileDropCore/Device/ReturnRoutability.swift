/// What a device knows of the addresses it may send to unasked (PROTOCOL.md 5, "Return
/// routability"): which addresses proved that they receive, and how many bytes each host sent us
/// lately, which pay for the PROBEs that ask an unproven address to prove it.
///
/// Both tables are bounded and expire, so neither a flood of sources nor a long run grows them,
/// and credit cannot be banked: it is capped, and expires ``creditHorizon`` after the host's latest
/// BEACON or QUERY.
struct ReturnRoutability {
    /// Credit of one host: the bytes of its BEACONs and QUERYs, up to the cap, less the PROBEs they
    /// paid for.
    private struct Credit {
        var bytes: Int
        var expiresAt: Instant
    }

    /// Hosts with credit by slot, found by a scan: in a crowd of more hosts than
    /// ``maxCreditHosts``, nearly every BEACON or QUERY comes from a host without credit, which
    /// makes way for it, and a scan of a few dozen addresses reads less memory than a hash table.
    private var hosts: [UInt32] = []
    /// Their credits, by the same slots.
    private var credits: [Credit] = []
    /// The hosts by when their credit expires.
    private var expiries = TimeOrder<UInt32>()
    /// A proven address and until when the proof holds.
    private struct Proof {
        let address: PeerAddress
        var until: Instant
    }
    /// Proven addresses, found by a scan: at most ``maxProven`` of them, and a secured session
    /// proves its address again on every input, where hashing the address cost more than the scan.
    /// Their order means nothing: the one that makes way is the least by expiry, then address.
    private var proven: [Proof] = []

    /// A PROBE sent ahead of any invitation (PROTOCOL.md 5, "Probing ahead"): to the address of a
    /// peer just heard, with the BEACON that made us send it.
    struct ProbeAhead {
        let address: PeerAddress
        let challenge: UInt64
        let beacon: Beacon
        let sentAt: Instant
    }
    /// PROBEs sent ahead and not yet answered, oldest first.
    private(set) var probesAhead: [ProbeAhead] = []

    /// How long received bytes pay for PROBEs: a little longer than the longest beacon interval
    /// (4 s, jittered by 10 %), so a peer heard on its steady schedule always has some, and a lost
    /// PROBE is paid again by its next BEACON, while a spoofer cannot save up.
    static let creditHorizon: Duration = .seconds(5)
    /// The most credit one host holds: four PROBEs' worth.
    static let maxCredit = 4 * WireConstants.probeSize
    /// Hosts with credit remembered at once; the one whose credit expires first makes way.
    static let maxCreditHosts = 64
    /// How long a proof holds: longer than a whole exchange, shorter than a departed device's
    /// address staying trusted for the rest of a long run.
    static let proofLifetime: Duration = .seconds(120)
    /// Proven addresses remembered at once; the one whose proof expires first makes way.
    static let maxProven = 32
    /// PROBEs sent ahead awaiting their echo at once; the oldest makes way. Under a hall's worth of
    /// phantoms, each heard once a second, this many cover more than the round trip of a LAN.
    static let maxProbesAhead = 32
    /// How long a PROBE sent ahead waits for its echo at most (a flood makes the oldest make way
    /// sooner).
    static let probeAheadWait: Duration = .seconds(1)

    /// Credits `bytes` received from the host `ipv4` at `now` (a BEACON or a QUERY: datagrams
    /// nothing answers by unicast).
    mutating func received(_ bytes: Int, fromHost ipv4: UInt32, now: Instant) {
        let expiresAt = now + Self.creditHorizon
        if let slot = hosts.firstIndex(of: ipv4) {
            let credit = credits[slot]
            let held = credit.expiresAt > now ? credit.bytes : 0
            credits[slot] = Credit(bytes: min(held + max(bytes, 0), Self.maxCredit), expiresAt: expiresAt)
            expiries.move(ipv4, from: credit.expiresAt, to: expiresAt)
            return
        }
        if hosts.count >= Self.maxCreditHosts { makeRoomForCredit(now: now) }
        hosts.append(ipv4)
        credits.append(Credit(bytes: min(max(bytes, 0), Self.maxCredit), expiresAt: expiresAt))
        expiries.insert(ipv4, at: expiresAt)
    }

    /// Spends `bytes` of the credit of the host `ipv4` for a datagram sent there unasked; false,
    /// spending nothing, when the credit does not cover it.
    mutating func spend(_ bytes: Int, toHost ipv4: UInt32, now: Instant) -> Bool {
        guard let slot = hosts.firstIndex(of: ipv4), credits[slot].expiresAt > now,
            credits[slot].bytes >= bytes
        else { return false }
        credits[slot].bytes -= bytes
        return true
    }

    /// Whether `address` proved within ``proofLifetime`` that it receives.
    func isProven(_ address: PeerAddress, now: Instant) -> Bool {
        proven.first { $0.address == address }.map { $0.until > now } ?? false
    }

    /// Notes that `address` showed it receives: it echoed our challenge or a cookie, or completed
    /// a handshake with us.
    mutating func prove(_ address: PeerAddress, now: Instant) {
        // A secured session proves its address again on every input: renewed in place.
        if let held = proven.firstIndex(where: { $0.address == address }) {
            proven[held].until = now + Self.proofLifetime
            return
        }
        if proven.count >= Self.maxProven {
            // Expired proofs first, else the one expiring soonest (the oldest).
            if let oldest = proven.indices.min(by: {
                (proven[$0].until, proven[$0].address) < (proven[$1].until, proven[$1].address)
            }) {
                proven.swapAt(oldest, proven.endIndex - 1)
                proven.removeLast()
            }
        }
        proven.append(Proof(address: address, until: now + Self.proofLifetime))
    }

    /// Whether a PROBE sent ahead to `address` still waits for its echo at `now`.
    func isProbingAhead(_ address: PeerAddress, now: Instant) -> Bool {
        probeAhead(to: address, now: now) != nil
    }

    /// The challenge of the PROBE sent ahead to `address` that still waits for its echo at `now`.
    func probeAhead(to address: PeerAddress, now: Instant) -> UInt64? {
        probesAhead.first { $0.address == address && now - $0.sentAt < Self.probeAheadWait }?.challenge
    }

    /// Notes a PROBE sent ahead to `address` with `challenge`, for the peer that sent `beacon`: the
    /// oldest waiting makes way when ``maxProbesAhead`` wait, and those waited out are dropped.
    mutating func probedAhead(_ address: PeerAddress, challenge: UInt64, beacon: Beacon, now: Instant) {
        probesAhead.removeAll { now - $0.sentAt >= Self.probeAheadWait || $0.address == address }
        if probesAhead.count >= Self.maxProbesAhead { probesAhead.removeFirst() }
        probesAhead.append(ProbeAhead(address: address, challenge: challenge, beacon: beacon, sentAt: now))
    }

    /// Takes the PROBE sent ahead that `challenge`, echoed from `source`, answers: the address is
    /// proven, and the BEACON that made us send it is returned. Nil, changing nothing, when none
    /// waiting matches both.
    mutating func answerAhead(_ challenge: UInt64, from source: PeerAddress, now: Instant) -> Beacon? {
        guard
            let index = probesAhead.firstIndex(where: {
                $0.address == source && $0.challenge == challenge && now - $0.sentAt < Self.probeAheadWait
            })
        else { return nil }
        let beacon = probesAhead.remove(at: index).beacon
        prove(source, now: now)
        return beacon
    }

    /// Drops expired credits, and if none had expired the one expiring soonest.
    private mutating func makeRoomForCredit(now: Instant) {
        // A credit holds while it expires after now.
        while let earliest = expiries.first, earliest.time <= now {
            _ = expiries.removeFirst()
            forget(earliest.key)
        }
        guard hosts.count >= Self.maxCreditHosts, let oldest = expiries.removeFirst() else { return }
        forget(oldest)
    }

    /// Removes the credit of `ipv4`; the last slot fills its place.
    private mutating func forget(_ ipv4: UInt32) {
        guard let slot = hosts.firstIndex(of: ipv4) else { return }
        hosts.swapAt(slot, hosts.endIndex - 1)
        hosts.removeLast()
        credits.swapAt(slot, credits.endIndex - 1)
        credits.removeLast()
    }
}
