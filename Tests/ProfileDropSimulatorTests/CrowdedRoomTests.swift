import Foundation
import ProfileDropCore
import Testing

@testable import ProfileDropSimulator

/// The crowded-room generator, the benchmark built on it, and the swarm's crowded runs.
@Suite struct CrowdedRoomTests {
    @Test func aRoomHasTheClosePairAndEveryoneElseFarApart() {
        let room = CrowdedRoom.scenario(devices: 60, seed: 9, duration: .seconds(40))
        #expect(room.devices.count == 60)
        #expect(room.devices[0].pose == Pose(x: 0, y: 0, heading: 0))
        #expect(room.devices[1].pose == Pose(x: 7, y: 0, heading: 180))
        #expect(room.faults == CrowdedRoom.faults)
        #expect(room.timeouts.overall == .seconds(40))
        var nearest = Double.infinity
        for first in room.devices.indices {
            for second in room.devices.indices where second > first && !(first == 0 && second == 1) {
                nearest = min(nearest, room.devices[first].pose.distance(to: room.devices[second].pose))
            }
        }
        #expect(nearest >= CrowdedRoom.minimumSpacing)
        #expect(nearest < CrowdedRoom.cellSize, "the grid is jittered")
        #expect(Set(room.devices.map(\.name)).count == 60)
    }

    @Test func aSeedGivesOneRoomAndItsLonePairIsItsFirstTwoDevices() {
        let room = CrowdedRoom.scenario(devices: 30, seed: 4, duration: .seconds(30))
        #expect(room == CrowdedRoom.scenario(devices: 30, seed: 4, duration: .seconds(30)))
        #expect(room != CrowdedRoom.scenario(devices: 30, seed: 5, duration: .seconds(30)))
        let lone = CrowdedRoom.lonePair(seed: 4, duration: .seconds(30))
        #expect(lone.devices == Array(room.devices.prefix(2)))
        #expect(lone.faults == room.faults && lone.timeouts == room.timeouts && lone.seed == room.seed)
    }

    @Test func theStoredTwoHundredDeviceRoomIsTheGeneratorsOutput() throws {
        let path = scenariosDirectory + "/crowded-room-200.json"
        let generated = CrowdedRoom.scenario(devices: 200, seed: 200, duration: .seconds(120))
        #expect(try Scenario.load(contentsOf: path) == generated)
        let text = try String(contentsOfFile: path, encoding: .utf8)
        #expect(text == CrowdedRoom.fileText(generated))
    }

    @Test func theBenchmarkReportsFiguresOfRealRuns() throws {
        let duration = Duration.seconds(15)
        let result = RoomBenchmark.run(
            deviceCounts: [6], seeds: [3], duration: duration, cpuTime: { 0 })
        let lone = Simulation.run(scenario: CrowdedRoom.lonePair(seed: 3, duration: duration))
        let room = Simulation.run(scenario: CrowdedRoom.scenario(devices: 6, seed: 3, duration: duration))
        let loneTime = try #require(RoomBenchmark.pairTime(lone))
        let roomTime = try #require(RoomBenchmark.pairTime(room))
        #expect(result.lonePair.median == loneTime)
        #expect(result.rooms.count == 1)
        let figures = result.rooms[0]
        #expect(figures.pair.median == roomTime && figures.pair.p95 == roomTime)
        let ratio = try #require(figures.ratio)
        #expect(!ratio.isLowerBound)
        #expect(abs(ratio.value - roomTime.secondsDouble / loneTime.secondsDouble) < 1e-9)
        #expect(figures.simulated == room.virtualDuration)
        let steadySeconds = room.virtualDuration.secondsDouble - Double(RoomBenchmark.steadyStateStart)
        let multicast = room.network.multicastDatagrams(fromSecond: RoomBenchmark.steadyStateStart)
        #expect(multicast > 0)
        #expect(abs(figures.multicastPerDeviceSecond - Double(multicast) / (steadySeconds * 6)) < 1e-9)
        #expect(figures.violations == [])

        let lines = result.lines
        #expect(lines.count == 4)
        #expect(lines[0].hasPrefix("bench room: seeds 3, horizon 15 s"))
        #expect(lines[1].hasPrefix("lone pair: exchanged 1/1, median "))
        #expect(lines[2].hasPrefix("room 6: pair exchanged 1/1, median "))
        #expect(lines[2].contains("ratio \(ratio.text); "))
        #expect(lines[3] == "room/pair: \(ratio.text)")
    }

