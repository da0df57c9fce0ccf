import ProfileDropCore
import ProfileDropCrypto
import Testing

@testable import ProfileDropSimulator

/// A tiny test-only protocol node: a client retransmits a numbered ping every 50 ms until the
/// server's matching pong arrives; the server answers every ping it receives.
private struct PingNode {
    let isServer: Bool
    var nextPing: UInt8 = 0
    var completed: [UInt8] = []
    var retransmitAt: Instant? = nil

    mutating func start(at now: Instant, network: inout SimulatedNetwork, node: Int) {
        guard !isServer else { return }
        network.send([0x50, nextPing], from: node, to: .unicast(1), at: now)
        retransmitAt = now + .milliseconds(50)
    }

    mutating func receive(_ delivery: Delivery, network: inout SimulatedNetwork) {
        guard delivery.bytes.count == 2 else { return }
        if isServer, delivery.bytes[0] == 0x50 {
            network.send(
                [0x51, delivery.bytes[1]], from: delivery.recipient, to: .unicast(delivery.source),
                at: delivery.time)
        } else if !isServer, delivery.bytes[0] == 0x51, delivery.bytes[1] == nextPing {
            completed.append(nextPing)
            nextPing &+= 1
            retransmitAt = nil
            if completed.count < 20 { start(at: delivery.time, network: &network, node: delivery.recipient) }
        }
    }
}

private func deliveryLog(seed: UInt64, faults: NetworkFaults, sends: Int = 300) -> [String] {
    var network = SimulatedNetwork(nodeCount: 4, faults: faults, random: DeterministicRandom(seed: seed))
    for index in 0..<sends {
        let time = Instant(nanoseconds: UInt64(index) * 1_000_000)
        let destination: NetworkDestination = index % 3 == 0 ? .multicast : .unicast((index + 1) % 4)
        network.send([UInt8(truncatingIfNeeded: index)], from: index % 4, to: destination, at: time)
    }
    var log: [String] = []
    while let delivery = network.nextDelivery(notAfter: Instant(nanoseconds: .max)) {
        log.append(
            "\(delivery.time.nanoseconds) \(delivery.source)->\(delivery.recipient)"
                + " #\(delivery.datagramNumber)"
        )
    }
    return log
}

private let faulty = NetworkFaults(
    delay: .milliseconds(3), jitter: .milliseconds(2), lossRate: 0.2, duplicationRate: 0.1, reorderRate: 0.2,
    reorderDelay: .milliseconds(20))

@Suite struct SimulatedNetworkTests {
    @Test func sameSeedSameDeliveries() {
        let first = deliveryLog(seed: 42, faults: faulty)
        let second = deliveryLog(seed: 42, faults: faulty)
        #expect(first.count > 100)
        #expect(first == second)
        #expect(deliveryLog(seed: 43, faults: faulty) != first)
    }

    @Test func multicastReachesEveryoneButTheSender() {
        var network = SimulatedNetwork(nodeCount: 5, faults: .none, random: DeterministicRandom(seed: 1))
        network.send([1, 2, 3], from: 2, to: .multicast, at: .zero)
        var recipients: [Int] = []
        while let delivery = network.nextDelivery(notAfter: Instant(nanoseconds: .max)) {
            #expect(delivery.time == Instant.zero + .milliseconds(2))
            #expect(delivery.bytes == [1, 2, 3])
            recipients.append(delivery.recipient)
        }
        #expect(recipients == [0, 1, 3, 4])
        #expect(network.statistics.sentDatagrams == [0, 0, 1, 0, 0])
        #expect(network.statistics.sentBytes == [0, 0, 3, 0, 0])
        #expect(network.statistics.totalDeliveredDatagrams == 4)
    }

    @Test func unicastToUnknownAddressVanishes() {
        var network = SimulatedNetwork(nodeCount: 2, faults: .none, random: DeterministicRandom(seed: 1))
        network.send([9], from: 0, to: .unicast(7), at: .zero)
        #expect(network.inFlight == 0)
        #expect(network.statistics.totalSentDatagrams == 1)
    }

