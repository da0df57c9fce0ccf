import ProfileDropCore
import ProfileDropCrypto

/// Numbers that identify our records inside pcapng (documented in Captures/FORMAT.md).
public enum CaptureFormat {
    /// The version of the replay records this implementation writes and reads. Version 2 records
    /// devices of protocol version 2: its keylog carries their identity and known peers. Version 3
    /// adds the faulty-host table's size to the device record. Version 4 records devices of
    /// protocol 2.1 (wire version 3), and answers about one candidate (input kind 6).
    public static let version: UInt16 = 4
    /// The Private Enterprise Number in our Custom Blocks: 32473, reserved for documentation by
    /// RFC 5612. The records are a project format, not one registered to an organisation.
    public static let enterpriseNumber: UInt32 = 32473
    /// The secrets type of our Decryption Secrets Blocks: ASCII "PDKL".
    public static let secretsType: UInt32 = 0x5044_4B4C
    /// The longest device name we record, in UTF-8 bytes; a longer name is cut at a character
    /// boundary, so that what is written is valid UTF-8 the reader accepts.
    public static let maximumNameBytes = 255
    /// A random-byte count of a device whose draws were not counted (a seeded source recorded by
    /// its seed material).
    public static let uncounted = UInt32.max

    /// The one-line error for records (`what`) of a format version this build does not read.
    static func unsupported(_ what: String, version: UInt16) -> CaptureError {
        guard version < self.version else {
            return CaptureError(
                .unsupportedVersion,
                "\(what) of format version \(version); this build reads version \(self.version)")
        }
        return CaptureError(
            .unsupportedVersion,
            "\(what) of format version \(version), written by an earlier build; "
                + "this build reads version \(self.version): capture the run again")
    }

    /// `text` as UTF-8, cut at a scalar boundary to ``maximumNameBytes``, each control character
    /// replaced by U+FFFD, which a reader refuses (``hasControlCharacter(_:)``).
    static func recordedName(_ text: String) -> [UInt8] {
        var bytes: [UInt8] = []
        for scalar in text.unicodeScalars {
            let encoded = Array(
                String(scalar.properties.generalCategory == .control ? "\u{FFFD}" : scalar).utf8)
            guard bytes.count + encoded.count <= maximumNameBytes else { break }
            bytes += encoded
        }
        return bytes
    }

    /// Whether `name` holds a control character (Unicode Cc), which a capture's names never do.
    static func hasControlCharacter(_ name: String) -> Bool {
        name.unicodeScalars.contains { $0.properties.generalCategory == .control }
    }
}

/// Everything needed to rebuild one captured device, except its secrets (card, static private
/// key, random draws, identity and known peers), which live in the keylog.
public struct DeviceRecord: Equatable, Sendable {
    /// The pcapng interface whose packets this device sent and received.
    public var interfaceID: UInt32
    /// A label for people, e.g. the simulator's device name.
    public var name: String
    /// The device id it announced.
    public var deviceID: DeviceID
    /// Where its unicast socket listened.
    public var localAddress: PeerAddress
    /// Its static public key (32 bytes).
    public var staticPublicKey: [UInt8]
    /// Its consent policy.
    public var consent: ConsentPolicy
    /// Whether it offered a card (the card itself is a secret).
    public var hasCard: Bool
    /// Its timers.
    public var timeouts: Timeouts
    /// Its bounds.
    public var limits: Limits
    /// Its proximity gate tuning.
    public var gate: ProximityGate.Configuration
    /// Its measurement model.
    public var measurement: MeasurementModel
    /// The time it was created.
    public var startTime: Instant
    /// Random bytes it drew while being created.
    public var startRandomBytes: UInt32
    /// Nanoseconds since 1970 of `Instant.zero`, which packet timestamps add to each instant.
    public var epochNanoseconds: UInt64

