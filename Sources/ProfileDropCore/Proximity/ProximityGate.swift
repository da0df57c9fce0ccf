/// Decides, on one device, whether the peer is being held close and facing it: the gate that must be
/// open on both devices before cards are swapped.
///
/// Each ranging round is fed in with `add(_:at:)` (nil for a failed round). The gate keeps the
/// valid samples of the last `window`, takes their median, drops samples far from it (multipath
/// outliers) and averages the rest. That estimate must lie in the distance band and under the
/// bearing limit to start a dwell; the dwell ends in `inRange` once it has lasted `dwellTime`
/// with the estimate staying inside the band widened by the hysteresis margins. An open gate
/// closes when the estimate leaves the widened band or too few samples remain.
public struct ProximityGate: Equatable, Sendable {
    /// Tuning. The defaults meet the quality targets under `MeasurementModel.default` (see
    /// `GateTrials` in the simulator): false accepts ≤ 0.1%, false rejects ≤ 1%.
    public struct Configuration: Equatable, Sendable {
        /// Distances (cm) at which the gate may open.
        public var distanceBand: ClosedRange<Double>
        /// Largest bearing (degrees) at which the gate may open: the devices must face each other.
        public var maximumBearing: Double
        /// How far (cm) the estimate may stray outside `distanceBand` once dwelling or open.
        /// Stops a gate at the edge of the band from flickering.
        public var distanceHysteresis: Double
        /// How far (degrees) the estimate may exceed `maximumBearing` once dwelling or open.
        public var bearingHysteresis: Double
        /// How long the estimate must stay in range before the gate opens: a deliberate hold, not a
        /// phone swinging past another.
        public var dwellTime: Duration
        /// How far back samples are kept for the estimate.
        public var window: Duration
        /// Valid samples (after outlier rejection) needed in the window to open.
        public var minimumSamples: Int
        /// Valid samples needed in the window to stay open, lower so that a few dropouts in a row
        /// do not close an open gate.
        public var minimumSamplesWhileOpen: Int
        /// A sample further than this (cm) from the window's median distance is ignored.
        public var outlierDistance: Double
        /// A sample further than this (degrees) from the window's median bearing is ignored.
        public var outlierBearing: Double

        /// Creates a configuration; the defaults are `Configuration.default`.
        public init(
            distanceBand: ClosedRange<Double> = 5...10, maximumBearing: Double = 30,
            distanceHysteresis: Double = 0.5,
            bearingHysteresis: Double = 5, dwellTime: Duration = .milliseconds(500),
            window: Duration = .milliseconds(1000), minimumSamples: Int = 5, minimumSamplesWhileOpen: Int = 3,
            outlierDistance: Double = 3, outlierBearing: Double = 25
        ) {
            precondition(distanceBand.lowerBound >= 0, "distance band must not be negative")
            precondition((0...180).contains(maximumBearing), "maximum bearing must be in 0...180")
            precondition(distanceHysteresis >= 0 && bearingHysteresis >= 0, "hysteresis must not be negative")
            precondition(dwellTime >= .zero && window > .zero, "dwell must not be negative, window positive")
            precondition(minimumSamples >= 1 && minimumSamplesWhileOpen >= 1, "at least one sample is needed")
            precondition(outlierDistance > 0 && outlierBearing > 0, "outlier limits must be positive")
            self.distanceBand = distanceBand
            self.maximumBearing = maximumBearing
            self.distanceHysteresis = distanceHysteresis
            self.bearingHysteresis = bearingHysteresis
            self.dwellTime = dwellTime
            self.window = window
            self.minimumSamples = minimumSamples
            self.minimumSamplesWhileOpen = minimumSamplesWhileOpen
            self.outlierDistance = outlierDistance
            self.outlierBearing = outlierBearing
        }

        /// Band 5–10 cm, bearing ≤ 30°, 0.5 s dwell over a 1 s window of at least 5 samples.
        public static let `default` = Configuration()
    }

    // The estimate and the states below are the gate's output, made only by the gate, so they have
    // no public initializers.

    /// The filtered view of the peer, for decisions and for display.
    public struct Estimate: Equatable, Sendable {
        /// Filtered distance in centimetres.
        public var distance: Double
        /// Filtered bearing in degrees, `[0, 180]`.
        public var bearing: Double
        /// How many samples the estimate rests on, after outlier rejection.
        public var sampleCount: Int
    }

    /// Not in range: no estimate yet, or the estimate is outside the band.
    public struct Searching: Equatable, Sendable {
        /// The current estimate, if there are enough samples for one.
        public var estimate: Estimate?
    }

    /// In range and waiting for the dwell time to pass.
    public struct Dwelling: Equatable, Sendable {
        /// When the estimate entered the band.
        public var since: Instant
        /// The current estimate.
        public var estimate: Estimate
    }

    /// Open: the peer is held close and facing.
    public struct InRange: Equatable, Sendable {
        /// When the gate opened.
        public var since: Instant
        /// The current estimate.
        public var estimate: Estimate
    }

    /// The gate's state.
    public enum State: Equatable, Sendable {
        case searching(Searching)
        case dwelling(Dwelling)
        case inRange(InRange)
    }

