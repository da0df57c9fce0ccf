import ProfileDropCrypto

/// Seeded byte-level mutations of valid encodings, for the codecs' round-trip properties: what a
/// decoder accepts after a mutation must encode again to exactly the mutated bytes.
struct ByteMutations {
    private var random: DeterministicRandom

    /// Mutations drawn from `seed`; the same seed gives the same sequence.
    init(seed: UInt64) { random = DeterministicRandom(seed: seed) }

    /// `bytes` with one to three edits: a byte replaced, inserted or removed.
    mutating func mutate(_ bytes: [UInt8]) -> [UInt8] {
        var bytes = bytes
        for _ in 0..<(1 + random.uniform(below: 3)) {
            let position = bytes.isEmpty ? 0 : Int(random.uniform(below: UInt64(bytes.count)))
            switch random.uniform(below: 3) {
            case 0 where !bytes.isEmpty: bytes[position] = UInt8(random.uniform(below: 256))
            case 1: bytes.insert(UInt8(random.uniform(below: 256)), at: position)
            default: if !bytes.isEmpty { bytes.remove(at: position) }
            }
        }
        return bytes
    }

    /// A uniformly drawn value below `bound`.
    mutating func uniform(below bound: UInt64) -> UInt64 { random.uniform(below: bound) }
}
