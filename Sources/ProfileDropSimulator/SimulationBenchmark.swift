import Foundation
import ProfileDropCore

/// Throughput of the simulator with the real protocol core: how many complete two-device exchanges
/// (discovery, Noise handshake, ranging, consent, card swap, close) it simulates per CPU-second,
/// and what each exchange costs on the wire.
public enum SimulationBenchmark {
    /// The measured figures.
    public struct Result: Sendable {
        /// Exchanges simulated.
        public var exchanges: Int
        /// Exchanges in which both devices ended exchanged.
        public var completed: Int
        /// CPU time spent, in seconds, on the clock `cpuTime` reads.
        public var cpuSeconds: Double
        /// Datagrams sent per exchange, both devices together.
        public var datagramsPerExchange: Double
        /// Bytes sent per exchange, both devices together.
        public var bytesPerExchange: Double
        /// Size of each synthetic photo, or nil for cards without one.
        public var photoBytes: Int?

        /// Exchanges per CPU-second.
        public var exchangesPerCPUSecond: Double { cpuSeconds > 0 ? Double(exchanges) / cpuSeconds : 0 }

        /// One line for printing.
        public var line: String {
            let photo = photoBytes.map { "\($0)-byte photo" } ?? "no photo"
            return "bench simulate (\(photo)): \(completed)/\(exchanges) exchanged, "
                + "\(Self.format(exchangesPerCPUSecond)) exchanges/CPU-s, "
                + "\(Self.format(datagramsPerExchange)) datagrams and \(Self.format(bytesPerExchange)) bytes "
                + "per exchange"
        }

        private static func format(_ value: Double) -> String {
            String(format: "%.1f", value)
        }
    }

    /// Simulates `exchanges` happy-pair exchanges on a perfect network, seeds `seed`, `seed + 1`, ...,
    /// each card carrying a synthetic photo of `photoBytes` bytes when given.
    ///
    /// The exchanges run as a swarm runs them: every check, no transcript (the swarm keeps one only
    /// to show it, for a single run). The time covers the exchanges alone: the cards and their
    /// plaintext scanner are built once, before it starts.
    ///
    /// The simulator reads no clock: `cpuTime` (CPU seconds, of the process or of the thread) comes from
    /// the caller. So does `between`, called after each exchange and outside its time: a caller that
    /// compares the exchanges with a reference (the handshake floor) times the reference there, so
    /// that both see the same load on the machine, a millisecond apart.
    public static func run(
        exchanges: Int, seed: UInt64, photoBytes: Int? = nil, cpuTime: () -> Double,
        between: () -> Void = {}
    ) -> Result {
        precondition(exchanges > 0, "at least one exchange")
        let scenario = pairScenario(photoBytes: photoBytes)
        var completed = 0
        var datagrams = 0
        var bytes = 0
        // The same cards in every run: their plaintext scanner is built once, not per exchange.
        let scanner = PlaintextScanner(for: scenario)
        let options = SimulationOptions(keepsTranscript: false)
        var elapsed = 0.0
        for index in 0..<exchanges {
            let start = cpuTime()
            let report = exchange(scenario, seed: seed &+ UInt64(index), options: options, scanner: scanner)
            elapsed += cpuTime() - start
            between()
            if report.exchangedCount == 2 { completed += 1 }
            datagrams += report.network.totalSentDatagrams
            bytes += report.network.totalSentBytes
        }
        return Result(
            exchanges: exchanges, completed: completed, cpuSeconds: elapsed,
            datagramsPerExchange: Double(datagrams) / Double(exchanges),
            bytesPerExchange: Double(bytes) / Double(exchanges), photoBytes: photoBytes)
    }

    /// One timed exchange. Never inlined, so that a profiler can count it alone (CONTRIBUTING.md,
    /// "Benchmark").
    @inline(never)
    static func exchange(
        _ scenario: Scenario, seed: UInt64, options: SimulationOptions, scanner: PlaintextScanner
    ) -> SimulationReport {
        Simulation.run(scenario: scenario, seed: seed, options: options, scanner: scanner) {
            $0.makeCoreDevice()
        }
    }

    /// Two devices 7 cm apart facing each other, both sharing at once.
    static func pairScenario(photoBytes: Int?) -> Scenario {
        func card(_ name: String, _ owner: String) -> ProfileCard {
            do {
                let photo = try photoBytes.map { count throws(CardError) in
                    try SyntheticPhoto.jpeg(byteCount: count, label: name)
                }
                return try ProfileCard(
                    name: name, age: 3, sex: .female, neutered: true, size: .small,
                    keywords: ["calm", "fetch"],
                    owner: owner, photo: photo)
            } catch {
                preconditionFailure("benchmark cards are within the card limits: \(error)")
            }
        }
        var timeouts = Timeouts()
        timeouts.overall = .seconds(30)
        return Scenario(
            timeLimit: .seconds(60), timeouts: timeouts,
            devices: [
                .init(
                    name: "alice", pose: Pose(x: 0, y: 0, heading: 0), consent: .accept(after: .zero),
                    card: card("Bori", "minji")),
                .init(
                    name: "bob", pose: Pose(x: 7, y: 0, heading: 180), consent: .accept(after: .zero),
                    card: card("Kong", "jae")),
            ])
    }
}
