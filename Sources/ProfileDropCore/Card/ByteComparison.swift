#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

extension Array where Element == UInt8 {
    /// Whether `self` and `other` hold the same bytes, compared in one block (`memcmp`): a simulated
    /// run compares every delivered card, photo included, with the one sent.
    func hasSameBytes(as other: [UInt8]) -> Bool {
        guard count == other.count else { return false }
        return withUnsafeBytes { left in
            other.withUnsafeBytes { right in
                guard let leftBase = left.baseAddress, let rightBase = right.baseAddress else { return true }
                return memcmp(leftBase, rightBase, left.count) == 0
            }
        }
    }
}
