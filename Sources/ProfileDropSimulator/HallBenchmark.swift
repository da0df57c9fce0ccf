import Foundation
import ProfileDropCore

/// The conference hall (``Hall``) at scale: how much longer each close pair takes to exchange
/// there than the same pair, with the same motion, alone; what the hall's traffic, CPU and memory
/// cost; and, for the pairs, what their devices refused.
///
/// A meeting's time runs from its arrival (the walker 7 cm in front of its partner) until both
/// its devices closed as exchanged; a meeting that never exchanged counts as never, its ratio as
/// infinite.
public enum HallBenchmark {
    /// Discovery traffic is counted from this virtual time on.
    public static let steadyStateStart = RoomBenchmark.steadyStateStart

    /// One meeting over the seeds.
    public struct MeetingFigures: Sendable {
        /// The meeting, as laid out for the first seed.
        public var meeting: Hall.Meeting
        /// Per seed, the time in the hall; nil if the pair did not exchange.
        public var hall: [Duration?]
        /// Per seed, the time alone; nil if it did not exchange alone.
        public var alone: [Duration?]
        /// Per seed, datagrams the pair's two devices refused as over an admission budget.
        public var rateLimited: [Int]
        /// Per seed, datagrams the pair's two devices refused for a full peer table.
        public var tableFull: [Int]
        /// Per seed, how the pair's devices closed when they did not exchange.
        public var failures: [String]

        /// Per seed, hall over alone; infinite when the hall's pair did not exchange, nil when the
        /// pair did not exchange alone either.
        public var ratios: [Double?] {
            zip(hall, alone).map { hall, alone in
                guard let alone, alone > .zero else { return nil }
                guard let hall else { return .infinity }
                return hall.secondsDouble / alone.secondsDouble
            }
        }

        /// The median over the seeds of ``ratios``.
        public var ratio: Double? { HallBenchmark.median(ratios.compactMap { $0 }) }
    }

    /// The whole benchmark.
    public struct Result: Sendable {
        /// Devices in the hall.
        public var devices: Int
        /// Close pairs.
        public var pairs: Int
        /// The seeds, one hall each.
        public var seeds: [UInt64]
        /// Every device's overall limit.
        public var duration: Duration
        /// Devices standing in clusters, and switched on late, in the first seed's hall.
        public var clusterDevices: Int
        /// Devices switched on late in the first seed's hall.
        public var lateDevices: Int
        /// One entry per meeting.
        public var meetings: [MeetingFigures]
        /// Multicast datagrams per second per device switched on and not closed, from
        /// ``steadyStateStart``, over all seeds.
        public var multicastPerDeviceSecond: Double
        /// Process CPU seconds per minute of simulated time, the halls' runs alone.
        public var cpuSecondsPerSimulatedMinute: Double
        /// CPU seconds the halls took.
        public var hallCPUSeconds: Double
        /// Virtual time the halls ran, all seeds together.
        public var simulated: Duration
        /// Growth of the peak resident set over the first hall's run, per device (KiB); nil when
        /// the caller could not measure it.
        public var kibPerDevice: Double?
        /// Devices outside the meetings that closed as exchanged, over all seeds.
        public var bystandersExchanged: Int
        /// Datagrams all bystanders refused as over an admission budget, per bystander per second
        /// from its switching on to the run's end (a closed device still hears the room), over all
        /// seeds.
        public var bystanderRateLimitedPerSecond: Double
        /// Those refusals over all the datagrams the bystanders received.
        public var bystanderRateLimitedShare: Double
        /// Datagrams bystanders refused as `replayed` (a BEACON not above the last one taken from
        /// its peer marks that peer's address contested), over all seeds.
        public var bystanderReplayed: Int
        /// Broken invariants, prefixed with their seed.
        public var violations: [String]
        /// The first seed's transcript of the traced meeting's two devices, if one was asked for.
        public var trace: [String] = []

        /// Meetings whose pair exchanged in every seed.
        public var exchangedEverywhere: Int {
            meetings.count { figures in figures.hall.allSatisfy { $0 != nil } }
        }

        /// The median over the meetings of their ratios.
        public var ratio: Double? { HallBenchmark.median(meetings.compactMap(\.ratio)) }

