import ProfileDropCrypto
import Testing

@Suite struct RandomSourceTests {
    @Test func sameSeedGivesSameStreamAcrossRefills() {
        var first = DeterministicRandom(seed: 42)
        var second = DeterministicRandom(seed: 42)
        // Uneven request sizes cross the internal buffer boundary several times.
        for size in [1, 7, 1000, 3, 2048, 5] {
            #expect(first.bytes(size) == second.bytes(size))
        }
    }

    @Test func requestSizesDoNotChangeTheStream() {
        var whole = DeterministicRandom(seed: 9)
        var pieces = DeterministicRandom(seed: 9)
        let expected = whole.bytes(3000)
        var collected: [UInt8] = []
        for size in [1, 1023, 1, 975, 1000] { collected += pieces.bytes(size) }
        #expect(collected == expected)
    }

    @Test func a64BitDrawIsTheNextEightBytesAcrossRefills() {
        var drawn = DeterministicRandom(seed: 11)
        var filled = DeterministicRandom(seed: 11)
        // A 3-byte offset makes some draws straddle the 1024-byte buffer boundary.
        #expect(drawn.bytes(3) == filled.bytes(3))
        for _ in 0..<400 {
            let bytes = filled.bytes(8)
            let expected = bytes.withUnsafeBytes { $0.loadUnaligned(as: UInt64.self) }
            #expect(drawn.nextUInt64() == expected)
        }
    }

    @Test func differentSeedsDiffer() {
        var first = DeterministicRandom(seed: 1)
        var second = DeterministicRandom(seed: 2)
        #expect(first.bytes(32) != second.bytes(32))
    }

    @Test func uniformStaysBelowBoundAndCoversIt() {
        var random = DeterministicRandom(seed: 3)
        var seen = [Bool](repeating: false, count: 6)
        for _ in 0..<600 {
            let value = random.uniform(below: 6)
            #expect(value < 6)
            seen[Int(value)] = true
        }
        #expect(seen.allSatisfy { $0 })
    }

    @Test func unitDoubleAndNormalHaveTheRightShape() {
        var random = DeterministicRandom(seed: 4)
        let uniforms = (0..<20_000).map { _ in random.unitDouble() }
        #expect(uniforms.allSatisfy { $0 >= 0 && $0 < 1 })
        let mean = uniforms.reduce(0, +) / Double(uniforms.count)
        #expect(abs(mean - 0.5) < 0.01)
        let normals = (0..<20_000).map { _ in random.standardNormal() }
        let normalMean = normals.reduce(0, +) / Double(normals.count)
        let variance =
            normals.map { ($0 - normalMean) * ($0 - normalMean) }.reduce(0, +) / Double(normals.count)
        #expect(abs(normalMean) < 0.03)
        #expect(abs(variance - 1) < 0.05)
    }

    @Test func systemRandomProducesDistinctOutput() {
        var random = SystemRandom()
        #expect(random.bytes(32) != random.bytes(32))
    }
}
