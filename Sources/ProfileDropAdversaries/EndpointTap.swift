import ProfileDropCore
import ProfileDropCrypto
import ProfileDropNoise
import ProfileDropSimulator

/// A seeded random source that also keeps the 32-byte draws of the current input: an adversary's
/// own device draws its ephemeral Noise keys from it, and the adversary, which owns the device,
/// reads them back.
///
/// A class, so that the device (which stores its source as an existential) and the tap share it.
final class DrawRecorder: RandomSource {
    private var source: DeterministicRandom
    /// The 32-byte draws since the last ``clear()``, in order.
    private(set) var keyDraws: [[UInt8]] = []
    /// The value the next 64-bit draw returns instead of a random one: a device draws its id first,
    /// so an adversary's device can be made to claim a victim's id.
    private var claimed: UInt64?

    init(seedMaterial: [UInt8], claimedID: DeviceID? = nil) {
        source = DeterministicRandom(seedMaterial: seedMaterial)
        claimed = claimedID?.rawValue
    }

    func fill(_ buffer: UnsafeMutableRawBufferPointer) {
        source.fill(buffer)
        if buffer.count == X25519.keyLength { keyDraws.append(Array(buffer)) }
    }

    func nextUInt64() -> UInt64 {
        if let claimed {
            self.claimed = nil
            return claimed
        }
        // As the protocol's default does: eight bytes through fill.
        var value: UInt64 = 0
        withUnsafeMutableBytes(of: &value) { fill($0) }
        return value
    }

    /// Forgets the draws of the previous input.
    func clear() { keyDraws.removeAll(keepingCapacity: true) }
}

/// What an adversary's tap knows of one of its own device's sessions.
struct TapSession {
    /// The session id.
    let sessionID: UInt64
    /// Whether our device invited.
    let isInitiator: Bool
    /// The peer's device id.
    let peer: DeviceID
    /// The handshake hash, once the handshake completed.
    var handshakeHash: [UInt8]?
    /// The peer's Noise static public key, once its handshake message carrying it was read.
    var peerStaticKey: [UInt8]?
    /// When the handshake completed.
    var securedAt: Instant?
}

/// The adversary's brain behind one or more of its own devices: it sees every datagram they send
/// and receive, every frame of their sessions in the clear, and may change what they send.
///
/// A class, shared by the adversary's devices and the attack driver.
class TapPolicy {
    /// Whether the device keeps this datagram it sent (BEACON, QUERY, handshake; not SECURE).
    func keepsOutgoing(_ packet: Packet, device: DeviceID, at time: Instant) -> Bool { true }

    /// Whether the device is handed this datagram; called with every datagram it receives.
    func keepsIncoming(_ packet: Packet, from source: PeerAddress, device: DeviceID, at time: Instant) -> Bool
    {
        true
    }

    /// Frames of a SECURE packet the device received, decrypted.
    func received(_ frames: [Frame], in session: TapSession, device: DeviceID, at time: Instant) {}

    /// Frames of a SECURE packet the device is sending; returns the frames to send instead (none
    /// drops the packet).
    func sending(_ frames: [Frame], in session: TapSession, device: DeviceID, at time: Instant) -> [Frame] {
        frames
    }

    /// A handshake completed (``TapSession/handshakeHash`` and ``TapSession/peerStaticKey`` are set).
    func secured(_ session: TapSession, device: DeviceID, at time: Instant) {}
}

/// A real core ``Device`` owned by the adversary, with the adversary's view of its sessions.
///
/// The adversary holds its device's static key and reads back the random draws the device made,
/// so, as capture replay does from a keylog, it runs each Noise handshake beside the device, splits
/// the same transport keys, decrypts what the device sends and receives, and may re-seal changed
/// frames under the same packet number. Everything it learns, and every change, goes through its
/// ``TapPolicy``.
struct TappedDevice: SansIODevice {
    private(set) var device: Device
    let policy: TapPolicy
    private let draws: DrawRecorder
    private var follower: HandshakeFollower
    /// What the policy is told of each session whose handshake completed.
    private var secured: [UInt64: TapSession] = [:]
    /// Whether the adversary abandoned the device: it hears, sends and reports nothing more.
    private(set) var isRetired = false
    /// The IPv4 addresses of a hall's bystanders (``AttackStage/crowd``): what they send reaches the
    /// device but not the policy, and their sessions are not followed, so that the adversary's
    /// figures and rules see the run's own participants alone, as in the small room.
    var crowd: Range<UInt32> = 0..<0

    /// A device with `configuration` whose every draw comes from `seedMaterial`; with `claimedID`,
    /// under that id instead of a drawn one (an impersonator of the device that holds it).
    init(
        configuration: DeviceConfiguration, seedMaterial: [UInt8], now: Instant, localAddress: PeerAddress,
        policy: TapPolicy, claimedID: DeviceID? = nil
    ) {
        draws = DrawRecorder(seedMaterial: seedMaterial, claimedID: claimedID)
        device = Device(configuration: configuration, random: draws, now: now, localAddress: localAddress)
        self.policy = policy
        follower = HandshakeFollower(configuration: configuration)
    }

