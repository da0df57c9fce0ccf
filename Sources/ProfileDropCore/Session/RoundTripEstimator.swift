/// The smoothed round trip and its variation (RFC 6298), from samples of one path: the card sender
/// takes its retransmission timeout from it, and the close its probe timeout and drain (RFC 9002
/// 6.2 and RFC 9000 10.2 are the model).
struct RoundTripEstimator {
    /// The smoothed round trip in seconds; nil before the first sample.
    private(set) var smoothed: Double?
    /// The latest sample in seconds.
    private(set) var latest: Double?
    /// The mean deviation of the samples in seconds.
    private(set) var variance: Double = 0
    /// Samples taken so far.
    private(set) var count = 0

    /// Adds a sample, in seconds. Samples come from our own clock (a send time and a receive time),
    /// never from a wire field.
    mutating func add(_ sample: Double) {
        let sample = max(sample, 0)
        latest = sample
        count += 1
        if let smoothed {
            variance = 0.75 * variance + 0.25 * abs(smoothed - sample)
            self.smoothed = 0.875 * smoothed + 0.125 * sample
        } else {
            smoothed = sample
            variance = sample / 2
        }
    }

    /// Adds the time from `sent` to `received` as a sample.
    mutating func add(sent: Instant, received: Instant) {
        add((received - sent).secondsDouble)
    }

    /// The smoothed round trip plus four deviations (at least `granularity`), within `range`;
    /// `initial` before any sample.
    func timeout(granularity: Duration, initial: Duration, range: ClosedRange<Duration>) -> Duration {
        guard let smoothed else { return min(max(initial, range.lowerBound), range.upperBound) }
        // Clamped in seconds before the conversion: a sample from a far-off time (a replayed or
        // fuzzed capture) would not fit in Int64 nanoseconds.
        let seconds = min(
            smoothed + max(4 * variance, granularity.secondsDouble), range.upperBound.secondsDouble)
        let candidate = Duration.saturatingNanoseconds(seconds * 1e9)
        return min(max(candidate, range.lowerBound), range.upperBound)
    }
}
