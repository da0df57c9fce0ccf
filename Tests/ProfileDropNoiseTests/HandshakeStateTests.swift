import ProfileDropCrypto
import ProfileDropTestSupport
import Testing

@testable import ProfileDropNoise

/// Handshakes between two in-memory parties.
struct HandshakeStateTests {
    struct Parties {
        var initiator: HandshakeState
        var responder: HandshakeState
        let initiatorStatic: X25519.PrivateKey
        let responderStatic: X25519.PrivateKey
    }

    static func parties(
        _ protocolName: String = HandshakeState.xx, random: inout DeterministicRandom,
        prologue: [UInt8] = [1, 2]
    ) throws -> Parties {
        let initiatorStatic = X25519.PrivateKey(using: &random)
        let responderStatic = X25519.PrivateKey(using: &random)
        let pattern = try NoiseProtocolName(parsing: protocolName).pattern
        let psks = (0..<pattern.presharedKeyCount).map { [UInt8](repeating: UInt8($0 + 1), count: 32) }
        return Parties(
            initiator: try HandshakeState(
                protocolName: protocolName, role: .initiator, prologue: prologue, staticKey: initiatorStatic,
                remoteStaticKey: responderStatic.publicKey, presharedKeys: psks),
            responder: try HandshakeState(
                protocolName: protocolName, role: .responder, prologue: prologue, staticKey: responderStatic,
                remoteStaticKey: initiatorStatic.publicKey, presharedKeys: psks),
            initiatorStatic: initiatorStatic, responderStatic: responderStatic)
    }

    /// Runs the handshake to completion, each message carrying a distinct payload; returns the messages.
    @discardableResult
    static func complete(_ parties: inout Parties, random: inout DeterministicRandom) throws -> [[UInt8]] {
        var messages: [[UInt8]] = []
        while !parties.initiator.isComplete {
            let payload = Array("payload \(messages.count)".utf8)
            let message: [UInt8]
            let received: [UInt8]
            if parties.initiator.isMyTurnToWrite {
                #expect(!parties.responder.isMyTurnToWrite && parties.initiator.isInitiatorTurn)
                message = try parties.initiator.writeMessage(payload: payload, random: &random)
                received = try parties.responder.readMessage(message)
            } else {
                #expect(parties.responder.isMyTurnToWrite && !parties.initiator.isInitiatorTurn)
                message = try parties.responder.writeMessage(payload: payload, random: &random)
                received = try parties.initiator.readMessage(message)
            }
            #expect(received == payload)
            messages.append(message)
        }
        #expect(parties.responder.isComplete)
        return messages
    }

    static func code(_ body: () throws -> Void) -> NoiseError.Code? { caught(NoiseError.self, body)?.code }

