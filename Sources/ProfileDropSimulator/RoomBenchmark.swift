import Foundation
import ProfileDropCore

/// The crowded room at scale: how much longer the close pair of a ``CrowdedRoom`` takes to exchange
/// than the same pair alone, how much discovery traffic the room carries, and what simulating it
/// costs.
///
/// Every room and every lone pair runs with the same seeds in the same process; the rooms run on
/// to a fixed virtual horizon after their pair exchanged (everyone else's overall limit), so that
/// the traffic and cost figures describe a room that keeps going.
public enum RoomBenchmark {
    /// Discovery traffic is counted from this virtual time on, when start-up bursts are over.
    public static let steadyStateStart = 10

    /// The room's median time over the lone pair's.
    public struct Ratio: Sendable, Equatable {
        /// The ratio, or its lower bound.
        public var value: Double
        /// Whether the room's pair had not exchanged by the horizon in most runs, so that the
        /// horizon stands in for its median and the ratio is at least `value`.
        public var isLowerBound: Bool

        /// `2.13`, or `>38.96` for a lower bound.
        public var text: String { (isLowerBound ? ">" : "") + String(format: "%.2f", value) }
    }

    /// What the close pair of one kind of run did over the seeds.
    public struct PairTimes: Sendable {
        /// Per seed, when both of the pair's devices had closed as exchanged; nil if they did not.
        public var times: [Duration?]

        /// Runs whose pair exchanged.
        public var exchanged: Int { times.count { $0 != nil } }

        /// The median time, counting a run whose pair never exchanged as never (so more than half
        /// such runs give nil).
        public var median: Duration? { RoomBenchmark.percentile(times, 0.5) }
        /// The 95th percentile (nearest rank), with the same convention.
        public var p95: Duration? { RoomBenchmark.percentile(times, 0.95) }
    }

    /// The figures of one room size.
    public struct RoomFigures: Sendable {
        /// Devices in the room.
        public var devices: Int
        /// The close pair's times in the room.
        public var pair: PairTimes
        /// The room's median over the lone pair's; nil if the lone pair has no median.
        public var ratio: Ratio?
        /// Multicast datagrams (BEACON, QUERY and answers alike) per second per device, from
        /// ``steadyStateStart`` to the end of each run, over all seeds.
        public var multicastPerDeviceSecond: Double
        /// Process CPU seconds per minute of simulated time, the rooms' runs alone.
        public var cpuSecondsPerSimulatedMinute: Double
        /// Virtual time simulated, all seeds together.
        public var simulated: Duration
        /// Broken invariants, prefixed with their seed.
        public var violations: [String]
    }

    /// The whole benchmark.
    public struct Result: Sendable {
        /// The seeds used, the same for every room and the lone pair.
        public var seeds: [UInt64]
        /// Each room's overall limit.
        public var duration: Duration
        /// The lone pair's times.
        public var lonePair: PairTimes
        /// One entry per room size, in the order asked.
        public var rooms: [RoomFigures]

        /// The largest room-over-lone-pair ratio; nil if some room has none.
        public var worstRatio: Ratio? {
            let ratios = rooms.compactMap(\.ratio)
            guard ratios.count == rooms.count else { return nil }
            return ratios.max { $0.value < $1.value }
        }

        /// Every violation of every run.
        public var violations: [String] { rooms.flatMap(\.violations) }

        /// The report; the last line is `room/pair: R` with the worst ratio.
        public var lines: [String] {
            var lines = [
                "bench room: seeds \(seeds.map(String.init).joined(separator: ",")), horizon "
                    + "\(RoomBenchmark.seconds(duration)) s virtual, 2 ms delay ±2 ms, 2 % loss; "
                    + "steady state from \(RoomBenchmark.steadyStateStart) s",
                "lone pair: exchanged \(lonePair.exchanged)/\(seeds.count), median "
                    + "\(RoomBenchmark.text(lonePair.median)), p95 \(RoomBenchmark.text(lonePair.p95))",
            ]
            for room in rooms {
                lines.append(
                    "room \(room.devices): pair exchanged \(room.pair.exchanged)/\(seeds.count), median "
                        + "\(RoomBenchmark.text(room.pair.median)), p95 \(RoomBenchmark.text(room.pair.p95)), "
                        + "ratio \(room.ratio?.text ?? "none"); "
                        + String(format: "%.2f", room.multicastPerDeviceSecond)
                        + " multicast datagrams/s per device; "
                        + String(format: "%.2f", room.cpuSecondsPerSimulatedMinute)
                        + " CPU-s per simulated minute; \(room.violations.count) violations")
            }
            lines += violations.map { "violation: \($0)" }
            lines.append("room/pair: \(worstRatio?.text ?? "none")")
            return lines
        }
    }

