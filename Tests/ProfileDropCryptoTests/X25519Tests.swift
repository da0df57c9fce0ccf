import ProfileDropCrypto
import Testing

@Suite struct X25519Tests {
    // RFC 7748, section 6.1.
    let alicePrivate = bytes("77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a")
    let alicePublic = bytes("8520f0098930a754748b7ddcb43ef75a0dbf3a0d26381af4eba4a98eaa9b4e6a")
    let bobPrivate = bytes("5dab087e624a8a4b79e17f8b83800ee66f3bb1292618b6fd1c2f8b27ff88e0eb")
    let bobPublic = bytes("de9edb7d7b7dc1b4d35b61c2ece435373f8343c85b78674dadfc7e146f882b4f")
    let shared = bytes("4a5d9d5ba4ce2de1728e3bf480350f25e07e21c947d19e3376f09b3c1e161742")

    @Test func publicKeysMatchRFC7748() throws {
        #expect(
            try X25519.PrivateKey(rawRepresentation: alicePrivate).publicKey.rawRepresentation == alicePublic)
        #expect(try X25519.PrivateKey(rawRepresentation: bobPrivate).publicKey.rawRepresentation == bobPublic)
    }

    @Test func sharedSecretMatchesRFC7748BothWays() throws {
        let alice = try X25519.PrivateKey(rawRepresentation: alicePrivate)
        let bob = try X25519.PrivateKey(rawRepresentation: bobPrivate)
        let fromAlice = try alice.sharedSecret(with: X25519.PublicKey(rawRepresentation: bobPublic))
        let fromBob = try bob.sharedSecret(with: X25519.PublicKey(rawRepresentation: alicePublic))
        #expect(fromAlice.exportBytes() == shared)
        #expect(fromAlice == fromBob)
    }

    @Test(arguments: [
        // The identity and a point of order 8: scalar multiplication yields all zeros.
        "0000000000000000000000000000000000000000000000000000000000000000",
        "0100000000000000000000000000000000000000000000000000000000000000",
        "e0eb7a7c3b41b8ae1656e3faf19fc46ada098deb9c32b1fd866205165f49b800",
    ])
    func smallOrderPublicKeyIsRejected(point: String) throws {
        let key = try X25519.PrivateKey(rawRepresentation: alicePrivate)
        #expect(throws: CryptoError.weakPublicKey) {
            try key.sharedSecret(with: X25519.PublicKey(rawRepresentation: bytes(point)))
        }
    }

    @Test func wrongKeyLengthsThrowSpecificErrors() {
        #expect(throws: CryptoError.invalidKeyLength(expected: 32, actual: 31)) {
            try X25519.PublicKey(rawRepresentation: [UInt8](repeating: 9, count: 31))
        }
        #expect(throws: CryptoError.invalidKeyLength(expected: 32, actual: 33)) {
            try X25519.PrivateKey(rawRepresentation: [UInt8](repeating: 9, count: 33))
        }
    }

    @Test func generatedKeysFromTheSameSeedAreEqualAndDifferentSeedsDiffer() {
        var first = DeterministicRandom(seed: 7)
        var second = DeterministicRandom(seed: 7)
        var third = DeterministicRandom(seed: 8)
        let a = X25519.PrivateKey(using: &first)
        let b = X25519.PrivateKey(using: &second)
        let c = X25519.PrivateKey(using: &third)
        #expect(a.publicKey == b.publicKey)
        #expect(a.publicKey != c.publicKey)
    }
}
