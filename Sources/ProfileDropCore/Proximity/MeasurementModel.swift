import Foundation
import ProfileDropCrypto

/// One ranging measurement as a device's UWB-like radio would report it.
public struct RangingSample: Equatable, Sendable {
    /// Measured distance to the peer, in centimetres (never negative).
    public var distance: Double
    /// Measured angle between the device's heading and the peer, in `[0, 180]` degrees.
    public var bearing: Double

    /// Creates a sample; the distance is clamped at zero and the bearing folded into `[0, 180]`.
    public init(distance: Double, bearing: Double) {
        self.distance = Swift.max(distance, 0)
        self.bearing = Pose.angularDifference(bearing, 0)
    }
}

/// A noise model for short-range two-way ranging with angle of arrival, in the spirit of UWB.
///
/// Each call draws one measurement from the injected `RandomSource`, so a seeded generator gives a
/// reproducible stream. A measurement is either a dropout (nil), a normal sample (truth plus
/// Gaussian noise), or a multipath outlier (a reflected path: longer, with an unrelated angle).
public struct MeasurementModel: Equatable, Sendable {
    /// Standard deviation of the distance error, in centimetres. Default 1.2 cm: UWB is quoted at
    /// "10 cm class" accuracy, but that is mostly a fixed bias from antenna delay, which calibration
    /// removes; what remains at a few centimetres with line of sight is a jitter of about a
    /// centimetre for two-way ranging averaged over a burst. Anything much larger would make a 5 cm
    /// wide band meaningless: with the default gate, 1.5 cm still meets the targets (about 0.8%
    /// false rejects) and 2 cm does not.
    public var distanceNoise: Double
    /// Standard deviation of the bearing error, in degrees. Default 5°: the usual angle-of-arrival
    /// precision of phone UWB chips when the peer is in front.
    public var bearingNoise: Double
    /// Probability that a sample follows a reflected path. Default 2%: rare with the devices
    /// almost touching, but it happens (a hand or a table edge).
    public var outlierProbability: Double
    /// Mean of the extra distance a reflected path adds, exponentially distributed, in centimetres.
    /// Default 20 cm: a reflection off something nearby. Its bearing is uniform in `[0, 180]`.
    public var outlierBiasMean: Double
    /// Probability that a ranging round fails and yields no sample. Default 5%: lost or corrupted
    /// frames when other devices range on the same channel.
    public var dropoutProbability: Double
    /// Ranging rounds per second. Default 8 Hz: within the 5–10 Hz typical of UWB ranging
    /// sessions, fast enough for a half-second dwell to see several samples.
    public var sampleRate: Double
    /// Beyond this distance (centimetres) every round is a dropout. Default 20 m: UWB's reach
    /// indoors.
    public var maximumRange: Double

    /// Creates a model; the defaults are `MeasurementModel.default`.
    public init(
        distanceNoise: Double = 1.2, bearingNoise: Double = 5, outlierProbability: Double = 0.02,
        outlierBiasMean: Double = 20, dropoutProbability: Double = 0.05, sampleRate: Double = 8,
        maximumRange: Double = 2000
    ) {
        precondition(
            distanceNoise >= 0 && bearingNoise >= 0 && outlierBiasMean >= 0, "noise must not be negative")
        precondition((0...1).contains(outlierProbability), "outlier probability must be in 0...1")
        precondition((0...1).contains(dropoutProbability), "dropout probability must be in 0...1")
        // Below 0.001 Hz the interval in nanoseconds would approach Int64's limit.
        precondition(sampleRate >= 0.001 && sampleRate <= 1000, "sample rate must be in [0.001, 1000] Hz")
        precondition(maximumRange > 0, "maximum range must be positive")
        self.distanceNoise = distanceNoise
        self.bearingNoise = bearingNoise
        self.outlierProbability = outlierProbability
        self.outlierBiasMean = outlierBiasMean
        self.dropoutProbability = dropoutProbability
        self.sampleRate = sampleRate
        self.maximumRange = maximumRange
    }

    /// The documented defaults.
    public static let `default` = MeasurementModel()

    /// A model without noise, outliers or dropouts, for tests and demonstrations.
    public static let exact = MeasurementModel(
        distanceNoise: 0, bearingNoise: 0, outlierProbability: 0, dropoutProbability: 0)

    /// Time between ranging rounds, rounded to the nanosecond.
    public var sampleInterval: Duration {
        .nanoseconds(Int64((1e9 / sampleRate).rounded()))
    }

    /// What the device at `truePose` measures of the peer at `peerPose`, or nil for a dropout.
    public func sample(
        truePose: Pose, peerPose: Pose, random: inout some RandomSource
    ) -> RangingSample? {
        sample(
            distance: truePose.distance(to: peerPose), bearing: truePose.bearing(to: peerPose),
            random: &random)
    }

    /// A measurement of a peer at true `distance` (cm) and `bearing` (degrees), or nil for a
    /// dropout. Always draws 48 random bytes whatever the outcome, so one device's dropouts do not
    /// shift another's noise when they share a generator.
    public func sample(distance: Double, bearing: Double, random: inout some RandomSource) -> RangingSample? {
        // One fill for all six draws: the simulator takes millions of samples.
        var words: (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0, 0, 0)
        withUnsafeMutableBytes(of: &words) { random.fill($0) }
        let dropoutDraw = Self.unit(words.0)
        let outlierDraw = Self.unit(words.1)
        // Box–Muller gives two independent normals from two uniforms; 1 - u keeps log's argument in (0, 1].
        let radius = (-2 * log(1 - Self.unit(words.2))).squareRoot()
        let angle = 2 * Double.pi * Self.unit(words.3)
        let distanceError = radius * cos(angle) * distanceNoise
        let bearingError = radius * sin(angle) * bearingNoise
        let reflectionDraw = Self.unit(words.4)
        let reflectionBearing = Self.unit(words.5) * 180
        guard dropoutDraw >= dropoutProbability, distance <= maximumRange else { return nil }
        if outlierDraw < outlierProbability {
            // Exponential extra path length: -mean * ln(U), with U in (0, 1].
            let extra = -outlierBiasMean * log(1 - reflectionDraw)
            return RangingSample(distance: distance + extra + distanceError, bearing: reflectionBearing)
        }
        return RangingSample(distance: distance + distanceError, bearing: bearing + bearingError)
    }

    /// A uniform double in `[0, 1)` from the top 53 bits of a random word.
    private static func unit(_ word: UInt64) -> Double {
        Double(word >> 11) * 0x1.0p-53
    }
}

extension MeasurementModel {
    /// Every parameter, named for diagnostics, in declaration order, which is also their order in
    /// a capture's device record. The capture codec iterates this table, so a parameter added above
    /// must be added here too; a test compares its length with the struct's stored properties.
    package static var fields: [(name: String, path: WritableKeyPath<MeasurementModel, Double>)] {
        [
            ("distance noise", \.distanceNoise), ("bearing noise", \.bearingNoise),
            ("outlier probability", \.outlierProbability), ("outlier bias mean", \.outlierBiasMean),
            ("dropout probability", \.dropoutProbability), ("sample rate", \.sampleRate),
            ("maximum range", \.maximumRange),
        ]
    }
}
