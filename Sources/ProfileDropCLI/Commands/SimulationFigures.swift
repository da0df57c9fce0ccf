import Foundation
import ProfileDropCore
import ProfileDropCrypto
import ProfileDropSimulator

/// `profiledrop bench simulate`: simulated exchanges per CPU-second with real crypto, as a ratio to
/// the handshake floor measured in the same process, traffic per exchange, and handshake bytes
/// against the Noise XX minimum.
enum SimulationFigures {
    static func run(exchanges: Int, console: Console) throws -> ExitCode {
        // The floor: the X25519 work of one XX handshake, as in `bench handshake`.
        var random = SystemRandom()
        for _ in 0..<20 { HandshakeBenchmark.floorUnit(&random) }
        let floor = try HandshakeBenchmark.timePerIteration(300) { HandshakeBenchmark.floorUnit(&random) }
        console.output(String(format: "handshake floor (2 keygens + 6 X25519): %.1f µs", floor * 1e6))

        let plain = SimulationBenchmark.run(exchanges: exchanges, seed: 1, cpuTime: processCPUSeconds)
        let photo = SimulationBenchmark.run(
            exchanges: max(1, exchanges / 20), seed: 1, photoBytes: 262_144, cpuTime: processCPUSeconds)
        for result in [plain, photo] {
            console.output(result.line)
            let costPerExchange = result.cpuSeconds / Double(max(result.exchanges, 1))
            console.output(
                String(
                    format:
                        "  one simulated exchange (both devices, discovery to close) costs %.1f handshake floors",
                    costPerExchange / floor))
        }

        let handshake = try handshakeBytes()
        console.output(
            "handshake: INVITE \(handshake.invite) + ACCEPT \(handshake.accept) + CONFIRM \(handshake.confirm) "
                + "= \(handshake.total) bytes of UDP payload; Noise messages \(handshake.noise) bytes, "
                + "Noise XX minimum \(noiseXXMinimum) bytes (32 + 96 + 64 with empty payloads)")
        return plain.completed == plain.exchanges && photo.completed == photo.exchanges ? .success : .failure
    }

    static func processCPUSeconds() -> Double { HandshakeBenchmark.cpuSeconds(CLOCK_PROCESS_CPUTIME_ID) }

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
                case .beacon, .query, .invite, .accept, .confirm, .busy, .secure:
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
