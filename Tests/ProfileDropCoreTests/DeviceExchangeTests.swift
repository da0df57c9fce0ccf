import ProfileDropCrypto
import Testing

@testable import ProfileDropCore

/// A few devices on an in-memory network in virtual time: fixed latency, optional loss, and a hook
/// to tamper with datagrams in flight.
struct VirtualRoom {
    struct InFlight {
        var deliverAt: Instant
        var sequence: Int
        var target: Int
        var source: PeerAddress
        var bytes: [UInt8]
    }

    var devices: [Device] = []
    var events: [[DeviceEvent]] = []
    var now = Instant.zero
    var latency: Duration = .milliseconds(5)
    var lossRate = 0.0
    var network = DeterministicRandom(seed: 99)
    var inFlight: [InFlight] = []
    var sequence = 0
    var delivered = 0
    /// Called on every unicast datagram; may change or drop it (return nil).
    var tamper: ((_ from: Int, _ to: Int, _ bytes: [UInt8]) -> [UInt8]?)?

    static func address(_ index: Int) -> PeerAddress { PeerAddress(10, 0, 0, UInt8(index + 1), port: 5000) }

    mutating func add(_ configuration: DeviceConfiguration, pose: Pose, seed: UInt64) {
        let index = devices.count
        var device = Device(
            configuration: configuration, random: DeterministicRandom(seed: seed), now: now,
            localAddress: Self.address(index))
        device.updatePose(pose, at: now)
        devices.append(device)
        events.append([])
        flush(index)
    }

    mutating func flush(_ index: Int) {
        while let event = devices[index].pollEvent() { events[index].append(event) }
        while let datagram = devices[index].pollTransmit() {
            #expect(datagram.bytes.count <= WireConstants.maxDatagramSize)
            switch datagram.destination {
            case .multicast:
                for target in devices.indices where target != index {
                    enqueue(datagram.bytes, from: index, to: target)
                }
            case .unicast(let address):
                guard let target = devices.indices.first(where: { Self.address($0) == address }) else {
                    continue
                }
                guard let bytes = tamper.map({ $0(index, target, datagram.bytes) }) ?? datagram.bytes else {
                    continue
                }
                enqueue(bytes, from: index, to: target)
            }
        }
    }

    private mutating func enqueue(_ bytes: [UInt8], from: Int, to target: Int) {
        if lossRate > 0 && network.unitDouble() < lossRate { return }
        sequence += 1
        inFlight.append(
            InFlight(
                deliverAt: now + latency, sequence: sequence, target: target, source: Self.address(from),
                bytes: bytes))
    }

    /// Runs until `end` or until nothing is scheduled.
    mutating func run(until end: Instant) {
        while true {
            let nextDelivery = inFlight.min { ($0.deliverAt, $0.sequence) < ($1.deliverAt, $1.sequence) }
            var nextTime = nextDelivery?.deliverAt
            for device in devices {
                if let deadline = device.nextDeadline, nextTime.map({ deadline < $0 }) ?? true {
                    nextTime = deadline
                }
            }
            guard let time = nextTime, time <= end else { break }
            now = max(now, time)
            if let delivery = nextDelivery, delivery.deliverAt <= now {
                inFlight.removeAll { $0.sequence == delivery.sequence }
                delivered += 1
                devices[delivery.target].handleDatagram(delivery.bytes, from: delivery.source, at: now)
                flush(delivery.target)
                continue
            }
            for index in devices.indices {
                if let deadline = devices[index].nextDeadline, deadline <= now {
                    devices[index].handleTimeout(at: now)
                    flush(index)
                }
            }
        }
        now = max(now, end)
    }

    func cards(_ index: Int) -> [ProfileCard] {
        events[index].compactMap { if case .cardReceived(let card) = $0 { card } else { nil } }
    }

    func closeReason(_ index: Int) -> CloseReason? {
        events[index].lazy.compactMap { if case .closed(let reason) = $0 { reason } else { nil } }.first
    }

    func rejections(_ index: Int) -> [ProtocolError] {
        events[index].compactMap { if case .datagramRejected(let error) = $0 { error } else { nil } }
    }
}

enum Fixtures {
    static func card(_ name: String, photoBytes: Int = 0) -> ProfileCard {
        var photo: ProfileCard.Photo?
        if photoBytes > 0 {
            var random = DeterministicRandom(seed: UInt64(photoBytes))
            let data = [0xFF, 0xD8, 0xFF, 0xE0] + random.bytes(photoBytes - 4)
            photo = try? ProfileCard.Photo(data: data)
        }
        guard
            let card = try? ProfileCard(
                name: name, age: 3, sex: .female, neutered: true, size: .small, keywords: ["calm"],
                owner: "owner",
                photo: photo)
        else { preconditionFailure("fixture card is valid") }
        return card
    }

    static func configuration(
        _ name: String?, consent: ConsentPolicy = .share, seed: UInt64, photoBytes: Int = 0,
        timeouts: Timeouts = Timeouts()
    ) -> DeviceConfiguration {
        var random = DeterministicRandom(seed: seed ^ 0xABCD)
        return DeviceConfiguration(
            card: name.map { card($0, photoBytes: photoBytes) }, consent: consent,
            staticKey: X25519.PrivateKey(using: &random), timeouts: timeouts)
    }

    /// Two poses `distance` cm apart, facing each other.
    static func facingPair(distance: Double) -> (Pose, Pose) {
        (Pose(x: 0, y: 0, heading: 0), Pose(x: distance, y: 0, heading: 180))
    }
}

@Suite struct DeviceExchangeTests {
    @Test func happyPathExchangesBothCardsAndCloses() {
        var room = VirtualRoom()
        let (a, b) = Fixtures.facingPair(distance: 7)
        room.add(Fixtures.configuration("Bori", seed: 1), pose: a, seed: 11)
        room.add(Fixtures.configuration("Kong", seed: 2), pose: b, seed: 12)
        room.run(until: Instant.zero + .seconds(30))
        #expect(room.closeReason(0) == .exchanged)
        #expect(room.closeReason(1) == .exchanged)
        #expect(room.cards(0) == [Fixtures.card("Kong")])
        #expect(room.cards(1) == [Fixtures.card("Bori")])
        #expect(room.devices.allSatisfy { $0.isClosed && $0.nextDeadline == nil })
        let codes = room.events.map { events in
            events.compactMap { if case .secured(_, let code) = $0 { code } else { nil } }
        }
        #expect(codes[0].count == 1 && codes[0] == codes[1])
    }
}
