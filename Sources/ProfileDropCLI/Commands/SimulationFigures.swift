import Foundation
import ProfileDropCore
import ProfileDropCrypto
import ProfileDropSimulator

/// `profiledrop bench simulate`: simulated exchanges per CPU-second with real crypto, as a ratio to
/// the handshake floor measured in the same process, traffic per exchange, and handshake bytes
/// against the Noise XX minimum.
enum SimulationFigures {
    /// Rounds of exchanges: the ratio is the median of the rounds' ratios.
    static let rounds = 5
    /// Floor units timed after each exchange without a photo, and after each with photos (about
    /// 20 floors each): the floor takes about a quarter of the time, interleaved with the exchanges
    /// so that both see the same load.
    static let floorUnitsPerExchange = (plain: 1, photo: 6)
    /// The X25519 work of one exchange of the benchmark: each device's per-run static key and the
    /// handshake's two ephemeral keys, and the handshake's six DH (PERFORMANCE.md, "The budget").
    static let x25519PerExchange = (keys: 4, diffieHellman: 6)

    /// One round's exchanges and what the floor units between them took.
    struct Round {
        var result: SimulationBenchmark.Result
        /// Seconds per key generation and per DH, timed apart in the floor units.
        var key: Double
        var diffieHellman: Double

        /// Seconds per floor unit: two key generations and six DH.
        var floor: Double { 2 * key + 6 * diffieHellman }

        /// One exchange's cost, in floors.
        var exchangeFloors: Double { result.cpuSeconds / Double(result.exchanges) / floor }
        /// The share of that cost that is the exchange's X25519 operations, in floors.
        var x25519Floors: Double {
            (Double(x25519PerExchange.keys) * key + Double(x25519PerExchange.diffieHellman) * diffieHellman)
                / floor
        }
    }

    static func run(exchanges: Int, console: Console) throws -> ExitCode {
        // The floor: the X25519 work of one XX handshake, as in `bench handshake`.
        var random = SystemRandom()
        for _ in 0..<20 { HandshakeBenchmark.floorUnit(&random) }
        let photoExchanges = max(1, exchanges / 20)
        // Each round's result with the floor timed between its exchanges.
        var plain: [Round] = []
        var photo: [Round] = []
        for round in 0..<rounds {
            // Every seed from 1 on is run once, split over the rounds.
            func share(of total: Int) -> (count: Int, first: Int) {
                let first = total * round / rounds
                return (total * (round + 1) / rounds - first, first)
            }
            func timed(_ count: Int, photoBytes: Int?, floorUnits: Int, firstSeed: Int) -> Round {
                var keySeconds = 0.0
                var diffieHellmanSeconds = 0.0
                let result = SimulationBenchmark.run(
                    exchanges: count, seed: 1 + UInt64(firstSeed), photoBytes: photoBytes,
                    cpuTime: HandshakeBenchmark.threadCPUSeconds
                ) {
                    for _ in 0..<floorUnits {
                        let unit = HandshakeBenchmark.timedFloorUnit(&random)
                        keySeconds += unit.keys
                        diffieHellmanSeconds += unit.diffieHellman
                    }
                }
                let units = Double(count * floorUnits)
                return Round(
                    result: result, key: keySeconds / (2 * units),
                    diffieHellman: diffieHellmanSeconds / (6 * units))
            }
            let plainShare = share(of: exchanges)
            if plainShare.count > 0 {
                plain.append(
                    timed(
                        plainShare.count, photoBytes: nil, floorUnits: floorUnitsPerExchange.plain,
                        firstSeed: plainShare.first))
            }
            let photoShare = share(of: photoExchanges)
            if photoShare.count > 0 {
                photo.append(
                    timed(
                        photoShare.count, photoBytes: 262_144, floorUnits: floorUnitsPerExchange.photo,
                        firstSeed: photoShare.first))
            }
        }
        console.output(
            String(
                format: "handshake floor (2 keygens + 6 X25519): %.1f µs (median of %d rounds)",
                HandshakeBenchmark.median(plain.map(\.floor)) * 1e6, plain.count))
        for (ran, splitsX25519) in [(plain, true), (photo, false)] {
            guard let total = combining(ran.map(\.result)) else { continue }
            console.output(total.line)
            // Each round's cost against the floor timed between its own exchanges; two decimals,
            // since changes of a few per cent are what speed work moves.
            let ratios = ran.map(\.exchangeFloors)
            console.output(
                String(
                    format:
                        "  one simulated exchange (both devices, discovery to close) costs %.2f handshake floors "
                        + "(median of %d round%@; min %.2f, max %.2f)",
                    HandshakeBenchmark.median(ratios), ratios.count, ratios.count == 1 ? "" : "s",
                    ratios.min() ?? 0, ratios.max() ?? 0))
            guard splitsX25519 else { continue }
            // Where an exchange without a photo stands against 2 floors: its X25519 operations cost
            // what they cost in the floor's loop, so the rest is what code can still take away.
            let x25519 = HandshakeBenchmark.median(ran.map(\.x25519Floors))
            let rest = HandshakeBenchmark.median(ratios) - x25519
            console.output(
                String(
                    format:
                        "  of which its %d X25519 keys and %d DH are %.2f floors and everything else %.2f "
                        + "(at most %.2f for 2.0 floors)",
                    x25519PerExchange.keys, x25519PerExchange.diffieHellman, x25519, rest, 2 - x25519))
        }

        let handshake = try handshakeBytes()
        console.output(
            "handshake: INVITE \(handshake.invite) + ACCEPT \(handshake.accept) + CONFIRM \(handshake.confirm) "
                + "= \(handshake.total) bytes of UDP payload; Noise messages \(handshake.noise) bytes, "
                + "Noise XX minimum \(noiseXXMinimum) bytes (32 + 96 + 64 with empty payloads)")
        let everyRun = (plain + photo).map(\.result)
        let missed = everyRun.reduce(0) { $0 + $1.exchanges - $1.completed }
        if missed > 0 {
            console.error(
                "profiledrop bench simulate: \(counted(missed, "exchange")) of "
                    + "\(everyRun.reduce(0) { $0 + $1.exchanges }) did not complete")
        }
        return missed == 0 ? .success : .failure
    }

