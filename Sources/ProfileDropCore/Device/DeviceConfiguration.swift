import ProfileDropCrypto

/// Every wait of the protocol, with the defaults PROTOCOL.md specifies.
public struct Timeouts: Sendable, Equatable {
    /// First beacon interval after start; each later interval doubles up to ``announceCap``.
    public var announceInitial: Duration = .milliseconds(250)
    /// Longest interval between beacons.
    public var announceCap: Duration = .seconds(4)
    /// First interval between browse queries; doubles up to ``queryCap``.
    public var queryInitial: Duration = .seconds(1)
    /// Longest interval between browse queries.
    public var queryCap: Duration = .seconds(16)
    /// Random delay before answering a query with a beacon: uniform in this range.
    public var queryResponseDelay: ClosedRange<Duration> = .milliseconds(20) ... .milliseconds(120)
    /// A query is not answered if we multicast a beacon this recently (the asker heard it).
    public var answerSuppression: Duration = .seconds(1)
    /// A peer not heard from for this long is forgotten.
    public var peerLifetime: Duration = .seconds(15)
    /// First retransmission timeout of INVITE; doubles per attempt up to four times itself (1 s).
    public var handshakeRetransmit: Duration = .milliseconds(250)
    /// The doublings that set a handshake's lifetime: an invitation is given up, and a half-open
    /// handshake dropped, ``handshakeRetransmit`` × (2^attempts − 1) after its first datagram
    /// (7.75 s by default).
    public var handshakeAttempts: Int = 5
    /// How long both gates may take to open after the handshake before the session ends as
    /// out of range and the device tries other peers.
    public var rangingWindow: Duration = .seconds(3)
    /// After this much ranging, a peer whose last three raw measurements in a row lie beyond
    /// ``Limits/farAbortDistance`` is given up early, so a crowded room is scanned quickly
    /// (PROTOCOL.md 5, "Far abort").
    public var rangingFarAbort: Duration = .milliseconds(200)
    /// How long a user may take to answer a consent request before it declines by itself.
    public var consent: Duration = .seconds(60)
    /// Longest interval between control packets while waiting (they double from the ranging
    /// interval, ``MeasurementModel/sampleInterval``, while nothing changes).
    public var controlCap: Duration = .seconds(1)
    /// A secured session with no authenticated packet from the peer for this long closes.
    public var idle: Duration = .seconds(5)
    /// Gap between card chunks before the first round-trip sample; from then on the pacer spreads
    /// the congestion window over the smoothed round trip (PROTOCOL.md 6.6).
    public var chunkPacing: Duration = .milliseconds(2)
    /// Retransmission timeout of a chunk before any round-trip sample.
    public var initialRTO: Duration = .milliseconds(300)
    /// Bounds of the chunk retransmission timeout.
    public var rtoRange: ClosedRange<Duration> = .milliseconds(50) ... .seconds(2)
    /// A receiver sends CARD_SACK at most this long after an unacknowledged chunk.
    public var sackDelay: Duration = .milliseconds(10)
    /// The whole card phase (offer to both acknowledgements) must end within this.
    public var transfer: Duration = .seconds(90)
    /// The longest first retransmission timeout of CLOSE, and the one used before the session has
    /// a round-trip sample; the timeout itself comes from the round trip (PROTOCOL.md 6.7).
    public var closeRetransmit: Duration = .milliseconds(200)
    /// Sets how long closing lasts without CLOSE_ACK: `closeRetransmit` × (2^`closeAttempts` − 1),
    /// the length of this many transmissions doubling from `closeRetransmit`.
    public var closeAttempts: Int = 6
    /// The longest a closed session keeps answering CLOSE with CLOSE_ACK (draining); it drains for
    /// three of its close's probe timeouts when those are shorter.
    public var drain: Duration = .seconds(3)

