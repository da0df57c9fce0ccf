import Foundation
import ProfileDropCrypto
import ProfileDropNoise
import Testing

/// Our Noise_XX against the third-party Python `noiseprotocol` package, each side taking each role.
/// The peer script, `noise_peer.py`, sits next to this file; `scripts/setup.sh` installs the package.
@Suite(.serialized) struct NoiseInteropTests {
    static let rounds = 3

    @Test(arguments: [NoiseRole.initiator, NoiseRole.responder])
    func handshakeAndTransportAgreeWithPython(ourRole: NoiseRole) throws {
        var random = SystemRandom()
        let ourStatic = X25519.PrivateKey(using: &random)
        let peerStatic = X25519.PrivateKey(using: &random)
        let peer = try PythonNoisePeer(
            role: ourRole == .initiator ? "responder" : "initiator", staticKey: peerStatic)

        var session = Session(role: ourRole, staticKey: ourStatic, peer: peer)
        try session.handshake(random: &random)
        #expect(session.handshake.remoteStaticKey == peerStatic.publicKey)
        var transport = session.handshake.split()
        for round in 0..<Self.rounds {
            let request = Array("i->r \(round)".utf8)
            let reply = Array("r->i \(round)".utf8)
            if ourRole == .initiator {
                try peer.send(transport.sender.encryptWithAd([UInt8](), plaintext: request))
                #expect(try transport.receiver.decryptWithAd([UInt8](), ciphertext: peer.receive()) == reply)
            } else {
                #expect(
                    try transport.receiver.decryptWithAd([UInt8](), ciphertext: peer.receive()) == request)
                try peer.send(transport.sender.encryptWithAd([UInt8](), plaintext: reply))
            }
        }

        let outcome = peer.finish()
        #expect(outcome.exitCode == 0, "python peer: \(outcome.status)")
        #expect(outcome.status.contains("\"handshake\""))
        // Equal handshake hashes mean both sides saw the same transcript, statics included.
        #expect(outcome.status.contains(hex(transport.handshakeHash)), "python peer: \(outcome.status)")
    }

    /// We flip one bit in message 2 of the handshake or in the first transport message: Python must
    /// reject it as an authentication failure (its exit code 3).
    @Test(arguments: [TamperPoint.handshakeMessage2, .firstTransportMessage])
    func pythonRejectsOurTamperedMessage(point: TamperPoint) throws {
        var random = SystemRandom()
        // Message 2 is the responder's; the first transport message is the initiator's.
        let ourRole: NoiseRole = point == .handshakeMessage2 ? .responder : .initiator
        let peer = try PythonNoisePeer(
            role: ourRole == .initiator ? "responder" : "initiator",
            staticKey: X25519.PrivateKey(using: &random))
        var session = Session(role: ourRole, staticKey: X25519.PrivateKey(using: &random), peer: peer)
        session.tamperOutgoingHandshakeMessage = point == .handshakeMessage2 ? 1 : nil
        do {
            try session.handshake(random: &random)
            var transport = session.handshake.split()
            var sealed = try transport.sender.encryptWithAd([UInt8](), plaintext: Array("i->r 0".utf8))
            sealed[sealed.count / 2] ^= 0x01
            try peer.send(sealed)
            _ = try? peer.receive()
        } catch is PythonNoisePeer.StreamEnded {
            // Python stopped reading after rejecting the message; its status says why.
        }
        let outcome = peer.finish()
        #expect(outcome.exitCode == 3, "python peer: \(outcome.status)")
        #expect(outcome.status.contains("authentication"))
    }

    /// Python flips one bit in its handshake message 2 or its first transport message: we must throw
    /// `decryptFailed`.
    @Test(arguments: [TamperPoint.handshakeMessage2, .firstTransportMessage])
    func weRejectPythonsTamperedMessage(point: TamperPoint) throws {
        var random = SystemRandom()
        // Python is the responder: its outgoing message 0 is handshake message 2, message 1 its first reply.
        let peer = try PythonNoisePeer(
            role: "responder", staticKey: X25519.PrivateKey(using: &random),
            tamperOutgoing: point == .handshakeMessage2 ? 0 : 1)
        var session = Session(role: .initiator, staticKey: X25519.PrivateKey(using: &random), peer: peer)
        var error: NoiseError?
        do {
            try session.handshake(random: &random)
            var transport = session.handshake.split()
            try peer.send(transport.sender.encryptWithAd([UInt8](), plaintext: Array("i->r 0".utf8)))
            _ = try transport.receiver.decryptWithAd([UInt8](), ciphertext: peer.receive())
        } catch let noiseError as NoiseError {
            error = noiseError
        }
        #expect(error?.code == .decryptFailed)
        #expect(session.handshake.isComplete == (point == .firstTransportMessage))
        _ = peer.finish()
    }

    enum TamperPoint: Sendable, CustomTestStringConvertible {
        case handshakeMessage2, firstTransportMessage
        var testDescription: String {
            self == .handshakeMessage2 ? "handshake message 2" : "first transport message"
        }
    }

    /// Our side of the XX exchange, with the payloads the Python script expects.
    struct Session {
        var handshake: HandshakeState
        let peer: PythonNoisePeer
        let role: NoiseRole
        var tamperOutgoingHandshakeMessage: Int?

        init(role: NoiseRole, staticKey: X25519.PrivateKey, peer: PythonNoisePeer) {
            self.role = role
            self.peer = peer
            do {
                handshake = try HandshakeState(
                    protocolName: HandshakeState.xx, role: role, prologue: [], staticKey: staticKey,
                    remoteStaticKey: nil)
            } catch {
                preconditionFailure("XX with a static key is a valid configuration: \(error)")
            }
        }

        mutating func handshake(random: inout SystemRandom) throws {
            for (index, payload) in ["hs1", "hs2", "hs3"].enumerated() {
                let ours = (index % 2 == 0) == (role == .initiator)
                if ours {
                    var message = try handshake.writeMessage(payload: Array(payload.utf8), random: &random)
                    if tamperOutgoingHandshakeMessage == index { message[message.count / 2] ^= 0x01 }
                    try peer.send(message)
                } else {
                    let received = try handshake.readMessage(try peer.receive())
                    #expect(received == Array(payload.utf8))
                }
            }
        }
    }
}

