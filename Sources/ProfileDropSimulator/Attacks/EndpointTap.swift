@_spi(Replay) import ProfileDropCore
import ProfileDropCrypto
import ProfileDropNoise

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
    private struct Followed {
        var info: TapSession
        var handshake: HandshakeState?
        var transport: NoiseTransport?
        /// INVITE's Noise message, kept until we answer it.
        var pendingInvite: HandshakePacket?
    }

    private(set) var device: Device
    let policy: TapPolicy
    private let draws: DrawRecorder
    private let staticKey: X25519.PrivateKey
    private let parameters: [UInt8]
    private var sessions: [UInt64: Followed] = [:]
    /// Whether the adversary abandoned the device: it hears, sends and reports nothing more.
    private(set) var isRetired = false

    /// A device with `configuration` whose every draw comes from `seedMaterial`; with `claimedID`,
    /// under that id instead of a drawn one (an impersonator of the device that holds it).
    init(
        configuration: DeviceConfiguration, seedMaterial: [UInt8], now: Instant, localAddress: PeerAddress,
        policy: TapPolicy, claimedID: DeviceID? = nil
    ) {
        draws = DrawRecorder(seedMaterial: seedMaterial, claimedID: claimedID)
        device = Device(configuration: configuration, random: draws, now: now, localAddress: localAddress)
        self.policy = policy
        staticKey = configuration.staticKey
        parameters = HandshakeRules.parameters(configuration.limits).encoded()
    }

    /// Abandons the device: from now on it is silent and has no deadline.
    mutating func retire() { isRetired = true }

    var deviceID: DeviceID { device.deviceID }
    var nextDeadline: Instant? { isRetired ? nil : device.nextDeadline }
    var isClosed: Bool { isRetired || device.isClosed }

    mutating func handleDatagram(_ bytes: [UInt8], from source: PeerAddress, at time: Instant) {
        guard !isRetired else { return }
        draws.clear()
        if let packet = try? Packet(datagram: bytes) {
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
        switch packet {
        case .invite(let invite):
            if sessions[invite.sessionID] == nil {
                sessions[invite.sessionID] = Followed(
                    info: TapSession(sessionID: invite.sessionID, isInitiator: false, peer: invite.sender),
                    pendingInvite: invite)
            }
        case .accept(let message), .confirm(let message):
            guard var session = sessions[message.sessionID], var handshake = session.handshake,
                !handshake.isComplete, !handshake.isMyTurnToWrite,
                (try? handshake.readMessage(message.noiseMessage)) != nil
            else { return }
            session.info.peerStaticKey = handshake.remoteStaticKey?.rawRepresentation
            session.handshake = handshake
            if handshake.isComplete { complete(&session, at: time) }
            sessions[message.sessionID] = session
        case .secure(let secure):
            guard let session = sessions[secure.sessionID], let transport = session.transport,
                let plaintext = try? transport.receiver.decrypt(
                    nonce: secure.packetNumber, ad: secure.header, ciphertext: secure.ciphertext),
                let frames = try? Frame.decodeAll(plaintext)
            else { return }
            policy.received(frames, in: session.info, device: deviceID, at: time)
        case .beacon, .query, .busy:
            break
        }
    }

    private mutating func follow(sent packet: Packet) {
        switch packet {
        case .invite(let invite):
            guard sessions[invite.sessionID] == nil,
                var handshake = start(
                    .initiator, invite.sessionID, initiator: invite.sender, responder: invite.receiver,
                    message: invite.noiseMessage),
                Self.write(&handshake, payload: [], expected: invite.noiseMessage)
            else { return }
            sessions[invite.sessionID] = Followed(
                info: TapSession(sessionID: invite.sessionID, isInitiator: true, peer: invite.receiver),
                handshake: handshake)
        case .accept(let accept):
            guard var session = sessions[accept.sessionID], session.handshake == nil,
                let invite = session.pendingInvite,
                var handshake = start(
                    .responder, accept.sessionID, initiator: invite.sender, responder: invite.receiver,
                    message: accept.noiseMessage),
                (try? handshake.readMessage(invite.noiseMessage)) != nil,
                Self.write(&handshake, payload: parameters, expected: accept.noiseMessage)
            else { return }
            session.handshake = handshake
            session.pendingInvite = nil
            sessions[accept.sessionID] = session
        case .confirm(let confirm):
            guard var session = sessions[confirm.sessionID], var handshake = session.handshake,
                handshake.isMyTurnToWrite,
                Self.write(&handshake, payload: parameters, expected: confirm.noiseMessage)
            else { return }
            session.handshake = handshake
            complete(&session, at: device.now)
            sessions[confirm.sessionID] = session
        case .beacon, .query, .busy, .secure:
            break
        }
    }

    private func complete(_ session: inout Followed, at time: Instant) {
        guard let handshake = session.handshake, session.transport == nil else { return }
        let transport = handshake.split()
        session.transport = transport
        session.info.handshakeHash = transport.handshakeHash
        session.info.peerStaticKey = handshake.remoteStaticKey?.rawRepresentation
        session.info.securedAt = time
        policy.secured(session.info, device: deviceID, at: time)
    }

    /// A handshake whose ephemeral key is the drawn key matching the one that starts `message`.
    private func start(
        _ role: NoiseRole, _ sessionID: UInt64, initiator: DeviceID, responder: DeviceID, message: [UInt8]
    ) -> HandshakeState? {
        guard message.count >= X25519.keyLength else { return nil }
        let ephemeralPublic = Array(message.prefix(X25519.keyLength))
        for draw in draws.keyDraws {
            guard let candidate = try? X25519.PrivateKey(rawRepresentation: draw),
                candidate.publicKey.rawRepresentation == ephemeralPublic
            else { continue }
            return HandshakeRules.handshake(
                role: role, sessionID: sessionID, initiator: initiator, responder: responder,
                staticKey: staticKey, ephemeralKey: candidate)
        }
        return nil
    }

    /// Writes our next message and checks it is the one the device sent.
    private static func write(_ handshake: inout HandshakeState, payload: [UInt8], expected: [UInt8]) -> Bool
    {
        var unused = DeterministicRandom(seed: 0)  // the ephemeral key is fixed; nothing is drawn
        guard let message = try? handshake.writeMessage(payload: payload, random: &unused) else {
            return false
        }
        return message == expected
    }

    // MARK: - Rewriting

    /// The SECURE packet as the policy wants it sent, or nil to drop it. A packet of a session the
    /// tap could not follow goes out unchanged.
    private func rewrite(_ secure: SecurePacket, original: [UInt8]) -> [UInt8]? {
        guard let session = sessions[secure.sessionID], let transport = session.transport,
            let plaintext = try? transport.sender.decrypt(
                nonce: secure.packetNumber, ad: secure.header, ciphertext: secure.ciphertext),
            let frames = try? Frame.decodeAll(plaintext)
        else { return original }
        let sent = policy.sending(frames, in: session.info, device: deviceID, at: device.now)
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
