import Foundation
import ProfileDropCore
import ProfileDropCrypto

/// How a capture is written.
public struct CaptureOptions: Sendable {
    /// Write the secrets replay needs (random draws, which include ephemeral private keys, the
    /// card, the identity's resolving key and the known peers with their bond keys) in a Decryption
    /// Secrets Block. Off by default: without it no secret reaches the file, and the capture can be
    /// viewed but not replayed.
    public var keylog: Bool
    /// The destination shown for multicast datagrams (the core only says "multicast").
    public var multicastGroup: PeerAddress
    /// Nanoseconds since 1970 that `Instant.zero` stands for in packet timestamps.
    public var epochNanoseconds: UInt64
    /// The `shb_userappl` option.
    public var userApplication: String

    /// The default discovery group 239.255.80.68:47544.
    public static let defaultMulticastGroup = PeerAddress(239, 255, 80, 68, port: 47_544)
    /// 2026-01-01T00:00:00Z: a fixed origin for simulated runs, so that regenerated files are identical.
    public static let simulatedEpoch: UInt64 = 1_767_225_600 * 1_000_000_000

    /// Creates options.
    public init(
        keylog: Bool = false, multicastGroup: PeerAddress = CaptureOptions.defaultMulticastGroup,
        epochNanoseconds: UInt64 = CaptureOptions.simulatedEpoch, userApplication: String = "profiledrop"
    ) {
        self.keylog = keylog
        self.multicastGroup = multicastGroup
        self.epochNanoseconds = epochNanoseconds
        self.userApplication = userApplication
    }
}

/// Collects the blocks of one capture file: one pcapng interface per captured device, the replay
/// records, the datagrams, and (with ``CaptureOptions/keylog``) each device's secrets.
///
/// Several ``CapturingDevice``s may share one recorder (a simulated room); nothing is written
/// until ``write(to:)`` or ``fileBytes()``.
public final class CaptureRecorder {
    /// The options in force.
    public let options: CaptureOptions

    enum RandomOrigin {
        case tape(RandomTape)
        case seedMaterial([UInt8])
    }

    private struct DeviceEntry {
        var name: String
        var random: RandomOrigin
        var staticKey: StaticKeySource
        var card: [UInt8]?
        var identity: DeviceIdentity?
        var knownPeers: [KnownPeer]
        var inputs: UInt64 = 0
        var outbound: UInt64 = 0
    }

    private var interfaces: [PcapngBlock] = []
    /// The datagrams, in the order they happened.
    private var packets: [PcapngBlock] = []
    /// The replay records, in the order they happened.
    private var records: [PcapngBlock] = []
    private var devices: [DeviceEntry] = []

    /// Creates an empty capture.
    public init(options: CaptureOptions = CaptureOptions()) {
        self.options = options
    }

    /// How many devices are captured.
    public var deviceCount: Int { devices.count }

    /// The whole pcapng file: section header, keylog, interfaces, the packets in the order they
    /// happened, then the replay records in the order they happened and one end record per device.
    ///
    /// The packets come before the records because Wireshark times its Time column from the first
    /// block it lists, and a Custom Block has no timestamp: a record first would make every packet
    /// read some 1.8 × 10⁹ seconds after it.
    public func fileBytes() -> [UInt8] {
        var writer = PcapngWriter(userApplication: options.userApplication)
        if options.keylog {
            // Secrets first, as the pcapng draft asks: readers meet them before the packets.
            for (index, entry) in devices.enumerated() {
                let random: RandomSecrets
                switch entry.random {
                case .tape(let tape): random = .stream(tape.bytes)
                case .seedMaterial(let material): random = .seedMaterial(material)
                }
                let secrets = DeviceSecrets(
                    interfaceID: UInt32(index), staticKey: entry.staticKey, card: entry.card, random: random,
                    identity: entry.identity, knownPeers: entry.knownPeers)
                writer.append(
                    .secrets(PcapngSecrets(secretsType: CaptureFormat.secretsType, data: secrets.encoded())))
            }
        }
        for block in interfaces { writer.append(block) }
        for block in packets { writer.append(block) }
        for block in records { writer.append(block) }
        for (index, entry) in devices.enumerated() {
            let end = EndRecord(interfaceID: UInt32(index), inputs: entry.inputs, outbound: entry.outbound)
            writer.append(Self.custom(.end(end)))
        }
        return writer.bytes
    }

