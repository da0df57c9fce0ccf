import ProfileDropCore

#if canImport(Glibc)
    import Glibc
#endif

/// The real clock the UDP host feeds the core with: CLOCK_MONOTONIC, as nanoseconds since the clock
/// was created, so that wall-clock jumps never fire or starve a timer.
public struct MonotonicClock: Sendable {
    private let origin: UInt64

    /// A clock whose zero is now.
    public init() { origin = Self.raw() }

    /// The current instant.
    public var now: Instant { Instant(nanoseconds: Self.raw() &- origin) }

    private static func raw() -> UInt64 {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return UInt64(time.tv_sec) &* 1_000_000_000 &+ UInt64(time.tv_nsec)
    }
}
