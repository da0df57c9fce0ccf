import ProfileDropCore
import ProfileDropCrypto
import Testing

@testable import ProfileDropTransport

/// A device that only queues the datagrams the test gives it.
private struct QueueDevice: SansIODevice {
    var outbox: [OutgoingDatagram] = []
    var deviceID: DeviceID { DeviceID(rawValue: 1) }
    var nextDeadline: Instant? { nil }
    var isClosed: Bool { false }
    mutating func handleDatagram(_ bytes: [UInt8], from source: PeerAddress, at time: Instant) {}
    mutating func handleTimeout(at time: Instant) {}
    mutating func updatePose(_ pose: Pose, at time: Instant) {}
    mutating func decide(_ decision: ConsentDecision, at time: Instant) {}
    mutating func decide(_ decision: ConsentDecision, for peer: DeviceID, at time: Instant) {}
    mutating func cancel(at time: Instant) {}
    mutating func pollTransmit() -> OutgoingDatagram? { outbox.isEmpty ? nil : outbox.removeFirst() }
    mutating func pollEvent() -> DeviceEvent? { nil }
}

@Suite struct ImpairedDeviceTests {
    static func drained(_ impairment: SendImpairment, count: Int) -> (sent: [UInt8], dropped: Int) {
        let outbox = (0..<count).map { OutgoingDatagram(destination: .multicast, bytes: [UInt8($0)]) }
        var device = ImpairedDevice(QueueDevice(outbox: outbox), impairment: impairment)
        var sent: [UInt8] = []
        while let datagram = device.pollTransmit() { sent += datagram.bytes }
        return (sent, device.droppedDatagrams)
    }

    @Test func anInactiveImpairmentPassesEverythingInOrder() {
        let result = Self.drained(SendImpairment(), count: 50)
        #expect(result.sent == (0..<50).map { UInt8($0) })
        #expect(result.dropped == 0)
    }

    @Test func lossAndDuplicationAreSeededAndAccounted() {
        let impairment = SendImpairment(loss: 0.3, duplication: 0.2, seed: 7)
        let first = Self.drained(impairment, count: 200)
        #expect(first == Self.drained(impairment, count: 200))
        let distinct = Set(first.sent)
        #expect(distinct.count + first.dropped == 200)
        #expect((30...90).contains(first.dropped))
        // Every duplicate follows its original at once, and order is kept.
        #expect(first.sent == first.sent.sorted())
        #expect(first.sent.count > distinct.count)
    }
}
