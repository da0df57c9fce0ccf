import ProfileDropCapture
import ProfileDropCore
import ProfileDropCrypto

/// Two captured devices on an in-memory link in virtual time, driven by a small event loop: the
/// way a driver uses ``CapturingDevice`` without the simulator.
struct TwoDeviceRun {
    static let port: UInt16 = 5000

    /// Cards with long, distinctive strings, so that a search of the file bytes cannot hit them by chance.
    static func cards() throws -> [ProfileCard] {
        [
            try ProfileCard(
                name: "Chestnut-Marmalade", age: 4, sex: .female, neutered: true, size: .small,
                keywords: ["zanzibar-fetch"], owner: "Quillon-Abernathy"),
            try ProfileCard(
                name: "Barnaby-Thistlewood", age: 7, sex: .male, neutered: false, size: .large,
                keywords: ["puddle-jumper"], owner: "Orsolya-Vandermeer"),
        ]
    }

    /// Every card string, for searching files.
    static func cardStrings() throws -> [String] {
        try cards().flatMap { [$0.name, $0.owner] + $0.keywords }
    }

    static func address(_ index: Int) -> PeerAddress { PeerAddress(10, 0, 0, UInt8(index + 1), port: port) }

    /// The static private key of device `index`, from a fixed seed.
    static func staticKey(_ index: Int) -> X25519.PrivateKey {
        var random = DeterministicRandom(seed: 1000 + UInt64(index))
        return X25519.PrivateKey(using: &random)
    }

    /// The seed of device `index`'s random stream.
    static func seed(_ index: Int) -> UInt64 { 2000 + UInt64(index) }

    var devices: [CapturingDevice] = []
    var events: [[DeviceEvent]] = [[], []]
    let recorder: CaptureRecorder
    private var inFlight: [(at: Instant, order: Int, target: Int, source: PeerAddress, bytes: [UInt8])] = []
    private var order = 0
    private var now = Instant.zero

    /// Builds both devices 7 cm apart, facing each other, sharing without asking.
    /// - Parameters:
    ///   - distance: centimetres between the devices.
    ///   - staticKeys: how each device's key is recorded.
    init(
        options: CaptureOptions, distance: Double = 7, staticKeys: [StaticKeySource] = [.external, .external]
    )
        throws
    {
        recorder = CaptureRecorder(options: options)
        let cards = try Self.cards()
        for index in 0..<2 {
            let configuration = DeviceConfiguration(
                card: cards[index], consent: .share, staticKey: Self.staticKey(index))
            var device = CapturingDevice(
                configuration: configuration, random: DeterministicRandom(seed: Self.seed(index)), now: now,
                localAddress: Self.address(index), name: index == 0 ? "left" : "right", recorder: recorder,
                staticKey: staticKeys[index])
            device.updatePose(
                index == 0 ? Pose(x: 0, y: 0, heading: 0) : Pose(x: distance, y: 0, heading: 180), at: now)
            devices.append(device)
            flush(index)
        }
    }

    /// Runs until both devices are done or `limit` passes.
    mutating func run(until limit: Instant) {
        while true {
            let delivery = inFlight.indices.min {
                (inFlight[$0].at, inFlight[$0].order) < (inFlight[$1].at, inFlight[$1].order)
            }
            var next = delivery.map { inFlight[$0].at }
            var timer: Int?
            for index in devices.indices {
                if let deadline = devices[index].nextDeadline, next.map({ deadline < $0 }) ?? true {
                    next = deadline
                    timer = index
                }
            }
            guard let time = next, time <= limit else { return }
            now = max(now, time)
            if let timer {
                devices[timer].handleTimeout(at: now)
                flush(timer)
            } else if let delivery {
                let item = inFlight.remove(at: delivery)
                devices[item.target].handleDatagram(item.bytes, from: item.source, at: now)
                flush(item.target)
            }
        }
    }

    private mutating func flush(_ index: Int) {
        while let event = devices[index].pollEvent() { events[index].append(event) }
        while let datagram = devices[index].pollTransmit() {
            let target = 1 - index
            switch datagram.destination {
            case .multicast: break
            case .unicast(let address): guard address == Self.address(target) else { continue }
            }
            order += 1
            inFlight.append((now + .milliseconds(3), order, target, Self.address(index), datagram.bytes))
        }
    }

    /// The close reasons, in device order.
    var closeReasons: [CloseReason?] {
        events.map { list in
            list.compactMap { event -> CloseReason? in
                if case .closed(let reason) = event { return reason }
                return nil
            }.first
        }
    }
}