    @Test func deliveriesWaitForTheirTime() {
        var network = SimulatedNetwork(
            nodeCount: 2, faults: NetworkFaults(delay: .milliseconds(10)),
            random: DeterministicRandom(seed: 1))
        network.send([9], from: 0, to: .unicast(1), at: .zero)
        #expect(network.nextDelivery(notAfter: Instant.zero + .milliseconds(9)) == nil)
        #expect(network.nextDeliveryTime == Instant.zero + .milliseconds(10))
        #expect(network.nextDelivery(notAfter: Instant.zero + .milliseconds(10))?.recipient == 1)
    }

    @Test func lossDuplicationAndReorderRatesRoughlyMatch() {
        let faults = NetworkFaults(
            delay: .milliseconds(5), lossRate: 0.3, duplicationRate: 0.1, reorderRate: 0.2,
            reorderDelay: .milliseconds(50))
        var network = SimulatedNetwork(nodeCount: 2, faults: faults, random: DeterministicRandom(seed: 7))
        let sends = 20_000
        for index in 0..<sends {
            let bytes = [UInt8(truncatingIfNeeded: index >> 8), UInt8(truncatingIfNeeded: index)]
            network.send(bytes, from: 0, to: .unicast(1), at: Instant(nanoseconds: UInt64(index) * 1_000_000))
        }
        var arrivals: [Int] = []
        while let delivery = network.nextDelivery(notAfter: Instant(nanoseconds: .max)) {
            arrivals.append(Int(delivery.bytes[0]) << 8 | Int(delivery.bytes[1]))
        }
        let stats = network.statistics
        let lossRate = Double(stats.lost) / Double(sends)
        let duplicateRate = Double(stats.duplicated) / Double(sends - stats.lost)
        let reorderRate = Double(stats.reordered) / Double(sends - stats.lost)
        #expect(abs(lossRate - 0.3) < 0.02)
        #expect(abs(duplicateRate - 0.1) < 0.015)
        #expect(abs(reorderRate - 0.2) < 0.02)
        #expect(arrivals.count == sends - stats.lost + stats.duplicated)
        // Sent 1 ms apart, so a held-back copy (up to 50 ms) is overtaken by later ones.
        let inversions = zip(arrivals, arrivals.dropFirst()).filter { $0 > $1 }.count
        #expect(inversions > sends / 20)
    }

    @Test func corruptionFlipsExactlyOneBit() {
        var faults = NetworkFaults(delay: .milliseconds(1))
        faults.corruptionRate = 0.25
        var network = SimulatedNetwork(nodeCount: 2, faults: faults, random: DeterministicRandom(seed: 8))
        let original = [UInt8](repeating: 0x5A, count: 64)
        for index in 0..<4000 {
            network.send(original, from: 0, to: .unicast(1), at: Instant(nanoseconds: UInt64(index) * 1000))
        }
        var flippedCopies = 0
        while let delivery = network.nextDelivery(notAfter: Instant(nanoseconds: .max)) {
            let flippedBits = zip(delivery.bytes, original).map { ($0 ^ $1).nonzeroBitCount }.reduce(0, +)
            #expect(flippedBits <= 1)
            flippedCopies += flippedBits
        }
        #expect(flippedCopies == network.statistics.corrupted)
        #expect(abs(Double(flippedCopies) / 4000 - 0.25) < 0.025)
    }

    @Test func noFaultsMeansNoReordering() {
        var network = SimulatedNetwork(
            nodeCount: 2, faults: NetworkFaults(delay: .milliseconds(5)), random: DeterministicRandom(seed: 7)
        )
        for index in 0..<500 {
            network.send(
                [UInt8(index % 256), UInt8(index / 256)], from: 0, to: .unicast(1),
                at: Instant(nanoseconds: UInt64(index) * 1000))
        }
        var arrivals: [Int] = []
        while let delivery = network.nextDelivery(notAfter: Instant(nanoseconds: .max)) {
            arrivals.append(Int(delivery.bytes[0]) + 256 * Int(delivery.bytes[1]))
        }
        #expect(arrivals == Array(0..<500))
    }

