/// How a device moves over virtual time: a start pose and a list of steps played one after another.
///
/// Times are `Instant`s on the driver's clock; the script begins at `start`. Before `start` the
/// device is at the first pose, after the last step it stays at the last one.
public struct MotionScript: Equatable, Sendable {
    /// One piece of motion.
    public enum Step: Equatable, Sendable {
        /// Stay where the previous step ended for the duration.
        case hold(Duration)
        /// Move in a straight line to the pose over the duration, turning the short way round at a
        /// steady rate. A zero duration jumps.
        case move(to: Pose, over: Duration)
    }

    /// One step with its absolute timing, precomputed so that `pose(at:)` needs no running sums.
    private struct Segment: Equatable, Sendable {
        var begin: Instant
        var end: Instant
        var from: Pose
        var to: Pose
    }

    /// The pose at `start`.
    public let initialPose: Pose
    /// When the first step begins.
    public let start: Instant
    /// The steps, in order.
    public private(set) var steps: [Step] = []
    private var segments: [Segment] = []

    /// A script starting at `initialPose` at time `start`, playing `steps`.
    public init(from initialPose: Pose, start: Instant = .zero, steps: [Step] = []) {
        self.initialPose = initialPose
        self.start = start
        for step in steps { append(step) }
    }

    /// When the last step ends.
    public var end: Instant { segments.last?.end ?? start }

    /// The pose at the end of the last step.
    public var finalPose: Pose { segments.last?.to ?? initialPose }

    /// Adds a step after the current last one.
    public mutating func append(_ step: Step) {
        let begin = end
        let from = finalPose
        steps.append(step)
        switch step {
        case .hold(let duration):
            precondition(duration >= .zero, "a hold cannot last a negative time")
            segments.append(Segment(begin: begin, end: begin + duration, from: from, to: from))
        case .move(let target, let duration):
            precondition(duration >= .zero, "a move cannot take a negative time")
            segments.append(Segment(begin: begin, end: begin + duration, from: from, to: target))
        }
    }

    /// The pose at `time`, interpolated linearly within the step that covers it.
    public func pose(at time: Instant) -> Pose {
        guard time > start else { return initialPose }
        // Steps are few (a handful per device); a binary search would not pay for itself.
        for segment in segments where time < segment.end {
            guard time > segment.begin else { return segment.from }
            let total = (segment.end - segment.begin).secondsDouble
            let fraction = (time - segment.begin).secondsDouble / total
            return Self.interpolate(segment.from, segment.to, fraction: fraction)
        }
        return finalPose
    }

    /// The pose a fraction `0...1` of the way from `from` to `to`.
    public static func interpolate(_ from: Pose, _ to: Pose, fraction: Double) -> Pose {
        let t = Swift.min(Swift.max(fraction, 0), 1)
        let turn = Pose.shortestTurn(from: from.heading, to: to.heading)
        return Pose(
            x: from.x + (to.x - from.x) * t, y: from.y + (to.y - from.y) * t, heading: from.heading + turn * t
        )
    }
}
