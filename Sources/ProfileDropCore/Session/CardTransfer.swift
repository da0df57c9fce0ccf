import ProfileDropCrypto

/// Sends our card as chunks: as many in flight as the congestion window allows (NewReno,
/// ``CongestionController``), paced over the smoothed round trip. Loss is detected as in RFC 9002:
/// a chunk is lost when one sent three transmissions after it, or 9/8 of a round trip after it, was
/// acknowledged; when nothing is acknowledged for a timeout, one probe goes out (a chunk not yet
/// sent, or else the lowest chunk not yet acknowledged) and the timeout doubles, so a lost
/// acknowledgement costs at most one retransmission, not a window of them.
struct CardSender {
    let bytes: [UInt8]
    let offer: CardOffer
    private let initialGap: Duration
    private let rtoRange: ClosedRange<Duration>
    private var acked: [Bool]
    /// When each chunk was last sent; nil for never sent or declared lost. A chunk not acknowledged
    /// with a time here is in flight.
    private var sentAt: [Instant?]
    /// The number of each chunk's last transmission, which orders transmissions.
    private var sentAs: [CongestionController.Transmission]
    private var transmissions: [Int]
    /// The number the next transmission gets.
    private var nextTransmission: CongestionController.Transmission = 0
    /// When the last chunk was sent; the timeout runs from here.
    private var lastSentAt: Instant?
    /// The latest transmission the peer acknowledged.
    private var largestAcknowledged: CongestionController.Transmission?
    private var inFlight = 0
    private(set) var ackedCount = 0
    // Cursors that keep each acknowledgement and transmission from scanning the whole card: every
    // chunk below `lowestUnacked` is acknowledged; every chunk below `lowestUnsent` is acknowledged
    // or in flight (it is `total` when none is left to send); no chunk from `sentEnd` on was ever
    // sent.
    private var lowestUnacked = 0
    private var lowestUnsent = 0
    private var sentEnd = 0
    private(set) var retransmissions = 0
    private(set) var congestion: CongestionController
    private var pacer: Pacer
    /// The round trip, sampled from acknowledged chunks sent once.
    private(set) var roundTrip = RoundTripEstimator()
    /// The timeout from the round-trip samples, before back-off.
    private var sampledRTO: Duration
    /// Timeouts in a row with nothing newly acknowledged: each doubles the timeout.
    private(set) var backoff = 0
    /// Timeouts that expired, each sending ``probesPerTimeout`` probes.
    private(set) var probes = 0
    /// Probes still to send for the last timeout.
    private var probesDue = 0
    /// Probes per timeout: two, as RFC 9002 6.2.4 allows, so one lost probe or acknowledgement does
    /// not cost another, doubled, timeout.
    static let probesPerTimeout = 2

    /// The offer announcing `bytes`.
    static func offer(for bytes: [UInt8]) -> CardOffer {
        precondition(!bytes.isEmpty && bytes.count <= Int(UInt32.max), "card size")
        return CardOffer(
            length: UInt32(bytes.count), chunkSize: UInt16(WireConstants.chunkSize),
            digest: BLAKE2bDigest.of(bytes))
    }

    /// A sender of `bytes` with at most `window` chunks in flight, whatever the congestion window.
    init(bytes: [UInt8], offer: CardOffer, window: Int, timeouts: Timeouts, now: Instant) {
        self.bytes = bytes
        self.offer = offer
        self.initialGap = timeouts.chunkPacing
        self.rtoRange = timeouts.rtoRange
        let count = offer.chunkCount
        acked = Array(filling: false, count: count)
        sentAt = Array(filling: nil, count: count)
        sentAs = Array(filling: 0, count: count)
        transmissions = Array(filling: 0, count: count)
        congestion = CongestionController(maximumWindow: max(window, 1))
        pacer = Pacer(now: now)
        sampledRTO = timeouts.initialRTO
    }

    var total: Int { acked.count }
    var isComplete: Bool { ackedCount == total }

    /// The retransmission timeout now: the sampled one doubled per timeout in a row, within the
    /// upper bound (so the chunk the transfer waits for is resent at least that often), and never
    /// under ``minimumRTO``.
    var rto: Duration {
        var timeout = sampledRTO
        for _ in 0..<backoff where timeout < rtoRange.upperBound { timeout = timeout * 2 }
        return max(min(timeout, rtoRange.upperBound), Self.minimumRTO)
    }

    /// A probe waits at least this long: with a timeout of zero, which a configuration (or a
    /// capture's recorded one) can name, every poll at the same instant would resend, and the
    /// device's output would never run dry.
    static let minimumRTO: Duration = .milliseconds(1)

    /// The gap the pacer keeps between chunks now.
    var pacingInterval: Duration {
        congestion.pacingInterval(
            smoothedRTT: roundTrip.smoothed, initialGap: initialGap, ceiling: rtoRange.upperBound)
    }