    /// Creates a record.
    public init(
        interfaceID: UInt32, name: String, deviceID: DeviceID, localAddress: PeerAddress,
        staticPublicKey: [UInt8],
        consent: ConsentPolicy, hasCard: Bool, timeouts: Timeouts, limits: Limits,
        gate: ProximityGate.Configuration, measurement: MeasurementModel, startTime: Instant,
        startRandomBytes: UInt32, epochNanoseconds: UInt64
    ) {
        self.interfaceID = interfaceID
        self.name = name
        self.deviceID = deviceID
        self.localAddress = localAddress
        self.staticPublicKey = staticPublicKey
        self.consent = consent
        self.hasCard = hasCard
        self.timeouts = timeouts
        self.limits = limits
        self.gate = gate
        self.measurement = measurement
        self.startTime = startTime
        self.startRandomBytes = startRandomBytes
        self.epochNanoseconds = epochNanoseconds
    }

    /// The configuration to rebuild the device with, given its secrets (all from the keylog).
    public func configuration(
        card: ProfileCard?, staticKey: X25519.PrivateKey, identity: DeviceIdentity? = nil,
        knownPeers: [KnownPeer] = []
    ) -> DeviceConfiguration {
        DeviceConfiguration(
            card: card, consent: consent, staticKey: staticKey, identity: identity, knownPeers: knownPeers,
            timeouts: timeouts, limits: limits, gate: gate, measurement: measurement)
    }
}

/// One input handed to a captured device.
public enum CapturedInput: Equatable, Sendable {
    /// `handleTimeout(at:)`.
    case timeout
    /// `updatePose(_:at:)`.
    case pose(Pose)
    /// `decide(_:at:)`.
    case decision(ConsentDecision)
    /// `decide(_:for:at:)`: the answer about one of the candidates asked about at once.
    case candidateDecision(ConsentDecision, peer: DeviceID)
    /// `cancel(at:)`: the owner stopped the device.
    case cancel
    /// `handleDatagram(_:from:at:)`, with the bytes embedded.
    case datagram(bytes: [UInt8], source: PeerAddress)
}

/// An input with its time and the random bytes the device drew while handling it.
public struct InputRecord: Equatable, Sendable {
    /// The device's interface.
    public var interfaceID: UInt32
    /// 0, 1, 2, … per device.
    public var sequence: UInt64
    /// The time passed with the input.
    public var time: Instant
    /// The input.
    public var input: CapturedInput
    /// How many random bytes the device drew while handling it (the bytes are in the keylog).
    public var randomBytes: UInt32

    /// Creates a record.
    public init(
        interfaceID: UInt32, sequence: UInt64, time: Instant, input: CapturedInput, randomBytes: UInt32
    ) {
        self.interfaceID = interfaceID
        self.sequence = sequence
        self.time = time
        self.input = input
        self.randomBytes = randomBytes
    }
}

/// Written once per device when the capture is saved: lets a reader tell a complete capture from a
/// cut one.
public struct EndRecord: Equatable, Sendable {
    /// The device's interface.
    public var interfaceID: UInt32
    /// Inputs recorded.
    public var inputs: UInt64
    /// Outbound datagrams recorded.
    public var outbound: UInt64

    /// Creates a record.
    public init(interfaceID: UInt32, inputs: UInt64, outbound: UInt64) {
        self.interfaceID = interfaceID
        self.inputs = inputs
        self.outbound = outbound
    }
}

/// A replay record carried in a Custom Block.
public enum CaptureRecord: Equatable, Sendable {
    case device(DeviceRecord)
    case input(InputRecord)
    case end(EndRecord)

    private enum Kind: UInt8 {
        case device = 1
        case input = 2
        case end = 3
    }

    private enum InputKind: UInt8 {
        case timeout = 1
        case pose = 2
        case decision = 3
        case datagram = 4
        case cancel = 5
        case candidateDecision = 6
    }

