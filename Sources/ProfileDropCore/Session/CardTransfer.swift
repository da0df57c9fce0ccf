import ProfileDropCrypto

/// Sends our card as chunks: a bounded window in flight, paced, retransmitting chunks that a
/// selective acknowledgement skipped or whose timeout expired.
struct CardSender {
    let bytes: [UInt8]
    let offer: CardOffer
    let window: Int
    private let pacing: Duration
    private let rtoRange: ClosedRange<Duration>
    private var acked: [Bool]
    /// When each chunk was last sent; nil for never sent or declared lost.
    private var sentAt: [Instant?]
    private var transmissions: [Int]
    private(set) var ackedCount = 0
    private(set) var retransmissions = 0
    private var nextSendAt: Instant
    private var smoothedRTT: Double?
    private var rttVariance: Double = 0
    private(set) var rto: Duration

    /// The offer announcing `bytes`.
    static func offer(for bytes: [UInt8]) -> CardOffer {
        precondition(!bytes.isEmpty && bytes.count <= Int(UInt32.max), "card size")
        return CardOffer(
            length: UInt32(bytes.count), chunkSize: UInt16(WireConstants.chunkSize),
            digest: BLAKE2bDigest.of(bytes))
    }

    init(bytes: [UInt8], offer: CardOffer, window: Int, timeouts: Timeouts, now: Instant) {
        self.bytes = bytes
        self.offer = offer
        self.window = max(window, 1)
        self.pacing = timeouts.chunkPacing
        self.rtoRange = timeouts.rtoRange
        let count = offer.chunkCount
        acked = Array(repeating: false, count: count)
        sentAt = Array(repeating: nil, count: count)
        transmissions = Array(repeating: 0, count: count)
        nextSendAt = now
        rto = timeouts.initialRTO
    }

    var total: Int { acked.count }
    var isComplete: Bool { ackedCount == total }

    /// The chunk to send now, if the window and pacing allow one; marks it sent.
    mutating func takeChunk(now: Instant) -> Frame? {
        guard !isComplete, now >= nextSendAt, let index = sendable(now: now) else { return nil }
        if transmissions[index] > 0 { retransmissions += 1 }
        transmissions[index] += 1
        sentAt[index] = now
        nextSendAt = now + pacing
        let start = index * Int(offer.chunkSize)
        let end = min(start + Int(offer.chunkSize), bytes.count)
        return .cardChunk(index: UInt16(index), data: Array(bytes[start..<end]))
    }

    /// The first chunk neither acknowledged nor in flight, if fewer than `window` are in flight.
    private func sendable(now: Instant) -> Int? {
        var inFlight = 0
        var candidate: Int?
        for index in acked.indices where !acked[index] {
            if let sent = sentAt[index], sent + rto > now {
                inFlight += 1
            } else if candidate == nil {
                candidate = index
            }
        }
        return inFlight < window ? candidate : nil
    }

    /// When the sender next has something to do.
    func nextDeadline(now: Instant) -> Instant? {
        guard !isComplete else { return nil }
        if sendable(now: now) != nil { return max(nextSendAt, now) }
        // Window full: the earliest in-flight chunk's timeout frees a slot.
        var earliest: Instant?
        for index in acked.indices where !acked[index] {
            if let sent = sentAt[index] {
                let expiry = sent + rto
                if earliest.map({ expiry < $0 }) ?? true { earliest = expiry }
            }
        }
        return earliest.map { max($0, nextSendAt) }
    }

    /// Applies a selective acknowledgement; returns how many chunks it newly covered.
    mutating func apply(_ sack: CardSack, now: Instant) -> Int {
        var newlyAcked = 0
        var highestAcked: Int?
        let coveredEnd = min(total, Int(sack.cumulative) + sack.bitmap.count * 8)
        for index in 0..<coveredEnd where sack.covers(index) {
            highestAcked = index
            guard !acked[index] else { continue }
            acked[index] = true
            ackedCount += 1
            newlyAcked += 1
            // Karn: only chunks sent once give an unambiguous round-trip sample.
            if transmissions[index] == 1, let sent = sentAt[index] { sampleRTT((now - sent).secondsDouble) }
        }
        // A chunk sent before one acknowledged three places later was lost: resend it now.
        if let highest = highestAcked, let highestSent = sentAt[highest] {
            for index in 0..<max(highest - 2, 0) where !acked[index] {
                if let sent = sentAt[index], sent < highestSent { sentAt[index] = nil }
            }
        }
        return newlyAcked
    }

    private mutating func sampleRTT(_ sample: Double) {
        if let smoothed = smoothedRTT {
            rttVariance = 0.75 * rttVariance + 0.25 * abs(smoothed - sample)
            smoothedRTT = 0.875 * smoothed + 0.125 * sample
        } else {
            smoothedRTT = sample
            rttVariance = sample / 2
        }
        // Clamped in seconds before the conversion: a sample from a far-off time (a replayed or
        // fuzzed capture) would not fit in Int64 nanoseconds.
        let seconds = min(
            (smoothedRTT ?? sample) + max(4 * rttVariance, 0.01), rtoRange.upperBound.secondsDouble)
        let candidate = Duration.nanoseconds(Int64(max(seconds, 0) * 1e9))
        rto = min(max(candidate, rtoRange.lowerBound), rtoRange.upperBound)
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
        buffer = Array(repeating: 0, count: Int(offer.length))
        have = Array(repeating: false, count: offer.chunkCount)
    }

    var total: Int { have.count }
    var isComplete: Bool { haveCount == total }

    /// Stores a chunk, copying it in place into the buffer sized by the offer. Duplicates are
    /// harmless (they only prompt another acknowledgement).
    /// - Throws: `.malformed` for an index or length that does not fit the offer.
    mutating func accept(index rawIndex: UInt16, data: [UInt8]) throws(ProtocolError) {
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
        var bitmap: [UInt8] = []
        var index = cumulative
        while index < total && bitmap.count < WireConstants.maxSackBitmap {
            var byte: UInt8 = 0
            for bit in 0..<8 where index + bit < total && have[index + bit] { byte |= 0x80 >> UInt8(bit) }
            bitmap.append(byte)
            index += 8
        }
        while bitmap.last == 0 { bitmap.removeLast() }
        return CardSack(cumulative: UInt16(min(cumulative, Int(UInt16.max))), bitmap: bitmap)
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
