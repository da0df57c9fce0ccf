/// Seeded byte-level mutations of valid encodings, for the codecs' round-trip properties: what a
/// decoder accepts after a mutation must encode again to exactly the mutated bytes.
///
/// A SplitMix64 stream of its own, so that every test target draws the same mutations from the same
/// seed and a failure reproduces from the seed alone.
public struct ByteMutations {
    private var state: UInt64

    /// Mutations drawn from `seed`; the same seed gives the same sequence.
    public init(seed: UInt64) { state = seed }

    /// The next 64 bits of SplitMix64.
    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// Mutates `seeds` in turn, `rounds` times, and hands each mutation that `decode` accepts to
    /// `check` with its bytes and round; returns how many were accepted, so that a test can also
    /// show that the property was exercised.
    public mutating func accepted<Value>(
        rounds: Int, of seeds: [[UInt8]], alphabet: [UInt8] = [], decode: ([UInt8]) -> Value?,
        check: (_ value: Value, _ bytes: [UInt8], _ round: Int) -> Void
    ) -> Int {
        precondition(!seeds.isEmpty, "mutations need at least one valid encoding")
        var accepted = 0
        for round in 0..<rounds {
            let bytes = mutate(seeds[round % seeds.count], alphabet: alphabet)
            guard let value = decode(bytes) else { continue }
            accepted += 1
            check(value, bytes, round)
        }
        return accepted
    }

    /// A value below `bound` (the modulo bias is irrelevant for mutations).
    public mutating func uniform(below bound: Int) -> Int {
        precondition(bound > 0, "the bound must be positive")
        return Int(next() % UInt64(bound))
    }

    /// `bytes` with one to three edits: a byte replaced, inserted or removed. With `alphabet`, half
    /// of the new bytes come from it, so that text formats often stay well-formed.
    public mutating func mutate(_ bytes: [UInt8], alphabet: [UInt8] = []) -> [UInt8] {
        var bytes = bytes
        for _ in 0..<(1 + uniform(below: 3)) {
            let position = bytes.isEmpty ? 0 : uniform(below: bytes.count)
            let byte =
                !alphabet.isEmpty && next() % 2 == 0
                ? alphabet[uniform(below: alphabet.count)] : UInt8(truncatingIfNeeded: next())
            switch uniform(below: 3) {
            case 0 where !bytes.isEmpty: bytes[position] = byte
            case 1: bytes.insert(byte, at: position)
            default: if !bytes.isEmpty { bytes.remove(at: position) }
            }
        }
        return bytes
    }
}

/// The error `body` throws when it is an `E`; nil when it returns or throws something else. For
/// asserting an error's code: `caught(ProtocolError.self) { try parse(bytes) }?.code`.
public func caught<E: Error>(_: E.Type, _ body: () throws -> Void) -> E? {
    do {
        try body()
        return nil
    } catch {
        return error as? E
    }
}
