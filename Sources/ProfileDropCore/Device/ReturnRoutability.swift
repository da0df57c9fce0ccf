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

    private var credits: [UInt32: Credit] = [:]
    /// Proven addresses and until when the proof holds.
    private var proven: [PeerAddress: Instant] = [:]

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

    /// Credits `bytes` received from the host `ipv4` at `now` (a BEACON or a QUERY: datagrams
    /// nothing answers by unicast).
    mutating func received(_ bytes: Int, fromHost ipv4: UInt32, now: Instant) {
        let held = credits[ipv4].map { $0.expiresAt > now ? $0.bytes : 0 } ?? 0
        if credits[ipv4] == nil, credits.count >= Self.maxCreditHosts { makeRoomForCredit(now: now) }
        credits[ipv4] = Credit(
            bytes: min(held + max(bytes, 0), Self.maxCredit), expiresAt: now + Self.creditHorizon)
    }

    /// Spends `bytes` of the credit of the host `ipv4` for a datagram sent there unasked; false,
    /// spending nothing, when the credit does not cover it.
    mutating func spend(_ bytes: Int, toHost ipv4: UInt32, now: Instant) -> Bool {
        guard var credit = credits[ipv4], credit.expiresAt > now, credit.bytes >= bytes else { return false }
        credit.bytes -= bytes
        credits[ipv4] = credit
        return true
    }

    /// Whether `address` proved within ``proofLifetime`` that it receives.
    func isProven(_ address: PeerAddress, now: Instant) -> Bool {
        proven[address].map { $0 > now } ?? false
    }

    /// Notes that `address` showed it receives: it echoed our challenge or a cookie, or completed
    /// a handshake with us.
    mutating func prove(_ address: PeerAddress, now: Instant) {
        if proven[address] == nil, proven.count >= Self.maxProven {
            // Expired proofs first, else the one expiring soonest (the oldest).
            if let oldest = proven.min(by: { ($0.value, $0.key) < ($1.value, $1.key) }) {
                proven[oldest.key] = nil
            }
        }
        proven[address] = now + Self.proofLifetime
    }

    /// Drops expired credits, and if none had expired the one expiring soonest.
    private mutating func makeRoomForCredit(now: Instant) {
        credits = credits.filter { $0.value.expiresAt > now }
        guard credits.count >= Self.maxCreditHosts,
            let oldest = credits.min(by: { ($0.value.expiresAt, $0.key) < ($1.value.expiresAt, $1.key) })
        else { return }
        credits[oldest.key] = nil
    }
}
