import ProfileDropCore
import ProfileDropCrypto
import Testing

@testable import ProfileDropSimulator

/// A room's copies in flight, a multicast's kept as one sorted batch: popped in exactly the order
/// of one event queue of copies.
@Suite struct FlightQueueTests {
    static func copy(_ number: UInt64, to recipient: Int) -> InFlightDatagram {
        InFlightDatagram(
            number: number, source: 0, sourceAddress: Simulation.address(ofNode: 0), recipient: recipient,
            multicast: true, sentAt: .zero, bytes: [UInt8(truncatingIfNeeded: number)], altered: false)
    }

    @Test func batchesAndSinglesPopInTheOrderOfOneQueue() {
        var random = DeterministicRandom(seed: 5)
        var flights = FlightQueue()
        var reference = EventQueue<InFlightDatagram>()
        var now = Instant.zero
        var number: UInt64 = 0
        var popped = 0
        for _ in 0..<300 {
            // A send: a multicast batch, a single copy, or an empty batch (every copy lost).
            let kind = random.uniform(below: 3)
            if kind != 1 { flights.beginBatch() }
            let copies = kind == 0 ? Int(random.uniform(below: 40)) : (kind == 1 ? 1 : 0)
            for recipient in 0..<copies {
                // Few distinct times, so that ties between batches and within one are common.
                let time = now + .microseconds(Int64(random.uniform(below: 4)) * 500)
                let copy = Self.copy(number, to: recipient)
                flights.schedule(copy, at: time)
                reference.schedule(copy, at: time)
            }
            if kind != 1 { flights.endBatch() }
            number += 1
            #expect(flights.count == reference.count)
            // Some of what is due, as a room steps between sends.
            for _ in 0..<random.uniform(below: 30) {
                guard let expected = reference.pop() else { break }
                #expect(flights.nextTime == expected.time)
                let copy = flights.pop()
                #expect(
                    copy?.number == expected.payload.number && copy?.recipient == expected.payload.recipient)
                now = max(now, expected.time)
                popped += 1
            }
        }
        while let expected = reference.pop() {
            let copy = flights.pop()
            #expect(copy?.number == expected.payload.number && copy?.recipient == expected.payload.recipient)
            popped += 1
        }
        #expect(flights.pop() == nil && flights.count == 0 && flights.nextTime == nil)
        #expect(popped > 1_000)
    }
}