    /// How long a closing session waits for CLOSE_ACK: `closeRetransmit` × (2^`closeAttempts` − 1),
    /// 12.6 s by default, at most 60 s (PROTOCOL.md 6.7).
    public var closingLimit: Duration {
        min(closeRetransmit * ((1 << clampedCloseAttempts) - 1), .seconds(60))
    }
    /// The longest wait between two retransmissions of CLOSE: the last wait of the fixed schedule,
    /// 3.2 s by default, at most 10 s.
    public var closeLongestInterval: Duration {
        closeRetransmit.doubled(clampedCloseAttempts - 2, cap: .seconds(10))
    }
    /// `closeAttempts` within 1...30: a capture may carry any count.
    private var clampedCloseAttempts: Int { min(max(closeAttempts, 1), 30) }
    /// Back-off before inviting a peer again after a session with it failed; doubles per failure.
    public var retryBackoff: Duration = .seconds(4)
    /// Longest back-off for one peer, and for one faulty host.
    public var retryBackoffCap: Duration = .seconds(20)
    /// After BUSY, wait a random time in this range before inviting that peer again.
    public var busyBackoff: ClosedRange<Duration> = .milliseconds(500) ... .milliseconds(1500)
    /// Random delay before the first invitation, and between invitations.
    public var inviteDelay: ClosedRange<Duration> = .milliseconds(20) ... .milliseconds(150)
    /// The device closes if no exchange completed within this time from start, ending a live session
    /// if it has one.
    public var overall: Duration = .seconds(180)
    // Progress deadlines: no step a peer must take can be put off longer than this.
    /// A step only the peer can let us take must come within this: the verification code after
    /// entering consenting, and in the card phase each step forward (a chunk of ours newly
    /// acknowledged, a new chunk of the peer's card, its CARD_ACK or BOND, our side becoming done)
    /// and then the confirmation hold's decision. Five times the largest chunk RTO.
    public var stall: Duration = .seconds(10)

    /// The defaults.
    public init() {}
}

extension Timeouts {
    /// One field of ``Timeouts``, named for diagnostics, with the key path that reads and writes it.
    package enum Field {
        /// A wait.
        case duration(String, WritableKeyPath<Timeouts, Duration>)
        /// A range random waits are drawn from.
        case durationRange(String, WritableKeyPath<Timeouts, ClosedRange<Duration>>)
        /// A number of attempts.
        case count(String, WritableKeyPath<Timeouts, Int>)
    }

    /// Every field, in declaration order, which is also their order in a capture's device record.
    /// Codecs iterate this table, so a field added above must be added here too; a test compares
    /// its length with the struct's stored properties.
    package static var fields: [Field] {
        [
            .duration("announce initial", \.announceInitial),
            .duration("announce cap", \.announceCap),
            .duration("query initial", \.queryInitial),
            .duration("query cap", \.queryCap),
            .durationRange("query response delay", \.queryResponseDelay),
            .duration("answer suppression", \.answerSuppression),
            .duration("peer lifetime", \.peerLifetime),
            .duration("handshake retransmit", \.handshakeRetransmit),
            .count("handshake attempts", \.handshakeAttempts),
            .duration("ranging window", \.rangingWindow),
            .duration("ranging far abort", \.rangingFarAbort),
            .duration("consent", \.consent),
            .duration("control cap", \.controlCap),
            .duration("idle", \.idle),
            .duration("chunk pacing", \.chunkPacing),
            .duration("initial RTO", \.initialRTO),
            .durationRange("RTO range", \.rtoRange),
            .duration("sack delay", \.sackDelay),
            .duration("transfer", \.transfer),
            .duration("close retransmit", \.closeRetransmit),
            .count("close attempts", \.closeAttempts),
            .duration("drain", \.drain),
            .duration("retry backoff", \.retryBackoff),
            .duration("retry backoff cap", \.retryBackoffCap),
            .durationRange("busy backoff", \.busyBackoff),
            .durationRange("invite delay", \.inviteDelay),
            .duration("overall", \.overall),
            // Progress deadlines.
            .duration("stall", \.stall),
        ]
    }
}

