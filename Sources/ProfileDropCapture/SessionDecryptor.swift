@_spi(Replay) import ProfileDropCore
import ProfileDropCrypto
import ProfileDropNoise

/// Follows one replayed device's Noise handshakes from the outside and decrypts its SECURE
/// datagrams for the timeline.
///
/// The device's ephemeral private key is among the random bytes it drew while writing INVITE or
/// ACCEPT: the 32-byte window whose public key opens that message. With it and the static key the
/// decryptor runs the same handshake beside the device, checking each message it writes against
/// the one the device sent, and splits the same transport keys. Anything it cannot follow is
/// simply left undecrypted; it never affects the replay's verdict.
struct SessionDecryptor {
    private struct Session {
        var handshake: HandshakeState?
        var transport: NoiseTransport?
        /// INVITE's Noise message, kept until we answer it.
        var pendingInvite: HandshakePacket?
    }

    private let staticKey: X25519.PrivateKey
    private let parameters: [UInt8]
    private var sessions: [UInt64: Session] = [:]

    init(configuration: DeviceConfiguration) {
        staticKey = configuration.staticKey
        // What the core puts in ACCEPT and CONFIRM; checked against the messages.
        parameters = HandshakeRules.parameters(configuration.limits).encoded()
    }

    /// Notes a datagram the device received; returns its frames when it is a decryptable SECURE.
    mutating func received(_ bytes: [UInt8]) -> [Frame]? {
        guard let packet = try? Packet(datagram: bytes) else { return nil }
        switch packet {
        case .invite(let invite):
            if sessions[invite.sessionID] == nil {
                sessions[invite.sessionID] = Session(pendingInvite: invite)
            }
        case .accept(let message), .confirm(let message):
            guard var session = sessions[message.sessionID], var handshake = session.handshake,
                !handshake.isComplete, !handshake.isMyTurnToWrite,
                (try? handshake.readMessage(message.noiseMessage)) != nil
            else { return nil }
            if handshake.isComplete { session.transport = handshake.split() }
            session.handshake = handshake
            sessions[message.sessionID] = session
        case .secure(let secure):
            return open(secure, outbound: false)
        case .beacon, .query, .busy:
            break
        }
        return nil
    }

    /// Notes a datagram the device sent; `draws` are the random bytes it drew for the input that
    /// produced it. Returns its frames when it is a decryptable SECURE.
    mutating func sent(_ bytes: [UInt8], draws: ArraySlice<UInt8>) -> [Frame]? {
        guard let packet = try? Packet(datagram: bytes) else { return nil }
        switch packet {
        case .invite(let invite):
            guard sessions[invite.sessionID]?.handshake == nil else { return nil }  // a retransmission
            guard
                var handshake = start(
                    .initiator, invite.sessionID, initiator: invite.sender, responder: invite.receiver,
                    message: invite.noiseMessage, draws: draws),
                write(&handshake, payload: [], expected: invite.noiseMessage)
            else { return nil }
            sessions[invite.sessionID] = Session(handshake: handshake)
        case .accept(let accept):
            guard let invite = sessions[accept.sessionID]?.pendingInvite,
                sessions[accept.sessionID]?.handshake == nil
            else { return nil }
            guard
                var handshake = start(
                    .responder, accept.sessionID, initiator: invite.sender, responder: invite.receiver,
                    message: accept.noiseMessage, draws: draws),
                (try? handshake.readMessage(invite.noiseMessage)) != nil,
                write(&handshake, payload: parameters, expected: accept.noiseMessage)
            else { return nil }
            sessions[accept.sessionID] = Session(handshake: handshake)
        case .confirm(let confirm):
            guard var session = sessions[confirm.sessionID], var handshake = session.handshake,
                !handshake.isComplete, handshake.isMyTurnToWrite,
                write(&handshake, payload: parameters, expected: confirm.noiseMessage)
            else { return nil }
            session.transport = handshake.split()
            session.handshake = handshake
            sessions[confirm.sessionID] = session
        case .secure(let secure):
            return open(secure, outbound: true)
        case .beacon, .query, .busy:
            break
        }
        return nil
    }

    private func open(_ packet: SecurePacket, outbound: Bool) -> [Frame]? {
        guard let transport = sessions[packet.sessionID]?.transport else { return nil }
        let cipher = outbound ? transport.sender : transport.receiver
        guard
            let plaintext = try? cipher.decrypt(
                nonce: packet.packetNumber, ad: packet.header, ciphertext: packet.ciphertext)
        else { return nil }
        return try? Frame.decodeAll(plaintext)
    }

    /// A handshake state whose ephemeral key is the drawn 32-byte window matching the key that
    /// starts `message`.
    private func start(
        _ role: NoiseRole, _ sessionID: UInt64, initiator: DeviceID, responder: DeviceID, message: [UInt8],
        draws: ArraySlice<UInt8>
    ) -> HandshakeState? {
        let length = X25519.keyLength
        guard message.count >= length, draws.count >= length else { return nil }
        let ephemeralPublic = Array(message.prefix(length))
        var start = draws.startIndex
        while start + length <= draws.endIndex {
            if let candidate = try? X25519.PrivateKey(rawRepresentation: draws[start..<(start + length)]),
                candidate.publicKey.rawRepresentation == ephemeralPublic
            {
                return HandshakeRules.handshake(
                    role: role, sessionID: sessionID, initiator: initiator, responder: responder,
                    staticKey: staticKey, ephemeralKey: candidate)
            }
            start += 1
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