    /// The chunk to send now, if any: a probe when the timeout expired, otherwise the lowest chunk
    /// neither acknowledged nor in flight if the congestion window and pacing allow; marks it sent.
    mutating func takeChunk(now: Instant) -> Frame? {
        guard !isComplete else { return nil }
        if inFlight > 0, let last = lastSentAt, last + rto <= now {
            // Nothing acknowledged for a timeout: probe.
            backoff += 1
            probes += 1
            probesDue = Self.probesPerTimeout
            if backoff >= 2 { congestion.persistentCongestion(next: nextTransmission) }
        }
        if probesDue > 0 {
            // Probes ignore the window and the pacer: they exist to draw an acknowledgement that
            // shows what was lost. New data when there is some, as it is never a duplicate of a
            // chunk that arrived and whose acknowledgement was lost; otherwise the lowest chunks
            // unacknowledged, not the same one twice.
            probesDue -= 1
            let acked = acked
            let sentAt = sentAt
            let unacked = lowestUnacked..<acked.count
            if let index = firstUnsent() ?? unacked.first(where: { !acked[$0] && sentAt[$0] != now })
                ?? unacked.first(where: { !acked[$0] })
            {
                return send(index, now: now)
            }
        }
        let interval = pacingInterval
        guard inFlight < congestion.window, pacer.allows(now: now, interval: interval),
            let index = firstUnsent()
        else { return nil }
        pacer.sent(now: now, interval: interval)
        return send(index, now: now)
    }

    private mutating func send(_ index: Int, now: Instant) -> Frame {
        if transmissions[index] > 0 { retransmissions += 1 }
        if sentAt[index] == nil { inFlight += 1 }
        transmissions[index] += 1
        sentAt[index] = now
        sentAs[index] = nextTransmission
        nextTransmission += 1
        lastSentAt = now
        sentEnd = max(sentEnd, index + 1)
        settleCursors()
        let start = index * Int(offer.chunkSize)
        let end = min(start + Int(offer.chunkSize), bytes.count)
        return .cardChunk(index: UInt16(index), data: bytes[start..<end])
    }

    /// The lowest-numbered chunk neither acknowledged nor in flight.
    private func firstUnsent() -> Int? {
        lowestUnsent < total ? lowestUnsent : nil
    }

    /// Moves the cursors past chunks acknowledged (and, for `lowestUnsent`, in flight); called after
    /// every change to `acked` or `sentAt`.
    private mutating func settleCursors() {
        while lowestUnacked < total && acked[lowestUnacked] { lowestUnacked += 1 }
        lowestUnsent = max(lowestUnsent, lowestUnacked)
        while lowestUnsent < total && (acked[lowestUnsent] || sentAt[lowestUnsent] != nil) {
            lowestUnsent += 1
        }
    }

    /// When the sender next has something to do: send a chunk, or probe.
    @inline(__always)  // read in place: a call through the transfer's optional copied the sender
    func nextDeadline(now: Instant) -> Instant? {
        guard !isComplete else { return nil }
        var due: Instant?
        if inFlight > 0, let last = lastSentAt { due = last + rto }
        if inFlight < congestion.window, firstUnsent() != nil {
            let sendAt = max(pacer.nextSendAt(now: now, interval: pacingInterval), now)
            due = min(due ?? sendAt, sendAt)
        }
        return due
    }

    /// Applies selective acknowledgements in order; returns the round-trip sample they gave, if any.
    mutating func apply(_ sacks: [CardSack], now: Instant) -> Double? {
        let sampled = roundTrip.count
        for sack in sacks { _ = apply(sack, now: now) }
        return roundTrip.count > sampled ? roundTrip.latest : nil
    }

    /// Applies a selective acknowledgement; returns how many chunks it newly covered.
    mutating func apply(_ sack: CardSack, now: Instant) -> Int {
        var newlyAcked = 0
        var newest: Int?
        let coveredEnd = min(total, Int(sack.cumulative) + sack.bitmap.count * 8)
        // Chunks below `lowestUnacked` are acknowledged already.
        for index in lowestUnacked..<max(coveredEnd, lowestUnacked) where sack.covers(index) && !acked[index]
        {
            acked[index] = true
            ackedCount += 1
            newlyAcked += 1
            congestion.acknowledged(sent: sentAs[index])
            // A chunk declared lost and not yet resent was counted out of flight already.
            guard sentAt[index] != nil else { continue }
            inFlight -= 1
            if newest.map({ sentAs[index] > sentAs[$0] }) ?? true { newest = index }
        }
        guard newlyAcked > 0 else { return 0 }
        settleCursors()
        // The round trip is sampled from the newest transmission acknowledged, as RFC 9002 5.1 does:
        // it most likely prompted this acknowledgement, where an older chunk's may have been lost
        // and the sample would include the wait for a later one. Karn: only from a chunk sent once.
        if let newest, let sent = sentAt[newest], largestAcknowledged.map({ sentAs[newest] > $0 }) ?? true {
            largestAcknowledged = sentAs[newest]
            if transmissions[newest] == 1 { sampleRTT((now - sent).secondsDouble) }
        }
        backoff = 0
        declareLost(now: now)
        return newlyAcked
    }

