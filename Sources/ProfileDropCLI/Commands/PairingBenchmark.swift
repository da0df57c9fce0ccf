import Foundation
import ProfileDropCrypto
import ProfileDropTransport

/// `profiledrop bench pairing`: two real `share` processes on loopback, timed from the moment both
/// report being in range to the moment both have exited.
enum PairingBenchmark {
    struct Run {
        /// From both in range to both devices reporting `closed`.
        var toClosed: Double
        /// From both in range to both processes exited.
        var toExit: Double
        /// From both devices reporting `closed` to both processes exited: the close's drain.
        var exitLag: Double { toExit - toClosed }
        var bothExchanged: Bool
    }

    /// Runs `runs` pairings without a photo and `runs` with a 256 KiB photo; prints each median.
    static func run(runs: Int, console: Console) throws -> ExitCode {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "profiledrop-bench-\(getpid())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let plain = directory.appendingPathComponent("plain.json").path
        let withPhoto = directory.appendingPathComponent("photo.json").path
        let card =
            #"{"name": "Bench", "age": 4, "sex": "male", "neutered": true, "size": "medium", "keywords": ["fast"], "owner": "bench""#
        try (card + "}").write(toFile: plain, atomically: true, encoding: .utf8)
        try (card + #", "photo": "photo.jpg"}"#).write(toFile: withPhoto, atomically: true, encoding: .utf8)
        // The largest photo a card may carry; random bytes behind a JPEG signature do not compress.
        var random = SystemRandom()
        try Data([0xFF, 0xD8, 0xFF, 0xE0] + random.bytes(262_144 - 4)).write(
            to: directory.appendingPathComponent("photo.jpg"))

        console.output(
            "pairing on loopback: time from both in range to both processes exited, \(runs) runs each")
        var failed = 0
        var closedMedians: [Double] = []
        for (label, file) in [("card without photo", plain), ("card with 256 KiB photo", withPhoto)] {
            var results: [Run] = []
            for index in 0..<runs {
                let result = try pairOnce(card: file, directory: directory, index: index)
                guard result.bothExchanged else {
                    console.output("  \(label): run \(index + 1) did not exchange")
                    failed += 1
                    continue
                }
                results.append(result)
            }
            guard !results.isEmpty else { continue }
            console.output("  \(label), \(results.count) runs:")
            console.output("    both closed:  " + summary(results.map(\.toClosed)))
            console.output("    both exited:  " + summary(results.map(\.toExit)))
            console.output("    exit lag:     " + summary(results.map(\.exitLag)))
            closedMedians.append(median(results.map(\.toClosed)))
        }
        if closedMedians.count == 2 {
            console.output(
                String(format: "photo adds: %.0f ms", (closedMedians[1] - closedMedians[0]) * 1000))
        }
        if failed > 0 {
            console.error(
                "profiledrop bench pairing: \(counted(failed, "run")) of \(2 * runs) did not exchange")
        }
        return failed > 0 ? .failure : .success
    }

    private static func median(_ values: [Double]) -> Double {
        let sorted = values.sorted()
        guard !sorted.isEmpty else { return 0 }
        let middle = sorted.count / 2
        return sorted.count % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
    }

    private static func summary(_ values: [Double]) -> String {
        let sorted = values.sorted()
        return String(
            format: "median %.0f ms (min %.0f, max %.0f)", median(values) * 1000, (sorted.first ?? 0) * 1000,
            (sorted.last ?? 0) * 1000)
    }

    private static func pairOnce(card: String, directory: URL, index: Int) throws -> Run {
        let port = try freeDiscoveryPort()
        let executable = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        var children: [(process: Process, pipe: Pipe)] = []
        for (side, pose) in [("a", "0,0,0"), ("b", "7,0,180")] {
            let process = Process()
            process.executableURL = executable
            process.arguments = [
                "share", "--profile", card, "--yes", "--interface", "lo", "--port", String(port), "--json",
                "--pose",
                pose, "--still",
                "--timeout", "30", "--key-file", directory.appendingPathComponent("\(side).key").path,
            ]
            let pipe = Pipe()
            process.standardOutput = pipe
            process.standardError = FileHandle.nullDevice
            children.append((process, pipe))
        }
        for child in children { try child.process.run() }
        // Each child's in-range moment is when its line arrives; read both streams concurrently.
        let clock = MonotonicClock()
        let group = DispatchGroup()
        let results = ResultBox(count: children.count)
        for (slot, child) in children.enumerated() {
            group.enter()
            DispatchQueue.global().async {
                var inRange: Double?
                var closed: Double?
                var exchanged = false
                var pending = Data()
                let handle = child.pipe.fileHandleForReading
                while true {
                    let data = handle.availableData
                    if data.isEmpty { break }
                    pending.append(data)
                    while let newline = pending.firstIndex(of: 0x0A) {
                        let line = String(decoding: pending[pending.startIndex..<newline], as: UTF8.self)
                        pending.removeSubrange(pending.startIndex...newline)
                        if inRange == nil && line.contains(#""event":"in_range""#) {
                            inRange = clock.now.seconds
                        }
                        if line.contains(#""event":"closed""#) {
                            closed = clock.now.seconds
                            exchanged = line.contains(#""reason":"exchanged""#)
                        }
                    }
                }
                child.process.waitUntilExit()
                results.set(
                    slot, inRange: inRange, closed: closed, exited: clock.now.seconds,
                    exchanged: exchanged && child.process.terminationStatus == 0)
                group.leave()
            }
        }
        group.wait()
        return results.run
    }

    private static func freeDiscoveryPort() throws -> UInt16 {
        let probe = try UDPSocket(family: AF_INET)
        try probe.bind(to: .ipv4(.loopback, port: 0))
        return try probe.localAddress().port
    }

    /// Per-child results, written from the reader threads.
    private final class ResultBox: @unchecked Sendable {
        private let lock = NSLock()
        private var inRange: [Double?]
        private var closed: [Double?]
        private var exited: [Double]
        private var exchanged: [Bool]

        init(count: Int) {
            inRange = Array(repeating: nil, count: count)
            closed = Array(repeating: nil, count: count)
            exited = Array(repeating: 0, count: count)
            exchanged = Array(repeating: false, count: count)
        }

        func set(
            _ slot: Int, inRange time: Double?, closed closeTime: Double?, exited exitTime: Double,
            exchanged ok: Bool
        ) {
            lock.withLock {
                inRange[slot] = time
                closed[slot] = closeTime
                exited[slot] = exitTime
                exchanged[slot] = ok
            }
        }

        var run: Run {
            lock.withLock {
                let inRangeTimes = inRange.compactMap { $0 }
                let closedTimes = closed.compactMap { $0 }
                guard inRangeTimes.count == inRange.count, closedTimes.count == closed.count,
                    let bothInRange = inRangeTimes.max(), let bothClosed = closedTimes.max(),
                    let bothExited = exited.max()
                else {
                    return Run(toClosed: 0, toExit: 0, bothExchanged: false)
                }
                return Run(
                    toClosed: bothClosed - bothInRange, toExit: bothExited - bothInRange,
                    bothExchanged: exchanged.allSatisfy { $0 })
            }
        }
    }
}
