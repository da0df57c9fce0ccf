/// A point in time, in nanoseconds since an origin chosen by whoever drives the core: the
/// simulator's virtual clock, or a monotonic clock in the UDP transport.
///
/// The core never reads a clock; every input carries its `Instant`.
public struct Instant: Comparable, Hashable, Sendable, CustomStringConvertible {
    /// Nanoseconds since the driver's origin.
    public var nanoseconds: UInt64

    /// Creates an instant `nanoseconds` after the origin.
    public init(nanoseconds: UInt64) { self.nanoseconds = nanoseconds }

    /// The origin.
    public static let zero = Instant(nanoseconds: 0)

    /// Seconds since the origin, for display.
    public var seconds: Double { Double(nanoseconds) / 1e9 }

    public static func < (lhs: Instant, rhs: Instant) -> Bool { lhs.nanoseconds < rhs.nanoseconds }

    /// The instant `duration` later; saturates instead of overflowing, and treats negative durations as zero.
    public static func + (lhs: Instant, rhs: Duration) -> Instant {
        let (result, overflow) = lhs.nanoseconds.addingReportingOverflow(rhs.nanosecondsClamped)
        return Instant(nanoseconds: overflow ? .max : result)
    }

    /// The time from `rhs` to `lhs`; zero if `rhs` is later.
    public static func - (lhs: Instant, rhs: Instant) -> Duration {
        lhs >= rhs ? .nanoseconds(Int64(clamping: lhs.nanoseconds - rhs.nanoseconds)) : .zero
    }

    /// The earlier of two optional instants; nil only when both are.
    @inlinable
    public static func earliest(_ first: Instant?, _ second: Instant?) -> Instant? {
        guard let first else { return second }
        guard let second else { return first }
        return min(first, second)
    }

    public var description: String {
        let millis = nanoseconds / 1_000_000
        return "\(millis / 1000).\(String(millis % 1000).leftPadded(to: 3))s"
    }
}

extension Duration {
    /// The duration in whole nanoseconds, clamped to `0...UInt64.max`.
    public var nanosecondsClamped: UInt64 {
        // `components` splits the 128-bit count into seconds and attoseconds first, which costs more
        // than the rest of a deadline computation. Durations under 18 s (nearly all of the core's)
        // fit in 64 bits, where dividing by a constant is a multiplication.
        let attoseconds = attoseconds
        if attoseconds <= 0 { return 0 }
        if attoseconds >> 64 == 0 { return UInt64(truncatingIfNeeded: attoseconds) / 1_000_000_000 }
        let nanoseconds = attoseconds / 1_000_000_000
        return nanoseconds >> 64 != 0 ? .max : UInt64(truncatingIfNeeded: nanoseconds)
    }

    /// A count of nanoseconds computed in floating point (a round trip, a pacing gap), truncated
    /// toward zero as `Int64(_:)` would, but saturating instead of trapping: zero for a negative
    /// count or NaN, `Int64.max` nanoseconds (about 292 years) beyond that.
    static func saturatingNanoseconds(_ nanoseconds: Double) -> Duration {
        guard nanoseconds > 0 else { return .zero }
        // `Int64(_:)` traps from 2^63 on.
        guard nanoseconds < 0x1p63 else { return .nanoseconds(Int64.max) }
        return .nanoseconds(Int64(nanoseconds))
    }

    /// The duration in seconds as a double, for display and arithmetic in models.
    public var secondsDouble: Double {
        // The same split as `components`, without its 128-bit arithmetic for a duration from zero
        // to 18 s (the pacing and loss timers ask for one per chunk).
        let attoseconds = attoseconds
        if attoseconds >= 0, attoseconds >> 64 == 0 {
            let count = UInt64(truncatingIfNeeded: attoseconds)
            let perSecond: UInt64 = 1_000_000_000_000_000_000
            return Double(count / perSecond) + Double(count % perSecond) * 1e-18
        }
        let (seconds, remainder) = components
        return Double(seconds) + Double(remainder) * 1e-18
    }
}

extension String {
    fileprivate func leftPadded(to width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}
