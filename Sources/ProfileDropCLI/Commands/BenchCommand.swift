import Foundation
@_spi(Benchmark) import ProfileDropCore
import ProfileDropCrypto
import ProfileDropNoise

/// `profiledrop bench handshake`: complete in-process Noise_XX handshakes against the X25519 floor,
/// both measured in the same process, as a ratio.
enum BenchCommand: Subcommand {
    static let name = "bench"
    static let summary =
        "benchmarks: 'handshake' (Noise XX vs the X25519 floor), 'simulate' (simulated exchanges), 'pairing' (two processes on loopback), 'room' (crowded rooms against a lone pair), 'hall' (a conference hall's pairs against each pair alone)"
    static let parser = ArgumentParser(command: name, options: Options.all)

    /// Every option of `bench`, declared once. The ranges are checked per benchmark, since `--runs`
    /// means runs of different cost.
    enum Options {
        static let rounds = Option.integer(
            "rounds", in: 1...1000, help: "alternating measurement rounds (default 15)")
        static let iterations = Option.integer(
            "iterations", in: 1...100_000, help: "handshakes per round (default 200)")
        static let runs = Option.integer(
            "runs", in: 1...100_000,
            help: "pairing runs per card (default 20, at most 1000); simulated exchanges (default 1000)")
        static let devices = Option.text(
            "devices", valueName: "N,N",
            help:
                "room: room sizes, 2 to 500 devices (default 20,50,200); hall: one size, 2 to 1000 (default 1000)"
        )
        static let pairs = Option.integer(
            "pairs", valueName: "P", in: 1...200, help: "hall: close pairs in the hall (default 50)")
        static let seeds = Option.integer(
            "seeds", valueName: "K", in: 1...100,
            help: "room, hall: seeds 1 to K for every room (default 5; hall: 1)")
        static let duration = Option.integer(
            "duration", valueName: "S", in: 15...600,
            help:
                "room, hall: the devices' overall limit, the virtual time a room runs (default 120; hall: 90, at least 45)"
        )
        static let trace = Option.integer(
            "trace", valueName: "M", in: 0...1000,
            help:
                "hall: print the first seed's transcript of meeting M's two devices (0 is the first pair's), lines 'trace: '"
        )
        /// All of them, in the order the help lists them.
        static let all: [any DeclaredOption] = [
            rounds, iterations, runs, devices, pairs, seeds, duration, trace,
        ]
    }
    /// The options each benchmark reads; any other would be ignored, so it is refused.
    static let optionsOf: [String: [any DeclaredOption]] = [
        "handshake": [Options.rounds, Options.iterations], "simulate": [Options.runs],
        "pairing": [Options.runs], "room": [Options.devices, Options.seeds, Options.duration],
        "hall": [Options.devices, Options.pairs, Options.seeds, Options.duration, Options.trace],
    ]

    static func run(_ arguments: ParsedArguments, console: Console) throws -> ExitCode {
        HeapTuning.keepFreedMemory()
        if arguments.positionals.count == 1, let benchmark = arguments.positionals.first,
            let allowed = optionsOf[benchmark]
        {
            for option in Options.all
            where arguments.has(option) && !allowed.contains(where: { $0.spec.name == option.spec.name }) {
                throw UsageError("--\(option.spec.name) does not go with bench \(benchmark)")
            }
        }
        if arguments.positionals == ["simulate"] {
            return try SimulationFigures.run(
                exchanges: arguments.value(Options.runs, default: 1000), console: console)
        }
        if arguments.positionals == ["room"] {
            return try RoomBenchmarkCommand.run(
                devices: arguments.value(Options.devices), seeds: arguments.value(Options.seeds, default: 5),
                duration: arguments.value(Options.duration, default: 120), console: console)
        }
        if arguments.positionals == ["hall"] {
            return try HallBenchmarkCommand.run(
                devices: arguments.value(Options.devices), pairs: arguments.value(Options.pairs, default: 50),
                seeds: arguments.value(Options.seeds, default: 1),
                duration: arguments.value(Options.duration, default: 90),
                trace: arguments.value(Options.trace),
                console: console)
        }
        if arguments.positionals == ["pairing"] {
            let runs = arguments.value(Options.runs, default: 20)
            guard runs <= 1000 else {
                throw UsageError("bench pairing: --runs takes at most 1000, got \(runs)")
            }
            return try PairingBenchmark.run(runs: runs, console: console)
        }
        guard arguments.positionals == ["handshake"] else {
            throw UsageError(
                "usage: profiledrop bench handshake [--rounds N] [--iterations N] | bench simulate [--runs N] | bench pairing [--runs N] | bench room [--devices N,N] [--seeds K] [--duration S] | bench hall [--devices N] [--pairs P] [--seeds K] [--duration S] [--trace M]"
            )
        }
        let rounds = arguments.value(Options.rounds, default: 15)
        let iterations = arguments.value(Options.iterations, default: 200)
        let report = try HandshakeBenchmark.run(rounds: rounds, iterations: iterations)
        report.lines.forEach(console.output)
        return .success
    }
}