    /// The Custom Block data: a 4-byte big-endian length, then version (2), kind (1) and the body.
    public func encoded() -> [UInt8] {
        var writer = ByteWriter(capacity: 128)
        writer.writeInteger(CaptureFormat.version)
        switch self {
        case .device(let device):
            writer.writeInteger(Kind.device.rawValue)
            writer.writeInteger(device.interfaceID)
            let name = CaptureFormat.recordedName(device.name)
            writer.writeInteger(UInt8(name.count))
            writer.writeBytes(name)
            writer.writeInteger(device.deviceID.rawValue)
            writer.writeInteger(device.localAddress.ipv4)
            writer.writeInteger(device.localAddress.port)
            precondition(device.staticPublicKey.count == 32, "static public key length")
            writer.writeBytes(device.staticPublicKey)
            writer.writeInteger(Self.consentCode(device.consent))
            writer.writeInteger(UInt8(device.hasCard ? 1 : 0))
            writer.writeInteger(device.startTime.nanoseconds)
            writer.writeInteger(device.startRandomBytes)
            writer.writeInteger(device.epochNanoseconds)
            ConfigurationCodec.write(device.timeouts, to: &writer)
            ConfigurationCodec.write(device.limits, to: &writer)
            ConfigurationCodec.write(device.gate, to: &writer)
            ConfigurationCodec.write(device.measurement, to: &writer)
        case .input(let input):
            writer.writeInteger(Kind.input.rawValue)
            writer.writeInteger(input.interfaceID)
            writer.writeInteger(input.sequence)
            writer.writeInteger(input.time.nanoseconds)
            writer.writeInteger(input.randomBytes)
            switch input.input {
            case .timeout:
                writer.writeInteger(InputKind.timeout.rawValue)
            case .pose(let pose):
                writer.writeInteger(InputKind.pose.rawValue)
                writer.writeDouble(pose.x)
                writer.writeDouble(pose.y)
                writer.writeDouble(pose.heading)
            case .decision(let decision):
                writer.writeInteger(InputKind.decision.rawValue)
                writer.writeInteger(decision.rawValue)
            case .candidateDecision(let decision, let peer):
                writer.writeInteger(InputKind.candidateDecision.rawValue)
                writer.writeInteger(decision.rawValue)
                writer.writeInteger(peer.rawValue)
            case .cancel:
                writer.writeInteger(InputKind.cancel.rawValue)
            case .datagram(let bytes, let source):
                precondition(bytes.count <= Int(UInt16.max), "datagram too long to record")
                writer.writeInteger(InputKind.datagram.rawValue)
                writer.writeInteger(source.ipv4)
                writer.writeInteger(source.port)
                writer.writeInteger(UInt16(bytes.count))
                writer.writeBytes(bytes)
            }
        case .end(let end):
            writer.writeInteger(Kind.end.rawValue)
            writer.writeInteger(end.interfaceID)
            writer.writeInteger(end.inputs)
            writer.writeInteger(end.outbound)
        }
        var framed = ByteWriter(capacity: writer.bytes.count + 4)
        framed.writeInteger(UInt32(writer.bytes.count))
        framed.writeBytes(writer.bytes)
        return framed.bytes
    }

