import ProfileDropCrypto

/// Known-answer vectors are written in hex in the test sources; a typo there is a test bug.
func bytes(_ hex: String) -> [UInt8] {
    guard let decoded = Hex.decode(hex.filter { $0 != " " }) else {
        preconditionFailure("bad hex in a test vector")
    }
    return decoded
}