/// The measurement behind `bench handshake`, separate from the command so that it can be tested.
enum HandshakeBenchmark {
    struct Report {
        var lines: [String]
        /// The Noise handshake against the X25519 floor.
        var ratio: Double
        /// Version 2's pairing (the handshake and the steps of PROTOCOL.md 6.5) against its floor.
        var pairingRatio: Double
    }

    /// Runs `rounds` rounds; each times `iterations` floor units and `iterations` handshakes, in
    /// alternating order, on this thread's CPU clock. The reported ratio is the median of the
    /// per-round ratios, which cancels slow drifts in machine load.
    static func run(rounds: Int, iterations: Int) throws -> Report {
        var random = SystemRandom()
        let initiatorStatic = X25519.PrivateKey(using: &random)
        let responderStatic = X25519.PrivateKey(using: &random)
        // Warm caches and lazy initialisation outside the measured rounds.
        for _ in 0..<20 {
            floorUnit(&random)
            try handshake(initiatorStatic, responderStatic, &random)
        }

        let handshakes = try alternating(rounds: rounds, iterations: iterations) {
            floorUnit(&random)
        } measured: {
            try handshake(initiatorStatic, responderStatic, &random)
        }
        let floorTimes = handshakes.floor
        let handshakeTimes = handshakes.measured
        let ratios = handshakes.ratios

        let floorMedian = median(floorTimes)
        let handshakeMedian = median(handshakeTimes)
        let ratio = median(ratios)
        let parts = try symmetricBreakdown(&random)
        let symmetric = parts.reduce(0) { $0 + $1.total }
        let other = handshakeMedian - floorMedian - symmetric

        var lines: [String] = []
        lines.append(
            "libsodium \(Sodium.version), \(rounds) rounds x \(iterations) handshakes, thread CPU time")
        lines.append("floor (2 X25519 keygens + 6 X25519 DH):  \(micros(floorMedian)) per handshake")
        lines.append("Noise_XX handshake, both sides, split:   \(micros(handshakeMedian)) per handshake")
        lines.append("where the time above the floor goes (estimated from the same primitives):")
        for part in parts {
            lines.append("  \(part.label): \(part.count) x \(micros(part.each)) = \(micros(part.total))")
        }
        lines.append("  state, copies and allocation: \(micros(other))")
        lines.append("per-round ratios: min \(format(ratios.min() ?? 0)), max \(format(ratios.max() ?? 0))")
        lines.append("handshake/floor: \(format(ratio))")

        let pairing = try PairingWork(&random)
        let pairings = try alternating(rounds: rounds, iterations: iterations) {
            floorUnit(&random)
            pairing.floorUnit(&random)
        } measured: {
            try handshake(initiatorStatic, responderStatic, &random)
            try pairing.steps()
        }
        let pairingFloorTimes = pairings.floor
        let pairingTimes = pairings.measured
        let pairingRatios = pairings.ratios
        let pairingRatio = median(pairingRatios)
        lines.append(
            "v2 floor (the X25519 floor + 8 HMAC-BLAKE2b + 2 BLAKE2b-256 + 2 BLAKE2b-512, known peers): "
                + "\(micros(median(pairingFloorTimes))) per pairing")
        lines.append(
            "v2 pairing: Noise_XX + recognition + commit-then-reveal code, both sides: "
                + "\(micros(median(pairingTimes))) per pairing")
        lines.append("v2 pairing/floor: \(format(pairingRatio))")
        return Report(lines: lines, ratio: ratio, pairingRatio: pairingRatio)
    }

