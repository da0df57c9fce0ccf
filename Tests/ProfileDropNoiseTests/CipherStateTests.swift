import ProfileDropCrypto
import Testing

@testable import ProfileDropNoise

/// CipherState against independently computed ChaCha20-Poly1305 values.
///
/// Expected ciphertexts were computed with Python's `cryptography` package:
/// `ChaCha20Poly1305(bytes(range(32))).encrypt(b"\0" * 4 + n.to_bytes(8, "little"), pt, ad).hex()`.
struct CipherStateTests {
    static let keyBytes = [UInt8](0..<32)

    static func keyed() throws -> CipherState {
        CipherState(key: try ChaChaPoly.Key(rawRepresentation: keyBytes))
    }

    static func hex(_ text: String) throws -> [UInt8] {
        try #require(Hex.decode(text))
    }

    @Test func withoutKeyEncryptionIsTheIdentityAndNonceStays() throws {
        var cipher = CipherState()
        #expect(!cipher.hasKey)
        let text = Array("plain".utf8)
        #expect(try cipher.encryptWithAd([1, 2], plaintext: text) == text)
        #expect(try cipher.decryptWithAd([1, 2], ciphertext: text) == text)
        #expect(cipher.nonce == 0)
    }

    @Test func encryptsAtTheCurrentNonceWithAssociatedData() throws {
        var cipher = try Self.keyed()
        cipher.setNonce(5)
        let sealed = try cipher.encryptWithAd(Array("ad".utf8), plaintext: Array("hello noise".utf8))
        #expect(sealed == (try Self.hex("4b6dfa662a052951e2d95c42b60b7fc994977d6a6e09dd49280fa1")))
        #expect(cipher.nonce == 6)
    }

    @Test func nonceAdvancesOnlyWhenDecryptionSucceeds() throws {
        var sender = try Self.keyed()
        var receiver = try Self.keyed()
        let first = try sender.encryptWithAd([UInt8](), plaintext: Array("one".utf8))
        var forged = first
        forged[0] ^= 0x01
        #expect {
            try receiver.decryptWithAd([UInt8](), ciphertext: forged)
        } throws: { ($0 as? NoiseError)?.code == .decryptFailed }
        #expect(receiver.nonce == 0)
        #expect(try receiver.decryptWithAd([UInt8](), ciphertext: first) == Array("one".utf8))
        #expect(receiver.nonce == 1)
        // The wrong associated data fails as well.
        let second = try sender.encryptWithAd([7], plaintext: Array("two".utf8))
        #expect(throws: NoiseError.self) { try receiver.decryptWithAd([8], ciphertext: second) }
        #expect(try receiver.decryptWithAd([7], ciphertext: second) == Array("two".utf8))
    }

    @Test func maximumNonceIsReserved() throws {
        var cipher = try Self.keyed()
        cipher.setNonce(CipherState.maxNonce - 1)
        _ = try cipher.encryptWithAd([UInt8](), plaintext: [1])
        #expect(cipher.nonce == CipherState.maxNonce)
        #expect {
            try cipher.encryptWithAd([UInt8](), plaintext: [1])
        } throws: { ($0 as? NoiseError)?.code == .nonceExhausted }
        #expect {
            try cipher.decryptWithAd([UInt8](), ciphertext: [UInt8](repeating: 0, count: 17))
        } throws: { ($0 as? NoiseError)?.code == .nonceExhausted }
        #expect {
            try cipher.encrypt(nonce: CipherState.maxNonce, ad: [UInt8](), plaintext: [1])
        } throws: { ($0 as? NoiseError)?.code == .nonceExhausted }
        #expect(cipher.nonce == CipherState.maxNonce)
    }

    @Test func explicitNonceMatchesSequentialAndLeavesStateAlone() throws {
        var sequential = try Self.keyed()
        var sealed: [[UInt8]] = []
        for index in 0..<4 {
            sealed.append(try sequential.encryptWithAd([9], plaintext: [UInt8(index)]))
        }
        let explicit = try Self.keyed()
        #expect(try explicit.encrypt(nonce: 2, ad: [9], plaintext: [2]) == sealed[2])
        // Out of order, as datagrams may arrive.
        for index in [3, 0, 2, 1] {
            #expect(
                try explicit.decrypt(nonce: UInt64(index), ad: [9], ciphertext: sealed[index]) == [
                    UInt8(index)
                ])
        }
        #expect(explicit.nonce == 0)
        #expect(throws: NoiseError.self) { try explicit.decrypt(nonce: 1, ad: [9], ciphertext: sealed[2]) }
    }

    @Test func rekeyUsesTheReservedNonceAndKeepsTheCounter() throws {
        // New key = first 32 bytes of ChaCha20Poly1305(k).encrypt(nonce(2^64-1), 32 zeros, b"");
        // then "hello noise" at nonce 0 under the new key, no associated data.
        var cipher = try Self.keyed()
        cipher.rekey()
        #expect(cipher.nonce == 0)
        let sealed = try cipher.encryptWithAd([UInt8](), plaintext: Array("hello noise".utf8))
        #expect(sealed == (try Self.hex("837ec04cdaa4db8f37f8d827bc24fbad4df07b9ef5582761d25b01")))

        var counted = try Self.keyed()
        counted.setNonce(41)
        counted.rekey()
        #expect(counted.nonce == 41)
    }

    @Test func rejectsMalformedLengths() throws {
        var cipher = try Self.keyed()
        #expect {
            try cipher.decryptWithAd([UInt8](), ciphertext: [UInt8](repeating: 0, count: 15))
        } throws: { ($0 as? NoiseError)?.code == .messageTooShort }
        #expect {
            try cipher.decryptWithAd([UInt8](), ciphertext: [UInt8](repeating: 0, count: 65536))
        } throws: { ($0 as? NoiseError)?.code == .messageTooLong }
        #expect {
            try cipher.encryptWithAd([UInt8](), plaintext: [UInt8](repeating: 0, count: 65520))
        } throws: { ($0 as? NoiseError)?.code == .messageTooLong }
        #expect(cipher.nonce == 0)
        #expect(
            try cipher.encryptWithAd([UInt8](), plaintext: [UInt8](repeating: 0, count: 65519)).count == 65535
        )
    }

    @Test func initializeKeyResetsTheNonceAndCanClearTheKey() throws {
        var cipher = try Self.keyed()
        cipher.setNonce(3)
        cipher.initializeKey(try ChaChaPoly.Key(rawRepresentation: Self.keyBytes))
        #expect(cipher.nonce == 0)
        cipher.initializeKey(nil)
        #expect(!cipher.hasKey)
    }
}
