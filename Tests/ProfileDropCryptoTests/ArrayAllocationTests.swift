import ProfileDropCrypto
import Testing

/// The array initialisers that avoid the runtime's metadata lookup make what the standard ones make.
@Suite struct ArrayAllocationTests {
    @Test(arguments: [0, 1, 7, 32, 1024, 262_144])
    func fillingMatchesRepeating(count: Int) {
        #expect([UInt8](filling: 0xA5, count: count) == [UInt8](repeating: 0xA5, count: count))
        #expect([Bool](filling: true, count: count) == [Bool](repeating: true, count: count))
        #expect([Int?](filling: nil, count: count) == [Int?](repeating: nil, count: count))
        #expect([UInt8](filling: 0, count: count).capacity >= count)
    }

    @Test(arguments: [0, 1, 32, 64, 1500, 2048, 2049, 5000])
    func byteCountHandsTheWholeBufferToTheInitialiser(count: Int) {
        var seen = -1
        let bytes = [UInt8](byteCount: count) { buffer in
            seen = buffer.count
            for index in buffer.indices { buffer[index] = UInt8(truncatingIfNeeded: index &* 7 &+ 3) }
        }
        #expect(seen == count)
        #expect(bytes == (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ 3) })
    }

    @Test func byteCountStartsFromZeroedBytesAndRethrows() throws {
        struct Stop: Error {}
        // The zeros come from a block of 2048 in runs: below, at and past its size.
        for count in [16, 2048, 2049, 6000] {
            #expect([UInt8](byteCount: count) { _ in } == [UInt8](repeating: 0, count: count))
        }
        #expect(throws: Stop.self) { _ = try [UInt8](byteCount: 16) { _ in throw Stop() } }
    }
}