    /// The figures of `results` (rounds with the same photo size) taken together, or nil for none.
    static func combining(_ results: [SimulationBenchmark.Result]) -> SimulationBenchmark.Result? {
        guard var total = results.first else { return nil }
        for result in results.dropFirst() {
            let exchanges = total.exchanges + result.exchanges
            func weighted(_ left: Double, _ right: Double) -> Double {
                (left * Double(total.exchanges) + right * Double(result.exchanges))
                    / Double(max(exchanges, 1))
            }
            total.datagramsPerExchange = weighted(total.datagramsPerExchange, result.datagramsPerExchange)
            total.bytesPerExchange = weighted(total.bytesPerExchange, result.bytesPerExchange)
            total.exchanges = exchanges
            total.completed += result.completed
            total.cpuSeconds += result.cpuSeconds
        }
        return total
    }

    /// XX with empty payloads: `e` (32); `e, ee, s, es` (32 + 32 + 16 + 16); `s, se` (32 + 16 + 16).
    static let noiseXXMinimum = 192

    struct HandshakeBytes {
        var invite = 0, accept = 0, confirm = 0, noise = 0
        var total: Int { invite + accept + confirm }
    }

    /// Runs two devices held in range in a lossless ``Room`` and measures the first
    /// INVITE, ACCEPT and CONFIRM they send.
    static func handshakeBytes() throws -> HandshakeBytes {
        var seedRandom = DeterministicRandom(seed: 7)
        let addresses = [PeerAddress(127, 0, 0, 1, port: 40_001), PeerAddress(127, 0, 0, 2, port: 40_002)]
        let cards = try [
            ProfileCard(
                name: "Bori", age: 3, sex: .female, neutered: true, size: .small, keywords: ["calm"],
                owner: "minji",
                photo: nil),
            ProfileCard(
                name: "Max", age: 5, sex: .male, neutered: false, size: .large, keywords: [], owner: "joon",
                photo: nil),
        ]
        var room = Room(latency: .zero)
        for index in 0..<2 {
            let device = Device(
                configuration: DeviceConfiguration(
                    card: cards[index], consent: .share, staticKey: X25519.PrivateKey(using: &seedRandom)),
                random: DeterministicRandom(seed: UInt64(index + 1)), now: .zero,
                localAddress: addresses[index])
            room.add(device, at: addresses[index])
        }
        var result = HandshakeBytes()
        func measure(_ sent: [SentDatagram]) {
            for datagram in sent {
                guard let packet = try? Packet(datagram: datagram.bytes) else { continue }
                switch packet {
                case .invite(let handshake) where result.invite == 0:
                    result.invite = datagram.bytes.count
                    result.noise += handshake.noiseMessage.count
                case .accept(let handshake) where result.accept == 0:
                    result.accept = datagram.bytes.count
                    result.noise += handshake.noiseMessage.count
                case .confirm(let handshake) where result.confirm == 0:
                    result.confirm = datagram.bytes.count
                    result.noise += handshake.noiseMessage.count
                case .beacon, .query, .invite, .accept, .confirm, .busy, .secure, .probe, .probeAck:
                    break
                }
            }
        }
        room.updatePose(Pose(x: 0, y: 0, heading: 0), of: 0)
        measure(room.lastSent)
        room.updatePose(Pose(x: 7, y: 0, heading: 180), of: 1)
        measure(room.lastSent)
        // Bounded: a happy exchange takes a few seconds of virtual time and a few hundred steps.
        for _ in 0..<100_000 where !(0..<2).allSatisfy({ room.device($0)?.isClosed ?? true }) {
            guard room.step() != nil else { break }
            measure(room.lastSent)
        }
        return result
    }
}
