import ProfileDropCrypto
import ProfileDropNoise

/// Runs one device's Noise handshakes beside it, from the outside: capture replay's decryptor does
/// so for a recorded device, and the simulator's adversaries for their own devices.
///
/// Whoever holds the device's static key and the random bytes it drew can do what the device does:
/// the ephemeral private key of INVITE or ACCEPT is the drawn 32 bytes whose public key opens that
/// message. With it the follower writes the same messages (each checked against the one the device
/// sent), reads the peer's, and splits the same transport keys. A session it cannot follow (no
/// matching draw, a message that differs) is simply not followed.
///
/// SPI rather than `package`, as ``HandshakeRules``: the capture module is also compiled inside the
/// Fuzz package, which `package` access would not reach.
package struct HandshakeFollower {
    /// One session of the followed device.
    package struct Session {
        /// The session id.
        package let sessionID: UInt64
        /// Whether the followed device invited.
        package let isInitiator: Bool
        /// The peer's device id.
        package let peer: DeviceID
        /// The transport keys, once the handshake completed.
        package fileprivate(set) var transport: NoiseTransport?
        fileprivate var handshake: HandshakeState?
        /// INVITE's Noise message, kept until the device answers it.
        fileprivate var pendingInvite: HandshakePacket?

        /// The peer's Noise static package key, once a message carrying it was read.
        package var peerStaticKey: X25519.PublicKey? { handshake?.remoteStaticKey }
    }

    private let staticKey: X25519.PrivateKey
    /// What the core puts in ACCEPT and CONFIRM; checked against the messages.
    private let parameters: [UInt8]
    private var sessions: [UInt64: Session] = [:]

    /// A follower of the device with `configuration` (its static key and limits).
    package init(configuration: DeviceConfiguration) {
        staticKey = configuration.staticKey
        parameters = HandshakeRules.parameters(configuration.limits).encoded()
    }

    /// The session `sessionID` as followed so far, if the device has one.
    package func session(_ sessionID: UInt64) -> Session? { sessions[sessionID] }

    /// Notes a handshake packet the device received. Returns the session when this packet completed
    /// its handshake.
    package mutating func received(_ packet: Packet) -> Session? {
        switch packet {
        case .invite(let invite):
            if sessions[invite.sessionID] == nil {
                sessions[invite.sessionID] = Session(
                    sessionID: invite.sessionID, isInitiator: false, peer: invite.sender,
                    pendingInvite: invite)
            }
        case .accept(let message), .confirm(let message):
            guard let session = sessions[message.sessionID], var handshake = session.handshake,
                !handshake.isComplete, !handshake.isMyTurnToWrite,
                (try? handshake.readMessage(message.noiseMessage)) != nil
            else { return nil }
            return store(session, advancedTo: handshake)
        case .beacon, .query, .busy, .secure, .probe, .probeAck:
            break
        }
        return nil
    }

    /// Notes a handshake packet the device sent; `drawnKeys` are the 32-byte draws that may hold its
    /// ephemeral key, tried in order. Returns the session when this packet completed its handshake.
    package mutating func sent<Draw: Collection<UInt8>>(_ packet: Packet, drawnKeys: some Sequence<Draw>)
        -> Session?
    {
        switch packet {
        case .invite(let invite):
            guard sessions[invite.sessionID]?.handshake == nil else { return nil }  // a retransmission
            guard
                var handshake = start(
                    .initiator, invite.sessionID, initiator: invite.sender, responder: invite.receiver,
                    message: invite.noiseMessage, drawnKeys: drawnKeys),
                write(&handshake, payload: [], expected: invite.noiseMessage)
            else { return nil }
            sessions[invite.sessionID] = Session(
                sessionID: invite.sessionID, isInitiator: true, peer: invite.receiver, handshake: handshake)
        case .accept(let accept):
            guard var session = sessions[accept.sessionID], session.handshake == nil,
                let invite = session.pendingInvite,
                var handshake = start(
                    .responder, accept.sessionID, initiator: invite.sender, responder: invite.receiver,
                    message: accept.noiseMessage, drawnKeys: drawnKeys),
                (try? handshake.readMessage(invite.noiseMessage)) != nil,
                write(&handshake, payload: parameters, expected: accept.noiseMessage)
            else { return nil }
            session.handshake = handshake
            session.pendingInvite = nil
            sessions[accept.sessionID] = session
        case .confirm(let confirm):
            guard let session = sessions[confirm.sessionID], var handshake = session.handshake,
                handshake.isMyTurnToWrite,
                write(&handshake, payload: parameters, expected: confirm.noiseMessage)
            else { return nil }
            return store(session, advancedTo: handshake)
        case .beacon, .query, .busy, .secure, .probe, .probeAck:
            break
        }
        return nil
    }

    /// The frames of a SECURE `packet` of a session whose handshake completed, decrypted with the
    /// keys of the way it went: sent by the followed device when `outbound`, else received.
    package func frames(of packet: SecurePacket, outbound: Bool) -> [Frame]? {
        guard let transport = sessions[packet.sessionID]?.transport else { return nil }
        let cipher = outbound ? transport.sender : transport.receiver
        guard
            let plaintext = try? cipher.decrypt(
                nonce: packet.packetNumber, ad: packet.header, ciphertext: packet.ciphertext)
        else { return nil }
        return try? Frame.decodeAll(plaintext)
    }

    /// Stores `session` with its handshake moved on to `handshake`; when that completed it, splits
    /// the transport keys and returns the session.
    private mutating func store(_ session: Session, advancedTo handshake: HandshakeState) -> Session? {
        var session = session
        session.handshake = handshake
        guard handshake.isComplete, session.transport == nil else {
            sessions[session.sessionID] = session
            return nil
        }
        session.transport = handshake.split()
        sessions[session.sessionID] = session
        return session
    }

    /// A handshake whose ephemeral key is the first of `drawnKeys` whose package key starts
    /// `message`.
    private func start<Draw: Collection<UInt8>>(
        _ role: NoiseRole, _ sessionID: UInt64, initiator: DeviceID, responder: DeviceID, message: [UInt8],
        drawnKeys: some Sequence<Draw>
    ) -> HandshakeState? {
        guard message.count >= X25519.keyLength else { return nil }
        let ephemeralPublic = Array(message.prefix(X25519.keyLength))
        for draw in drawnKeys {
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
    private func write(_ handshake: inout HandshakeState, payload: [UInt8], expected: [UInt8]) -> Bool {
        var unused = DeterministicRandom(seed: 0)  // the ephemeral key is fixed; nothing is drawn
        guard let message = try? handshake.writeMessage(payload: payload, random: &unused) else {
            return false
        }
        return message == expected
    }
}