    @Test func aPairThatNeverExchangesGivesTheHorizonAsALowerBound() {
        let times = RoomBenchmark.PairTimes(times: [nil, .seconds(4), nil])
        #expect(times.exchanged == 1)
        #expect(times.median == nil)
        #expect(RoomBenchmark.PairTimes(times: [.seconds(5), .seconds(3), nil]).median == .seconds(5))
        #expect(RoomBenchmark.PairTimes(times: [.seconds(5), .seconds(3), .seconds(4)]).p95 == .seconds(5))
    }

    @Test func multicastIsCountedPerSecondOfVirtualTime() {
        let report = Simulation.run(
            scenario: CrowdedRoom.scenario(devices: 4, seed: 2, duration: .seconds(15)))
        let perSecond = report.network.multicastPerSecond
        #expect(perSecond.count >= 15)
        #expect(report.network.multicastDatagrams(fromSecond: 0) == perSecond.reduce(0, +))
        #expect(report.network.multicastDatagrams(fromSecond: 10) == perSecond.dropFirst(10).reduce(0, +))
    }

    @Test func someSwarmRunsAreCrowdedWithTheOthersOnTheGrid() {
        let plans = Swarm.runSeeds(seed: 1, count: 600).map {
            SwarmPlan(runSeed: $0, timeouts: Swarm.timeouts)
        }
        let crowded = plans.filter(\.crowded)
        #expect((1...20).contains(crowded.count))
        for plan in crowded {
            let devices = plan.scenario.devices
            #expect(SwarmPlan.crowdedSizes.contains(devices.count))
            // Liveness is checked in crowded runs too, as in any run whose pair both consent.
            let bothConsent = devices[0...1].allSatisfy {
                if case .accept = $0.consent { true } else { false }
            }
            #expect(
                plan.expectsExchange
                    == (bothConsent && plan.scenario.faults.permanentCut(between: 0, 1) == nil))
            #expect(devices.allSatisfy { $0.motion.isEmpty })
            for first in devices.indices {
                for second in devices.indices where second > first && !(first == 0 && second == 1) {
                    #expect(devices[first].pose.distance(to: devices[second].pose) >= 80)
                }
            }
        }
        #expect(plans.filter { !$0.crowded }.allSatisfy { (2...6).contains($0.scenario.devices.count) })
    }

    /// A device told it stands somewhere else than it does: its core ranges against the pose it
    /// was told, so it can exchange with a peer that truly stands far away.
    struct DisplacedDevice: WrappingDevice {
        var inner: Device
        var offset: Double

        mutating func updatePose(_ pose: Pose, at time: Instant) {
            inner.updatePose(Pose(x: pose.x + offset, y: pose.y, heading: pose.heading), at: time)
        }
    }

    @Test func aCardFromAFarPeerIsAViolation() {
        var room = CrowdedRoom.lonePair(seed: 1, duration: .seconds(20))
        room.devices[1].pose = Pose(x: 50, y: 0, heading: 180)
        let report = Simulation.run(scenario: room) { context -> any SansIODevice in
            guard context.index == 1 else { return context.makeCoreDevice() }
            return DisplacedDevice(inner: context.makeCoreDevice(), offset: -43)
        }
        #expect(report.exchangedCount == 2)
        #expect(
            Swarm.farExchanges(in: report) == [
                "far exchange: alice received bob's card 50.0 cm away (more than 15 cm)",
                "far exchange: bob received alice's card 50.0 cm away (more than 15 cm)",
            ])

        let honest = Simulation.run(scenario: CrowdedRoom.lonePair(seed: 1, duration: .seconds(20)))
        #expect(honest.exchangedCount == 2)
        #expect(Swarm.farExchanges(in: honest) == [])
    }
}