    /// Runs rooms of each size in `deviceCounts` and the lone pair, for every seed in `seeds`,
    /// with `duration` as the devices' overall limit.
    ///
    /// The simulator reads no clock: `cpuTime` (CPU seconds of this process) comes from the caller.
    public static func run(
        deviceCounts: [Int], seeds: [UInt64], duration: Duration, cpuTime: () -> Double
    ) -> Result {
        precondition(!seeds.isEmpty, "at least one seed")
        precondition(duration > .seconds(steadyStateStart), "the horizon lies past the steady state's start")
        let options = SimulationOptions(keepsTranscript: false)
        let lone = PairTimes(
            times: seeds.map { seed in
                pairTime(
                    Simulation.run(
                        scenario: CrowdedRoom.lonePair(seed: seed, duration: duration), options: options))
            })
        var rooms: [RoomFigures] = []
        for devices in deviceCounts {
            var times: [Duration?] = []
            var multicast = 0
            var deviceSeconds = 0.0
            var cpu = 0.0
            var simulated = Duration.zero
            var violations: [String] = []
            for seed in seeds {
                let scenario = CrowdedRoom.scenario(devices: devices, seed: seed, duration: duration)
                let start = cpuTime()
                let report = Simulation.run(scenario: scenario, options: options)
                cpu += cpuTime() - start
                times.append(pairTime(report))
                simulated += report.virtualDuration
                multicast += report.network.multicastDatagrams(fromSecond: steadyStateStart)
                // The histogram's seconds from the steady state's start to the run's end.
                let steady = max(0, report.virtualDuration.secondsDouble - Double(steadyStateStart))
                deviceSeconds += steady * Double(devices)
                violations += report.violations.map { "room \(devices) seed \(seed): \($0)" }
            }
            let pair = PairTimes(times: times)
            var ratio: Ratio?
            if let loneMedian = lone.median, loneMedian > .zero {
                ratio = Ratio(
                    value: (pair.median ?? duration).secondsDouble / loneMedian.secondsDouble,
                    isLowerBound: pair.median == nil)
            }
            let minutes = simulated.secondsDouble / 60
            rooms.append(
                RoomFigures(
                    devices: devices, pair: pair, ratio: ratio,
                    multicastPerDeviceSecond: deviceSeconds > 0 ? Double(multicast) / deviceSeconds : 0,
                    cpuSecondsPerSimulatedMinute: minutes > 0 ? cpu / minutes : 0, simulated: simulated,
                    violations: violations))
        }
        return Result(seeds: seeds, duration: duration, lonePair: lone, rooms: rooms)
    }

    /// When both of the close pair's devices (alice and bob, the first two) had closed as exchanged;
    /// nil if either did not.
    public static func pairTime(_ report: SimulationReport) -> Duration? {
        let pair = report.devices.prefix(2)
        guard pair.count == 2, pair.allSatisfy(\.exchanged) else { return nil }
        return pair.compactMap(\.closedAt).max().map { $0 - .zero }
    }

    /// The value at rank ⌈p·n⌉ of `times` sorted, a missing time counting as later than any.
    static func percentile(_ times: [Duration?], _ fraction: Double) -> Duration? {
        guard !times.isEmpty else { return nil }
        let sorted = times.sorted { first, second in
            guard let first else { return false }
            guard let second else { return true }
            return first < second
        }
        let rank = max(1, Int((fraction * Double(sorted.count)).rounded(.up)))
        return sorted[min(rank, sorted.count) - 1]
    }

    static func seconds(_ duration: Duration) -> String { String(format: "%g", duration.secondsDouble) }

    static func text(_ duration: Duration?) -> String {
        duration.map { String(format: "%.2f s", $0.secondsDouble) } ?? "none"
    }
}
