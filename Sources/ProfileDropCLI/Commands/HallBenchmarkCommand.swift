import Foundation
import ProfileDropSimulator

/// `profiledrop bench hall`: every close pair of a conference hall against the same pair alone,
/// the hall's discovery traffic, the simulator's CPU and memory per device (``HallBenchmark``).
enum HallBenchmarkCommand {
    /// The hall's size when `--devices` is not given.
    static let defaultDevices = 1000
    /// The largest hall `--devices` accepts.
    static let maximumDevices = 1000
    /// Close pairs when `--pairs` is not given.
    static let defaultPairs = 50

    static func run(
        devices text: String?, pairs: Int, seeds: Int, duration: Int, trace: Int?, console: Console
    ) throws
        -> ExitCode
    {
        let devices = try deviceCount(text)
        let needed = 2 * (pairs + Hall.secondMeetings(pairs: pairs))
        guard devices >= needed else {
            throw UsageError("bench hall: \(pairs) pairs need at least \(needed) devices, got \(devices)")
        }
        let meetings = pairs + Hall.secondMeetings(pairs: pairs)
        if let trace, trace >= meetings {
            throw UsageError("bench hall: --trace takes a meeting from 0 to \(meetings - 1), got \(trace)")
        }
        guard duration >= 45 else {
            throw UsageError("bench hall: --duration takes at least 45, got \(duration)")
        }
        let result = HallBenchmark.run(
            devices: devices, pairs: pairs, seeds: (1...seeds).map(UInt64.init), duration: .seconds(duration),
            traced: trace, cpuTime: { HandshakeBenchmark.cpuSeconds(CLOCK_PROCESS_CPUTIME_ID) },
            peakResidentKiB: {
                var usage = rusage()
                getrusage(RUSAGE_SELF.rawValue, &usage)
                // Linux reports the peak resident set in KiB.
                return Double(usage.ru_maxrss)
            })
        for line in result.trace { console.output("trace: " + line) }
        result.lines.forEach(console.output)
        if let first = result.violations.first {
            console.error(
                "profiledrop bench hall: \(counted(result.violations.count, "violation")); the first: \(first)"
            )
        } else if result.exchangedEverywhere < result.meetings.count {
            console.error(
                "profiledrop bench hall: \(result.meetings.count - result.exchangedEverywhere) of "
                    + "\(result.meetings.count) meetings did not exchange in every seed")
        }
        let sound = result.violations.isEmpty && result.exchangedEverywhere == result.meetings.count
        return sound ? .success : .failure
    }

    /// `--devices N`: one hall size, from 2 to ``maximumDevices``.
    static func deviceCount(_ text: String?) throws -> Int {
        guard let text else { return defaultDevices }
        guard let count = Int(text), (2...maximumDevices).contains(count) else {
            throw UsageError(
                "bench hall: --devices takes one size from 2 to \(maximumDevices), got '\(text)'")
        }
        return count
    }
}
