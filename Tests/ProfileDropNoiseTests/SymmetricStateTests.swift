import ProfileDropCrypto
import Testing

@testable import ProfileDropNoise

/// SymmetricState and Noise's HKDF, against values computed independently in Python with
/// `hmac.new(key, data, hashlib.blake2b)` for HMAC, Noise's HKDF written out over that HMAC
/// (`t = hmac(ck, ikm); o1 = hmac(t, b"\x01"); o2 = hmac(t, o1 + b"\x02"); o3 = hmac(t, o2 + b"\x03")`),
/// `hashlib.blake2b` for hashes and `cryptography`'s `ChaCha20Poly1305` for ciphertexts.
struct SymmetricStateTests {
    static func hex(_ text: String) throws -> [UInt8] {
        try #require(Hex.decode(text))
    }

    @Test func hmacBLAKE2bMatchesPythonHmac() throws {
        // hmac.new(b"key", b"The quick brown fox jumps over the lazy dog", hashlib.blake2b)
        let short = HMACBLAKE2b.authenticate(
            key: Array("key".utf8),
            parts: [Array("The quick brown fox ".utf8), Array("jumps over the lazy dog".utf8)])
        #expect(
            short
                == (try Self.hex(
                    "92294f92c0dfb9b00ec9ae8bd94d7e7d8a036b885a499f149dfe2fd2199394aa"
                        + "af6b8894a1730cccb2cd050f9bcf5062a38b51b0dab33207f8ef35ae2c9df51b")))
        // A key longer than the 128-byte block is hashed first: hmac.new(bytes(range(200)), b"message", ...)
        let long = HMACBLAKE2b.authenticate(key: [UInt8](0..<200), parts: [Array("message".utf8)])
        #expect(
            long
                == (try Self.hex(
                    "4a4ea85cc06f1a1f99a3e72a7a951f2e089efe7ed4c8b09ed16f94c5cf836e9c"
                        + "620834ae46259ff5b4239c1e6d96ae4681dd75e9e6a133680f0cb0f9bf506bb3")))
    }

    @Test func hkdfYieldsNoiseOutputs() throws {
        // ck = bytes(range(64)), ikm = bytes(range(100, 132))
        let outputs = NoiseHKDF.derive(
            chainingKey: SecureBytes([UInt8](0..<64)), inputKeyMaterial: [UInt8](100..<132), count: 3)
        #expect(outputs.count == 3)
        #expect(
            outputs[0]
                == (try Self.hex(
                    "2262ed5f40c3324574d00a1e0849a7cc67fb5b6a80211c3c59404bb8e47512b1"
                        + "cb95e73840718c5d68ca345f934f39a52f1f31e8f6d3ed521f0664f46feddae4")))
        #expect(
            outputs[1]
                == (try Self.hex(
                    "f6a6559fa2aaab64d3d2666b83fe3f4fed6fae1959537fedd6a39b6f8d411e61"
                        + "32593234cc2a750244335da5021c27bf7eacbb65cfa608457de6ecc144b90077")))
        #expect(
            outputs[2]
                == (try Self.hex(
                    "07c82c1301c70e885f4662f1f3f7b7bb9e04d81c94a6e1882f812c02ffb69580"
                        + "c93095bb599ad2fced3d3cf38c9c17df4fb3c0029f231247fca69b040e16449e")))

        // The same chaining key with empty input key material, two outputs (as Split uses it).
        let split = NoiseHKDF.derive(
            chainingKey: SecureBytes([UInt8](0..<64)), inputKeyMaterial: [], count: 2)
        #expect(
            split
                == [
                    try Self.hex(
                        "03be0946afb62e33dcc2e8cb76dfad47663d284d81c0bde963f32a283dede221"
                            + "be2b9e3a86fa82934234d2a6ed331fb664a3e670252b9454da9ed2567b435e11"),
                    try Self.hex(
                        "8481b385940ea1ddc1e37243d34e6a00d9e35fe86844b75be2f9d084efcbf4a9"
                            + "d18c764645baf5262707efcb490c9ddfcc81c78ff75e1e727428f05b9fee857f"),
                ])
    }

    @Test func hkdfMatchesTheSpecWrittenOutOverReferenceHMAC() {
        // HMAC written out from RFC 2104 over one-shot BLAKE2b, on pseudo-random chaining keys and
        // input key material of the lengths Noise uses (DH outputs, PSKs, Split's empty input).
        func hmac(_ key: [UInt8], _ message: [UInt8]) -> [UInt8] {
            let block = key + [UInt8](repeating: 0, count: BLAKE2b.blockLength - key.count)
            return BLAKE2b.hash(block.map { $0 ^ 0x5c } + BLAKE2b.hash(block.map { $0 ^ 0x36 } + message))
        }
        var seed: UInt8 = 7
        func next(_ count: Int) -> [UInt8] {
            (0..<count).map { _ in
                seed = seed &* 181 &+ 59
                return seed
            }
        }
        for inputLength in [0, 32, 32, 64] {
            let chainingKey = next(64)
            let input = next(inputLength)
            let tempKey = hmac(chainingKey, input)
            let output1 = hmac(tempKey, [1])
            let output2 = hmac(tempKey, output1 + [2])
            let output3 = hmac(tempKey, output2 + [3])
            #expect(
                NoiseHKDF.derive(chainingKey: SecureBytes(chainingKey), inputKeyMaterial: input, count: 3)
                    == [output1, output2, output3])
            #expect(
                NoiseHKDF.derive(chainingKey: SecureBytes(chainingKey), inputKeyMaterial: input, count: 2)
                    == [output1, output2])
        }
    }

    @Test func shortProtocolNameIsZeroPadded() {
        let state = SymmetricState(protocolName: HandshakeState.xx)
        let name = Array(HandshakeState.xx.utf8)
        #expect(state.handshakeHash == name + [UInt8](repeating: 0, count: 64 - name.count))
        #expect(!state.hasKey)
    }

    @Test func longProtocolNameIsHashed() throws {
        // 69 bytes, so hashlib.blake2b(name).hexdigest().
        let name = "Noise_XXpsk0+psk1+psk2+psk3_25519_ChaChaPoly_BLAKE2b_with_a_long_tail"
        #expect(
            SymmetricState(protocolName: name).handshakeHash
                == (try Self.hex(
                    "f7d38858b0053914a0056a51c9d4c20e974562bc506780fc479c53cb375aee27"
                        + "9fa7058318045439277506e361bc4120eb9af96e9ca668b2f9b561438c3decc8")))
    }

    @Test func mixKeyEncryptAndHashAndSplitMatchTheSpecWrittenOut() throws {
        // h = ck = name padded; h = blake2b(h + b"prologue"); ck, k = hkdf(ck, bytes(range(100, 132)), 2);
        // ct = ChaCha20Poly1305(k[:32]).encrypt(nonce(0), b"payload", h); h = blake2b(h + ct).
        var sender = SymmetricState(protocolName: HandshakeState.xx)
        sender.mixHash(Array("prologue".utf8))
        var receiver = sender
        sender.mixKey([UInt8](100..<132))
        receiver.mixKey([UInt8](100..<132))
        #expect(sender.hasKey)
        let ciphertext = try sender.encryptAndHash(Array("payload".utf8))
        #expect(ciphertext == (try Self.hex("995fc2a1ab9d1e06afd14b4d22a658c2319f7fed987b6e")))
        let expectedHash = try Self.hex(
            "b80abb43d9bf2bd15a97b194804e673f133bc4016a7be3d2fb7ea1511073ee1d"
                + "f3b625ee60d4bb7ed297ea52dd80b6091ce5e61a60d8ba0290827f3d0aa96335")
        #expect(sender.handshakeHash == expectedHash)
        #expect(try receiver.decryptAndHash(ciphertext) == Array("payload".utf8))
        #expect(receiver.handshakeHash == expectedHash)

        // k1, k2 = hkdf(ck, b"", 2); each encrypts b"x" at nonce 0 with no associated data.
        var (first, second) = sender.split()
        #expect(
            try first.encryptWithAd([UInt8](), plaintext: [0x78])
                == (try Self.hex("8ccaab484c1c84b334aea46a90affc933f")))
        #expect(
            try second.encryptWithAd([UInt8](), plaintext: [0x78])
                == (try Self.hex("4f4558895b196315440f7d54bdfd706e14")))
    }

    @Test func beforeAnyKeyEncryptAndHashSendsPlaintextButStillHashesIt() throws {
        var state = SymmetricState(protocolName: HandshakeState.xx)
        let before = state.handshakeHash
        let sent = try state.encryptAndHash([1, 2, 3])
        #expect(sent == [1, 2, 3])
        #expect(state.handshakeHash == BLAKE2b.hash(before + [1, 2, 3]))
    }

    @Test func tamperedCiphertextFailsAndMixKeyAndHashChangesBothKeyAndHash() throws {
        var sender = SymmetricState(protocolName: HandshakeState.xx)
        var receiver = sender
        sender.mixKeyAndHash([UInt8](repeating: 7, count: 32))
        receiver.mixKeyAndHash([UInt8](repeating: 7, count: 32))
        #expect(sender.handshakeHash == receiver.handshakeHash)
        #expect(sender.handshakeHash != SymmetricState(protocolName: HandshakeState.xx).handshakeHash)
        var ciphertext = try sender.encryptAndHash([4, 5, 6])
        ciphertext[ciphertext.count - 1] ^= 0x80
        #expect {
            try receiver.decryptAndHash(ciphertext)
        } throws: { ($0 as? NoiseError)?.code == .decryptFailed }
    }
}