    /// Declares lost every chunk in flight sent three transmissions, or 9/8 of a round trip, before
    /// the latest one acknowledged (RFC 9002 6.1); the losses are one loss event unless they
    /// include a chunk sent after the last one began.
    private mutating func declareLost(now: Instant) {
        guard let largest = largestAcknowledged else { return }
        // Before any sample the initial timeout stands in for the round trip, as RFC 9002's
        // initial RTT does: on zero, a first acknowledgement of a chunk sent twice (no sample, by
        // Karn's rule) declared every chunk sent after it lost, on a path merely slow.
        let longest = max(roundTrip.latest ?? 0, roundTrip.smoothed ?? sampledRTO.secondsDouble)
        // Clamped before the conversion, as the round trip may come from a far-off sample.
        let delaySeconds = min(max(longest * 9 / 8, 0.001), rtoRange.upperBound.secondsDouble)
        let lossDelay = Duration.saturatingNanoseconds(delaySeconds * 1e9)
        var latestLost: CongestionController.Transmission?
        // Only chunks sent and not acknowledged can be in flight.
        // (A peer may acknowledge chunks never sent, so `lowestUnacked` can pass `sentEnd`.)
        for index in lowestUnacked..<max(sentEnd, lowestUnacked)
        where !acked[index] && sentAs[index] < largest {
            guard let sent = sentAt[index], largest - sentAs[index] >= 3 || sent + lossDelay <= now else {
                continue
            }
            sentAt[index] = nil
            inFlight -= 1
            lowestUnsent = min(lowestUnsent, index)
            latestLost = max(latestLost ?? sentAs[index], sentAs[index])
        }
        if let latestLost { congestion.lost(sent: latestLost, next: nextTransmission) }
    }

    private mutating func sampleRTT(_ sample: Double) {
        roundTrip.add(sample)
        sampledRTO = roundTrip.timeout(
            granularity: .milliseconds(10), initial: sampledRTO, range: rtoRange)
    }
}

/// Reassembles the peer's card from chunks into a buffer sized by its offer (bounded by
/// ``Limits/maxCardBytes``) and produces selective acknowledgements.
struct CardReceiver {
    let offer: CardOffer
    private var buffer: [UInt8]
    private var have: [Bool]
    private(set) var haveCount = 0
    private var cumulative = 0
    /// Chunks received since the last CARD_SACK we sent.
    var unacknowledged = 0
    /// When a delayed CARD_SACK is due.
    var sackAt: Instant?

    init(offer: CardOffer) {
        self.offer = offer
        buffer = Array(filling: 0, count: Int(offer.length))
        have = Array(filling: false, count: offer.chunkCount)
    }

    var total: Int { have.count }
    var isComplete: Bool { haveCount == total }

    /// Stores a chunk, copying it in place into the buffer sized by the offer. Duplicates are
    /// harmless (they only prompt another acknowledgement).
    /// - Throws: `.malformed` for an index or length that does not fit the offer.
    mutating func accept(index rawIndex: UInt16, data: ArraySlice<UInt8>) throws(ProtocolError) {
        let index = Int(rawIndex)
        guard index < total else {
            throw ProtocolError(.malformed, "chunk \(index) of a card with \(total) chunks")
        }
        // Checked arithmetic on the wire's index and the offer's sizes: a chunk must lie wholly
        // inside the buffer, whatever the peer sent.
        let (start, startOverflow) = index.multipliedReportingOverflow(by: Int(offer.chunkSize))
        let (remaining, remainingOverflow) = buffer.count.subtractingReportingOverflow(start)
        guard !startOverflow, !remainingOverflow, remaining > 0 else {
            throw ProtocolError(.malformed, "chunk \(index) starts beyond the card")
        }
        let expected = min(Int(offer.chunkSize), remaining)
        guard data.count == expected else {
            throw ProtocolError(.malformed, "chunk \(index) has \(data.count) bytes, expected \(expected)")
        }
        unacknowledged += 1
        guard !have[index] else { return }
        buffer.withUnsafeMutableBytes { destination in
            data.withUnsafeBytes { source in
                UnsafeMutableRawBufferPointer(rebasing: destination[start..<(start + expected)])
                    .copyMemory(from: source)
            }
        }
        have[index] = true
        haveCount += 1
        while cumulative < total && have[cumulative] { cumulative += 1 }
    }

    /// The acknowledgement of everything held: the cumulative point and a bitmap of what follows.
    func sack() -> CardSack {
        CardSack(count: total, cumulative: cumulative) { have[$0] }
    }

    /// The reassembled card bytes, once complete.
    var card: [UInt8]? { isComplete ? buffer : nil }
}

/// BLAKE2b-256, the digest that names a card.
enum BLAKE2bDigest {
    static func of(_ bytes: [UInt8]) -> [UInt8] {
        BLAKE2b.hash(bytes, outputLength: WireConstants.digestLength)
    }
}