    // MARK: - Used by CapturingDevice

    /// Adds a device whose secrets (kept for the keylog) are `random`, `staticKey` and those of
    /// `configuration` at creation: its card, identity and known peers.
    func addDevice(
        name: String, random: RandomOrigin, staticKey: StaticKeySource, configuration: DeviceConfiguration
    ) -> UInt32 {
        let interfaceID = UInt32(devices.count)
        devices.append(
            DeviceEntry(
                name: name, random: random, staticKey: staticKey, card: configuration.card?.encoded(),
                identity: configuration.identity, knownPeers: configuration.knownPeers))
        interfaces.append(
            .interface(
                PcapngInterface(
                    name: "profiledrop:\(name)",
                    description: "ProfileDrop device \(name), seen from its socket")))
        return interfaceID
    }

    func recordDevice(_ record: DeviceRecord) {
        records.append(Self.custom(.device(record)))
    }

    func recordInput(_ record: InputRecord, localAddress: PeerAddress) {
        var record = record
        if case .datagram(let bytes, let source) = record.input, bytes.count > Self.maximumUDPPayload {
            // No IPv4 UDP datagram is longer; the device rejects anything over 1200 bytes whatever
            // its content, so the cut copy replays the same.
            record.input = .datagram(bytes: Array(bytes.prefix(Self.maximumUDPPayload)), source: source)
        }
        let index = Int(record.interfaceID)
        devices[index].inputs += 1
        if case .datagram(let bytes, let source) = record.input {
            // Shown inbound for people; replay reads the embedded copy in the record.
            let multicast = (try? Packet(datagram: bytes)).map { Self.isMulticastType($0.type) } ?? false
            let destination = multicast ? options.multicastGroup : localAddress
            packets.append(
                .packet(
                    PcapngPacket(
                        interfaceID: record.interfaceID, timestamp: timestamp(record.time),
                        data: IPv4UDP.frame(bytes, from: source, to: destination), direction: .inbound)))
        }
        records.append(Self.custom(.input(record)))
    }

    func recordOutbound(
        interfaceID: UInt32, time: Instant, from source: PeerAddress, datagram: OutgoingDatagram
    ) {
        devices[Int(interfaceID)].outbound += 1
        let destination: PeerAddress
        switch datagram.destination {
        case .multicast: destination = options.multicastGroup
        case .unicast(let address): destination = address
        }
        packets.append(
            .packet(
                PcapngPacket(
                    interfaceID: interfaceID, timestamp: timestamp(time),
                    data: IPv4UDP.frame(datagram.bytes, from: source, to: destination), direction: .outbound))
        )
    }

    private func timestamp(_ time: Instant) -> UInt64 {
        options.epochNanoseconds &+ time.nanoseconds
    }

    private static func custom(_ record: CaptureRecord) -> PcapngBlock {
        .custom(PcapngCustomBlock(enterpriseNumber: CaptureFormat.enterpriseNumber, data: record.encoded()))
    }

    /// The longest UDP payload over IPv4.
    static let maximumUDPPayload = 65_507

    static func isMulticastType(_ type: PacketType) -> Bool {
        switch type {
        case .beacon, .query: true
        case .invite, .accept, .confirm, .busy, .secure, .probe, .probeAck: false
        }
    }
}

/// The random bytes one device drew: counted always, kept only when the capture has a keylog.
final class RandomTape {
    let keepsBytes: Bool
    private(set) var bytes: [UInt8] = []
    private(set) var count = 0

    init(keepsBytes: Bool) { self.keepsBytes = keepsBytes }

    func append(_ buffer: UnsafeMutableRawBufferPointer) {
        count += buffer.count
        if keepsBytes { bytes.append(contentsOf: buffer) }
    }
}