    /// Times `iterations` runs of `floor` and of `measured` per round, in alternating order, on this
    /// thread's CPU clock: per-round times per iteration and their ratios.
    static func alternating(
        rounds: Int, iterations: Int, floor: () throws -> Void, measured: () throws -> Void
    ) throws -> (floor: [Double], measured: [Double], ratios: [Double]) {
        var floorTimes: [Double] = []
        var measuredTimes: [Double] = []
        for round in 0..<rounds {
            var floorTime = 0.0
            var measuredTime = 0.0
            if round % 2 == 0 {
                floorTime = try timePerIteration(iterations, floor)
                measuredTime = try timePerIteration(iterations, measured)
            } else {
                measuredTime = try timePerIteration(iterations, measured)
                floorTime = try timePerIteration(iterations, floor)
            }
            floorTimes.append(floorTime)
            measuredTimes.append(measuredTime)
        }
        return (floorTimes, measuredTimes, zip(measuredTimes, floorTimes).map { $0 / $1 })
    }

    /// Version 2's steps after the handshake (PROTOCOL.md 6.5) for two devices that know each
    /// other, the costlier case (a stranger's PROOF is random bytes and is not checked; a BOND costs
    /// one HMAC per side instead).
    struct PairingWork {
        let initiator: DeviceIdentity
        let responder: DeviceIdentity
        let initiatorKnows: [KnownPeer]
        let responderKnows: [KnownPeer]
        let handshakeHash: [UInt8]
        let bondKey: [UInt8]

        init(_ random: inout SystemRandom) throws {
            initiator = DeviceIdentity(secret: random.bytes(32))
            responder = DeviceIdentity(secret: random.bytes(32))
            bondKey = random.bytes(32)
            initiatorKnows = [KnownPeer(resolvingKey: responder.resolvingKey, bondKey: bondKey, name: "r")]
            responderKnows = [KnownPeer(resolvingKey: initiator.resolvingKey, bondKey: bondKey, name: "i")]
            handshakeHash = random.bytes(64)
            try steps()
        }

        /// The steps through the code the sessions run.
        @inline(never)
        func steps() throws {
            var random: any RandomSource = SystemRandom()
            guard
                PairingExercise.run(
                    handshakeHash: handshakeHash, initiator: initiator, initiatorKnows: initiatorKnows,
                    responder: responder, responderKnows: responderKnows, random: &random) != nil
            else { throw BenchmarkError(description: "the pairing steps did not agree on a code") }
        }

        /// What those steps cannot avoid, as bare primitive calls: per side one IDENT tag, one
        /// resolution against one known peer, one PROOF and one PROOF check (8 HMAC-BLAKE2b); the
        /// commitment and its check (2 BLAKE2b-256); the code on each side (2 BLAKE2b-512); and the
        /// random nonces.
        @inline(never)
        func floorUnit(_ random: inout SystemRandom) {
            let nonces = random.bytes(2 * 16 + 2 * 32)
            for _ in 0..<8 { _ = HMACBLAKE2b.authenticate(key: bondKey, parts: [handshakeHash, nonces]) }
            for _ in 0..<2 { _ = BLAKE2b.hash(handshakeHash + nonces, outputLength: 32) }
            for _ in 0..<2 { _ = BLAKE2b.hash(handshakeHash + nonces) }
        }
    }

    struct BenchmarkError: Error, CustomStringConvertible {
        var description: String
    }

    /// The X25519 work one XX handshake cannot avoid: each side generates an ephemeral key, and the
    /// ee, es and se DH operations are each computed once on each side.
    @inline(never)
    static func floorUnit(_ random: inout SystemRandom) {
        floorWork(&random, afterKeys: {})
    }

    /// The same work as ``floorUnit(_:)``, its two key generations and its six DH timed apart on
    /// this thread's CPU clock: seconds for the two keys, and for the six DH.
    @inline(never)
    static func timedFloorUnit(_ random: inout SystemRandom) -> (keys: Double, diffieHellman: Double) {
        let start = threadCPUSeconds()
        var keysMade = start
        floorWork(&random) { keysMade = threadCPUSeconds() }
        return (keysMade - start, threadCPUSeconds() - keysMade)
    }

    /// A floor unit's work, calling `afterKeys` between its key generations and its DH.
    @inline(__always)
    private static func floorWork(_ random: inout SystemRandom, afterKeys: () -> Void) {
        let initiatorEphemeral = X25519.PrivateKey(using: &random)
        let responderEphemeral = X25519.PrivateKey(using: &random)
        afterKeys()
        for _ in 0..<6 {
            _ = try? initiatorEphemeral.sharedSecret(with: responderEphemeral.publicKey)
        }
    }