    /// Decodes Custom Block data written by ``encoded()``, with or without the block's padding: zero
    /// bytes up to the next multiple of 4. Anything else after the record is malformed, so that
    /// every record read encodes again to the bytes it came from.
    /// - Throws: ``CaptureError`` `unsupportedVersion` for records of another format version,
    ///   `truncated` or `malformed` otherwise.
    public init(customData: [UInt8]) throws(CaptureError) {
        var outer = RecordReader(customData)
        let length = Int(try outer.u32("record length"))
        var reader = RecordReader(try outer.bytes("record", count: length))
        let after = customData.count - 4 - length
        guard after == 0 || (after == (4 - length % 4) % 4 && customData.suffix(after).allSatisfy { $0 == 0 })
        else {
            throw CaptureError(
                .malformed, "record of \(length) bytes is followed by \(after) bytes that are not its padding"
            )
        }
        let version = try reader.u16("record version")
        guard version == CaptureFormat.version else {
            throw CaptureFormat.unsupported("replay records", version: version)
        }
        let rawKind = try reader.u8("record kind")
        guard let kind = Kind(rawValue: rawKind) else {
            throw CaptureError(.malformed, "record kind \(rawKind) is not defined")
        }
        switch kind {
        case .device:
            let interfaceID = try reader.u32("interface id")
            let nameLength = Int(try reader.u8("name length"))
            // Invalid UTF-8 would come back as replacement characters: another name, other bytes.
            guard let name = String(validating: try reader.bytes("name", count: nameLength), as: UTF8.self)
            else { throw CaptureError(.malformed, "device name is not valid UTF-8") }
            // Replay prints names: a control character could rewrite the user's terminal.
            guard !CaptureFormat.hasControlCharacter(name) else {
                throw CaptureError(.malformed, "device name has a control character")
            }
            let deviceID = DeviceID(rawValue: try reader.u64("device id"))
            let address = PeerAddress(
                ipv4: try reader.u32("local address"), port: try reader.u16("local port"))
            let publicKey = try reader.bytes("static public key", count: 32)
            let consent = try Self.consent(try reader.u8("consent policy"))
            let hasCard = try reader.flag("card flag")
            let start = Instant(nanoseconds: try reader.u64("start time"))
            let startRandom = try reader.u32("start random bytes")
            let epoch = try reader.u64("epoch")
            let timeouts = try ConfigurationCodec.readTimeouts(&reader)
            let limits = try ConfigurationCodec.readLimits(&reader)
            let gate = try ConfigurationCodec.readGate(&reader)
            let measurement = try ConfigurationCodec.readMeasurement(&reader)
            try reader.end("device record")
            self = .device(
                DeviceRecord(
                    interfaceID: interfaceID, name: name, deviceID: deviceID, localAddress: address,
                    staticPublicKey: publicKey, consent: consent, hasCard: hasCard, timeouts: timeouts,
                    limits: limits, gate: gate, measurement: measurement, startTime: start,
                    startRandomBytes: startRandom, epochNanoseconds: epoch))
        case .input:
            let interfaceID = try reader.u32("interface id")
            let sequence = try reader.u64("input sequence")
            let time = Instant(nanoseconds: try reader.u64("input time"))
            let randomBytes = try reader.u32("random byte count")
            let rawInput = try reader.u8("input kind")
            guard let inputKind = InputKind(rawValue: rawInput) else {
                throw CaptureError(.malformed, "input kind \(rawInput) is not defined")
            }
            let input: CapturedInput
            switch inputKind {
            case .timeout:
                input = .timeout
            case .pose:
                let x = try reader.finite("pose x")
                let y = try reader.finite("pose y")
                let heading = try reader.finite("pose heading")
                // The device would refuse to encode it in RANGING frames: a driver error, here a bad file.
                guard abs(x) <= Pose.encodableCoordinateLimit, abs(y) <= Pose.encodableCoordinateLimit else {
                    throw CaptureError(.malformed, "pose (\(x), \(y)) is outside the encodable room")
                }
                // A pose holds its heading normalized; another value would be recorded back changed.
                guard (0..<360).contains(heading) else {
                    throw CaptureError(.malformed, "pose heading \(heading) is not in [0, 360)")
                }
                input = .pose(Pose(x: x, y: y, heading: heading))
            case .decision:
                let raw = try reader.u8("decision")
                guard let decision = ConsentDecision(rawValue: raw) else {
                    throw CaptureError(.malformed, "decision \(raw) is not defined")
                }
                input = .decision(decision)
            case .candidateDecision:
                let raw = try reader.u8("decision")
                guard let decision = ConsentDecision(rawValue: raw) else {
                    throw CaptureError(.malformed, "decision \(raw) is not defined")
                }
                input = .candidateDecision(decision, peer: DeviceID(rawValue: try reader.u64("candidate")))
            case .cancel:
                input = .cancel
            case .datagram:
                let source = PeerAddress(
                    ipv4: try reader.u32("source address"), port: try reader.u16("source port"))
                let count = Int(try reader.u16("datagram length"))
                input = .datagram(bytes: try reader.bytes("datagram", count: count), source: source)
            }
            try reader.end("input record")
            self = .input(
                InputRecord(
                    interfaceID: interfaceID, sequence: sequence, time: time, input: input,
                    randomBytes: randomBytes))
        case .end:
            let interfaceID = try reader.u32("interface id")
            let inputs = try reader.u64("input count")
            let outbound = try reader.u64("outbound count")
            try reader.end("end record")
            self = .end(EndRecord(interfaceID: interfaceID, inputs: inputs, outbound: outbound))
        }
    }