        /// The report: a header, one line per meeting, the hall's figures, and last `room/pair: R`.
        public var lines: [String] {
            let again = meetings.count { $0.meeting.isSecond }
            var lines = [
                "bench hall: \(devices) devices, \(pairs) pairs (\(again) meet twice), seeds "
                    + "\(seeds.map(String.init).joined(separator: ",")), horizon \(RoomBenchmark.seconds(duration)) s "
                    + "virtual, 2 ms delay ±2 ms, 2 % loss; \(clusterDevices) in clusters 30-60 cm apart, "
                    + "\(lateDevices) switched on late"
            ]
            for figures in meetings {
                let meeting = figures.meeting
                var line =
                    "\(meeting.label) (arrives \(RoomBenchmark.seconds(meeting.arrival - .zero)) s"
                    + (meeting.start > .zero ? ", on at \(RoomBenchmark.seconds(meeting.start)) s" : "")
                    + (meeting.inCrowd ? ", in a crowd" : "") + "): "
                line +=
                    "hall \(HallBenchmark.times(figures.hall)), alone \(HallBenchmark.times(figures.alone)), "
                line += "ratio \(HallBenchmark.text(figures.ratio)); "
                line +=
                    "refused: rate-limited \(figures.rateLimited.map(String.init).joined(separator: ",")), "
                line += "table-full \(figures.tableFull.map(String.init).joined(separator: ","))"
                if !figures.failures.isEmpty { line += "; \(figures.failures.joined(separator: "; "))" }
                lines.append(line)
            }
            lines.append(
                "hall: \(exchangedEverywhere)/\(meetings.count) meetings exchanged in every seed, "
                    + "\(bystandersExchanged) bystanders exchanged; "
                    + String(format: "%.2f", multicastPerDeviceSecond) + " multicast datagrams/s per device; "
                    + String(format: "%.1f", cpuSecondsPerSimulatedMinute) + " CPU-s per simulated minute ("
                    + String(format: "%.0f", hallCPUSeconds) + " CPU-s for "
                    + "\(RoomBenchmark.seconds(simulated)) s); "
                    + (kibPerDevice.map { String(format: "%.0f KiB per device (peak RSS growth)", $0) }
                        ?? "memory not measured") + "; "
                    + String(format: "%.2f", bystanderRateLimitedPerSecond)
                    + " rate-limited refusals/s per bystander ("
                    + String(format: "%.0f", bystanderRateLimitedShare * 100)
                    + " % of what they received), \(bystanderReplayed) replayed; "
                    + "\(violations.count) violations")
            lines += violations.prefix(20).map { "violation: \($0)" }
            lines.append("room/pair: \(HallBenchmark.text(ratio))")
            return lines
        }
    }

