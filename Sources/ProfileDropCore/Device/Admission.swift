/// A token bucket: `perSecond` tokens a second, holding at most twice that (the burst).
struct TokenBucket {
    private let perSecond: Double
    private let burst: Double
    private var tokens: Double
    private var updated: Instant?

    init(perSecond: Int) {
        self.perSecond = Double(max(perSecond, 1))
        self.burst = Double(max(perSecond, 1)) * 2
        self.tokens = burst
    }

    /// When the bucket was last charged, if ever.
    var lastCharged: Instant? { updated }

    /// Takes one token at `now`; false when the bucket is empty (nothing is taken then).
    mutating func take(now: Instant) -> Bool {
        if let updated, now > updated {
            tokens = min(burst, tokens + (now - updated).secondsDouble * perSecond)
        }
        updated = now
        guard tokens >= 1 else { return false }
        tokens -= 1
        return true
    }
}

/// Token buckets per key, for a bounded number of keys; the key charged longest ago is forgotten
/// first (it comes back with a full bucket).
///
/// In a crowd of more sources than ``capacity``, nearly every datagram finds no bucket and forgets
/// the stalest key: the keys sit in slots found by a scan, which for the few dozen keys of a
/// device's budgets reads less memory than a hash table (and hashes nothing), and in order of
/// their last charge, so that the stalest is the first.
struct RateLimiter<Key: Hashable & Comparable> {
    private let perSecond: Int
    private let capacity: Int
    /// The keys by slot.
    private var keys: [Key] = []
    /// Their buckets, by the same slots.
    private var buckets: [TokenBucket] = []
    /// The keys by when they were last charged.
    private var staleness = TimeOrder<Key>()

    init(perSecond: Int, capacity: Int) {
        self.perSecond = perSecond
        self.capacity = max(capacity, 1)
    }

    /// Takes one token for `key`; false when its bucket is empty.
    mutating func admit(_ key: Key, now: Instant) -> Bool {
        if let slot = keys.firstIndex(of: key) {
            let charged = buckets[slot].lastCharged
            let admitted = buckets[slot].take(now: now)
            if let charged { staleness.move(key, from: charged, to: now) }
            return admitted
        }
        var bucket = TokenBucket(perSecond: perSecond)
        let admitted = bucket.take(now: now)
        // Evict the stalest key; ties by key keep the choice deterministic. Its slot takes the new one.
        if keys.count >= capacity, let stalest = staleness.removeFirst(),
            let slot = keys.firstIndex(of: stalest)
        {
            keys[slot] = key
            buckets[slot] = bucket
        } else {
            keys.append(key)
            buckets.append(bucket)
        }
        staleness.insert(key, at: now)
        return admitted
    }
}

/// Which unsolicited datagrams (BEACON, QUERY, an INVITE of no session, datagrams naming an unknown
/// session) a device takes, as PROTOCOL.md section 7 specifies:
///
/// - from a **known source** (the address of an established peer in the table, or of a live or
///   lingering session), one budget per such address, and nothing else is charged: a flood from
///   other sources, spoofed or not, never starves a pair that already found each other;
/// - from any other source, one budget per source **IP address** (its ports do not matter), then
///   the **global** budget shared by all of them: a sender spoofing many addresses meets that one.
struct Admission {
    /// Why a datagram was refused.
    enum Refusal: Equatable {
        /// A known peer's own budget is spent.
        case knownPeer
        /// The source address's budget is spent.
        case address
        /// The budget shared by all unknown sources is spent.
        case global
    }

    private var knownPeers: RateLimiter<PeerAddress>
    private var addresses: RateLimiter<UInt32>
    private var global: TokenBucket

    init(limits: Limits, knownSources: Int) {
        knownPeers = RateLimiter(perSecond: limits.unsolicitedPerSecond, capacity: knownSources)
        addresses = RateLimiter(perSecond: limits.unsolicitedPerSecond, capacity: limits.rateLimitedSources)
        global = TokenBucket(perSecond: limits.globalUnsolicitedPerSecond)
    }

    /// Charges one datagram from `source`; nil when it is admitted, otherwise which budget was
    /// spent. A datagram refused by its address's budget does not touch the global one.
    mutating func admit(_ source: PeerAddress, known: Bool, now: Instant) -> Refusal? {
        if known { return knownPeers.admit(source, now: now) ? nil : .knownPeer }
        guard addresses.admit(source.ipv4, now: now) else { return .address }
        return global.take(now: now) ? nil : .global
    }
}
