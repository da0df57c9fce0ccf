/// Hex decoding for known-answer vectors written in the test sources.
func bytes(_ hex: String) -> [UInt8] {
    let digits = Array(hex.utf8).filter { $0 != UInt8(ascii: " ") }
    precondition(digits.count % 2 == 0, "odd hex string in a test vector")
    return stride(from: 0, to: digits.count, by: 2).map { index in
        UInt8(String(decoding: digits[index...index + 1], as: UTF8.self), radix: 16)!
    }
}