    private static func consentCode(_ policy: ConsentPolicy) -> UInt8 {
        switch policy {
        case .share: 1
        case .receiveOnly: 2
        case .decline: 3
        case .askUser: 4
        case .shareWithKnownPeers: 5
        }
    }

    private static func consent(_ code: UInt8) throws(CaptureError) -> ConsentPolicy {
        switch code {
        case 1: return .share
        case 2: return .receiveOnly
        case 3: return .decline
        case 4: return .askUser
        case 5: return .shareWithKnownPeers
        default: throw CaptureError(.malformed, "consent policy \(code) is not defined")
        }
    }
}

/// Where replay gets the device's static private key from.
public enum StaticKeySource: Equatable, Sendable {
    /// Not in the capture: replay needs the device's key file (`share` captures).
    case external
    /// Derived as the simulator does: the first 32 bytes of `DeterministicRandom(seedMaterial:)`.
    case seedMaterial([UInt8])
    /// The raw private key, written only when explicitly requested.
    case embedded([UInt8])
}

/// How replay gets the random bytes a device drew.
public enum RandomSecrets: Equatable, Sendable {
    /// Every byte handed out, in order.
    case stream([UInt8])
    /// The device drew from `DeterministicRandom(seedMaterial:)`, which replay recreates.
    case seedMaterial([UInt8])
}

/// One device's secrets, carried in a Decryption Secrets Block of type ``CaptureFormat/secretsType``.
public struct DeviceSecrets: Equatable, Sendable {
    /// The device's interface.
    public var interfaceID: UInt32
    /// How to obtain the static private key.
    public var staticKey: StaticKeySource
    /// The encoded card the device offered, if any. The keylog writes an empty card as length 0,
    /// which reads back as nil: no encoded card is empty.
    public var card: [UInt8]?
    /// The random bytes the device drew (creation first, then per input).
    public var random: RandomSecrets
    /// The device's identity (its resolving key, which only known peers learn), if it kept one.
    public var identity: DeviceIdentity?
    /// The peers the device knew when it was created, bond keys included. Their names are cut to
    /// ``CaptureFormat/maximumNameBytes`` when written, as device names are.
    public var knownPeers: [KnownPeer]

    /// Creates a secrets record.
    public init(
        interfaceID: UInt32, staticKey: StaticKeySource, card: [UInt8]?, random: RandomSecrets,
        identity: DeviceIdentity? = nil, knownPeers: [KnownPeer] = []
    ) {
        self.interfaceID = interfaceID
        self.staticKey = staticKey
        self.card = card
        self.random = random
        self.identity = identity
        self.knownPeers = knownPeers
    }

    /// Resolving and bond keys are this long.
    static let keyLength = 32

    /// The recorded byte stream, when the draws were recorded one by one.
    public var randomStream: [UInt8]? {
        switch random {
        case .stream(let bytes): bytes
        case .seedMaterial: nil
        }
    }