/// A ``RandomSource`` that passes every draw through from `base` and notes it on a tape the
/// recorder owns (the device keeps its own copy of the source, so the tape is shared by reference).
struct RecordingRandom: RandomSource {
    private var base: any RandomSource
    let tape: RandomTape

    init(base: any RandomSource, tape: RandomTape) {
        self.base = base
        self.tape = tape
    }

    mutating func fill(_ buffer: UnsafeMutableRawBufferPointer) {
        base.fill(buffer)
        tape.append(buffer)
    }
}

/// A ``Device`` that records every input it is given and every datagram it sends into a
/// ``CaptureRecorder``. Use it exactly like `Device`:
///
/// ```swift
/// let recorder = CaptureRecorder(options: CaptureOptions(keylog: true))
/// var device = CapturingDevice(
///     configuration: config, random: SystemRandom(), now: clock.now, localAddress: me,
///     name: "alice", recorder: recorder)
/// device.handleDatagram(bytes, from: source, at: clock.now)
/// while let datagram = device.pollTransmit() { send(datagram) }
/// let file = recorder.fileBytes()  // a keylog holds secrets: write it where only its owner reads
/// ```
///
/// A device that draws from `DeterministicRandom(seedMaterial:)` (the simulator's devices) can be
/// recorded as it is, with ``init(_:name:recorder:randomSeedMaterial:staticKey:)``: the keylog then
/// stores the seed material instead of every draw.
///
/// Either way the configuration's card, identity and known peers (bond keys included) go to the
/// keylog as they were when the device was created: they shape what the device sends (IDENT,
/// PROOF), so replay needs them, and without a keylog none of them is written.
public struct CapturingDevice: SansIODevice {
    /// The wrapped device, for reading its state.
    public private(set) var device: Device
    /// The pcapng interface of this device in the capture.
    public let interfaceID: UInt32
    private let recorder: CaptureRecorder
    /// Counts (and with a keylog keeps) the device's draws; nil when the keylog holds its seed
    /// material instead, and the draws are not counted.
    private let tape: RandomTape?
    private var sequence: UInt64 = 0

    /// Creates the device as `Device(configuration:random:now:localAddress:)` does and starts
    /// recording it, every random draw included.
    ///
    /// - Parameters:
    ///   - name: a label for the capture's interface and the replay timeline.
    ///   - recorder: where the records go; may be shared by several devices.
    ///   - staticKey: how replay will obtain the static private key. `.external` (the default)
    ///     writes nothing about it; `.seedMaterial` suits simulated devices whose key comes from a
    ///     public seed; `.embedded` writes the raw key and must be asked for explicitly. Only
    ///     written with a keylog.
    public init(
        configuration: DeviceConfiguration, random: some RandomSource, now: Instant,
        localAddress: PeerAddress,
        name: String, recorder: CaptureRecorder, staticKey: StaticKeySource = .external
    ) {
        if case .embedded(let raw) = staticKey {
            precondition(
                ConstantTime.equals(raw, configuration.staticKey.rawRepresentation),
                "embedded key differs from the configuration's")
        }
        let tape = RandomTape(keepsBytes: recorder.options.keylog)
        let interfaceID = recorder.addDevice(
            name: name, random: .tape(tape), staticKey: staticKey, configuration: configuration)
        let device = Device(
            configuration: configuration, random: RecordingRandom(base: random, tape: tape), now: now,
            localAddress: localAddress)
        self.init(
            device, interfaceID: interfaceID, name: name, recorder: recorder, tape: tape,
            startRandomBytes: UInt32(clamping: tape.count))
    }

    /// Starts recording `device`, which another party created and which must not have been given
    /// any input yet.
    /// - Parameters:
    ///   - randomSeedMaterial: the seed material of the device's random source.
    ///   - staticKey: how replay will obtain the static private key (see the other initialiser).
    public init(
        _ device: Device, name: String, recorder: CaptureRecorder, randomSeedMaterial: [UInt8],
        staticKey: StaticKeySource
    ) {
        let interfaceID = recorder.addDevice(
            name: name, random: .seedMaterial(randomSeedMaterial), staticKey: staticKey,
            configuration: device.configuration)
        self.init(
            device, interfaceID: interfaceID, name: name, recorder: recorder, tape: nil,
            startRandomBytes: CaptureFormat.uncounted)
    }