    @inline(never)
    static func handshake(
        _ initiatorStatic: X25519.PrivateKey, _ responderStatic: X25519.PrivateKey,
        _ random: inout SystemRandom
    ) throws {
        var initiator = try HandshakeState(
            protocolName: HandshakeState.xx, role: .initiator, prologue: [], staticKey: initiatorStatic,
            remoteStaticKey: nil)
        var responder = try HandshakeState(
            protocolName: HandshakeState.xx, role: .responder, prologue: [], staticKey: responderStatic,
            remoteStaticKey: nil)
        _ = try responder.readMessage(try initiator.writeMessage(payload: [], random: &random))
        _ = try initiator.readMessage(try responder.writeMessage(payload: [], random: &random))
        _ = try responder.readMessage(try initiator.writeMessage(payload: [], random: &random))
        _ = initiator.split()
        _ = responder.split()
    }

    struct Part {
        var label: String
        var count: Int
        var each: Double
        var total: Double { Double(count) * each }
    }

    /// Symmetric work of one XX handshake, both sides, per the Noise specification: 16 MixHash, 8 HKDF
    /// with two outputs (three HMAC-BLAKE2b each), 4 AEAD seals and 4 opens of 32–48 bytes, timed
    /// through the same calls the handshake makes.
    static func symmetricBreakdown(_ random: inout SystemRandom) throws -> [Part] {
        let chainingKey = random.bytes(64)
        let input = random.bytes(32)
        let hashInput = random.bytes(96)
        let key = ChaChaPoly.Key(using: &random)
        let nonce = ChaChaPoly.Nonce(noiseCounter: 0)
        let plaintext = random.bytes(32)
        let sealed = ChaChaPoly.seal(plaintext, key: key, nonce: nonce, authenticating: hashInput)
        let iterations = 2000
        // The same calls the handshake makes: in-place MixHash, HKDF on raw buffers, raw-buffer AEAD.
        var runningHash = random.bytes(64)
        let mixHash = try timePerIteration(iterations) {
            runningHash.withUnsafeMutableBytes { running in
                input.withUnsafeBytes { BLAKE2b.hash(UnsafeRawBufferPointer(running), $0, into: running) }
            }
        }
        let hkdf = try timePerIteration(iterations) {
            chainingKey.withUnsafeBytes { salt in
                input.withUnsafeBytes { material in
                    HKDFBLAKE2b.withDerivedKeys(salt: salt, inputKeyMaterial: material, count: 2) { _ in }
                }
            }
        }
        let seal = try timePerIteration(iterations) {
            plaintext.withUnsafeBytes { message in
                hashInput.withUnsafeBytes { ad in
                    _ = ChaChaPoly.seal(message, key: key, nonce: nonce, authenticating: ad)
                }
            }
        }
        let open = try timePerIteration(iterations) {
            try sealed.withUnsafeBytes { ciphertext in
                try hashInput.withUnsafeBytes { ad in
                    _ = try ChaChaPoly.open(ciphertext, key: key, nonce: nonce, authenticating: ad)
                }
            }
        }
        return [
            Part(label: "MixHash (BLAKE2b)", count: 16, each: mixHash),
            Part(label: "HKDF (3 HMAC-BLAKE2b)", count: 8, each: hkdf),
            Part(label: "AEAD seal", count: 4, each: seal),
            Part(label: "AEAD open", count: 4, each: open),
        ]
    }

    static func timePerIteration(_ iterations: Int, _ body: () throws -> Void) throws -> Double {
        let start = threadCPUSeconds()
        for _ in 0..<iterations { try body() }
        return (threadCPUSeconds() - start) / Double(iterations)
    }

    static func threadCPUSeconds() -> Double { cpuSeconds(CLOCK_THREAD_CPUTIME_ID) }

    /// CPU seconds on `clock` (this thread's or this process's CPU time).
    static func cpuSeconds(_ clock: clockid_t) -> Double {
        var time = timespec()
        clock_gettime(clock, &time)
        return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
    }

    static func median(_ values: [Double]) -> Double {
        let sorted = values.sorted()
        guard !sorted.isEmpty else { return 0 }
        let middle = sorted.count / 2
        return sorted.count % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
    }

    static func micros(_ seconds: Double) -> String { String(format: "%.1f µs", seconds * 1e6) }
    static func format(_ value: Double) -> String { String(format: "%.3f", value) }
}
