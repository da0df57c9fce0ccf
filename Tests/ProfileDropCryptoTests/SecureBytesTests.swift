import ProfileDropCrypto
import Testing

@Suite struct SecureBytesTests {
    @Test func holdsAndComparesBytes() {
        let a = SecureBytes([1, 2, 3])
        let b = SecureBytes([1, 2, 3])
        let c = SecureBytes([1, 2, 4])
        #expect(a.exportBytes() == [1, 2, 3])
        #expect(a == b)
        #expect(a != c)
        #expect(SecureBytes([1, 2]) != a)
    }

    @Test func emptySecretIsValid() {
        let empty = SecureBytes([UInt8]())
        #expect(empty.count == 0)
        #expect(empty.exportBytes().isEmpty)
        #expect(empty == SecureBytes([UInt8]()))
    }

    @Test func failingInitializerPropagatesItsError() {
        struct Refused: Error {}
        #expect(throws: Refused.self) {
            try SecureBytes(count: 8) { _ in throw Refused() }
        }
    }

    @Test func constantTimeEqualsHandlesLengthsAndContent() {
        #expect(ConstantTime.equals([1, 2, 3], [1, 2, 3]))
        #expect(!ConstantTime.equals([1, 2, 3], [1, 2, 4]))
        #expect(!ConstantTime.equals([1, 2, 3], [1, 2]))
        #expect(ConstantTime.equals([], []))
    }
}