    @Test func xxRoundTripAuthenticatesBothStaticKeysAndCarriesTransport() throws {
        var random = DeterministicRandom(seed: 1)
        var parties = try Self.parties(random: &random)
        #expect(parties.initiator.remoteStaticKey == nil)
        let messages = try Self.complete(&parties, random: &random)
        // e | e, ee, s, es | s, se — with "payload N" (9 bytes) in each.
        #expect(messages.map(\.count) == [32 + 9, 32 + 48 + 9 + 16, 48 + 9 + 16])
        #expect(parties.initiator.remoteStaticKey == parties.responderStatic.publicKey)
        #expect(parties.responder.remoteStaticKey == parties.initiatorStatic.publicKey)
        #expect(parties.initiator.remoteEphemeralKey != nil)
        #expect(parties.initiator.handshakeHash == parties.responder.handshakeHash)
        #expect(parties.initiator.handshakeHash.count == 64)
        #expect(!parties.initiator.isMyTurnToWrite && !parties.responder.isMyTurnToWrite)

        var initiator = parties.initiator.split()
        var responder = parties.responder.split()
        #expect(initiator.handshakeHash == parties.initiator.handshakeHash)
        for round in 0..<3 {
            let toResponder = try initiator.sender.encryptWithAd([UInt8](), plaintext: [UInt8(round)])
            #expect(
                try responder.receiver.decryptWithAd([UInt8](), ciphertext: toResponder) == [UInt8(round)])
            let toInitiator = try responder.sender.encryptWithAd([UInt8](), plaintext: [UInt8(round + 10)])
            #expect(
                try initiator.receiver.decryptWithAd([UInt8](), ciphertext: toInitiator) == [
                    UInt8(round + 10)
                ])
        }
        // The directions use different keys.
        let same = try initiator.sender.encrypt(nonce: 7, ad: [UInt8](), plaintext: [0])
        #expect(try responder.sender.encrypt(nonce: 7, ad: [UInt8](), plaintext: [0]) != same)
    }

    @Test func sameSeedGivesTheSameHandshakeAndDifferentProloguesDisagree() throws {
        var firstRandom = DeterministicRandom(seed: 9)
        var first = try Self.parties(random: &firstRandom)
        var secondRandom = DeterministicRandom(seed: 9)
        var second = try Self.parties(random: &secondRandom)
        #expect(
            try Self.complete(&first, random: &firstRandom)
                == (try Self.complete(&second, random: &secondRandom)))

        var random = DeterministicRandom(seed: 10)
        var mismatched = try Self.parties(random: &random)
        mismatched.responder = try HandshakeState(
            protocolName: HandshakeState.xx, role: .responder, prologue: [9],
            staticKey: mismatched.responderStatic,
            remoteStaticKey: nil)
        let first1 = try mismatched.initiator.writeMessage(payload: [], random: &random)
        _ = try mismatched.responder.readMessage(first1)  // No key yet, so nothing to detect.
        let second1 = try mismatched.responder.writeMessage(payload: [], random: &random)
        #expect(Self.code { _ = try mismatched.initiator.readMessage(second1) } == .decryptFailed)
    }

    @Test func everyTamperedByteIsRejectedAndLeavesTheStateUsable() throws {
        var random = DeterministicRandom(seed: 2)
        var parties = try Self.parties(random: &random)
        let first = try parties.initiator.writeMessage(payload: [], random: &random)
        _ = try parties.responder.readMessage(first)
        let second = try parties.responder.writeMessage(payload: Array("hi".utf8), random: &random)
        let before = parties.initiator.handshakeHash
        for index in second.indices {
            var tampered = second
            tampered[index] ^= 0x20
            let code = Self.code { _ = try parties.initiator.readMessage(tampered) }
            // A flipped ephemeral key may land on a small-order point; anything else fails a tag.
            #expect(code == .decryptFailed || code == .weakPublicKey, "byte \(index)")
        }
        #expect(
            Self.code { _ = try parties.initiator.readMessage(Array(second.dropLast())) } == .decryptFailed)
        #expect(
            Self.code { _ = try parties.initiator.readMessage(Array(second.prefix(40))) } == .messageTooShort)
        #expect(parties.initiator.handshakeHash == before)
        #expect(parties.initiator.remoteStaticKey == nil)
        #expect(try parties.initiator.readMessage(second) == Array("hi".utf8))
    }

    @Test func outOfOrderTransportDecryptsAtExplicitNonces() throws {
        var random = DeterministicRandom(seed: 3)
        var parties = try Self.parties(random: &random)
        try Self.complete(&parties, random: &random)
        var sender = parties.initiator.split().sender
        let receiver = parties.responder.split().receiver
        var datagrams: [(nonce: UInt64, bytes: [UInt8])] = []
        for index in 0..<5 {
            let nonce = sender.nonce
            datagrams.append(
                (nonce, try sender.encryptWithAd([0xAD], plaintext: Array("datagram \(index)".utf8))))
        }
        for index in [4, 1, 3, 0, 2] {
            let datagram = datagrams[index]
            let plaintext = try receiver.decrypt(
                nonce: datagram.nonce, ad: [0xAD], ciphertext: datagram.bytes)
            #expect(plaintext == Array("datagram \(index)".utf8))
        }
        #expect(receiver.nonce == 0)
        #expect(
            Self.code { _ = try receiver.decrypt(nonce: 2, ad: [0xAD], ciphertext: datagrams[3].bytes) }
                == .decryptFailed)
    }

    @Test func rekeyOnBothSidesStaysInSync() throws {
        var random = DeterministicRandom(seed: 4)
        var parties = try Self.parties(random: &random)
        try Self.complete(&parties, random: &random)
        var initiator = parties.initiator.split()
        var responder = parties.responder.split()
        let beforeRekey = try initiator.sender.encrypt(nonce: 100, ad: [UInt8](), plaintext: [1])
        for round in 0..<4 {
            initiator.sender.rekey()
            responder.receiver.rekey()
            let sealed = try initiator.sender.encryptWithAd([UInt8](), plaintext: [UInt8(round)])
            #expect(try responder.receiver.decryptWithAd([UInt8](), ciphertext: sealed) == [UInt8(round)])
        }
        #expect(try initiator.sender.encrypt(nonce: 100, ad: [UInt8](), plaintext: [1]) != beforeRekey)
        // Only one side rekeying breaks the channel.
        initiator.sender.rekey()
        let unsynced = try initiator.sender.encryptWithAd([UInt8](), plaintext: [9])
        #expect(
            Self.code { _ = try responder.receiver.decryptWithAd([UInt8](), ciphertext: unsynced) }
                == .decryptFailed)
    }

    @Test func smallOrderPublicKeysAreRejected() throws {
        var random = DeterministicRandom(seed: 5)
        // All zeros and the point of order 8 (RFC 7748 section 6.1's rejection list).
        let smallOrder: [[UInt8]] = [
            [UInt8](repeating: 0, count: 32),
            [1] + [UInt8](repeating: 0, count: 31),
            try #require(Hex.decode("e0eb7a7c3b41b8ae1656e3faf19fc46ada098deb9c32b1fd866205165f49b800")),
        ]
        for point in smallOrder {
            // Reading: the responder's ephemeral key is forged, so the initiator's ee fails.
            var parties = try Self.parties(random: &random)
            let first = try parties.initiator.writeMessage(payload: [], random: &random)
            _ = try parties.responder.readMessage(first)
            let genuine = try parties.responder.writeMessage(payload: [], random: &random)
            let forged = point + genuine.dropFirst(32)
            #expect(Self.code { _ = try parties.initiator.readMessage(forged) } == .weakPublicKey)

            // Writing: the responder received a forged ephemeral key and its own ee fails.
            var other = try Self.parties(random: &random)
            _ = try other.initiator.writeMessage(payload: [], random: &random)
            _ = try other.responder.readMessage(point)
            #expect(
                Self.code { _ = try other.responder.writeMessage(payload: [], random: &random) }
                    == .weakPublicKey)
            #expect(other.responder.isMyTurnToWrite)

            // A pre-shared remote static key of small order fails at the first es.
            var nk = try HandshakeState(
                protocolName: "Noise_NK_25519_ChaChaPoly_BLAKE2b", role: .initiator, prologue: [],
                staticKey: nil, remoteStaticKey: try X25519.PublicKey(rawRepresentation: point))
            #expect(Self.code { _ = try nk.writeMessage(payload: [], random: &random) } == .weakPublicKey)
        }
    }

    @Test func missingOrMalformedKeysAreReportedAtInit() throws {
        var random = DeterministicRandom(seed: 6)
        let key = X25519.PrivateKey(using: &random)
        func make(
            _ name: String, _ role: NoiseRole, staticKey: X25519.PrivateKey?, remote: X25519.PublicKey?,
            psks: [[UInt8]] = []
        ) -> NoiseError.Code? {
            Self.code {
                _ = try HandshakeState(
                    protocolName: name, role: role, prologue: [], staticKey: staticKey,
                    remoteStaticKey: remote,
                    presharedKeys: psks)
            }
        }
        #expect(make(HandshakeState.xx, .initiator, staticKey: nil, remote: nil) == .missingKey)
        #expect(make(HandshakeState.xx, .responder, staticKey: nil, remote: nil) == .missingKey)
        #expect(make(HandshakeState.xx, .responder, staticKey: key, remote: nil) == nil)
        let nk = "Noise_NK_25519_ChaChaPoly_BLAKE2b"
        #expect(make(nk, .initiator, staticKey: nil, remote: nil) == .missingKey)
        #expect(make(nk, .initiator, staticKey: nil, remote: key.publicKey) == nil)
        #expect(make(nk, .responder, staticKey: nil, remote: nil) == .missingKey)
        let psk = "Noise_NNpsk0_25519_ChaChaPoly_BLAKE2b"
        #expect(make(psk, .initiator, staticKey: nil, remote: nil) == .missingKey)
        #expect(
            make(psk, .initiator, staticKey: nil, remote: nil, psks: [[UInt8](repeating: 0, count: 31)])
                == .invalidKey)
        let two = [[UInt8](repeating: 0, count: 32), [UInt8](repeating: 1, count: 32)]
        #expect(make(psk, .initiator, staticKey: nil, remote: nil, psks: two) == .invalidKey)
        #expect(
            make("Noise_XX_25519_AESGCM_SHA256", .initiator, staticKey: key, remote: nil)
                == .unsupportedCipher)
    }

    @Test func pskMismatchIsDetected() throws {
        var random = DeterministicRandom(seed: 7)
        let name = "Noise_NNpsk0_25519_ChaChaPoly_BLAKE2b"
        var initiator = try HandshakeState(
            protocolName: name, role: .initiator, prologue: [], staticKey: nil, remoteStaticKey: nil,
            presharedKeys: [[UInt8](repeating: 1, count: 32)])
        var responder = try HandshakeState(
            protocolName: name, role: .responder, prologue: [], staticKey: nil, remoteStaticKey: nil,
            presharedKeys: [[UInt8](repeating: 2, count: 32)])
        let first = try initiator.writeMessage(payload: [5], random: &random)
        #expect(Self.code { _ = try responder.readMessage(first) } == .decryptFailed)
    }

    @Test func oversizedMessagesAreRefused() throws {
        var random = DeterministicRandom(seed: 8)
        var parties = try Self.parties(random: &random)
        // Message 1 of XX is e (32 bytes) + plaintext payload: 65503 bytes of payload is the most that fits.
        #expect(
            Self.code {
                _ = try parties.initiator.writeMessage(
                    payload: [UInt8](repeating: 0, count: 65504), random: &random)
            } == .messageTooLong)
        #expect(parties.initiator.isMyTurnToWrite)
        #expect(
            Self.code { _ = try parties.responder.readMessage([UInt8](repeating: 0, count: 65536)) }
                == .messageTooLong)
        let largest = try parties.initiator.writeMessage(
            payload: [UInt8](repeating: 0, count: 65503), random: &random)
        #expect(largest.count == 65535)
        #expect(try parties.responder.readMessage(largest).count == 65503)
    }

    /// Every pattern in the table, plain and with psk modifiers at the first and last positions,
    /// completes with matching hashes, learns the peer's static key when it travels, and carries
    /// transport messages.
    @Test(arguments: HandshakePattern.fundamental.map(\.name))
    func everyPatternCompletes(pattern name: String) throws {
        let messageCount = try HandshakePattern.named(name).messages.count
        for variant in [name, "\(name)psk0", "\(name)psk\(messageCount)", "\(name)psk0+psk\(messageCount)"] {
            var random = DeterministicRandom(seedMaterial: Array(variant.utf8))
            let protocolName = "Noise_\(variant)_25519_ChaChaPoly_BLAKE2b"
            var parties = try Self.parties(protocolName, random: &random)
            let pattern = parties.initiator.pattern
            try Self.complete(&parties, random: &random)
            #expect(parties.initiator.handshakeHash == parties.responder.handshakeHash, "\(variant)")
            let initiatorStaticKnown =
                !pattern.initiatorPreMessage.isEmpty
                || pattern.messages.enumerated().contains { $0.offset % 2 == 0 && $0.element.contains(.s) }
            let expectedAtResponder = initiatorStaticKnown ? parties.initiatorStatic.publicKey : nil
            #expect(parties.responder.remoteStaticKey == expectedAtResponder, "\(variant)")
            var initiator = parties.initiator.split()
            var responder = parties.responder.split()
            let sealed = try initiator.sender.encryptWithAd([UInt8](), plaintext: [42])
            #expect(try responder.receiver.decryptWithAd([UInt8](), ciphertext: sealed) == [42], "\(variant)")
            if !pattern.isOneWay {
                let reply = try responder.sender.encryptWithAd([UInt8](), plaintext: [43])
                #expect(
                    try initiator.receiver.decryptWithAd([UInt8](), ciphertext: reply) == [43], "\(variant)")
            }
        }
    }
}