    @Test func partitionCutsOffTheIsolatedSideOnlyDuringItsWindow() {
        let partition = Partition(
            isolated: [0, 1], start: Instant.zero + .seconds(1), end: Instant.zero + .seconds(2))
        let faults = NetworkFaults(delay: .milliseconds(2), partitions: [partition])
        var network = SimulatedNetwork(nodeCount: 4, faults: faults, random: DeterministicRandom(seed: 3))
        func multicastRecipients(from source: Int, at seconds: Double) -> [Int] {
            let time = Instant(nanoseconds: UInt64(seconds * 1e9))
            network.send([0], from: source, to: .multicast, at: time)
            var recipients: [Int] = []
            while let delivery = network.nextDelivery(notAfter: time + .milliseconds(10)) {
                recipients.append(delivery.recipient)
            }
            return recipients
        }
        #expect(multicastRecipients(from: 0, at: 0.5) == [1, 2, 3])
        #expect(multicastRecipients(from: 0, at: 1.5) == [1])
        #expect(multicastRecipients(from: 2, at: 1.5) == [3])
        #expect(multicastRecipients(from: 3, at: 2.5) == [0, 1, 2])
        #expect(network.statistics.partitioned == 4)
    }

    @Test func partitionDropsDatagramsAlreadyInFlight() {
        let partition = Partition(isolated: [1], start: Instant.zero + .milliseconds(5), end: nil)
        let faults = NetworkFaults(delay: .milliseconds(10), partitions: [partition])
        var network = SimulatedNetwork(nodeCount: 2, faults: faults, random: DeterministicRandom(seed: 3))
        network.send([0], from: 0, to: .unicast(1), at: .zero)
        #expect(network.inFlight == 1)
        #expect(network.nextDelivery(notAfter: Instant(nanoseconds: .max)) == nil)
        #expect(network.statistics.partitioned == 1)
        #expect(faults.hasPermanentPartition)
    }

    @Test func impairmentHookDropsAndDelays() {
        var network = SimulatedNetwork(nodeCount: 3, faults: .none, random: DeterministicRandom(seed: 3))
        network.impairment = { _, recipient, _, _ in recipient == 1 ? .drop : .delay(.milliseconds(8)) }
        network.send([0], from: 0, to: .multicast, at: .zero)
        let delivery = network.nextDelivery(notAfter: Instant(nanoseconds: .max))
        #expect(delivery?.recipient == 2)
        #expect(delivery?.time == Instant.zero + .milliseconds(10))
        #expect(network.statistics.impaired == 1)
    }

    @Test func retransmittingClientCompletesOverThirtyPercentLoss() {
        let faults = NetworkFaults(
            delay: .milliseconds(2), jitter: .milliseconds(3), lossRate: 0.3, duplicationRate: 0.1,
            reorderRate: 0.1)
        var network = SimulatedNetwork(nodeCount: 2, faults: faults, random: DeterministicRandom(seed: 11))
        var nodes = [PingNode(isServer: false), PingNode(isServer: true)]
        nodes[0].start(at: .zero, network: &network, node: 0)
        var now = Instant.zero
        let limit = Instant.zero + .seconds(60)
        while now < limit, nodes[0].completed.count < 20 {
            let next = [network.nextDeliveryTime, nodes[0].retransmitAt].compactMap { $0 }.min()
            guard let next else { break }
            now = next
            if let delivery = network.nextDelivery(notAfter: now) {
                nodes[delivery.recipient].receive(delivery, network: &network)
            } else if let deadline = nodes[0].retransmitAt, deadline <= now {
                nodes[0].start(at: now, network: &network, node: 0)
            }
        }
        #expect(nodes[0].completed == Array(0..<20))
        #expect(network.statistics.lost > 0)
        #expect(network.statistics.sentDatagrams[0] > 20)
    }
}