    private struct TimedSample: Equatable, Sendable {
        var time: Instant
        var sample: RangingSample
    }

    /// Most samples kept, whatever the window: bounds memory and work per round if rounds arrive
    /// much faster than the ranging rate (a peer flooding ranging frames).
    public static let sampleCapacity = 64

    /// The tuning in force.
    public let configuration: Configuration
    /// The current state.
    public private(set) var state: State = .searching(Searching(estimate: nil))
    /// The time of the latest `add`, if any.
    public private(set) var lastUpdate: Instant?
    private var samples: [TimedSample] = []
    /// The window's distances and bearings, each in ascending order, kept as samples come and go:
    /// the medians are read from them, not sorted out of the window for every estimate.
    private var sortedDistances: [Double] = []
    private var sortedBearings: [Double] = []

    /// A gate in `searching` with no samples.
    public init(configuration: Configuration = .default) {
        self.configuration = configuration
        // Room for a default window's rounds (8–9 at 8 Hz) at once, rather than grown four times.
        samples.reserveCapacity(Self.usualWindowSamples)
        sortedDistances.reserveCapacity(Self.usualWindowSamples)
        sortedBearings.reserveCapacity(Self.usualWindowSamples)
    }

    /// Samples a window usually holds, reserved up front.
    private static let usualWindowSamples = 16

    /// Whether the gate is open.
    public var isOpen: Bool {
        switch state {
        case .inRange: return true
        case .searching, .dwelling: return false
        }
    }

    /// Measurements in a row outside the leaving band that, with the gate closed after it had
    /// opened, show that the peer left (PROTOCOL.md 6.7). Six (0.75 s at 8 Hz): a walk-away is
    /// seen about six rounds after it began.
    public static let leavingSamples = 6

    /// Whether a raw measurement lies outside the leaving band: the distance band and the bearing
    /// limit, each widened by three times the hysteresis margin (3.5–11.5 cm and 45° by default).
    ///
    /// Not once: a pair held still 1 cm inside the band measures beyond the once-widened band about
    /// one time in nine, and six such in a row once the gate closed ended a held exchange in a swarm
    /// run (seed 9138248281593400770). `profiledrop simulate --gate-trials` held pairs still at 6
    /// and at 9 cm with a fifth of the rounds failing: once widened, one false cancel every 7–10
    /// hours (167 hours at each distance); twice, one every 83 hours; three times, none in 1,667
    /// hours. A walk-away is seen as soon as before: it leaves the band by far more.
    public func isOutsideLeavingBand(_ sample: RangingSample) -> Bool {
        let nearest = configuration.distanceBand.lowerBound - 3 * configuration.distanceHysteresis
        let farthest = configuration.distanceBand.upperBound + 3 * configuration.distanceHysteresis
        return sample.distance < nearest || sample.distance > farthest
            || sample.bearing > configuration.maximumBearing + 3 * configuration.bearingHysteresis
    }

    /// The current estimate, whatever the state.
    public var estimate: Estimate? {
        switch state {
        case .searching(let searching): return searching.estimate
        case .dwelling(let dwelling): return dwelling.estimate
        case .inRange(let inRange): return inRange.estimate
        }
    }

    /// Forgets all samples and returns to `searching`.
    public mutating func reset() {
        state = .searching(Searching(estimate: nil))
        samples.removeAll(keepingCapacity: true)
        sortedDistances.removeAll(keepingCapacity: true)
        sortedBearings.removeAll(keepingCapacity: true)
        lastUpdate = nil
    }

    /// Feeds one ranging round: a sample, or nil when the round failed. Times must not go back.
    public mutating func add(_ sample: RangingSample?, at time: Instant) {
        if let lastUpdate { precondition(time >= lastUpdate, "proximity samples must arrive in time order") }
        lastUpdate = time
        let horizon =
            time.nanoseconds >= configuration.window.nanosecondsClamped
            ? Instant(nanoseconds: time.nanoseconds - configuration.window.nanosecondsClamped) : nil
        if let horizon {
            // Times never go back, so the samples that left the window are the oldest ones.
            var expired = 0
            while expired < samples.count, samples[expired].time <= horizon {
                forget(samples[expired].sample)
                expired += 1
            }
            samples.removeFirst(expired)
        }
        if let sample {
            if samples.count == Self.sampleCapacity { forget(samples.removeFirst().sample) }
            samples.append(TimedSample(time: time, sample: sample))
            Self.insert(sample.distance, into: &sortedDistances)
            Self.insert(sample.bearing, into: &sortedBearings)
        }

        let current = state
        switch current {
        case .searching:
            guard let estimate = filteredEstimate(minimumSamples: configuration.minimumSamples) else {
                state = .searching(Searching(estimate: nil))
                return
            }
            if isInside(estimate, widened: false) {
                state = .dwelling(Dwelling(since: time, estimate: estimate))
                openIfDwelledEnough(at: time)
            } else {
                state = .searching(Searching(estimate: estimate))
            }
        case .dwelling(let dwelling):
            guard let estimate = filteredEstimate(minimumSamples: configuration.minimumSamples),
                isInside(estimate, widened: true)
            else {
                state = .searching(
                    Searching(estimate: filteredEstimate(minimumSamples: configuration.minimumSamples)))
                return
            }
            state = .dwelling(Dwelling(since: dwelling.since, estimate: estimate))
            openIfDwelledEnough(at: time)
        case .inRange(let inRange):
            guard let estimate = filteredEstimate(minimumSamples: configuration.minimumSamplesWhileOpen),
                isInside(estimate, widened: true)
            else {
                state = .searching(
                    Searching(estimate: filteredEstimate(minimumSamples: configuration.minimumSamples)))
                return
            }
            state = .inRange(InRange(since: inRange.since, estimate: estimate))
        }
    }

