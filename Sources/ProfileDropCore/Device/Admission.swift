/// A token bucket: `perSecond` tokens a second, holding at most twice that (the burst).
struct TokenBucket {
    private var perSecond: Double
    private var burst: Double
    private var tokens: Double
    private var updated: Instant?

    init(perSecond: Int) {
        self.perSecond = Double(max(perSecond, 1))
        self.burst = Double(max(perSecond, 1)) * 2
        self.tokens = burst
    }

    /// Changes the rate (and the burst, twice the rate) from now on; the tokens held stay, up to
    /// the new burst.
    mutating func setRate(perSecond: Int) {
        self.perSecond = Double(max(perSecond, 1))
        self.burst = self.perSecond * 2
        tokens = min(tokens, burst)
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

/// The rate at which unknown sources that behave like announcing devices send unsolicited
/// datagrams: a datagram counts when its IP address's previous datagram came a second or more
/// before. A flood from fresh spoofed addresses never counts, nor does an address that sends
/// faster than once a second; a flood counts only by repeating its addresses at a device's pace,
/// address by address (PROTOCOL.md 7, "Rate limits").
struct SettledRate {
    /// Addresses remembered, in two generations of this many: when the newer is full it becomes
    /// the older and the older is forgotten. A hall of a thousand devices fits; a pool of spoofed
    /// addresses much larger than that is forgotten before its addresses come back.
    static let generation = 1024
    /// The shortest gap before an address's datagram for it to count.
    static let minimumGap = Duration.seconds(1)
    /// The rate is measured over whole windows of this length; the last one complete is reported.
    static let window = Duration.seconds(5)

    private var recent: [UInt32: Instant] = [:]
    private var older: [UInt32: Instant] = [:]
    private var windowStart: Instant?
    private var inWindow = 0
    /// Datagrams a second counted over the last complete window.
    private(set) var perSecond = 0

    /// Notes one datagram from `address` at `now`.
    mutating func note(_ address: UInt32, now: Instant) {
        roll(to: now)
        let inRecent = recent[address]
        let previous = inRecent ?? older[address]
        if inRecent == nil, recent.count >= Self.generation {
            older = recent
            recent = [:]
        }
        recent[address] = now
        if let previous, now - previous >= Self.minimumGap { inWindow += 1 }
    }

    /// Ends the window if it is over at `now`.
    private mutating func roll(to now: Instant) {
        guard let start = windowStart else {
            windowStart = now
            return
        }
        guard now - start >= Self.window else { return }
        // A window with nothing after it (a silence of more than one window) counts as empty.
        perSecond =
            now - start >= Self.window + Self.window ? 0 : inWindow / Int(Self.window.components.seconds)
        inWindow = 0
        windowStart = now
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
///   The global budget follows the room: twice the ``SettledRate`` of unknown sources, never
///   below the configured one and never above ``ceilingFactor`` times it.
struct Admission {
    /// Why a datagram was refused.
    enum Refusal: Equatable {
        /// A known peer's own budget is spent.
        case knownPeer
        /// The source address's budget is spent.
        case address
        /// The budget shared by all unknown sources, `perSecond` at the time, is spent.
        case global(perSecond: Int)
    }

    /// The global budget's ceiling, as a multiple of the configured one: what a flood that repeats
    /// its spoofed addresses at a device's pace can make a device parse, at most.
    static let ceilingFactor = 5

    private var knownPeers: RateLimiter<PeerAddress>
    private var addresses: RateLimiter<UInt32>
    private var global: TokenBucket
    private var settled = SettledRate()
    private let globalFloor: Int
    private(set) var globalPerSecond: Int

    init(limits: Limits, knownSources: Int) {
        knownPeers = RateLimiter(perSecond: limits.unsolicitedPerSecond, capacity: knownSources)
        addresses = RateLimiter(perSecond: limits.unsolicitedPerSecond, capacity: limits.rateLimitedSources)
        global = TokenBucket(perSecond: limits.globalUnsolicitedPerSecond)
        globalFloor = limits.globalUnsolicitedPerSecond
        globalPerSecond = limits.globalUnsolicitedPerSecond
    }

    /// Charges one datagram from `source`; nil when it is admitted, otherwise which budget was
    /// spent. A datagram refused by its address's budget does not touch the global one, nor counts
    /// towards the settled rate.
    mutating func admit(_ source: PeerAddress, known: Bool, now: Instant) -> Refusal? {
        if known { return knownPeers.admit(source, now: now) ? nil : .knownPeer }
        guard addresses.admit(source.ipv4, now: now) else { return .address }
        settled.note(source.ipv4, now: now)
        let target = min(
            max(globalFloor, settled.perSecond.multipliedReportingOverflow(by: 2).partialValue),
            globalFloor.multipliedReportingOverflow(by: Self.ceilingFactor).partialValue)
        if target != globalPerSecond {
            globalPerSecond = target
            global.setRate(perSecond: target)
        }
        return global.take(now: now) ? nil : .global(perSecond: globalPerSecond)
    }
}
