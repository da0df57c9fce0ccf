import ProfileDropCore

/// Where the simulated device of a run is and where it is going: the pose the device was last
/// told, and the script it follows. Every change of pose goes through here and comes back as the
/// pose to tell the device, so the device never misses one.
package struct DeviceMotion {
    /// The pose the device was last told (or is about to be, at start).
    package private(set) var pose: Pose
    private var script: MotionScript?

    /// At `start`, following `script` when there is one.
    package init(start: Pose, script: MotionScript?) {
        pose = start
        self.script = script
    }

    /// Whether a script is running, so the caller wakes up to follow it.
    package var isMoving: Bool { script != nil }

    /// The default motion for a session that was just secured: the inviting device holds still at
    /// the origin facing +x, and the other is brought from 30 cm to 7 cm in front of it, facing
    /// back, over 1.5 s. Both start over in every session, wherever the last one left them.
    package mutating func startApproach(initiator: Bool, at now: Instant) {
        if initiator {
            script = MotionScript(from: Pose(x: 0, y: 0, heading: 0), start: now)
        } else {
            script = MotionScript(
                from: Pose(x: 30, y: 0, heading: 180), start: now,
                steps: [.move(to: Pose(x: 7, y: 0, heading: 180), over: .milliseconds(1500))])
        }
    }

    /// The script's pose at `now` when the device has not been told it yet; nil otherwise.
    package mutating func advance(to now: Instant) -> Pose? {
        guard let script else { return nil }
        if now >= script.end { self.script = nil }
        let next = script.pose(at: now)
        guard next != pose else { return nil }
        pose = next
        return next
    }

    /// Moves to `moved` (an arrow key's step) unless it leaves the room; the pose to tell the
    /// device, or nil.
    package mutating func step(to moved: Pose) -> Pose? {
        // The room's edge stops the device, as the flags' limit does.
        guard moved.isInsideRoom else { return nil }
        pose = moved
        return moved
    }
}
