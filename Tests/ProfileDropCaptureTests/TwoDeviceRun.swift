import ProfileDropCapture
import ProfileDropCore
import ProfileDropCrypto
import ProfileDropSimulator

/// Two captured devices on a lossless link in a ``Room`` in virtual time: the way a driver uses
/// ``CapturingDevice`` outside the simulation.
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

    /// The identity of device `index`, from a fixed secret.
    static func identity(_ index: Int) -> DeviceIdentity {
        DeviceIdentity(secret: [UInt8](repeating: 0x40 + UInt8(index), count: 32))
    }

    /// The bond key of the two devices when they know each other.
    static let bondKey = [UInt8](repeating: 0xB0, count: 32)

    /// What device `index` knows of the other when the two are bonded.
    static func knownPeer(of index: Int) -> KnownPeer {
        KnownPeer(
            resolvingKey: identity(1 - index).resolvingKey, bondKey: bondKey,
            name: index == 0
                ? "Barnaby-Thistlewood (Orsolya-Vandermeer)" : "Chestnut-Marmalade (Quillon-Abernathy)")
    }

    /// The seed of device `index`'s random stream.
    static func seed(_ index: Int) -> UInt64 { 2000 + UInt64(index) }

    let recorder: CaptureRecorder
    private var room = Room(latency: .milliseconds(3), keepsEventLog: true)

    /// The two devices, in order.
    var devices: [CapturingDevice] { (0..<room.count).compactMap { room.device($0) as? CapturingDevice } }
    /// What each device reported, in order.
    var events: [[DeviceEvent]] { room.eventLog }

    /// Builds both devices 7 cm apart, facing each other, sharing without asking.
    /// - Parameters:
    ///   - distance: centimetres between the devices.
    ///   - staticKeys: how each device's key is recorded.
    ///   - bonded: whether the devices know each other from an earlier exchange (each has an
    ///     identity either way).
    ///   - configure: changes to both devices' configuration (gate, measurement, limits).
    init(
        options: CaptureOptions, distance: Double = 7,
        staticKeys: [StaticKeySource] = [.external, .external],
        bonded: Bool = false, configure: (inout DeviceConfiguration) -> Void = { _ in }
    )
        throws
    {
        recorder = CaptureRecorder(options: options)
        let cards = try Self.cards()
        for index in 0..<2 {
            var configuration = DeviceConfiguration(
                card: cards[index], consent: .share, staticKey: Self.staticKey(index),
                identity: Self.identity(index), knownPeers: bonded ? [Self.knownPeer(of: index)] : [])
            configure(&configuration)
            var device = CapturingDevice(
                configuration: configuration, random: DeterministicRandom(seed: Self.seed(index)), now: .zero,
                localAddress: Self.address(index), name: index == 0 ? "left" : "right", recorder: recorder,
                staticKey: staticKeys[index])
            device.updatePose(
                index == 0 ? Pose(x: 0, y: 0, heading: 0) : Pose(x: distance, y: 0, heading: 180), at: .zero)
            room.add(device, at: Self.address(index))
        }
        // Drained once both are in the room, so that the first device's first multicast reaches the
        // second.
        for index in 0..<2 { room.flush(index) }
    }

    /// Runs until both devices are done or `limit` passes.
    mutating func run(until limit: Instant) {
        while room.step(notAfter: limit) != nil {}
    }

    /// Gives device `index` an input now (a pose at a chosen time, say), then drains it.
    mutating func act(_ index: Int, _ input: (inout any SansIODevice, Instant) -> Void) {
        room.withDevice(index, input)
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