    /// The Decryption Secrets Block data (big-endian fields).
    public func encoded() -> [UInt8] {
        var writer = ByteWriter(capacity: 64 + (randomStream?.count ?? 0))
        writer.writeInteger(CaptureFormat.version)
        writer.writeInteger(interfaceID)
        switch staticKey {
        case .external:
            writer.writeInteger(UInt8(0))
        case .seedMaterial(let material):
            precondition(material.count <= Int(UInt16.max), "seed material too long")
            writer.writeInteger(UInt8(1))
            writer.writeInteger(UInt16(material.count))
            writer.writeBytes(material)
        case .embedded(let raw):
            precondition(raw.count == 32, "private key length")
            writer.writeInteger(UInt8(2))
            writer.writeBytes(raw)
        }
        writer.writeInteger(UInt32(card?.count ?? 0))
        writer.writeBytes(card ?? [])
        if let identity {
            writer.writeInteger(UInt8(1))
            writer.writeBytes(identity.resolvingKey)
        } else {
            writer.writeInteger(UInt8(0))
        }
        writer.writeInteger(UInt32(knownPeers.count))
        for peer in knownPeers {
            precondition(
                peer.resolvingKey.count == Self.keyLength && peer.bondKey.count == Self.keyLength,
                "known peer key length")
            writer.writeBytes(peer.resolvingKey)
            writer.writeBytes(peer.bondKey)
            let name = CaptureFormat.recordedName(peer.name)
            writer.writeInteger(UInt8(name.count))
            writer.writeBytes(name)
        }
        switch random {
        case .stream(let bytes):
            writer.writeInteger(UInt8(0))
            writer.writeInteger(UInt32(bytes.count))
            writer.writeBytes(bytes)
        case .seedMaterial(let material):
            writer.writeInteger(UInt8(1))
            writer.writeInteger(UInt32(material.count))
            writer.writeBytes(material)
        }
        return writer.bytes
    }

    /// Decodes ``encoded()``.
    public init(decoding data: [UInt8]) throws(CaptureError) {
        var reader = RecordReader(data)
        let version = try reader.u16("keylog version")
        guard version == CaptureFormat.version else {
            throw CaptureFormat.unsupported("keylog", version: version)
        }
        interfaceID = try reader.u32("keylog interface id")
        let keyKind = try reader.u8("static key source")
        switch keyKind {
        case 0: staticKey = .external
        case 1:
            let count = Int(try reader.u16("seed material length"))
            staticKey = .seedMaterial(try reader.bytes("seed material", count: count))
        case 2: staticKey = .embedded(try reader.bytes("static private key", count: 32))
        default: throw CaptureError(.malformed, "static key source \(keyKind) is not defined")
        }
        let cardLength = Int(try reader.u32("card length"))
        card = cardLength == 0 ? nil : try reader.bytes("card", count: cardLength)
        identity =
            try reader.flag("identity flag")
            ? DeviceIdentity(resolvingKey: try reader.bytes("resolving key", count: Self.keyLength)) : nil
        // Each peer takes at least 65 bytes, so a count the data cannot hold ends in `truncated`.
        let peerCount = try reader.u32("known peer count")
        var peers: [KnownPeer] = []
        for index in 0..<peerCount {
            let resolvingKey = try reader.bytes("resolving key of known peer \(index)", count: Self.keyLength)
            let bondKey = try reader.bytes("bond key of known peer \(index)", count: Self.keyLength)
            let nameLength = Int(try reader.u8("name length of known peer \(index)"))
            guard
                let name = String(
                    validating: try reader.bytes("name of known peer \(index)", count: nameLength),
                    as: UTF8.self)
            else { throw CaptureError(.malformed, "the name of known peer \(index) is not valid UTF-8") }
            guard !CaptureFormat.hasControlCharacter(name) else {
                throw CaptureError(.malformed, "the name of known peer \(index) has a control character")
            }
            peers.append(KnownPeer(resolvingKey: resolvingKey, bondKey: bondKey, name: name))
        }
        knownPeers = peers
        let randomKind = try reader.u8("random source kind")
        let randomLength = Int(try reader.u32("random bytes length"))
        let randomBytes = try reader.bytes("random bytes", count: randomLength)
        switch randomKind {
        case 0: random = .stream(randomBytes)
        case 1: random = .seedMaterial(randomBytes)
        default: throw CaptureError(.malformed, "random source kind \(randomKind) is not defined")
        }
        try reader.end("keylog")
    }
}

/// Checked big-endian reads for our records.
struct RecordReader {
    private var reader: ByteReader

    init(_ bytes: [UInt8]) { reader = ByteReader(bytes) }

    private mutating func integer<T: FixedWidthInteger & UnsignedInteger>(_ field: String, _ type: T.Type)
        throws(CaptureError) -> T
    {
        guard let value = reader.readInteger(as: type) else {
            throw CaptureError(
                .truncated, "\(field) needs \(MemoryLayout<T>.size) bytes, \(reader.readableBytes) left")
        }
        return value
    }

