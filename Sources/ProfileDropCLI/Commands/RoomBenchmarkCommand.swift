import Foundation
import ProfileDropSimulator

/// `profiledrop bench room`: the close pair of crowded rooms against the same pair alone, the
/// rooms' discovery traffic and the simulator's cost (``RoomBenchmark``).
enum RoomBenchmarkCommand {
    /// Room sizes when `--devices` is not given.
    static let defaultDeviceCounts = [20, 50, 200]
    /// The largest room `--devices` accepts.
    static let maximumDevices = 500

    static func run(devices: String?, seeds: Int, duration: Int, console: Console) throws -> ExitCode {
        let counts = try deviceCounts(devices)
        let result = RoomBenchmark.run(
            deviceCounts: counts, seeds: (1...seeds).map(UInt64.init), duration: .seconds(duration),
            cpuTime: { HandshakeBenchmark.cpuSeconds(CLOCK_PROCESS_CPUTIME_ID) })
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        // Linux reports the peak resident set in KiB.
        let peakKiB = Double(usage.ru_maxrss)
        let largest = counts.max() ?? 1
        let lines = result.lines
        lines.dropLast().forEach(console.output)
        console.output(
            String(
                format: "peak RSS: %.1f MiB, %.1f KiB per device of the largest room (%d devices)",
                peakKiB / 1024, peakKiB / Double(largest), largest))
        lines.last.map(console.output)
        if let first = result.violations.first {
            console.error(
                "profiledrop bench room: \(counted(result.violations.count, "violation")); "
                    + "the first: \(first)")
        } else if result.worstRatio == nil {
            console.error("profiledrop bench room: a pair never exchanged in some room, so it has no ratio")
        }
        return result.violations.isEmpty && result.worstRatio != nil ? .success : .failure
    }

    /// `--devices 20,50,200`: room sizes from 2 to ``maximumDevices``.
    static func deviceCounts(_ text: String?) throws -> [Int] {
        guard let text else { return defaultDeviceCounts }
        let parts = text.split(separator: ",", omittingEmptySubsequences: false)
        let counts = parts.compactMap { Int($0) }
        guard !parts.isEmpty, counts.count == parts.count,
            counts.allSatisfy({ (2...maximumDevices).contains($0) })
        else {
            throw UsageError(
                "--devices takes room sizes from 2 to \(maximumDevices) separated by commas, got '\(text)'")
        }
        return counts
    }
}