    /// Runs a hall of `devices` devices and `pairs` pairs for every seed in `seeds`, and every
    /// meeting alone, with `duration` as the devices' overall limit; `traced` names a meeting
    /// (its index in ``Result/meetings``) whose devices' transcript the result keeps.
    ///
    /// The simulator reads no clock: `cpuTime` (CPU seconds of this process) and `peakResidentKiB`
    /// (the process's peak resident set, nil if unknown) come from the caller.
    public static func run(
        devices: Int, pairs: Int, seeds: [UInt64], duration: Duration, traced: Int? = nil,
        cpuTime: () -> Double, peakResidentKiB: () -> Double?
    ) -> Result {
        precondition(!seeds.isEmpty, "at least one seed")
        let options = SimulationOptions(keepsTranscript: false)
        var trace: [String] = []
        var meetings: [MeetingFigures] = []
        var multicast = 0
        var deviceSeconds = 0.0
        var cpu = 0.0
        var simulated = Duration.zero
        var violations: [String] = []
        var kibPerDevice: Double?
        var bystandersExchanged = 0
        var bystanderRefusals = 0
        var bystanderReplayed = 0
        var bystanderSeconds = 0.0
        var bystanderReceived = 0
        var clusterDevices = 0
        var lateDevices = 0
        for (seedIndex, seed) in seeds.enumerated() {
            let layout = Hall.layout(devices: devices, pairs: pairs, seed: seed, duration: duration)
            if seedIndex == 0 {
                clusterDevices = layout.clusterDevices
                lateDevices = layout.lateDevices
                meetings = layout.meetings.map {
                    MeetingFigures(
                        meeting: $0, hall: [], alone: [], rateLimited: [], tableFull: [], failures: [])
                }
            }
            let residentBefore = peakResidentKiB()
            var hallOptions = options
            if seedIndex == 0, let traced, layout.meetings.indices.contains(traced) {
                hallOptions.keepsTranscript = true
                hallOptions.logDatagrams = true
                hallOptions.transcriptDevices = [
                    layout.meetings[traced].standing, layout.meetings[traced].walker,
                ]
            }
            let start = cpuTime()
            let report = Simulation.run(scenario: layout.scenario, options: hallOptions)
            if seedIndex == 0 { trace = report.transcript }
            cpu += cpuTime() - start
            if seedIndex == 0, let before = residentBefore, let after = peakResidentKiB() {
                kibPerDevice = (after - before) / Double(devices)
            }
            simulated += report.virtualDuration
            violations += report.violations.map { "seed \(seed): \($0)" }
            multicast += report.network.multicastDatagrams(fromSecond: steadyStateStart)
            let end = Instant.zero + report.virtualDuration
            let steady = Instant.zero + .seconds(steadyStateStart)
            var inMeetings = Array(repeating: false, count: report.devices.count)
            for meeting in layout.meetings {
                inMeetings[meeting.standing] = true
                inMeetings[meeting.walker] = true
            }
            for (index, outcome) in report.devices.enumerated() {
                let on = Instant.zero + layout.scenario.devices[index].start
                let off = min(outcome.closedAt ?? end, end)
                deviceSeconds += max(0, (off - max(on, steady)).secondsDouble)
                guard !inMeetings[index] else { continue }
                if outcome.exchanged { bystandersExchanged += 1 }
                bystanderRefusals += outcome.counters?.rejected(.rateLimited) ?? 0
                bystanderReplayed += outcome.counters?.rejected(.replayed) ?? 0
                // A closed device stays in the room and goes on counting what it hears.
                bystanderSeconds += max(0, (end - on).secondsDouble)
                bystanderReceived += outcome.counters?.datagramsReceived ?? 0
            }
            for (number, meeting) in layout.meetings.enumerated() where meetings.indices.contains(number) {
                let lone = Simulation.run(scenario: layout.alone(meeting), options: options)
                let pairOutcomes = [report.devices[meeting.standing], report.devices[meeting.walker]]
                meetings[number].hall.append(time(pairOutcomes, since: meeting.arrival))
                meetings[number].alone.append(time(Array(lone.devices.prefix(2)), since: meeting.arrival))
                meetings[number].rateLimited.append(
                    pairOutcomes.reduce(0) { $0 + ($1.counters?.rejected(.rateLimited) ?? 0) })
                meetings[number].tableFull.append(
                    pairOutcomes.reduce(0) { $0 + ($1.counters?.rejected(.tableFull) ?? 0) })
                if !pairOutcomes.allSatisfy(\.exchanged) {
                    let closes = pairOutcomes.map { outcome in
                        "\(outcome.name) \(outcome.close?.transcriptName ?? "not closed")"
                    }
                    meetings[number].failures.append("seed \(seed): " + closes.joined(separator: ", "))
                }
            }
        }
        let minutes = simulated.secondsDouble / 60
        return Result(
            devices: devices, pairs: pairs, seeds: seeds, duration: duration, clusterDevices: clusterDevices,
            lateDevices: lateDevices, meetings: meetings,
            multicastPerDeviceSecond: deviceSeconds > 0 ? Double(multicast) / deviceSeconds : 0,
            cpuSecondsPerSimulatedMinute: minutes > 0 ? cpu / minutes : 0, hallCPUSeconds: cpu,
            simulated: simulated, kibPerDevice: kibPerDevice, bystandersExchanged: bystandersExchanged,
            bystanderRateLimitedPerSecond: bystanderSeconds > 0
                ? Double(bystanderRefusals) / bystanderSeconds : 0,
            bystanderRateLimitedShare: bystanderReceived > 0
                ? Double(bystanderRefusals) / Double(bystanderReceived) : 0,
            bystanderReplayed: bystanderReplayed, violations: violations, trace: trace)
    }

    /// From `arrival` until both devices had closed as exchanged; nil if either did not (or, which
    /// cannot happen in a sound run, did before the arrival).
    static func time(_ pair: [SimulationReport.DeviceOutcome], since arrival: Instant) -> Duration? {
        guard pair.count == 2, pair.allSatisfy(\.exchanged), let closed = pair.compactMap(\.closedAt).max(),
            closed >= arrival
        else { return nil }
        return closed - arrival
    }

    /// The median (the mean of the middle two for an even count); nil for none.
    static func median(_ values: [Double]) -> Double? {
        guard !values.isEmpty else { return nil }
        let sorted = values.sorted()
        let middle = sorted.count / 2
        return sorted.count % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
    }

    static func text(_ ratio: Double?) -> String {
        guard let ratio else { return "none" }
        return ratio.isInfinite ? "never" : String(format: "%.2f", ratio)
    }

    static func times(_ times: [Duration?]) -> String {
        times.map { $0.map { String(format: "%.2f s", $0.secondsDouble) } ?? "never" }.joined(separator: ",")
    }
}