    mutating func u8(_ field: String) throws(CaptureError) -> UInt8 { try integer(field, UInt8.self) }
    mutating func u16(_ field: String) throws(CaptureError) -> UInt16 { try integer(field, UInt16.self) }
    mutating func u32(_ field: String) throws(CaptureError) -> UInt32 { try integer(field, UInt32.self) }
    mutating func u64(_ field: String) throws(CaptureError) -> UInt64 { try integer(field, UInt64.self) }

    mutating func flag(_ field: String) throws(CaptureError) -> Bool {
        let value = try u8(field)
        guard value <= 1 else { throw CaptureError(.malformed, "\(field) \(value) is not 0 or 1") }
        return value == 1
    }

    mutating func finite(_ field: String) throws(CaptureError) -> Double {
        let value = Double(bitPattern: try u64(field))
        guard value.isFinite else { throw CaptureError(.malformed, "\(field) is not a finite number") }
        return value
    }

    /// A recorded timer or window: at most a day, the longest session a capture holds. No writer
    /// records more (scenarios, `share` and the simulator all stay under it), and the core's
    /// floating-point timer arithmetic would overflow near `Int64.max` nanoseconds.
    mutating func duration(_ field: String) throws(CaptureError) -> Duration {
        let nanoseconds = try u64(field)
        guard nanoseconds <= Self.longestDurationNanoseconds else {
            throw CaptureError(.malformed, "\(field) of \(nanoseconds) ns is longer than a day")
        }
        return .nanoseconds(Int64(nanoseconds))
    }

    static let longestDurationNanoseconds =
        UInt64(CaptureFile.longestSession.components.seconds) * 1_000_000_000

    mutating func durationRange(_ field: String) throws(CaptureError) -> ClosedRange<Duration> {
        let low = try duration("\(field) (low)")
        let high = try duration("\(field) (high)")
        guard low <= high else { throw CaptureError(.malformed, "\(field): low end above high end") }
        return low...high
    }

    mutating func count(_ field: String) throws(CaptureError) -> Int { Int(try u32(field)) }

    mutating func bytes(_ field: String, count: Int) throws(CaptureError) -> [UInt8] {
        guard let value = reader.readBytes(count) else {
            throw CaptureError(.truncated, "\(field) needs \(count) bytes, \(reader.readableBytes) left")
        }
        return value
    }

    func end(_ what: String) throws(CaptureError) {
        guard reader.readableBytes == 0 else {
            throw CaptureError(.malformed, "\(what): \(reader.readableBytes) bytes after the last field")
        }
    }
}

/// Fixed-order encodings of the configuration structs. Timeouts and limits follow the field tables
/// beside their structs in Core; a field added to any of them changes the record, so the format
/// version must be raised.
enum ConfigurationCodec {
    static func write(_ duration: Duration, to writer: inout ByteWriter) {
        writer.writeInteger(duration.nanosecondsClamped)
    }

    static func write(_ range: ClosedRange<Duration>, to writer: inout ByteWriter) {
        write(range.lowerBound, to: &writer)
        write(range.upperBound, to: &writer)
    }

    static func write(_ timeouts: Timeouts, to writer: inout ByteWriter) {
        for field in Timeouts.fields {
            switch field {
            case .duration(_, let path): write(timeouts[keyPath: path], to: &writer)
            case .durationRange(_, let path): write(timeouts[keyPath: path], to: &writer)
            case .count(_, let path): writer.writeInteger(UInt32(clamping: timeouts[keyPath: path]))
            }
        }
    }

    static func readTimeouts(_ reader: inout RecordReader) throws(CaptureError) -> Timeouts {
        var timeouts = Timeouts()
        for field in Timeouts.fields {
            switch field {
            case .duration(let name, let path): timeouts[keyPath: path] = try reader.duration(name)
            case .durationRange(let name, let path): timeouts[keyPath: path] = try reader.durationRange(name)
            case .count(let name, let path): timeouts[keyPath: path] = try reader.count(name)
            }
        }
        return timeouts
    }

