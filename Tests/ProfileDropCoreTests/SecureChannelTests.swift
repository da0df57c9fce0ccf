import ProfileDropCrypto
import ProfileDropNoise
import Testing

@testable import ProfileDropCore

@Suite struct SecureChannelTests {
    /// Runs a real XX handshake and returns (initiator, responder) channels.
    static func pair() throws -> (SecureChannel, SecureChannel) {
        var random = DeterministicRandom(seed: 21)
        let prologue = HandshakeRules.prologue(
            sessionID: 9, initiator: DeviceID(rawValue: 1), responder: DeviceID(rawValue: 2))
        var initiator = try HandshakeState(
            protocolName: WireConstants.noiseProtocolName, role: .initiator, prologue: prologue,
            staticKey: X25519.PrivateKey(using: &random), remoteStaticKey: nil)
        var responder = try HandshakeState(
            protocolName: WireConstants.noiseProtocolName, role: .responder, prologue: prologue,
            staticKey: X25519.PrivateKey(using: &random), remoteStaticKey: nil)
        _ = try responder.readMessage(try initiator.writeMessage(payload: [], random: &random))
        _ = try initiator.readMessage(try responder.writeMessage(payload: [1], random: &random))
        _ = try responder.readMessage(try initiator.writeMessage(payload: [2], random: &random))
        #expect(initiator.handshakeHash == responder.handshakeHash)
        return (
            SecureChannel(
                sessionID: 9, peerAddress: PeerAddress(10, 0, 0, 2, port: 1), transport: initiator.split()),
            SecureChannel(
                sessionID: 9, peerAddress: PeerAddress(10, 0, 0, 1, port: 1), transport: responder.split())
        )
    }

    static func secure(_ datagram: OutgoingDatagram) throws -> SecurePacket {
        guard case .secure(let packet) = try Packet(datagram: datagram.bytes) else {
            throw ProtocolError(.unexpectedMessage, "not a secure packet")
        }
        return packet
    }

    @Test func framesTravelBothWaysAndOutOfOrder() throws {
        var (a, b) = try Self.pair()
        let first = try Self.secure(a.seal([.inRange(true)]))
        let second = try Self.secure(a.seal([.closeAck, .receipt(.all)]))
        #expect(first.packetNumber == 0 && second.packetNumber == 1)
        #expect(try b.open(second) == [.closeAck, .receipt(.all)])
        #expect(try b.open(first) == [.inRange(true)])
        let reply = try Self.secure(b.seal([.token(DiscoveryToken(Array(repeating: 3, count: 16)))]))
        #expect(try a.open(reply) == [.token(DiscoveryToken(Array(repeating: 3, count: 16)))])
        // Our own packets do not open with our own receive key.
        var ownLoopback = a
        #expect(throws: ProtocolError.self) { try ownLoopback.open(first) }
    }

    @Test func aSealedDatagramIsItsHeaderThenTheFramesSealedUnderIt() throws {
        var (a, b) = try Self.pair()
        let frames: [Frame] = [.inRange(true), .cardAck(digest: Array(repeating: 5, count: 32))]
        _ = a.seal([.closeAck])
        let datagram = a.seal(frames)
        let packet = try Self.secure(datagram)
        let header = SecurePacket.header(
            sessionID: 9, packetNumber: 1,
            ciphertextLength: Frame.encode(frames).count + WireConstants.tagSize)
        #expect(Array(datagram.bytes.prefix(WireConstants.secureHeaderSize)) == header)
        #expect(packet.header == header)
        // The header the receiver rebuilds on the stack is the same 22 bytes.
        let rebuilt = [UInt8](unsafeUninitializedCapacity: WireConstants.secureHeaderSize) { buffer, count in
            packet.writeHeader(into: UnsafeMutableRawBufferPointer(buffer))
            count = WireConstants.secureHeaderSize
        }
        #expect(rebuilt == header)
        #expect(try b.open(packet) == frames)
    }

    @Test func tamperingAnyByteFailsAuthenticationAndLeavesTheWindowAlone() throws {
        var (a, b) = try Self.pair()
        let datagram = a.seal([.cardAck(digest: Array(repeating: 7, count: 32))])
        for position in 4..<datagram.bytes.count {
            var bytes = datagram.bytes
            bytes[position] ^= 0x20
            // A flipped length or header byte may already fail parsing; the rest must fail the tag.
            guard case .secure(let packet) = try? Packet(datagram: bytes) else { continue }
            do throws(ProtocolError) {
                _ = try b.open(packet)
                Issue.record("tampered byte \(position) was accepted")
            } catch {
                #expect(error.code == .authenticationFailed)
            }
        }
        #expect(b.replay.largest == nil)
        let genuine = try Self.secure(datagram)
        #expect(try b.open(genuine) == [.cardAck(digest: Array(repeating: 7, count: 32))])
        do {
            _ = try b.open(genuine)
            Issue.record("a replay was accepted")
        } catch {
            #expect(error.code == .replayed)
        }
    }

    @Test func packetsFarBehindTheWindowAreTooOld() throws {
        var (a, b) = try Self.pair()
        let old = try Self.secure(a.seal([.closeAck]))
        var latest: SecurePacket?
        for _ in 0..<200 { latest = try Self.secure(a.seal([.closeAck])) }
        if let latest { _ = try b.open(latest) }
        do throws(ProtocolError) {
            _ = try b.open(old)
            Issue.record("a packet 200 behind was accepted")
        } catch {
            #expect(error.code == .tooOld)
        }
    }
}
