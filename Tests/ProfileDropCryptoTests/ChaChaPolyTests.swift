import ProfileDropCrypto
import Testing

@Suite struct ChaChaPolyTests {
    // RFC 8439, section 2.8.2.
    let key = bytes("808182838485868788898a8b8c8d8e8f909192939495969798999a9b9c9d9e9f")
    let nonce = bytes("070000004041424344454647")
    let associatedData = bytes("50515253c0c1c2c3c4c5c6c7")
    let plaintext = Array(
        "Ladies and Gentlemen of the class of '99: If I could offer you only one tip for the future, sunscreen would be it."
            .utf8)
    let expected = bytes(
        """
        d31a8d34648e60db7b86afbc53ef7ec2a4aded51296e08fea9e2b5a736ee62d63dbea45e8ca9671282fafb69da92728b\
        1a71de0a9e060b2905d6a5b67ecd3b3692ddbd7f2d778b8c9803aee328091b58fab324e4fad675945585808b4831d7bc\
        3ff4def08e4b7a9de576d26586cec64b6116\
        1ae10b594f09e26a7e902ecbd0600691
        """)

    @Test func sealMatchesRFC8439() throws {
        let sealed = ChaChaPoly.seal(
            plaintext, key: try .init(rawRepresentation: key), nonce: try .init(rawRepresentation: nonce),
            authenticating: associatedData)
        #expect(sealed == expected)
    }

    @Test func openRecoversPlaintext() throws {
        let opened = try ChaChaPoly.open(
            expected, key: .init(rawRepresentation: key), nonce: .init(rawRepresentation: nonce),
            authenticating: associatedData)
        #expect(opened == plaintext)
    }

    @Test func anyFlippedBitFailsAuthentication() throws {
        let aeadKey = try ChaChaPoly.Key(rawRepresentation: key)
        let aeadNonce = try ChaChaPoly.Nonce(rawRepresentation: nonce)
        for index in stride(from: 0, to: expected.count, by: 7) {
            var tampered = expected
            tampered[index] ^= 0x01
            #expect(throws: CryptoError.authenticationFailed) {
                try ChaChaPoly.open(tampered, key: aeadKey, nonce: aeadNonce, authenticating: associatedData)
            }
        }
        var otherData = associatedData
        otherData[0] ^= 0x80
        #expect(throws: CryptoError.authenticationFailed) {
            try ChaChaPoly.open(expected, key: aeadKey, nonce: aeadNonce, authenticating: otherData)
        }
    }

    @Test func emptyPlaintextAndShortCiphertext() throws {
        var random = DeterministicRandom(seed: 1)
        let aeadKey = ChaChaPoly.Key(using: &random)
        let aeadNonce = ChaChaPoly.Nonce(noiseCounter: 5)
        let sealed = ChaChaPoly.seal([UInt8](), key: aeadKey, nonce: aeadNonce, authenticating: [UInt8]())
        #expect(sealed.count == ChaChaPoly.tagLength)
        #expect(try ChaChaPoly.open(sealed, key: aeadKey, nonce: aeadNonce, authenticating: [UInt8]()) == [])
        #expect(throws: CryptoError.ciphertextTooShort(minimum: 16, actual: 15)) {
            try ChaChaPoly.open(
                Array(sealed.dropLast()), key: aeadKey, nonce: aeadNonce, authenticating: [UInt8]())
        }
    }

    @Test func noiseNonceEncodingIsLittleEndianAfterFourZeroBytes() {
        #expect(
            ChaChaPoly.Nonce(noiseCounter: 0x0102_0304_0506_0708).rawRepresentation
                == bytes("000000000807060504030201"))
    }

    @Test func nonceKeepsItsRawBytesAndEqualityFollowsThem() throws {
        let raw = bytes("0102030405060708090a0b0c")
        let nonce = try ChaChaPoly.Nonce(rawRepresentation: raw)
        #expect(nonce.rawRepresentation == raw)
        #expect(nonce == (try ChaChaPoly.Nonce(rawRepresentation: raw)))
        #expect(nonce != ChaChaPoly.Nonce(noiseCounter: 0x0c0b_0a09_0807_0605))
        #expect(
            ChaChaPoly.Nonce(noiseCounter: 0x0c0b_0a09_0807_0605)
                == (try ChaChaPoly.Nonce(rawRepresentation: bytes("0000000005060708090a0b0c"))))
        #expect(Set([nonce, try ChaChaPoly.Nonce(rawRepresentation: raw)]).count == 1)
    }

    @Test func wrongLengthsThrowSpecificErrors() {
        #expect(throws: CryptoError.invalidKeyLength(expected: 32, actual: 16)) {
            try ChaChaPoly.Key(rawRepresentation: [UInt8](repeating: 0, count: 16))
        }
        #expect(throws: CryptoError.invalidNonceLength(expected: 12, actual: 8)) {
            try ChaChaPoly.Nonce(rawRepresentation: [UInt8](repeating: 0, count: 8))
        }
    }
}
