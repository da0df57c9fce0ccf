import ProfileDropCrypto
import Testing

@testable import ProfileDropCore

@Suite struct CardTransferTests {
    static func bytes(_ count: Int, seed: UInt64 = 1) -> [UInt8] {
        var random = DeterministicRandom(seed: seed)
        return random.bytes(count)
    }

    static func sender(_ data: [UInt8], window: Int = 8) -> CardSender {
        CardSender(
            bytes: data, offer: CardSender.offer(for: data), window: window, timeouts: Timeouts(), now: .zero)
    }

    @Test func offerDescribesTheCard() {
        let data = Self.bytes(2500)
        let offer = CardSender.offer(for: data)
        #expect(offer.length == 2500 && offer.chunkSize == 1120 && offer.chunkCount == 3)
        #expect(offer.digest == BLAKE2b.hash(data, outputLength: 32))
        #expect(
            Frame.cardChunk(index: 0, data: ArraySlice(repeating: 0, count: 1120)).encodedSize + 22 + 16
                <= 1200)
    }

    @Test func aZeroRetransmissionTimeoutStillWaitsForTimeToPass() {
        var timeouts = Timeouts()
        timeouts.initialRTO = .zero
        timeouts.rtoRange = .zero ... .zero
        let data = Self.bytes(5000)
        var sender = CardSender(
            bytes: data, offer: CardSender.offer(for: data), window: 8, timeouts: timeouts, now: .zero)
        #expect(sender.rto == CardSender.minimumRTO)
        // At each instant the sender runs dry: the loop is bounded only to fail rather than hang.
        var now = Instant.zero
        for step in 0..<20 {
            var sent = 0
            while sent < 1000, sender.takeChunk(now: now) != nil { sent += 1 }
            #expect(sent < 1000, "at step \(step) the sender kept sending at one instant")
            if step == 0 { #expect(sent == sender.total, "every chunk once at the start") }
            now = now + .microseconds(500)
        }
        #expect(sender.rto == CardSender.minimumRTO)
    }

    @Test func senderRespectsWindowAndPacing() {
        var sender = Self.sender(Self.bytes(40_000), window: 4)
        var now = Instant.zero
        var sent: [Int] = []
        // The window caps what the initial burst may put in flight.
        while case .cardChunk(let index, _) = sender.takeChunk(now: now) { sent.append(Int(index)) }
        #expect(sent == [0, 1, 2, 3], "the window holds four chunks in flight")
        now = now + .milliseconds(50)
        #expect(sender.takeChunk(now: now) == nil)
        // Acknowledging two frees two slots.
        #expect(sender.apply(CardSack(cumulative: 2, bitmap: []), now: now) == 2)
        while case .cardChunk(let index, _) = sender.takeChunk(now: now) { sent.append(Int(index)) }
        #expect(sent.suffix(2) == [4, 5])

        // With room in the window, a burst of the initial window leaves at once, then the pacer
        // spreads the rest over the round trip as the window opens.
        var wide = Self.sender(Self.bytes(40_000), window: 32)
        var burst = 0
        while wide.takeChunk(now: .zero) != nil { burst += 1 }
        #expect(burst == CongestionController.burst)
        #expect(
            wide.nextDeadline(now: .zero) == Instant.zero + Timeouts().initialRTO,
            "the window is full until the timeout")
    }

    /// An acknowledgement stamped at the far end of time (a hostile or edited capture fed to replay)
    /// gives an enormous round-trip sample; the timeout must stay within its bounds, not trap.
    @Test func aRoundTripSampleFromTheFarFutureIsClamped() {
        var sender = Self.sender(Self.bytes(3000))
        _ = sender.takeChunk(now: .zero)
        let farFuture = Instant(nanoseconds: .max)
        #expect(sender.apply(CardSack(cumulative: 1, bitmap: []), now: farFuture) == 1)
        _ = sender.takeChunk(now: farFuture)
        #expect(sender.apply(CardSack(cumulative: 2, bitmap: []), now: farFuture) == 1)
    }

    @Test func lostChunksAreResentAfterTheTimeoutOrASelectiveGap() {
        var sender = Self.sender(Self.bytes(8 * 1120), window: 8)
        var now = Instant.zero
        for _ in 0..<8 {
            _ = sender.takeChunk(now: now)
            now = now + .milliseconds(2)
        }
        // Chunks 1..7 acknowledged, 0 missing: a gap of more than three declares 0 lost at once.
        let sack = CardSack(cumulative: 0, bitmap: [0x7F])
        #expect(sender.apply(sack, now: now) == 7)
        guard case .cardChunk(let index, _) = sender.takeChunk(now: now) else {
            Issue.record("chunk 0 was not resent")
            return
        }
        #expect(index == 0 && sender.retransmissions == 1)
        // Without an acknowledgement it is resent again once its timeout expires.
        #expect(sender.takeChunk(now: now + .milliseconds(2)) == nil)
        let later = now + sender.rto + .milliseconds(1)
        if case .cardChunk(let again, _) = sender.takeChunk(now: later) {
            #expect(again == 0)
        } else {
            Issue.record("chunk 0 was not resent after its timeout")
        }
        #expect(sender.apply(CardSack(cumulative: 8, bitmap: []), now: later) == 1)
        #expect(sender.isComplete && sender.nextDeadline(now: later) == nil)
    }

    /// Before any round-trip sample, the time threshold for declaring a chunk lost stands on the
    /// initial timeout, as RFC 9002 6.1.2 stands it on its initial RTT, not on zero: when the first
    /// acknowledgement covers only a chunk sent twice (Karn's rule takes no sample from it), the
    /// chunks sent just after it are still in flight on a slow path, not lost, and declaring them
    /// lost would resend them and halve the window for nothing.
    @Test func withoutARoundTripSampleChunksInFlightAreNotDeclaredLostAtOnce() {
        var sender = Self.sender(Self.bytes(4 * 1120), window: 8)
        var now = Instant.zero
        var sent: [Int] = []
        while sent.count < 4, now < Instant.zero + .milliseconds(200) {
            if case .cardChunk(let index, _) = sender.takeChunk(now: now) { sent.append(Int(index)) }
            now = now + .milliseconds(1)
        }
        #expect(sent == [0, 1, 2, 3])
        // A path slower than the initial timeout: the probes resend chunks 0 and 1.
        let probeTime = Instant.zero + .milliseconds(320)
        var probed: [Int] = []
        for _ in 0..<2 {
            if case .cardChunk(let index, _) = sender.takeChunk(now: probeTime) { probed.append(Int(index)) }
        }
        #expect(probed == [0, 1] && sender.retransmissions == 2)
        // The first transmission of chunk 0 is acknowledged, 330 ms after it left.
        let ackTime = Instant.zero + .milliseconds(330)
        #expect(sender.apply(CardSack(cumulative: 1, bitmap: []), now: ackTime) == 1)
        #expect(sender.roundTrip.count == 0, "chunk 0 went out twice: no sample")
        #expect(sender.takeChunk(now: ackTime) == nil, "chunks 2 and 3 are in flight, not lost")
        #expect(sender.retransmissions == 2)
        // Their own acknowledgements follow: no loss was declared, nothing was resent.
        #expect(sender.apply(CardSack(cumulative: 4, bitmap: []), now: ackTime + .milliseconds(5)) == 3)
        #expect(sender.isComplete && sender.retransmissions == 2)
    }

    /// A peer may acknowledge chunks we never sent (a buggy or hostile one): they count as
    /// delivered, the rest are still sent in order, and nothing traps.
    @Test func acknowledgementsOfChunksNeverSentAreTakenWithoutATrap() {
        var sender = Self.sender(Self.bytes(10 * 1120), window: 2)
        guard case .cardChunk(let first, _) = sender.takeChunk(now: .zero) else {
            Issue.record("no first chunk")
            return
        }
        #expect(first == 0)
        // Chunks 0 to 5 acknowledged, and 7: five of them were never sent.
        #expect(sender.apply(CardSack(cumulative: 6, bitmap: [0x40]), now: .zero + .milliseconds(5)) == 7)
        var later: [Int] = []
        var now = Instant.zero + .milliseconds(5)
        for _ in 0..<50 where !sender.isComplete {
            while case .cardChunk(let index, _) = sender.takeChunk(now: now) {
                later.append(Int(index))
                #expect(sender.apply(CardSack(cumulative: UInt16(index + 1), bitmap: []), now: now) >= 1)
            }
            now = now + .milliseconds(20)
        }
        #expect(later == [6, 8, 9])
        #expect(sender.isComplete && sender.retransmissions == 0)
    }

    @Test func receiverReassemblesOutOfOrderAndAcknowledgesSelectively() throws {
        let data = Self.bytes(10 * 1120 + 17)
        let offer = CardSender.offer(for: data)
        var receiver = CardReceiver(offer: offer)
        let order = [3, 0, 10, 1, 7, 3, 2]
        for index in order {
            let start = index * 1120
            try receiver.accept(
                index: UInt16(index), data: data[start..<min(start + 1120, data.count)])
        }
        let sack = receiver.sack()
        #expect(sack.cumulative == 4)
        for index in 0..<11 {
            #expect(sack.covers(index) == [0, 1, 2, 3, 7, 10].contains(index), "\(index)")
        }
        #expect(receiver.haveCount == 6 && receiver.card == nil)
        for index in [4, 5, 6, 8, 9] {
            let start = index * 1120
            try receiver.accept(index: UInt16(index), data: data[start..<start + 1120])
        }
        #expect(receiver.card == data)
        #expect(receiver.sack() == CardSack(cumulative: 11, bitmap: []))
    }

    @Test func receiverRejectsChunksThatDoNotFitTheOffer() {
        let offer = CardSender.offer(for: Self.bytes(1500))
        var receiver = CardReceiver(offer: offer)
        #expect(throws: ProtocolError.self) { try receiver.accept(index: 2, data: [1]) }
        #expect(throws: ProtocolError.self) { try receiver.accept(index: 0, data: [1, 2, 3]) }
        #expect(throws: ProtocolError.self) {
            try receiver.accept(index: 1, data: ArraySlice(repeating: 0, count: 381))
        }
        #expect(receiver.haveCount == 0)
    }

    @Test func receiverKeepsTheFirstCopyOfAChunkAndChecksOddOffers() throws {
        let data = Self.bytes(7)
        // A peer may choose any chunk size: three-byte chunks, the last one a single byte.
        let offer = CardOffer(length: 7, chunkSize: 3, digest: BLAKE2bDigest.of(data))
        var receiver = CardReceiver(offer: offer)
        #expect(receiver.total == 3)
        try receiver.accept(index: 2, data: [data[6]])
        try receiver.accept(index: 0, data: data[0..<3])
        // A duplicate is acknowledged again but does not overwrite what is held.
        try receiver.accept(index: 0, data: [0, 0, 0])
        #expect(receiver.unacknowledged == 3 && receiver.haveCount == 2)
        #expect(throws: ProtocolError.self) { try receiver.accept(index: 2, data: [1, 2]) }
        #expect(throws: ProtocolError.self) { try receiver.accept(index: UInt16.max, data: [1]) }
        try receiver.accept(index: 1, data: data[3..<6])
        #expect(receiver.card == data)
        // The largest index and chunk size the wire allows do not overflow the arithmetic.
        var wide = CardReceiver(offer: CardOffer(length: 70_000, chunkSize: UInt16.max, digest: []))
        #expect(throws: ProtocolError.self) { try wide.accept(index: UInt16.max, data: [1]) }
        try wide.accept(index: 1, data: ArraySlice(repeating: 9, count: 70_000 - 65_535))
        #expect(wide.haveCount == 1)
    }

    /// Sends a 256 KiB card (and a little more) over a link that loses `loss` of the chunks and of
    /// the acknowledgements, 10 ms each way, with a receiver that acknowledges as the protocol does
    /// (every second chunk at once, a lone one after the SACK delay).
    /// - Returns: chunk transmissions per chunk of the card, timeouts, and when the last chunk was
    ///   acknowledged.
    static func transferOverLossyLink(loss: Double, seed: UInt64) throws -> (
        ratio: Double, timeouts: Int, done: Instant
    ) {
        let data = Self.bytes(262_144 + 300, seed: 4)
        var sender = Self.sender(data, window: 32)
        var receiver = CardReceiver(offer: sender.offer)
        var random = DeterministicRandom(seed: seed)
        let oneWay = Duration.milliseconds(10)
        var now = Instant.zero
        var inFlight: [(at: Instant, frame: Frame)] = []
        var acks: [(at: Instant, sack: CardSack)] = []
        var datagrams = 0
        while !sender.isComplete && now < Instant.zero + .seconds(60) {
            for ack in acks where ack.at <= now { _ = sender.apply(ack.sack, now: now) }
            acks.removeAll { $0.at <= now }
            while let chunk = sender.takeChunk(now: now) {
                datagrams += 1
                if random.unitDouble() >= loss { inFlight.append((now + oneWay, chunk)) }
            }
            for delivery in inFlight where delivery.at <= now {
                if case .cardChunk(let index, let bytes) = delivery.frame {
                    try receiver.accept(index: index, data: bytes)
                }
            }
            inFlight.removeAll { $0.at <= now }
            if receiver.unacknowledged >= 2 || receiver.isComplete && receiver.unacknowledged > 0 {
                receiver.sackAt = nil
            } else if receiver.unacknowledged == 1 && receiver.sackAt == nil {
                receiver.sackAt = now + Timeouts().sackDelay
            }
            if receiver.unacknowledged > 0 && (receiver.sackAt.map { $0 <= now } ?? true) {
                receiver.unacknowledged = 0
                receiver.sackAt = nil
                if random.unitDouble() >= loss { acks.append((now + oneWay, receiver.sack())) }
            }
            now = now + .microseconds(250)
        }
        #expect(sender.isComplete)
        #expect(receiver.card == data)
        return (Double(datagrams) / Double(sender.total), sender.probes, now)
    }

    @Test func aCleanLinkSendsEveryChunkOnceAndFast() throws {
        let (ratio, timeouts, done) = try Self.transferOverLossyLink(loss: 0, seed: 1)
        #expect(ratio == 1 && timeouts == 0, "no chunk is resent on a clean link")
        // 235 chunks at a 20 ms round trip: slow start from 10 chunks reaches the 32-chunk window
        // in two round trips, then about seven more round trips of full windows.
        #expect(done < Instant.zero + .milliseconds(250), "took \(done)")
    }

    /// At 30 % loss each way a chunk needs 1 / 0.7 ≈ 1.43 transmissions on average; the sender stays
    /// close to that, neither resending what arrived nor giving up what it sent too early.
    @Test(arguments: [77, 78, 79, 80] as [UInt64])
    func thirtyPercentLossStaysNearTheMinimumOfTransmissions(seed: UInt64) throws {
        let (ratio, timeouts, done) = try Self.transferOverLossyLink(loss: 0.3, seed: seed)
        print(
            "30 % loss, seed \(seed): \(ratio) transmissions per chunk, \(timeouts) timeouts, done at \(done)"
        )
        #expect(ratio <= 1.6, "\(ratio) transmissions per chunk")
    }
}
