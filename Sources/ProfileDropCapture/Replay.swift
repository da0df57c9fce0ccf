import ProfileDropCore
import ProfileDropCrypto

/// One line of a replay timeline.
public struct ReplayEntry: Sendable {
    /// What happened.
    public enum Kind: Sendable {
        /// The device was rebuilt; `card` is the card it offered (a secret, from the keylog).
        case start(DeviceRecord, card: ProfileCard?)
        /// A recorded input was fed in.
        case input(CapturedInput)
        /// The replayed device sent this datagram, identical to the recorded one.
        case sent(OutgoingDatagram)
        /// The replayed device reported this event.
        case event(DeviceEvent)
    }

    /// The device's time.
    public var time: Instant
    /// The device's name in the capture.
    public var device: String
    /// What happened.
    public var kind: Kind
    /// The frames of a sent or received SECURE datagram, decrypted with the session keys the
    /// replay re-derived; nil for other datagrams and when they could not be decrypted (tampered).
    public var frames: [Frame]? = nil

    /// Creates an entry, for timelines built from other sources than a replay.
    public init(time: Instant, device: String, kind: Kind, frames: [Frame]? = nil) {
        self.time = time
        self.device = device
        self.kind = kind
        self.frames = frames
    }
}

/// Where a replay first differed from the capture.
public struct ReplayDivergence: Equatable, Sendable, CustomStringConvertible {
    /// The device.
    public var device: String
    /// The time of the input after which it happened.
    public var time: Instant
    /// What differed, in one line.
    public var reason: String
    /// The recorded datagram, if one is involved.
    public var recorded: [UInt8]?
    /// The replayed datagram, if one is involved.
    public var replayed: [UInt8]?

    public var description: String { "\(device) at t=\(time): \(reason)" }
}

/// The outcome of replaying one device.
public enum ReplayResult: Equatable, Sendable {
    /// Every recorded datagram was reproduced byte for byte; `datagrams` were compared.
    case identical(datagrams: Int)
    /// The first difference.
    case diverged(ReplayDivergence)
}

/// Rebuilds a captured device and drives it with the recorded inputs, comparing every datagram it
/// sends with the recorded one.
public enum Replay {
    /// Replays `captured`.
    ///
    /// - Parameters:
    ///   - staticKey: the device's static private key; needed when the capture names no key source
    ///     (`share` captures). When given, it must match the recorded public key.
    ///   - onEntry: called for each timeline entry, in order.
    /// - Throws: ``CaptureError`` when the capture cannot be replayed at all: no keylog, no or a
    ///   wrong static key, an undecodable card.
    public static func run(
        _ captured: CapturedDevice, staticKey: X25519.PrivateKey? = nil,
        onEntry: (ReplayEntry) -> Void = { _ in }
    ) throws(CaptureError) -> ReplayResult {
        let record = captured.record
        guard let secrets = captured.secrets else {
            throw CaptureError(
                .missingSecrets,
                "the capture has no secrets for device \(record.name): re-capture with --keylog to replay it")
        }
        guard captured.end != nil else {
            throw CaptureError(
                .truncated, "the capture of \(record.name) has no end record: the file was cut short")
        }
        let key = try resolveKey(record: record, source: secrets.staticKey, given: staticKey)
        var card: ProfileCard?
        if let bytes = secrets.card {
            do {
                card = try ProfileCard(decoding: bytes)
            } catch {
                throw CaptureError(
                    .malformed, "the recorded card of \(record.name) does not decode: \(error)")
            }
        }
        guard (card != nil) == record.hasCard else {
            throw CaptureError(
                .malformed, "the keylog and the device record of \(record.name) disagree about a card")
        }
        let configuration = record.configuration(
            card: card, staticKey: key, identity: secrets.identity, knownPeers: secrets.knownPeers)
        return withoutActuallyEscaping(onEntry) { onEntry in
            var engine = Engine(captured: captured, tape: ReplayTape(secrets.random), onEntry: onEntry)
            return engine.run(configuration: configuration, card: card)
        }
    }

