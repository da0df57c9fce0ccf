import ProfileDrop
import ProfileDropCore
import Testing

@testable import ProfileDropCLI

/// The default motion of `share`, followed session after session as the driver follows it.
@Suite struct DeviceMotionTests {
    /// Runs the motion from `start` for two seconds in 50 ms steps, as `share` does, and returns every
    /// pose the device was told.
    static func follow(_ motion: inout DeviceMotion, from start: Instant) -> [Pose] {
        stride(from: 0, through: 2000, by: 50).compactMap { motion.advance(to: start + .milliseconds($0)) }
    }

    /// A device that was brought in during one session and invites in the next must be told it is
    /// back at the origin: it used to keep the pose 7 cm out, so the peer, brought to the same point,
    /// measured 0.1–1.5 cm and every later session ended out of range.
    @Test func eachSessionStartsTheApproachOverAndTellsTheDevice() throws {
        var motion = DeviceMotion(.approach)
        motion.startApproach(initiator: false, at: .zero)
        let first = Self.follow(&motion, from: .zero)
        #expect(first.first == Pose(x: 30, y: 0, heading: 180))
        #expect(first.last == Pose(x: 7, y: 0, heading: 180))
        #expect(!motion.isMoving)

        let second = Instant.zero + .seconds(10)
        motion.startApproach(initiator: true, at: second)
        #expect(Self.follow(&motion, from: second) == [Pose(x: 0, y: 0, heading: 0)])

        let third = Instant.zero + .seconds(20)
        motion.startApproach(initiator: false, at: third)
        let poses = Self.follow(&motion, from: third)
        #expect(
            poses.first == Pose(x: 30, y: 0, heading: 180) && poses.last == Pose(x: 7, y: 0, heading: 180))
    }

    /// An inviting device that is already at the origin is told nothing new.
    @Test func anInviterAlreadyAtTheOriginIsNotToldAgain() {
        var motion = DeviceMotion(.approach)
        motion.startApproach(initiator: true, at: .zero)
        #expect(Self.follow(&motion, from: .zero).isEmpty)
    }

    /// Arrow-key steps stop at the room's edge.
    @Test func stepsStopAtTheRoomsEdge() {
        var motion = DeviceMotion(.interactive(Pose(x: Pose.roomLimit, y: 0, heading: 0)))
        #expect(motion.step(to: motion.pose.moved(forward: 1)) == nil)
        #expect(
            motion.step(to: motion.pose.moved(forward: -1)) == Pose(x: Pose.roomLimit - 1, y: 0, heading: 0))
    }
}
