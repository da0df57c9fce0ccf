import Foundation
import ProfileDropCore
import Testing

@testable import ProfileDropSimulator

/// `duration` before `instant`.
private func earlier(_ instant: Instant, by duration: Duration) -> Instant {
    Instant.zero + ((instant - .zero) - duration)
}

/// The conference-hall generator and the benchmark built on it.
@Suite struct HallTests {
    static let layout = Hall.layout(devices: 120, pairs: 5, seed: 3, duration: .seconds(60))

    @Test func aHallHasItsPairsClustersAndLateArrivals() {
        let layout = Self.layout
        let devices = layout.scenario.devices
        #expect(devices.count == 120)
        #expect(Set(devices.map(\.name)).count == 120)
        #expect(layout.meetings.count == 6, "five pairs, one of which meets twice")
        #expect(layout.meetings.map(\.isSecond) == [false, false, false, false, false, true])
        #expect(layout.scenario.faults == CrowdedRoom.faults)
        #expect(layout.scenario.timeouts.overall == .seconds(60))
        #expect(layout.lateDevices == devices.count { $0.start > .zero })
        #expect(layout.lateDevices > 6)
        #expect(layout.clusterDevices == 32, "30 % of the 108 devices outside pairs, rounded down")
        let firsts = layout.meetings.filter { !$0.isSecond }.map(\.arrival)
        #expect(firsts == firsts.sorted())
        #expect(
            firsts.allSatisfy { $0 >= Instant.zero + Hall.firstArrival && $0 <= Instant.zero + .seconds(30) })
        for meeting in layout.meetings {
            let standing = devices[meeting.standing]
            let walker = devices[meeting.walker]
            #expect(standing.start == walker.start && standing.start == meeting.start)
            // Out of reach until it walks, 7 cm in front of its partner, facing it, on arrival.
            let before = walker.motionScript.pose(at: earlier(meeting.arrival, by: Hall.walk))
            #expect(before.distance(to: standing.pose) == Hall.walkerStart)
            let met = walker.motionScript.pose(at: meeting.arrival)
            #expect(abs(met.distance(to: standing.pose) - CrowdedRoom.pairSeparation) < 1e-9)
            #expect(SimulationOptions().allowsExchange(standing.pose, met))
        }
        let again = layout.meetings[5]
        let first = layout.meetings[again.pair]
        #expect(again.arrival == first.arrival + Hall.secondMeetingAfter)
        #expect(Instant.zero + again.start == earlier(again.arrival, by: Hall.lateLead))
        // The first walker is back where it came from before the second one walks, and the second
        // meeting is elsewhere.
        let parted = devices[first.walker].motionScript.pose(at: earlier(again.arrival, by: Hall.walk))
        #expect(parted.distance(to: devices[first.standing].pose) == Hall.walkerStart)
        #expect(devices[again.standing].pose.distance(to: devices[first.standing].pose) >= 100)
    }

    @Test func neighboursStandThirtyToSixtyCentimetresApartInClustersAndFartherElsewhere() {
        let devices = Self.layout.scenario.devices
        var pairOf = Array(repeating: -1, count: devices.count)
        for meeting in Self.layout.meetings {
            pairOf[meeting.standing] = meeting.pair
            pairOf[meeting.walker] = meeting.pair
        }
        var nearest = Array(repeating: Double.infinity, count: devices.count)
        for first in devices.indices {
            for second in devices.indices where second != first {
                guard pairOf[first] < 0 || pairOf[first] != pairOf[second] else { continue }
                nearest[first] = min(nearest[first], devices[first].pose.distance(to: devices[second].pose))
            }
        }
        #expect(nearest.allSatisfy { $0 >= 30 })
        #expect(nearest.count { $0 <= 60 } >= Self.layout.clusterDevices)
        // A pair in a crowd has bystanders within the 50 cm reach (39-52 cm); the others have none within 66 cm.
        for meeting in Self.layout.meetings {
            let reach = nearest[meeting.standing]
            #expect(meeting.inCrowd ? reach <= 52 : reach >= 66, "\(meeting.label)")
        }
    }

    @Test func aSeedGivesOneHallAndAMeetingAloneIsItsTwoDevices() {
        let layout = Self.layout
        #expect(
            layout.scenario == Hall.layout(devices: 120, pairs: 5, seed: 3, duration: .seconds(60)).scenario)
        #expect(
            layout.scenario != Hall.layout(devices: 120, pairs: 5, seed: 4, duration: .seconds(60)).scenario)
        let meeting = layout.meetings[2]
        let alone = layout.alone(meeting)
        #expect(
            alone.devices == [
                layout.scenario.devices[meeting.standing], layout.scenario.devices[meeting.walker],
            ])
        #expect(alone.faults == layout.scenario.faults && alone.timeouts == layout.scenario.timeouts)
    }

    @Test func aSmallHallExchangesEveryMeetingAndReportsTheRatioLast() throws {
        let result = HallBenchmark.run(
            devices: 60, pairs: 3, seeds: [1], duration: .seconds(45), cpuTime: { 0 },
            peakResidentKiB: { nil })
        #expect(result.violations == [])
        #expect(result.meetings.count == 4)
        #expect(result.exchangedEverywhere == 4)
        #expect(result.bystandersExchanged == 0)
        #expect(result.multicastPerDeviceSecond > 0.1 && result.multicastPerDeviceSecond < 1)
        let lines = result.lines
        #expect(lines.count == 7)
        #expect(lines[0].hasPrefix("bench hall: 60 devices, 3 pairs (1 meet twice), seeds 1, horizon 45 s"))
        #expect(lines[4].hasPrefix("pair 0 again (arrives "))
        #expect(lines[5].contains("memory not measured"))
        let ratio = try #require(result.ratio)
        #expect(lines.last == "room/pair: " + String(format: "%.2f", ratio))
        #expect(ratio > 0.5 && ratio < 2)
    }
}
