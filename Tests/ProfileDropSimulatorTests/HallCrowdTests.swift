import ProfileDropCore
import Testing

@testable import ProfileDropSimulator

/// A hall as the crowd of a room another driver runs: the pair stood in for, the crowd's own
/// meetings, and the crowd's network beside the room's hook.
@Suite struct HallCrowdTests {
    @Test func theCrowdLeavesThePairInACrowdOutAndMovesTheHallToItsPlace() {
        let crowd = HallCrowd(devices: 60, seed: 4, duration: .seconds(60))
        let layout = Hall.layout(devices: 60, pairs: 3, seed: 4, duration: .seconds(60))
        #expect(crowd.pairs == 3)
        #expect(crowd.devices.count == 58)
        // Pair 1 meets once and stands in a crowd: its place is the origin, nobody stands there.
        let place = layout.scenario.devices[layout.meetings[1].standing].pose
        #expect(layout.meetings[1].inCrowd && !layout.meetings[1].isSecond)
        #expect(!crowd.devices.contains { $0.name == "pair1a" || $0.name == "pair1b" })
        let origin = Pose(x: 0, y: 0, heading: 0)
        let nearest = crowd.devices.map { $0.pose.distance(to: origin) }.min() ?? 0
        // Someone within the 50 cm reach, as the pair had, but out of the gate's band.
        #expect(nearest > 20 && nearest <= 60, "\(nearest)")
        let moved = crowd.devices.first { $0.name == "pair0a" }?.pose
        let original = layout.scenario.devices.first { $0.name == "pair0a" }?.pose
        #expect(moved?.x == original.map { $0.x - place.x } && moved?.y == original.map { $0.y - place.y })
    }

    /// Nobody drives the crowd but the room: its walkers walk, its owners accept, its pairs exchange;
    /// the room's hook sees none of its copies.
    @Test func theCrowdsOwnPairsMeetWithNoDriverAndBypassTheHook() {
        var seen = 0
        var room = Room(
            hook: ClosureHook { _ in
                seen += 1
                return .deliver
            })
        let crowd = HallCrowd(devices: 40, seed: 2, duration: .seconds(45)).join(&room)
        #expect(crowd == 0..<38)
        var exchanged = 0
        while room.step(notAfter: Instant.zero + .seconds(50)) != nil {
            exchanged += room.lastEvents.count { $0 == .closed(.exchanged) }
        }
        // Three meetings but the one stood in for (three pairs, one of which meets twice).
        #expect(exchanged == 6)
        #expect(seen == 0)
    }
}
