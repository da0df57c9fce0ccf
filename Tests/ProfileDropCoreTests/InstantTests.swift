import Testing

@testable import ProfileDropCore

/// `Instant` arithmetic and the `Duration` conversions the core's timers use. The conversions have
/// fast paths for short durations; these tests hold them to the standard library's own split.
struct InstantTests {
    /// Durations on both sides of each fast path's limit (2^64 attoseconds, about 18.4 s), and at
    /// the ends of the range.
    static let durations: [Duration] = [
        .zero, .nanoseconds(1), .nanoseconds(-1), .milliseconds(2), .milliseconds(999),
        .seconds(1), .milliseconds(18_446), .milliseconds(18_447), .seconds(19), .seconds(3_600),
        .seconds(-30), .seconds(Int64.max), .seconds(Int64.min),
        Duration(secondsComponent: 18, attosecondsComponent: 446_744_073_709_551_615),
        Duration(secondsComponent: 18, attosecondsComponent: 446_744_073_709_551_616),
    ]

    @Test(
        "secondsDouble is the seconds and attoseconds of components, added as doubles", arguments: durations)
    func secondsDoubleMatchesComponents(_ duration: Duration) {
        let (seconds, attoseconds) = duration.components
        #expect(duration.secondsDouble == Double(seconds) + Double(attoseconds) * 1e-18)
    }

    @Test("nanosecondsClamped truncates to whole nanoseconds within 0...UInt64.max", arguments: durations)
    func nanosecondsClampedMatchesComponents(_ duration: Duration) {
        let (seconds, attoseconds) = duration.components
        let exact = Int128(seconds) * 1_000_000_000 + Int128(attoseconds / 1_000_000_000)
        let expected = exact <= 0 ? 0 : exact > Int128(UInt64.max) ? UInt64.max : UInt64(exact)
        #expect(duration.nanosecondsClamped == expected)
    }

    /// Round trips and pacing gaps are computed in seconds: their conversion truncates as
    /// `Int64(_:)` does in range, and saturates where `Int64(_:)` would trap.
    @Test func nanosecondsFromADoubleTruncateInRangeAndSaturateBeyond() {
        for value in [0.0, 0.5, 1, 1.999, 12_345.75, 1e9, 0x1p63.nextDown] {
            #expect(Duration.saturatingNanoseconds(value) == .nanoseconds(Int64(value)))
        }
        for value in [-0.0, -1, -.infinity, .nan, -.greatestFiniteMagnitude] {
            #expect(Duration.saturatingNanoseconds(value) == .zero)
        }
        for value in [0x1p63, 1e19, .greatestFiniteMagnitude, .infinity] {
            #expect(Duration.saturatingNanoseconds(value) == .nanoseconds(Int64.max))
        }
    }

    @Test func additionSaturatesAndIgnoresNegativeDurations() {
        let start = Instant(nanoseconds: 5_000)
        #expect(start + .microseconds(2) == Instant(nanoseconds: 7_000))
        #expect(start + .seconds(-1) == start)
        #expect(Instant(nanoseconds: .max - 1) + .nanoseconds(5) == Instant(nanoseconds: .max))
        #expect(start - Instant(nanoseconds: 9_000) == .zero)
        #expect(Instant(nanoseconds: 9_000) - start == .nanoseconds(4_000))
    }
}