/// Bounds that keep memory and work finite whatever peers send.
public struct Limits: Sendable, Equatable {
    /// Peers the discovery session remembers; the least recently heard is evicted.
    public var maxPeers: Int = 32
    /// Largest card (encoded bytes) we accept from a peer.
    public var maxCardBytes: Int = 512 * 1024
    /// Chunks of our card in flight (sent, not acknowledged, not declared lost).
    public var sendWindow: Int = 32
    /// Known-answer entries carried in a QUERY.
    public var maxKnownAnswers: Int = 32
    /// A peer measured farther than this (centimetres) three times in a row, after
    /// ``Timeouts/rangingFarAbort``, ends the ranging window early.
    public var farAbortDistance: Double = 50
    /// Unsolicited datagrams (BEACON, QUERY, INVITE of no session, datagrams of unknown sessions)
    /// per second accepted from one source IP address, whatever its ports; a peer we know is
    /// charged on its own budget of the same size instead (PROTOCOL.md section 7).
    public var unsolicitedPerSecond: Int = 20
    /// Source addresses tracked by the rate limiter; the one refreshed longest ago is forgotten.
    public var rateLimitedSources: Int = 64
    /// Peers in the table that are neither verified (a handshake with them completed) nor heard
    /// long enough (PROTOCOL.md section 4); a new device id makes room among these only, so
    /// phantom ids never evict an established peer.
    public var maxUnverifiedPeers: Int = 8
    /// Unsolicited datagrams per second accepted from all sources together that are not known
    /// peers, so that a sender spoofing many addresses meets one budget.
    public var globalUnsolicitedPerSecond: Int = 200
    /// Hosts remembered for a peer's fault (PROTOCOL.md 5, "Faulty hosts"); when full, the one whose
    /// back-off ends first is forgotten.
    public var maxFaultyHosts: Int = 16

    /// The defaults.
    public init() {}
}

extension Limits {
    /// One field of ``Limits``, named for diagnostics, with the key path that reads and writes it.
    package enum Field {
        /// A count of things.
        case count(String, WritableKeyPath<Limits, Int>)
        /// A measure (a distance).
        case number(String, WritableKeyPath<Limits, Double>)
    }

    /// Every field, in declaration order, which is also their order in a capture's device record.
    /// Codecs iterate this table, so a field added above must be added here too; a test compares
    /// its length with the struct's stored properties.
    package static var fields: [Field] {
        [
            .count("max peers", \.maxPeers),
            .count("max card bytes", \.maxCardBytes),
            .count("send window", \.sendWindow),
            .count("max known answers", \.maxKnownAnswers),
            .number("far abort distance", \.farAbortDistance),
            .count("unsolicited per second", \.unsolicitedPerSecond),
            .count("rate-limited sources", \.rateLimitedSources),
            .count("max unverified peers", \.maxUnverifiedPeers),
            .count("global unsolicited per second", \.globalUnsolicitedPerSecond),
            .count("max faulty hosts", \.maxFaultyHosts),
        ]
    }
}

/// Everything a ``Device`` needs besides its inputs.
public struct DeviceConfiguration: Sendable {
    /// The card we offer, or nil to only receive.
    public var card: ProfileCard?
    /// How we answer once both devices are in range.
    public var consent: ConsentPolicy
    /// Our Noise static key. Version 2 uses a fresh one every run, so it links nothing across runs.
    public var staticKey: X25519.PrivateKey
    /// Our long-term identity, which only known peers can recognise; nil for a device that keeps
    /// none (it is then never recognised).
    public var identity: DeviceIdentity?
    /// Peers we exchanged with before, recognised privately (PROTOCOL.md 6.5).
    public var knownPeers: [KnownPeer]
    /// Timers.
    public var timeouts: Timeouts
    /// Bounds.
    public var limits: Limits
    /// Distance band and facing criteria, filter and dwell.
    public var gate: ProximityGate.Configuration
    /// How noisy our distance and bearing measurements are, and the ranging rate.
    public var measurement: MeasurementModel

    /// Creates a configuration with default timers, limits, gate and measurement model.
    public init(
        card: ProfileCard?, consent: ConsentPolicy, staticKey: X25519.PrivateKey,
        identity: DeviceIdentity? = nil, knownPeers: [KnownPeer] = [], timeouts: Timeouts = Timeouts(),
        limits: Limits = Limits(),
        gate: ProximityGate.Configuration = .default, measurement: MeasurementModel = .default
    ) {
        self.card = card
        self.consent = consent
        self.staticKey = staticKey
        self.identity = identity
        self.knownPeers = knownPeers
        self.timeouts = timeouts
        self.limits = limits
        self.gate = gate
        self.measurement = measurement
    }
}
