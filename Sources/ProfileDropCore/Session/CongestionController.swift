/// NewReno congestion control with pacing for the card transfer, after RFC 9002 sections 7 and 7.7,
/// counted in chunks rather than bytes (every chunk but the last is full-sized).
///
/// Transmissions are numbered in the order they are sent (``Transmission``); the recovery period and
/// the timeout back-off are keyed on those numbers, so a loss event or a run of timeouts counts once
/// however many of the chunks sent before it turn out to be lost.
struct CongestionController {
    /// The order of one transmission of a chunk: later transmissions have larger numbers.
    typealias Transmission = Int

    /// The window a transfer starts with (RFC 9002 recommends ten packets).
    static let initialWindow = 10
    /// The window never shrinks below this. Four chunks draw two acknowledgements (a receiver
    /// acknowledges every second chunk), so one lost acknowledgement does not stall the flight
    /// until the timeout, which with random loss of tens of percent would happen every few flights.
    static let minimumWindow = 4
    /// Chunks that may leave at once after a pause: RFC 9002 7.7 limits bursts to the initial window.
    static let burst = initialWindow
    /// Pacing spreads `pacingGain` windows over one smoothed round trip, so the pacer is not what
    /// keeps the window from being used.
    static let pacingGain = 1.25

    /// The most chunks allowed in flight: the window the peer and our limits allow.
    let maximumWindow: Int
    /// Chunks allowed in flight now.
    private(set) var window: Int
    /// Slow start ends when the window reaches this.
    private(set) var slowStartThreshold: Int = .max
    /// Chunks acknowledged in congestion avoidance since the window last grew.
    private var acknowledgedInAvoidance = 0
    /// Losses of transmissions numbered below this belong to the loss event already answered.
    private var recoveryStart: Transmission = 0

    /// A controller for a transfer allowed at most `maximumWindow` chunks in flight.
    init(maximumWindow: Int) {
        precondition(maximumWindow >= 1, "a transfer needs room for one chunk in flight")
        self.maximumWindow = maximumWindow
        window = min(Self.initialWindow, maximumWindow)
    }

    /// Whether the window is in slow start.
    var inSlowStart: Bool { window < slowStartThreshold }

    /// Grows the window for a chunk newly acknowledged whose acknowledged transmission was `sent`:
    /// by one chunk per chunk in slow start (doubling every round trip), by one chunk per window in
    /// congestion avoidance; not at all for chunks sent before the current recovery began.
    mutating func acknowledged(sent: Transmission) {
        guard sent >= recoveryStart else { return }
        if inSlowStart {
            window = min(window + 1, maximumWindow)
            return
        }
        acknowledgedInAvoidance += 1
        if acknowledgedInAvoidance >= window {
            acknowledgedInAvoidance = 0
            window = min(window + 1, maximumWindow)
        }
    }

    /// Halves the window when a chunk sent as transmission `sent` is declared lost, unless the loss
    /// belongs to the loss event already answered. `next` is the number the next transmission gets.
    /// - Returns: whether this started a new loss event.
    @discardableResult
    mutating func lost(sent: Transmission, next: Transmission) -> Bool {
        guard sent >= recoveryStart else { return false }
        recoveryStart = next
        slowStartThreshold = max(window / 2, Self.minimumWindow)
        window = slowStartThreshold
        acknowledgedInAvoidance = 0
        return true
    }

    /// Collapses the window after persistent congestion (RFC 9002 7.6): timeouts in a row with
    /// nothing acknowledged in between. Slow start then ends at half the window it had.
    mutating func persistentCongestion(next: Transmission) {
        recoveryStart = next
        slowStartThreshold = min(slowStartThreshold, max(window / 2, Self.minimumWindow))
        window = Self.minimumWindow
        acknowledgedInAvoidance = 0
    }

    /// The gap between chunks: the smoothed round trip spread over `pacingGain` windows, or
    /// `initialGap` before there is a round-trip sample. Never above `ceiling`.
    func pacingInterval(smoothedRTT: Double?, initialGap: Duration, ceiling: Duration) -> Duration {
        guard let smoothedRTT else { return initialGap }
        // Clamped in seconds before the conversion, as a far-off sample could not be expressed in
        // Int64 nanoseconds.
        let seconds = min(smoothedRTT / (Double(window) * Self.pacingGain), ceiling.secondsDouble)
        return .saturatingNanoseconds((seconds * 1e9).rounded())
    }
}

/// When the next chunk may leave: chunks `interval` apart, with credit for up to
/// ``CongestionController/burst`` chunks built up while the sender had nothing to send (or at the
/// start).
struct Pacer {
    /// Time credit left after the last chunk; nil for a full bucket.
    private var credit: Duration?
    private var updatedAt: Instant

    init(now: Instant) { updatedAt = now }

    /// The credit available now, capped at a burst.
    private func available(now: Instant, interval: Duration) -> Duration {
        let cap = interval * CongestionController.burst
        guard let credit else { return cap }
        return min(credit + (now - updatedAt), cap)
    }

    /// Whether a chunk may leave now.
    func allows(now: Instant, interval: Duration) -> Bool {
        available(now: now, interval: interval) >= interval
    }

    /// When the next chunk may leave, `now` at the earliest.
    func nextSendAt(now: Instant, interval: Duration) -> Instant {
        now + (interval - available(now: now, interval: interval))
    }

    /// Takes a slot for a chunk sent now.
    mutating func sent(now: Instant, interval: Duration) {
        precondition(allows(now: now, interval: interval), "a chunk sent before the pacer allowed it")
        credit = available(now: now, interval: interval) - interval
        updatedAt = now
    }
}