    private mutating func openIfDwelledEnough(at time: Instant) {
        switch state {
        case .dwelling(let dwelling):
            if time - dwelling.since >= configuration.dwellTime {
                state = .inRange(InRange(since: time, estimate: dwelling.estimate))
            }
        case .searching, .inRange:
            break
        }
    }

    private func isInside(_ estimate: Estimate, widened: Bool) -> Bool {
        let distanceMargin = widened ? configuration.distanceHysteresis : 0
        let bearingMargin = widened ? configuration.bearingHysteresis : 0
        return estimate.distance >= configuration.distanceBand.lowerBound - distanceMargin
            && estimate.distance <= configuration.distanceBand.upperBound + distanceMargin
            && estimate.bearing <= configuration.maximumBearing + bearingMargin
    }

    /// Median-centred outlier rejection, then the mean of what is left: the median shrugs off
    /// reflections, the mean of the inliers is less noisy than the median alone.
    private func filteredEstimate(minimumSamples: Int) -> Estimate? {
        guard samples.count >= minimumSamples else { return nil }
        let medianDistance = Self.median(of: sortedDistances)
        let medianBearing = Self.median(of: sortedBearings)
        var distanceSum = 0.0
        var bearingSum = 0.0
        var count = 0
        for entry in samples
        where abs(entry.sample.distance - medianDistance) <= configuration.outlierDistance
            && abs(entry.sample.bearing - medianBearing) <= configuration.outlierBearing
        {
            distanceSum += entry.sample.distance
            bearingSum += entry.sample.bearing
            count += 1
        }
        guard count >= minimumSamples else { return nil }
        return Estimate(
            distance: distanceSum / Double(count), bearing: bearingSum / Double(count), sampleCount: count)
    }

    /// The median of `sorted`, a field of the window in ascending order: the middle value, or
    /// the mean of the two middle ones.
    private static func median(of sorted: [Double]) -> Double {
        let middle = sorted.count / 2
        return sorted.count % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
    }

    /// Puts `value` into `sorted` where it keeps the order: a few moves, as a window holds about
    /// ten values.
    private static func insert(_ value: Double, into sorted: inout [Double]) {
        var index = sorted.endIndex
        while index > 0, sorted[index - 1] > value { index -= 1 }
        sorted.insert(value, at: index)
    }

    /// Takes `value`, which ``insert(_:into:)`` put there, out of `sorted`. Found by its bits, so
    /// that even a value that equals none (NaN) or another (-0 and 0) is the one taken.
    private static func remove(_ value: Double, from sorted: inout [Double]) {
        guard let index = sorted.firstIndex(where: { $0.bitPattern == value.bitPattern }) else {
            preconditionFailure("a window value is missing from its sorted copy")
        }
        sorted.remove(at: index)
    }

    /// Takes a sample that left the window out of the sorted fields.
    private mutating func forget(_ sample: RangingSample) {
        Self.remove(sample.distance, from: &sortedDistances)
        Self.remove(sample.bearing, from: &sortedBearings)
    }
}

extension ProximityGate.Configuration {
    /// One parameter of the gate, named for diagnostics, with the key path that reads and writes it.
    package enum Field {
        /// A number.
        case number(String, WritableKeyPath<ProximityGate.Configuration, Double>)
        /// A range of numbers.
        case numberRange(String, WritableKeyPath<ProximityGate.Configuration, ClosedRange<Double>>)
        /// A duration.
        case duration(String, WritableKeyPath<ProximityGate.Configuration, Duration>)
        /// A count.
        case count(String, WritableKeyPath<ProximityGate.Configuration, Int>)
    }

    /// Every parameter, in declaration order, which is also their order in a capture's device
    /// record. The capture codec iterates this table, so a parameter added above must be added here
    /// too; a test compares its length with the struct's stored properties.
    package static var fields: [Field] {
        [
            .numberRange("distance band", \.distanceBand), .number("maximum bearing", \.maximumBearing),
            .number("distance hysteresis", \.distanceHysteresis),
            .number("bearing hysteresis", \.bearingHysteresis), .duration("dwell time", \.dwellTime),
            .duration("gate window", \.window), .count("minimum samples", \.minimumSamples),
            .count("minimum samples while open", \.minimumSamplesWhileOpen),
            .number("outlier distance", \.outlierDistance), .number("outlier bearing", \.outlierBearing),
        ]
    }
}