    /// The static private key to rebuild `record` with.
    static func resolveKey(record: DeviceRecord, source: StaticKeySource, given: X25519.PrivateKey?)
        throws(CaptureError) -> X25519.PrivateKey
    {
        let key: X25519.PrivateKey
        let origin: String
        if let given {
            key = given
            origin = "the given key file"
        } else {
            switch source {
            case .external:
                throw CaptureError(
                    .staticKey,
                    "device \(record.name) needs its static key to replay: "
                        + "pass --key-file PATH (its key file)"
                )
            case .seedMaterial(let material):
                var random = DeterministicRandom(seedMaterial: material)
                key = X25519.PrivateKey(using: &random)
                origin = "the simulation seed"
            case .embedded(let raw):
                do {
                    key = try X25519.PrivateKey(rawRepresentation: raw)
                } catch {
                    throw CaptureError(.malformed, "the embedded static key of \(record.name) is malformed")
                }
                origin = "the embedded key"
            }
        }
        guard key.publicKey.rawRepresentation == record.staticPublicKey else {
            throw CaptureError(
                .staticKey,
                "the static key from \(origin) has public key \(hex(key.publicKey.rawRepresentation)), "
                    + "but \(record.name) recorded \(hex(record.staticPublicKey))")
        }
        return key
    }
}

/// The recorded random stream, handed out in order. Running past its end yields zeros and is
/// noted, so that a replay that draws more than the original reports a divergence, never traps.
final class ReplayTape {
    private let bytes: [UInt8]
    private var generator: DeterministicRandom?
    /// What a generator handed out, for ``draws(from:)``.
    private var generated: [UInt8] = []
    private(set) var position = 0
    private(set) var overrun = false
    /// Fills draws past the end of a recorded stream. Never zeros: a rejection-sampling loop in the
    /// device would spin forever on them, and replay would hang instead of reporting the overrun.
    private var pastTheEnd = DeterministicRandom(seedMaterial: Array("replay: past the recorded draws".utf8))

    init(_ secrets: RandomSecrets) {
        switch secrets {
        case .stream(let stream):
            bytes = stream
        case .seedMaterial(let material):
            bytes = []
            generator = DeterministicRandom(seedMaterial: material)
        }
    }

    /// The bytes handed out since `start`.
    func draws(from start: Int) -> ArraySlice<UInt8> {
        let handedOut = generator == nil ? bytes[0..<min(position, bytes.count)] : generated[...]
        return handedOut[min(max(start, 0), handedOut.count)...]
    }

    /// Whether draws are counted against the recorded counts.
    var isCounted: Bool { generator == nil }

    func fill(_ buffer: UnsafeMutableRawBufferPointer) {
        if generator != nil {
            generator?.fill(buffer)
            generated.append(contentsOf: buffer)
            position += buffer.count
            return
        }
        let available = max(0, min(buffer.count, bytes.count - position))
        for index in 0..<available { buffer[index] = bytes[position + index] }
        if available < buffer.count {
            pastTheEnd.fill(UnsafeMutableRawBufferPointer(rebasing: buffer[available...]))
            overrun = true
        }
        position += available
    }
}

/// A ``RandomSource`` that replays a recorded stream.
struct ReplayRandom: RandomSource {
    let tape: ReplayTape

    mutating func fill(_ buffer: UnsafeMutableRawBufferPointer) { tape.fill(buffer) }
}

private struct Engine {
    let captured: CapturedDevice
    let tape: ReplayTape
    let onEntry: (ReplayEntry) -> Void
    var nextOutbound = 0
    var decryptor: SessionDecryptor?
    /// Where the tape stood when the current input began.
    var inputStart = 0
    /// Random bytes the device should have drawn so far; nil once a count was not recorded.
    var expectedRandom: Int? = 0

    init(captured: CapturedDevice, tape: ReplayTape, onEntry: @escaping (ReplayEntry) -> Void) {
        self.captured = captured
        self.tape = tape
        self.onEntry = onEntry
    }

    var name: String { captured.record.name }

