import Testing

@testable import ProfileDropCore

@Suite struct CongestionControllerTests {
    @Test func theWindowDoublesEveryRoundTripOnACleanPath() {
        var controller = CongestionController(maximumWindow: 64)
        #expect(controller.window == CongestionController.initialWindow)
        var sent = 0
        // One round trip: the whole window is sent, then acknowledged.
        for expected in [20, 40, 64] {
            let flight = controller.window
            for transmission in sent..<(sent + flight) { controller.acknowledged(sent: transmission) }
            sent += flight
            #expect(controller.window == expected)
        }
        #expect(controller.inSlowStart, "the cap stops growth, not a loss")
    }

    @Test func aLossEventHalvesTheWindowOnceThenItGrowsByOneChunkPerWindow() {
        var controller = CongestionController(maximumWindow: 64)
        for transmission in 0..<22 { controller.acknowledged(sent: transmission) }
        #expect(controller.window == 32)
        // Transmissions 22...53 are in flight; several of them are lost, one event.
        let first = controller.lost(sent: 25, next: 54)
        #expect(first)
        #expect(controller.window == 16 && !controller.inSlowStart)
        let sameEvent = [controller.lost(sent: 30, next: 55), controller.lost(sent: 53, next: 56)]
        #expect(sameEvent == [false, false], "losses sent before recovery began are the same event")
        #expect(controller.window == 16)
        // Chunks sent before recovery began do not grow the window either.
        for transmission in 26..<54 { controller.acknowledged(sent: transmission) }
        #expect(controller.window == 16)
        // Congestion avoidance: one chunk more per window acknowledged.
        for transmission in 54..<70 { controller.acknowledged(sent: transmission) }
        #expect(controller.window == 17)
        for transmission in 70..<86 { controller.acknowledged(sent: transmission) }
        #expect(controller.window == 17)
        controller.acknowledged(sent: 86)
        #expect(controller.window == 18)
        // A loss of a chunk sent after recovery began is a new event.
        let second = controller.lost(sent: 80, next: 90)
        #expect(second)
        #expect(controller.window == 9)
        controller.persistentCongestion(next: 91)
        #expect(controller.window == CongestionController.minimumWindow)
        for transmission in 91..<93 { controller.acknowledged(sent: transmission) }
        #expect(controller.window == 4, "slow start again, up to the threshold the loss left")
    }

    @Test func thePacerAllowsABurstThenSpacesChunks() {
        var pacer = Pacer(now: .zero)
        let interval = Duration.microseconds(100)
        for _ in 0..<CongestionController.burst {
            #expect(pacer.allows(now: .zero, interval: interval))
            pacer.sent(now: .zero, interval: interval)
        }
        #expect(!pacer.allows(now: .zero, interval: interval))
        #expect(pacer.nextSendAt(now: .zero, interval: interval) == Instant.zero + interval)
        // After a pause the credit is the burst again, no more.
        let later = Instant.zero + .seconds(1)
        var sent = 0
        while pacer.allows(now: later, interval: interval) {
            pacer.sent(now: later, interval: interval)
            sent += 1
        }
        #expect(sent == CongestionController.burst)
        // The interval spreads 1.25 windows over the smoothed round trip.
        let controller = CongestionController(maximumWindow: 32)
        let gap = controller.pacingInterval(
            smoothedRTT: 0.025, initialGap: .milliseconds(2), ceiling: .seconds(2))
        #expect(gap == .milliseconds(2), "25 ms over 12.5 chunks")
        #expect(
            controller.pacingInterval(smoothedRTT: nil, initialGap: .milliseconds(2), ceiling: .seconds(2))
                == .milliseconds(2))
    }

    @Test func theTimeoutProbesAndDoublesOnTimeoutsInARowAndResetsOnAnAcknowledgement() {
        let data = CardTransferTests.bytes(40 * 1120)
        var sender = CardTransferTests.sender(data, window: 10)
        var now = Instant.zero
        // A first round trip of 10 ms sets the timeout to 10 ms + 4 × 5 ms → its 50 ms lower bound.
        _ = sender.takeChunk(now: now)
        now = now + .milliseconds(10)
        #expect(sender.apply(CardSack(cumulative: 1, bitmap: []), now: now) == 1)
        #expect(sender.rto == .milliseconds(50))
        var sent = 0
        while sender.takeChunk(now: now) != nil { sent += 1 }
        #expect(sent == 10)
        // Nothing comes back. The timeout sends two probes, new chunks while there are some, and
        // doubles; the window stays, as nothing is known lost yet.
        now = now + .milliseconds(50)
        #expect(sender.nextDeadline(now: now) == now)
        var probes: [Int] = []
        while case .cardChunk(let index, _) = sender.takeChunk(now: now) { probes.append(Int(index)) }
        #expect(probes == [11, 12])
        #expect(sender.backoff == 1 && sender.rto == .milliseconds(100))
        #expect(sender.congestion.window == 10)
        #expect(sender.nextDeadline(now: now) == now + .milliseconds(100))
        // A second timeout in a row is persistent congestion.
        now = now + .milliseconds(100)
        while case .cardChunk(let index, _) = sender.takeChunk(now: now) { probes.append(Int(index)) }
        #expect(probes == [11, 12, 13, 14])
        #expect(sender.backoff == 2 && sender.rto == .milliseconds(200))
        #expect(sender.congestion.window == CongestionController.minimumWindow)
        // The back-off never passes the upper bound.
        for _ in 0..<10 {
            now = now + sender.rto
            while case .cardChunk(let index, _) = sender.takeChunk(now: now) { probes.append(Int(index)) }
        }
        #expect(probes.count == 24 && sender.rto == Timeouts().rtoRange.upperBound)
        // An acknowledgement of the last probe ends the back-off and shows the older chunks lost.
        let last = probes[probes.count - 1] - 1
        var bitmap = [UInt8](repeating: 0, count: last / 8 + 1)
        bitmap[last / 8] = 0x80 >> UInt8(last % 8)
        #expect(sender.apply(CardSack(cumulative: 1, bitmap: bitmap), now: now) == 1)
        #expect(sender.backoff == 0 && sender.rto == .milliseconds(50))
        var resent: [Int] = []
        while case .cardChunk(let index, _) = sender.takeChunk(now: now) { resent.append(Int(index)) }
        #expect(resent == [1, 2, 3], "the collapsed window, less the probe still in flight")
    }
}