/// The Python peer process, speaking 2-byte length-prefixed frames on its standard streams.
final class PythonNoisePeer {
    struct StreamEnded: Error {}

    private let process = Process()
    private let toPeer = Pipe()
    private let fromPeer = Pipe()
    private let statusPipe = Pipe()

    init(role: String, staticKey: X25519.PrivateKey, tamperOutgoing: Int? = nil) throws {
        // A peer that rejected a message exits; a later write must fail, not kill the test process.
        signal(SIGPIPE, SIG_IGN)
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent(
            "noise_peer.py")
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        var arguments = [
            "python3", script.path, "--role", role, "--static-private", hex(staticKey.rawRepresentation),
            "--rounds", String(NoiseInteropTests.rounds),
        ]
        if let tamperOutgoing { arguments += ["--tamper-outgoing", String(tamperOutgoing)] }
        process.arguments = arguments
        process.standardInput = toPeer
        process.standardOutput = fromPeer
        process.standardError = statusPipe
        try process.run()
    }

    func send(_ message: [UInt8]) throws {
        let frame = [UInt8(message.count >> 8), UInt8(message.count & 0xff)] + message
        do {
            try toPeer.fileHandleForWriting.write(contentsOf: Data(frame))
        } catch {
            throw StreamEnded()
        }
    }

    func receive() throws -> [UInt8] {
        let header = try readExactly(2)
        return try readExactly(Int(header[0]) << 8 | Int(header[1]))
    }

    /// Reads with POSIX read(2), retrying EINTR: the test process receives SIGCHLD from its peers.
    private func readExactly(_ count: Int) throws -> [UInt8] {
        var result = [UInt8](repeating: 0, count: count)
        var filled = 0
        let descriptor = fromPeer.fileHandleForReading.fileDescriptor
        while filled < count {
            let got = result.withUnsafeMutableBytes {
                read(descriptor, $0.baseAddress! + filled, count - filled)
            }
            if got < 0 && errno == EINTR { continue }
            guard got > 0 else { throw StreamEnded() }
            filled += got
        }
        return result
    }

    /// Closes our end, waits for the peer, and returns its exit code and status lines.
    func finish() -> (exitCode: Int32, status: String) {
        try? toPeer.fileHandleForWriting.close()
        let status = statusPipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        let text = String(decoding: status, as: UTF8.self)
        if text.contains("No module named") {
            Issue.record(
                "the Python package 'noiseprotocol' is missing: run scripts/setup.sh (pip install noiseprotocol)"
            )
        }
        return (process.terminationStatus, text)
    }
}

func hex(_ bytes: [UInt8]) -> String { Hex.encode(bytes) }
