internal import CSodium

/// Process-wide libsodium initialisation.
///
/// Every entry point of this module calls ``Sodium/ensureInitialized()`` first, so callers never
/// need to; `sodium_init` itself is idempotent and thread-safe, and Swift's lazy globals run it once.
public enum Sodium {
    private static let initResult: Int32 = sodium_init()

    /// Initialises libsodium if that has not happened yet. Traps if libsodium cannot start, since
    /// no cryptography in this process could then be trusted.
    @inline(__always)
    public static func ensureInitialized() {
        precondition(initResult >= 0, "sodium_init failed; libsodium is unusable in this process")
    }

    /// The version string of the linked libsodium, for diagnostics and benchmark reports.
    public static var version: String {
        ensureInitialized()
        return String(cString: sodium_version_string())
    }
}
