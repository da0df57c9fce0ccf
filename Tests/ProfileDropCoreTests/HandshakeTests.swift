import ProfileDropCrypto
import ProfileDropNoise
import Testing

@_spi(Replay) @testable import ProfileDropCore

/// The invitation handshake against a hand-driven peer.
@Suite struct HandshakeTests {
    static let ghost = PeerAddress(10, 0, 0, 7, port: 4000)
    static let ghostID = DeviceID(rawValue: 0xFFFF_0000_0000_0001)

    /// A device that heard the ghost's beacon and sent it an INVITE.
    static func invited() throws -> (DiscoverySessionTests.Lone, HandshakePacket) {
        var lone = DiscoverySessionTests.Lone()
        lone.deliver(
            .beacon(Beacon(deviceID: ghostID, port: 4000, busy: false, sequence: 7)), from: ghost, at: .zero)
        lone.run(until: Instant.zero + .milliseconds(700))
        let invites = lone.sent.compactMap { if case .invite(let invite) = $0.packet { invite } else { nil } }
        guard let invite = invites.first else { throw ProtocolError(.unexpectedMessage, "no INVITE") }
        return (lone, invite)
    }

    static func accept(_ invite: HandshakePacket, seed: UInt64) throws -> (HandshakeState, Packet) {
        var random = DeterministicRandom(seed: seed)
        var responder = try HandshakeState(
            protocolName: WireConstants.noiseProtocolName, role: .responder,
            prologue: HandshakeRules.prologue(
                sessionID: invite.sessionID, initiator: invite.sender, responder: invite.receiver),
            staticKey: X25519.PrivateKey(using: &random), remoteStaticKey: nil)
        _ = try responder.readMessage(invite.noiseMessage)
        let message = try responder.writeMessage(
            payload: HandshakeParameters(maxCardBytes: 1 << 20, receiveWindow: 16).encoded(), random: &random)
        let accept = Packet.accept(
            HandshakePacket(
                sessionID: invite.sessionID, sender: invite.receiver, receiver: invite.sender,
                noiseMessage: message))
        return (responder, accept)
    }

    @Test func acceptFromAnotherAddressIsRejectedAndTheRealOneSecures() throws {
        var (lone, invite) = try Self.invited()
        #expect(invite.receiver == Self.ghostID && invite.noiseMessage.count == 32)
        let (_, forged) = try Self.accept(invite, seed: 66)
        lone.deliver(forged, from: PeerAddress(10, 0, 0, 66, port: 4000), at: lone.device.now)
        #expect(lone.device.counters.rejected(.unexpectedMessage) == 1)
        #expect(!lone.events.contains { if case .secured = $0 { true } else { false } })

        var (responder, accept) = try Self.accept(invite, seed: 7)
        lone.deliver(accept, from: Self.ghost, at: lone.device.now)
        #expect(lone.events.contains { if case .secured(Self.ghostID) = $0 { true } else { false } })
        let confirms = lone.sent.compactMap {
            if case .confirm(let confirm) = $0.packet { confirm } else { nil }
        }
        #expect(confirms.count == 1)
        if let confirm = confirms.first {
            let parameters = try HandshakeParameters(
                decoding: try responder.readMessage(confirm.noiseMessage))
            #expect(Int(parameters.maxCardBytes) == Limits().maxCardBytes)
            #expect(responder.isComplete)
        }
        // A duplicate ACCEPT (our CONFIRM was lost) is answered with the same CONFIRM again.
        lone.deliver(accept, from: Self.ghost, at: lone.device.now + .milliseconds(1))
        let again = lone.sent.compactMap {
            if case .confirm(let confirm) = $0.packet { confirm } else { nil }
        }
        #expect(again.count == 2 && again.first == again.last)
    }

    @Test func corruptedAcceptFailsTheHandshakeWithoutEndingTheSession() throws {
        var (lone, invite) = try Self.invited()
        let (_, accept) = try Self.accept(invite, seed: 7)
        guard case .accept(var body) = accept else { return }
        body.noiseMessage[40] ^= 1
        lone.deliver(.accept(body), from: Self.ghost, at: lone.device.now)
        #expect(lone.device.counters.rejected(.handshakeFailed) == 1)
        #expect(lone.device.stage == .connecting)
        // The genuine ACCEPT still completes it.
        lone.deliver(accept, from: Self.ghost, at: lone.device.now + .milliseconds(1))
        #expect(lone.device.stage == .ranging)
    }
}