    private init(
        _ device: Device, interfaceID: UInt32, name: String, recorder: CaptureRecorder, tape: RandomTape?,
        startRandomBytes: UInt32
    ) {
        self.device = device
        self.interfaceID = interfaceID
        self.recorder = recorder
        self.tape = tape
        let configuration = device.configuration
        recorder.recordDevice(
            DeviceRecord(
                interfaceID: interfaceID, name: name, deviceID: device.deviceID,
                localAddress: device.localAddress,
                staticPublicKey: configuration.staticKey.publicKey.rawRepresentation,
                consent: configuration.consent,
                hasCard: configuration.card != nil, timeouts: configuration.timeouts,
                limits: configuration.limits,
                gate: configuration.gate, measurement: configuration.measurement, startTime: device.now,
                startRandomBytes: startRandomBytes, epochNanoseconds: recorder.options.epochNanoseconds))
    }

    /// `Device.handleDatagram(_:from:at:)`, recorded.
    public mutating func handleDatagram(_ bytes: [UInt8], from source: PeerAddress, at time: Instant) {
        recording(.datagram(bytes: bytes, source: source), at: time) {
            $0.handleDatagram(bytes, from: source, at: time)
        }
    }

    /// `Device.handleTimeout(at:)`, recorded.
    public mutating func handleTimeout(at time: Instant) {
        recording(.timeout, at: time) { $0.handleTimeout(at: time) }
    }

    /// `Device.updatePose(_:at:)`, recorded.
    public mutating func updatePose(_ pose: Pose, at time: Instant) {
        recording(.pose(pose), at: time) { $0.updatePose(pose, at: time) }
    }

    /// `Device.decide(_:at:)`, recorded.
    public mutating func decide(_ decision: ConsentDecision, at time: Instant) {
        recording(.decision(decision), at: time) { $0.decide(decision, at: time) }
    }

    /// `Device.decide(_:for:at:)`, recorded.
    public mutating func decide(_ decision: ConsentDecision, for peer: DeviceID, at time: Instant) {
        recording(.candidateDecision(decision, peer: peer), at: time) {
            $0.decide(decision, for: peer, at: time)
        }
    }

    /// `Device.cancel(at:)`, recorded.
    public mutating func cancel(at time: Instant) {
        recording(.cancel, at: time) { $0.cancel(at: time) }
    }

    /// `Device.pollTransmit()`; the datagram is recorded as an outbound packet.
    public mutating func pollTransmit() -> OutgoingDatagram? {
        guard let datagram = device.pollTransmit() else { return nil }
        recorder.recordOutbound(
            interfaceID: interfaceID, time: device.now, from: device.localAddress, datagram: datagram)
        return datagram
    }

    /// `Device.pollEvent()` (events are not recorded: replay regenerates them).
    public mutating func pollEvent() -> DeviceEvent? { device.pollEvent() }

    /// `Device.deviceID`.
    public var deviceID: DeviceID { device.deviceID }

    /// `Device.nextDeadline`.
    public var nextDeadline: Instant? { device.nextDeadline }

    /// `Device.isClosed`.
    public var isClosed: Bool { device.isClosed }

    /// Gives the device one input, then records it with the number of bytes it drew.
    private mutating func recording(_ input: CapturedInput, at time: Instant, _ apply: (inout Device) -> Void)
    {
        let before = tape?.count ?? 0
        apply(&device)
        let drawn = tape.map { UInt32(clamping: $0.count - before) } ?? CaptureFormat.uncounted
        recorder.recordInput(
            InputRecord(
                interfaceID: interfaceID, sequence: sequence, time: time, input: input, randomBytes: drawn),
            localAddress: device.localAddress)
        sequence += 1
    }
}
