import ProfileDropCrypto
import Testing

@Suite struct BLAKE2bTests {
    @Test func fullLengthDigestMatchesRFC7693() {
        // RFC 7693, appendix A: BLAKE2b-512("abc").
        let expected = bytes(
            """
            ba80a53f981c4d0d6a2797b69f12f6e94c212f14685ac4b74b12bb6fdbffa2d1\
            7d87c5392aab792dc252d5de4533cc9518d38aa8dbf1925ab92386edd4009923
            """)
        #expect(BLAKE2b.hash(Array("abc".utf8)) == expected)
        #expect(BLAKE2b.hash(Array("abc".utf8)).count == 64)
    }

    @Test func incrementalEqualsOneShot() {
        let data = (0..<1000).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        var hasher = BLAKE2b()
        hasher.update(data[0..<3])
        hasher.update(data[3..<700])
        hasher.update(data[700...])
        let incremental = hasher.finalize()
        #expect(incremental == BLAKE2b.hash(data))
    }

    // Expected tags computed with Python: hmac.new(key, data, hashlib.blake2b).hexdigest().
    @Test func hmacMatchesPythonsHMACOverBLAKE2b() {
        #expect(
            HMACBLAKE2b.authenticate(
                key: Array("key".utf8), parts: [Array("The quick brown fox jumps over the lazy dog".utf8)])
                == bytes(
                    """
                    92294f92c0dfb9b00ec9ae8bd94d7e7d8a036b885a499f149dfe2fd2199394aa\
                    af6b8894a1730cccb2cd050f9bcf5062a38b51b0dab33207f8ef35ae2c9df51b
                    """))
        #expect(
            HMACBLAKE2b.authenticate(key: (0..<200).map { UInt8($0) }, parts: [Array("long key".utf8)])
                == bytes(
                    """
                    3657d96bcab1b777275ca0c25f3bab9388d8ac4d3914495a2b495c756b52dd22\
                    dc9531abcd00141e683e53e77cf10f468330f65c569c44f0f54edd3ad89cb566
                    """))
        #expect(
            HMACBLAKE2b.authenticate(key: [UInt8](), parts: [])
                == bytes(
                    """
                    198cd2006f66ff83fbbd913f78aca2251caf4f19fe9475aade8cf2091b99a684\
                    66775177424f58286886cbae8229644cec747237d4b721735485e17372fdf59c
                    """))
    }

    @Test func hmacIsNotKeyedBLAKE2b() {
        // Guards against the tempting shortcut of libsodium's keyed mode.
        let key = Array("key".utf8)
        let message = Array("message".utf8)
        var plain = BLAKE2b()
        plain.update(key)
        plain.update(message)
        let keyedByConcatenation = plain.finalize()
        #expect(HMACBLAKE2b.authenticate(key: key, parts: [message]) != keyedByConcatenation)
    }

    @Test func splitPartsEqualConcatenation() {
        let key = Array("k".utf8)
        #expect(
            HMACBLAKE2b.authenticate(key: key, parts: [[1, 2], [3]])
                == HMACBLAKE2b.authenticate(key: key, parts: [[1, 2, 3]]))
    }
}