    mutating func run(configuration: DeviceConfiguration, card: ProfileCard?) -> ReplayResult {
        let record = captured.record
        onEntry(ReplayEntry(time: record.startTime, device: name, kind: .start(record, card: card)))
        decryptor = SessionDecryptor(configuration: configuration)
        var device = Device(
            configuration: configuration, random: ReplayRandom(tape: tape), now: record.startTime,
            localAddress: record.localAddress)
        guard device.deviceID == record.deviceID else {
            return .diverged(
                divergence(
                    record.startTime,
                    "the rebuilt device has id \(device.deviceID), the capture recorded \(record.deviceID)"))
        }
        expectedRandom = Self.count(record.startRandomBytes)
        if let divergence = drain(&device, after: "creation", time: record.startTime) {
            return .diverged(divergence)
        }
        for input in captured.inputs {
            inputStart = tape.position
            var entry = ReplayEntry(time: input.time, device: name, kind: .input(input.input))
            if case .datagram(let bytes, _) = input.input { entry.frames = decryptor?.received(bytes) }
            onEntry(entry)
            switch input.input {
            case .timeout: device.handleTimeout(at: input.time)
            case .pose(let pose): device.updatePose(pose, at: input.time)
            case .decision(let decision): device.decide(decision, at: input.time)
            case .candidateDecision(let decision, let peer):
                device.decide(decision, for: peer, at: input.time)
            case .cancel: device.cancel(at: input.time)
            case .datagram(let bytes, let source): device.handleDatagram(bytes, from: source, at: input.time)
            }
            expectedRandom = expectedRandom.flatMap { total in
                Self.count(input.randomBytes).map { total + $0 }
            }
            if let divergence = drain(&device, after: "input \(input.sequence)", time: input.time) {
                return .diverged(divergence)
            }
        }
        let lastTime = captured.inputs.last?.time ?? record.startTime
        if nextOutbound < captured.outbound.count {
            let missing = captured.outbound[nextOutbound]
            return .diverged(
                ReplayDivergence(
                    device: name, time: missing.time,
                    reason:
                        "the capture has \(captured.outbound.count - nextOutbound) more datagrams than the "
                        + "replay sent, starting with packet \(missing.packetIndex)",
                    recorded: missing.payload, replayed: nil))
        }
        if let end = captured.end,
            end.inputs != UInt64(captured.inputs.count) || end.outbound != UInt64(captured.outbound.count)
        {
            return .diverged(
                divergence(
                    lastTime,
                    "the end record counts \(end.inputs) inputs and \(end.outbound) datagrams, "
                        + "the file holds "
                        + "\(captured.inputs.count) and \(captured.outbound.count)"))
        }
        return .identical(datagrams: captured.outbound.count)
    }

    /// Compares everything the device sent since the last input, reports its events, and checks
    /// its random draws.
    mutating func drain(_ device: inout Device, after what: String, time: Instant) -> ReplayDivergence? {
        while let datagram = device.pollTransmit() {
            guard nextOutbound < captured.outbound.count else {
                return ReplayDivergence(
                    device: name, time: time,
                    reason: "after \(what) the replay sent a datagram the capture does not have",
                    recorded: nil, replayed: datagram.bytes)
            }
            let recorded = captured.outbound[nextOutbound]
            let sameDestination: Bool
            switch datagram.destination {
            case .multicast: sameDestination = IPv4UDP.isMulticast(recorded.destination.ipv4)
            case .unicast(let address): sameDestination = address == recorded.destination
            }
            guard recorded.payload == datagram.bytes, sameDestination else {
                let reason =
                    recorded.payload == datagram.bytes
                    ? "datagram \(nextOutbound) (packet \(recorded.packetIndex)) "
                        + "went to \(datagram.destination), "
                        + "the capture has \(recorded.destination)"
                    : "datagram \(nextOutbound) (packet \(recorded.packetIndex)) differs from the capture"
                return ReplayDivergence(
                    device: name, time: time, reason: reason, recorded: recorded.payload,
                    replayed: datagram.bytes)
            }
            nextOutbound += 1
            var entry = ReplayEntry(time: recorded.time, device: name, kind: .sent(datagram))
            entry.frames = decryptor?.sent(datagram.bytes, draws: tape.draws(from: inputStart))
            onEntry(entry)
        }
        while let event = device.pollEvent() {
            onEntry(ReplayEntry(time: time, device: name, kind: .event(event)))
        }
        if tape.overrun {
            return divergence(
                time, "after \(what) the replay drew more random bytes than the capture recorded")
        }
        if tape.isCounted, let expected = expectedRandom, tape.position != expected {
            return divergence(
                time,
                "after \(what) the replay had drawn \(tape.position) random bytes, "
                    + "the capture recorded \(expected)")
        }
        return nil
    }

    static func count(_ recorded: UInt32) -> Int? {
        recorded == CaptureFormat.uncounted ? nil : Int(recorded)
    }

    func divergence(_ time: Instant, _ reason: String) -> ReplayDivergence {
        ReplayDivergence(device: name, time: time, reason: reason, recorded: nil, replayed: nil)
    }
}

/// Lowercase hex, for the timeline.
func hex(_ bytes: [UInt8]) -> String { Hex.encode(bytes) }