    /// Abandons the device: from now on it is silent and has no deadline.
    mutating func retire() { isRetired = true }

    var deviceID: DeviceID { device.deviceID }
    var nextDeadline: Instant? { isRetired ? nil : device.nextDeadline }
    var isClosed: Bool { isRetired || device.isClosed }

    mutating func handleDatagram(_ bytes: [UInt8], from source: PeerAddress, at time: Instant) {
        guard !isRetired else { return }
        draws.clear()
        if !crowd.contains(source.ipv4), let packet = try? Packet(datagram: bytes) {
            guard policy.keepsIncoming(packet, from: source, device: deviceID, at: time) else { return }
            follow(received: packet, at: time)
        }
        device.handleDatagram(bytes, from: source, at: time)
    }

    mutating func handleTimeout(at time: Instant) {
        guard !isRetired else { return }
        draws.clear()
        device.handleTimeout(at: time)
    }

    mutating func updatePose(_ pose: Pose, at time: Instant) {
        guard !isRetired else { return }
        draws.clear()
        device.updatePose(pose, at: time)
    }

    mutating func decide(_ decision: ConsentDecision, at time: Instant) {
        guard !isRetired else { return }
        draws.clear()
        device.decide(decision, at: time)
    }

    mutating func decide(_ decision: ConsentDecision, for peer: DeviceID, at time: Instant) {
        guard !isRetired else { return }
        draws.clear()
        device.decide(decision, for: peer, at: time)
    }

    mutating func cancel(at time: Instant) {
        guard !isRetired else { return }
        draws.clear()
        device.cancel(at: time)
    }

    mutating func pollTransmit() -> OutgoingDatagram? {
        while let datagram = device.pollTransmit() {
            guard !isRetired else { continue }
            guard let packet = try? Packet(datagram: datagram.bytes) else { return datagram }
            if case .secure(let secure) = packet {
                guard let bytes = rewrite(secure, original: datagram.bytes) else { continue }
                return OutgoingDatagram(destination: datagram.destination, bytes: bytes)
            }
            guard policy.keepsOutgoing(packet, device: deviceID, at: device.now) else { continue }
            follow(sent: packet)
            return datagram
        }
        return nil
    }

    mutating func pollEvent() -> DeviceEvent? {
        guard !isRetired else {
            while device.pollEvent() != nil {}
            return nil
        }
        return device.pollEvent()
    }

    // MARK: - Following the handshakes

    private mutating func follow(received packet: Packet, at time: Instant) {
        if case .secure(let secure) = packet {
            guard let session = secured[secure.sessionID],
                let frames = follower.frames(of: secure, outbound: false)
            else { return }
            policy.received(frames, in: session, device: deviceID, at: time)
        } else if let completed = follower.received(packet) {
            reportSecured(completed, at: time)
        }
    }

    private mutating func follow(sent packet: Packet) {
        if let completed = follower.sent(packet, drawnKeys: draws.keyDraws) {
            reportSecured(completed, at: device.now)
        }
    }

    /// Tells the policy that `session`'s handshake completed at `time`.
    private mutating func reportSecured(_ session: HandshakeFollower.Session, at time: Instant) {
        guard let transport = session.transport else { return }
        let info = TapSession(
            sessionID: session.sessionID, isInitiator: session.isInitiator, peer: session.peer,
            handshakeHash: transport.handshakeHash, peerStaticKey: session.peerStaticKey?.rawRepresentation,
            securedAt: time)
        secured[session.sessionID] = info
        policy.secured(info, device: deviceID, at: time)
    }

    // MARK: - Rewriting

    /// The SECURE packet as the policy wants it sent, or nil to drop it. A packet of a session the
    /// tap could not follow goes out unchanged.
    private func rewrite(_ secure: SecurePacket, original: [UInt8]) -> [UInt8]? {
        guard let session = secured[secure.sessionID],
            let transport = follower.session(secure.sessionID)?.transport,
            let frames = follower.frames(of: secure, outbound: true)
        else { return original }
        let sent = policy.sending(frames, in: session, device: deviceID, at: device.now)
        if sent == frames { return original }
        if sent.isEmpty { return nil }
        let payload = Frame.encode(sent)
        let header = SecurePacket.header(
            sessionID: secure.sessionID, packetNumber: secure.packetNumber,
            ciphertextLength: payload.count + WireConstants.tagSize)
        guard
            let ciphertext = try? transport.sender.encrypt(
                nonce: secure.packetNumber, ad: header, plaintext: payload)
        else { return nil }
        return header + ciphertext
    }
}