    static func write(_ limits: Limits, to writer: inout ByteWriter) {
        for field in Limits.fields {
            switch field {
            case .count(_, let path): writer.writeInteger(UInt32(clamping: limits[keyPath: path]))
            case .number(_, let path): writer.writeDouble(limits[keyPath: path])
            }
        }
    }

    /// Bounds on recorded limits, far above any real configuration.
    static let maximumCardBytes = 64 * 1024 * 1024
    static let maximumTableSize = 1 << 20

    static func readLimits(_ reader: inout RecordReader) throws(CaptureError) -> Limits {
        var limits = Limits()
        for field in Limits.fields {
            switch field {
            case .count(let name, let path): limits[keyPath: path] = try reader.count(name)
            case .number(let name, let path): limits[keyPath: path] = try reader.finite(name)
            }
        }
        // Replay would allocate by these: a file must not make it reserve gigabytes.
        guard limits.maxCardBytes <= maximumCardBytes, limits.maxPeers <= maximumTableSize,
            limits.rateLimitedSources <= maximumTableSize
        else { throw CaptureError(.malformed, "limits beyond what a device holds") }
        return limits
    }

    static func write(_ gate: ProximityGate.Configuration, to writer: inout ByteWriter) {
        for field in ProximityGate.Configuration.fields {
            switch field {
            case .number(_, let path): writer.writeDouble(gate[keyPath: path])
            case .numberRange(_, let path):
                writer.writeDouble(gate[keyPath: path].lowerBound)
                writer.writeDouble(gate[keyPath: path].upperBound)
            case .duration(_, let path): write(gate[keyPath: path], to: &writer)
            case .count(_, let path): writer.writeInteger(UInt32(clamping: gate[keyPath: path]))
            }
        }
    }

    static func readGate(_ reader: inout RecordReader) throws(CaptureError) -> ProximityGate.Configuration {
        var gate = ProximityGate.Configuration.default
        for field in ProximityGate.Configuration.fields {
            switch field {
            case .number(let name, let path): gate[keyPath: path] = try reader.finite(name)
            case .numberRange(let name, let path):
                let low = try reader.finite("\(name) (low)")
                let high = try reader.finite("\(name) (high)")
                guard low <= high else {
                    throw CaptureError(.malformed, "\(name) runs from \(low) down to \(high)")
                }
                gate[keyPath: path] = low...high
            case .duration(let name, let path): gate[keyPath: path] = try reader.duration(name)
            case .count(let name, let path): gate[keyPath: path] = try reader.count(name)
            }
        }
        // The initializer's preconditions, checked here so that a bad file is an error, not a trap.
        guard gate.distanceBand.lowerBound >= 0, (0...180).contains(gate.maximumBearing),
            gate.distanceHysteresis >= 0, gate.bearingHysteresis >= 0, gate.window > .zero,
            gate.minimumSamples >= 1, gate.minimumSamplesWhileOpen >= 1, gate.outlierDistance > 0,
            gate.outlierBearing > 0
        else { throw CaptureError(.malformed, "gate configuration out of range") }
        return gate
    }

    static func write(_ model: MeasurementModel, to writer: inout ByteWriter) {
        for field in MeasurementModel.fields { writer.writeDouble(model[keyPath: field.path]) }
    }

    static func readMeasurement(_ reader: inout RecordReader) throws(CaptureError) -> MeasurementModel {
        var model = MeasurementModel.default
        for field in MeasurementModel.fields { model[keyPath: field.path] = try reader.finite(field.name) }
        // The initializer's preconditions, checked here so that a bad file is an error, not a trap.
        guard model.distanceNoise >= 0, model.bearingNoise >= 0, model.outlierBiasMean >= 0,
            (0...1).contains(model.outlierProbability), (0...1).contains(model.dropoutProbability),
            model.sampleRate >= 0.001, model.sampleRate <= 1000, model.maximumRange > 0
        else { throw CaptureError(.malformed, "measurement model out of range") }
        return model
    }
}
