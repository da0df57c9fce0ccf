import Foundation
import ProfileDropCore
import ProfileDropCrypto

/// Randomized simulation runs in the style of a VOPR: every run draws its room, its network faults
/// and its owners' choices from its own seed, runs in virtual time, and is checked against the
/// invariants. A failing run prints the one command that replays it alone.
public enum Swarm {
    /// Runs `runs` simulations with devices built by `makeDevice` and given `timeouts`; every device
    /// must close within `timeouts.closeBound` of the last scripted happening. With a `shard` other
    /// than ``SwarmShard/whole`` only that shard's runs are simulated, with the seeds and run numbers
    /// they have in the whole swarm, so that the shards together do exactly the whole swarm's runs.
    public static func run(
        runs: Int, seed: UInt64, shard: SwarmShard = .whole, timeouts: Timeouts, transcripts: Bool? = nil,
        makeDevice: (DeviceContext) -> any SansIODevice
    ) -> SwarmReport {
        precondition(runs >= 0, "run count must not be negative")
        let showTranscripts = transcripts ?? (runs == 1)
        var lines = [
            "swarm: seed=\(seed) runs=\(runs)\(shard == .whole ? "" : " shard=\(shard)") "
                + "close-bound=\(Instant.zero + timeouts.closeBound)",
            "swarm: each run draws \(SwarmPlan.drawnOptions)",
        ]
        if shard != .whole { lines.append("swarm: \(shard.holdingDescription(inSwarmOf: runs))") }
        var outcomes: [SwarmReport.RunOutcome] = []
        var violations: [String] = []
        for (index, runSeed) in runSeeds(seed: seed, count: runs, shard: shard) {
            let plan = SwarmPlan(runSeed: runSeed, timeouts: timeouts)
            let report = Simulation.run(
                scenario: plan.scenario, seed: runSeed,
                // A transcript is built only to be shown: the checks do not read it.
                options: SimulationOptions(closeBound: plan.closeBound, keepsTranscript: showTranscripts),
                makeDevice: makeDevice)
            let runViolations =
                report.violations
                + SwarmChecker.judge(report.devices, expectsExchange: plan.expectsExchange).map(\.text)
            let pairExchanged = report.devices[0].exchanged && report.devices[1].exchanged
            let outcome = SwarmReport.RunOutcome(
                runSeed: runSeed, pairExchanged: pairExchanged, expectedExchange: plan.expectsExchange,
                exchangedDevices: report.exchangedCount, datagrams: report.network.totalSentDatagrams,
                bytes: report.network.totalSentBytes, virtualDuration: report.virtualDuration,
                violations: runViolations)
            outcomes.append(outcome)
            lines.append(
                "run \(index + 1)/\(runs) seed=\(runSeed) devices=\(plan.scenario.devices.count) "
                    + "\(plan.summary) -> \(pairExchanged ? "exchanged" : "aborted") "
                    + "(\(report.exchangedCount)/\(report.devices.count) devices exchanged, "
                    + "\(report.network.totalSentDatagrams) datagrams, "
                    + "virtual \(Instant.zero + report.virtualDuration))"
            )
            if showTranscripts { lines += report.lines.map { "  \($0)" } }
            if !runViolations.isEmpty {
                for violation in runViolations {
                    lines.append("  violation: \(violation)")
                    violations.append("seed \(runSeed): \(violation)")
                }
                lines.append("  reproduce: \(reproduceCommand(runSeed: runSeed))")
            }
        }
        let report = SwarmReport(
            seed: seed, totalRuns: runs, shard: shard, runs: outcomes, violations: violations, lines: lines)
        return SwarmReport(
            seed: seed, totalRuns: runs, shard: shard, runs: outcomes, violations: violations,
            lines: lines + [report.summaryLine])
    }

    /// A card is never received from a peer farther than this (cm) at that moment: well outside the
    /// 5–10 cm band plus any slack the gate's noise and hysteresis may take.
    public static let farDistance = 15.0

    /// One violation per device that received a card from a peer standing farther than
    /// ``farDistance`` away, by the room's true poses, when the card arrived.
    public static func farExchanges(in report: SimulationReport) -> [String] {
        SwarmChecker.farExchanges(in: report.devices).map(\.text)
    }

    /// The command that replays the run with seed `runSeed` alone.
    public static func reproduceCommand(runSeed: UInt64) -> String {
        "profiledrop simulate --swarm --runs 1 --seed \(runSeed)"
    }

    /// The seed of each run: `seed` first, then values drawn from a stream keyed by `seed`.
    public static func runSeeds(seed: UInt64, count: Int) -> [UInt64] {
        runSeeds(seed: seed, count: count, shard: .whole).map(\.runSeed)
    }

    /// The 0-based index and seed of each run of a `count`-run swarm that `shard` holds, in run
    /// order. Every shard walks the whole stream, since each seed is drawn after the one before it;
    /// drawing is cheap beside a run, and only the shard's seeds are kept.
    public static func runSeeds(seed: UInt64, count: Int, shard: SwarmShard) -> [(
        index: Int, runSeed: UInt64
    )] {
        var stream = DeterministicRandom(seedMaterial: Simulation.seedMaterial(seed, "swarm/runs"))
        var seeds: [(index: Int, runSeed: UInt64)] = []
        seeds.reserveCapacity(shard.runCount(inSwarmOf: count))
        for index in 0..<count {
            let runSeed = index == 0 ? seed : stream.nextUInt64()
            if shard.holds(runNumber: index + 1) { seeds.append((index, runSeed)) }
        }
        return seeds
    }
}

/// The outcome of a swarm.
public struct SwarmReport: Sendable {
    /// What one run did.
    public struct RunOutcome: Equatable, Sendable {
        /// The run's seed: `profiledrop simulate --swarm --runs 1 --seed <runSeed>` replays it.
        public var runSeed: UInt64
        /// Whether both devices of the close pair ended exchanged.
        public var pairExchanged: Bool
        /// Whether the run's conditions required that exchange.
        public var expectedExchange: Bool
        /// Devices that ended exchanged.
        public var exchangedDevices: Int
        /// Datagrams sent in the run.
        public var datagrams: Int
        /// Bytes sent in the run.
        public var bytes: Int
        /// Virtual time the run took.
        public var virtualDuration: Duration
        /// Broken invariants.
        public var violations: [String]
    }

    /// The swarm's seed.
    public let seed: UInt64
    /// The runs of the whole swarm, of which ``shard`` holds ``runs``.
    public let totalRuns: Int
    /// The part of the swarm that ran: ``SwarmShard/whole`` unless it was sharded.
    public let shard: SwarmShard
    /// One outcome per run of the shard, in run order.
    public let runs: [RunOutcome]
    /// Every broken invariant, prefixed with its run's seed.
    public let violations: [String]
    /// The report for printing: seed and options first, the summary line last.
    public let lines: [String]

    init(
        seed: UInt64, totalRuns: Int, shard: SwarmShard, runs: [RunOutcome], violations: [String],
        lines: [String]
    ) {
        self.seed = seed
        self.totalRuns = totalRuns
        self.shard = shard
        self.runs = runs
        self.violations = violations
        self.lines = lines
    }

    /// Runs whose close pair exchanged cards.
    public var exchangedRuns: Int { runs.filter(\.pairExchanged).count }
    /// Runs whose close pair did not.
    public var abortedRuns: Int { runs.count - exchangedRuns }

    /// `swarm: R runs, X exchanged, Y aborted, V violations`.
    public var summaryLine: String {
        "swarm: \(runs.count) runs, \(exchangedRuns) exchanged, \(abortedRuns) aborted, "
            + "\(violations.count) violations"
    }
}

/// One swarm run's drawn conditions.
public struct SwarmPlan: Sendable {
    /// The run's seed.
    public let runSeed: UInt64
    /// The room: devices 0 and 1 are the close pair, the others stand far away.
    public let scenario: Scenario
    /// Whether liveness demands that the pair exchanges: both consent, no partition that never
    /// heals separates them, and the room is not crowded. (Loss, temporary partitions and a bystander cut off for good only
    /// delay the exchange.)
    public let expectsExchange: Bool
    /// Every device must be closed by this time.
    public let closeBound: Duration
    /// A one-line summary of the drawn conditions.
    public let summary: String
    /// Whether this is a crowded run: 10–30 devices, the close pair and the rest on a grid.
    public let crowded: Bool

    /// The share of runs that are crowded: few, since a crowded run costs as much as dozens of
    /// small ones.
    public static let crowdedFraction = 0.01
    /// The sizes of crowded rooms.
    public static let crowdedSizes = 10...30
    /// The overall limit of a crowded room's devices, at most: long enough for three attempts of the
    /// pair, as liveness is checked in crowded runs too. Two attempts that fail (the handshake's
    /// 7.75 s each at worst) with the failure back-offs between them (4 s, then 8 s, each up to
    /// +20 %) start the third within 30 s, and a ranging attempt takes about 4 s. At 20 s only two
    /// fit: a pair that lost its first attempt to a partition and its second to a run of lost
    /// handshake datagrams, at 29 % loss, met again at 19.9 s (run seed 9485024425644694284).
    public static let crowdedOverall: Duration = .seconds(40)

    private static let dogNames = [
        "Bori", "Kong", "Maru", "Choco", "Dubu", "Hodu", "Nabi", "Haru", "Luna", "Coco",
    ]
    private static let owners = ["minji", "jae", "sora", "dong", "yuna", "hyun", "eun", "tae"]
    /// At least ``PlaintextScanner/minimumTextBytes`` long, so that every keyword is searched for.
    private static let keywords = [
        "calm-natured", "zoomies", "fetches", "shy-pup", "swimmer", "treat-lover", "cuddly", "barky-pup",
    ]
    /// What a run draws, for the swarm's header.
    public static let drawnOptions =
        "2-6 devices (a pair 6-9 cm apart facing within 15 deg, 40 % walking in; bystanders 80 cm or more "
        + "away, 30 % wandering), or in 1 % of runs a crowded room of 10-30 for 40 s (the pair still, the "
        + "others on a grid 80 cm or more apart), consent accept 80 % / decline 10 % / ignore 10 % after 0.1-1.5 s, "
        + "delay 1-5 ms, jitter 0-10 ms, loss 0-30 %, dup 0-10 %, reorder 0-20 % in half the runs, "
        + "corruption 0-2 % in 30 %, a partition in 25 % (permanent in 5 %)"

    /// Temporary partitions last at most this long, well inside any sane protocol timeout, so that
    /// a pair that both consent must still exchange after the partition heals.
    public static let maximumTemporaryPartition: Duration = .milliseconds(1500)

    /// Draws a run's conditions from `runSeed`; devices run with `timeouts` and must close within
    /// `timeouts.closeBound` of the last scripted happening.
    public init(runSeed: UInt64, timeouts: Timeouts) {
        self.runSeed = runSeed
        var random = DeterministicRandom(seedMaterial: Simulation.seedMaterial(runSeed, "swarm/plan"))
        // Crowding draws from a stream of its own, so that the other runs keep the draws they had.
        var crowding = DeterministicRandom(seedMaterial: Simulation.seedMaterial(runSeed, "swarm/crowded"))
        crowded = crowding.unitDouble() < Self.crowdedFraction
        let smallRoom = 2 + Int(random.uniform(below: 5))
        let deviceCount =
            crowded
            ? Self.crowdedSizes.lowerBound
                + Int(crowding.uniform(below: UInt64(Self.crowdedSizes.count))) : smallRoom

        // The close pair: 6–9 cm apart, each turned at most 15° off the line between them.
        let anchor = Pose(
            x: Self.uniform(&random, -150, 150), y: Self.uniform(&random, -150, 150), heading: 0)
        let axis = Self.uniform(&random, 0, 360)
        let separation = Self.uniform(&random, 6, 9)
        let radians = axis * Double.pi / 180
        let poseA = Pose(x: anchor.x, y: anchor.y, heading: axis + Self.uniform(&random, -15, 15))
        let poseB = Pose(
            x: anchor.x + separation * cos(radians), y: anchor.y + separation * sin(radians),
            heading: axis + 180 + Self.uniform(&random, -15, 15))
        var startB = poseB
        var motionB: [MotionScript.Step] = []
        var lastScripted = Instant.zero
        // In a crowded room B stands still: a walk would cross the grid.
        if random.unitDouble() < 0.4 && !crowded {
            // B walks in from 50–100 cm away.
            let from = Self.uniform(&random, 0, 360) * Double.pi / 180
            let reach = Self.uniform(&random, 50, 100)
            startB = Pose(
                x: poseB.x + reach * cos(from), y: poseB.y + reach * sin(from),
                heading: Self.uniform(&random, 0, 360))
            let hold = Duration.milliseconds(Int64(random.uniform(below: 1000)))
            let walk = Duration.milliseconds(1000 + Int64(random.uniform(below: 1000)))
            motionB = [.hold(hold), .move(to: poseB, over: walk)]
            lastScripted = Instant.zero + hold + walk
        }

        // Bystanders: at least 80 cm from the pair, B's path, and each other.
        var bystanders: [Pose] = []
        if crowded {
            // The grid around the pair's cell: 100 cm cells jittered by up to 10 cm keep 80 cm between
            // bystanders and 81 cm from a pair at most 9 cm long.
            bystanders = CrowdedRoom.bystanderPoses(count: deviceCount - 2, random: &crowding).map {
                Pose(x: anchor.x + $0.x, y: anchor.y + $0.y, heading: $0.heading)
            }
        }
        while bystanders.count < deviceCount - 2 {
            let candidate = Pose(
                x: Self.uniform(&random, -300, 300), y: Self.uniform(&random, -300, 300),
                heading: Self.uniform(&random, 0, 360))
            let clear =
                Self.distance(from: candidate, toSegment: startB, poseB) >= 80
                && candidate.distance(to: poseA) >= 80
                && bystanders.allSatisfy { $0.distance(to: candidate) >= 80 }
            if clear { bystanders.append(candidate) }
        }
        // Some bystanders wander elsewhere, on paths that keep 80 cm from the pair and B's path.
        var bystanderMotion: [[MotionScript.Step]] = []
        for start in bystanders {
            var steps: [MotionScript.Step] = []
            if !crowded && random.unitDouble() < 0.3 {
                for _ in 0..<20 {
                    let target = Pose(
                        x: Self.uniform(&random, -300, 300), y: Self.uniform(&random, -300, 300),
                        heading: Self.uniform(&random, 0, 360))
                    let clear =
                        Self.distance(from: poseA, toSegment: start, target) >= 80
                        && Self.distance(betweenSegments: (start, target), (startB, poseB)) >= 80
                    guard clear else { continue }
                    let hold = Duration.milliseconds(Int64(random.uniform(below: 3000)))
                    let walk = Duration.milliseconds(2000 + Int64(random.uniform(below: 3000)))
                    steps = [.hold(hold), .move(to: target, over: walk)]
                    lastScripted = max(lastScripted, Instant.zero + hold + walk)
                    break
                }
            }
            bystanderMotion.append(steps)
        }

        var consents: [Scenario.Consent] = []
        var devices: [Scenario.DeviceSpec] = []
        let poses = [poseA, startB] + bystanders
        for index in 0..<deviceCount {
            let reaction = Duration.milliseconds(100 + Int64(random.uniform(below: 1400)))
            let draw = random.unitDouble()
            let consent: Scenario.Consent =
                draw < 0.8 ? .accept(after: reaction) : draw < 0.9 ? .decline(after: reaction) : .ignore
            consents.append(consent)
            devices.append(
                Scenario.DeviceSpec(
                    name: "dev\(index)", pose: poses[index],
                    motion: index == 0 ? [] : index == 1 ? motionB : bystanderMotion[index - 2],
                    consent: consent,
                    card: Self.card(&random, index: index)))
        }

        // Faults: loss up to 30 %, some duplication, sometimes reordering, sometimes a partition.
        var faults = NetworkFaults(
            delay: .microseconds(1000 + Int64(random.uniform(below: 4000))),
            jitter: .microseconds(Int64(random.uniform(below: 10_000))), lossRate: 0.3 * random.unitDouble(),
            duplicationRate: 0.1 * random.unitDouble())
        if random.unitDouble() < 0.5 {
            faults.reorderRate = 0.2 * random.unitDouble()
            faults.reorderDelay = .milliseconds(5 + Int64(random.uniform(below: 45)))
        }
        let partitionDraw = random.unitDouble()
        let isolated = [Int(random.uniform(below: UInt64(deviceCount)))]
        let start = Instant.zero + .milliseconds(Int64(random.uniform(below: 3000)))
        let length = Duration.milliseconds(200 + Int64(random.uniform(below: 1300)))
        if partitionDraw < 0.05 {
            faults.partitions = [Partition(isolated: isolated, start: start, end: nil)]
        } else if partitionDraw < 0.3 {
            faults.partitions = [Partition(isolated: isolated, start: start, end: start + length)]
            lastScripted = max(lastScripted, start + length)
        }

        // Sometimes a bit flips in flight: the channel must drop such datagrams, never deliver them.
        if random.unitDouble() < 0.3 { faults.corruptionRate = 0.02 * random.unitDouble() }

        let bothConsent = consents[0...1].allSatisfy {
            switch $0 {
            case .accept: return true
            case .decline, .ignore: return false
            }
        }
        // Crowded runs check liveness too: with positions, the far devices never invite the pair
        // (before them, a close pair among 26 devices at 26 % loss did not meet within 60 s, run
        // seed 10416785442523187655).
        expectsExchange = bothConsent && faults.permanentCut(between: 0, 1) == nil
        // A crowded room's devices give up sooner: its cost grows with every second all of them run,
        // and the first seconds, when everyone finds everyone, are where a far exchange would come.
        var runTimeouts = timeouts
        if crowded { runTimeouts.overall = min(timeouts.overall, Self.crowdedOverall) }
        // Prompts are answered within 1.5 s of appearing; the session bound covers the rest.
        closeBound = (lastScripted - .zero) + .milliseconds(1500) + runTimeouts.closeBound
        scenario = Scenario(
            seed: runSeed, timeLimit: closeBound + .seconds(1), faults: faults, timeouts: runTimeouts,
            devices: devices)
        let consentSummary = consents.map(\.summary).joined(separator: ",")
        summary =
            "\(faults.summary) pair=\(Self.format(separation))cm\(motionB.isEmpty ? "" : " walk-in")"
            + "\(crowded ? " crowded" : "") "
            + "wanderers=\(bystanderMotion.filter { !$0.isEmpty }.count) consent=\(consentSummary)"
    }

    private static func uniform(_ random: inout DeterministicRandom, _ low: Double, _ high: Double) -> Double
    {
        low + (high - low) * random.unitDouble()
    }

    private static func format(_ value: Double) -> String {
        String(Double(Int((value * 10).rounded())) / 10)
    }

    /// The shortest distance between two segments: zero if they cross, otherwise the shortest
    /// distance from an endpoint of one to the other.
    private static func distance(betweenSegments first: (Pose, Pose), _ second: (Pose, Pose)) -> Double {
        func side(_ a: Pose, _ b: Pose, _ c: Pose) -> Double {
            (b.x - a.x) * (c.y - a.y) - (b.y - a.y) * (c.x - a.x)
        }
        let crosses =
            side(first.0, first.1, second.0) * side(first.0, first.1, second.1) < 0
            && side(second.0, second.1, first.0) * side(second.0, second.1, first.1) < 0
        if crosses { return 0 }
        return min(
            distance(from: first.0, toSegment: second.0, second.1),
            distance(from: first.1, toSegment: second.0, second.1),
            distance(from: second.0, toSegment: first.0, first.1),
            distance(from: second.1, toSegment: first.0, first.1))
    }

    private static func distance(from point: Pose, toSegment start: Pose, _ end: Pose) -> Double {
        let dx = end.x - start.x
        let dy = end.y - start.y
        let lengthSquared = dx * dx + dy * dy
        guard lengthSquared > 0 else { return point.distance(to: start) }
        let t = min(1, max(0, ((point.x - start.x) * dx + (point.y - start.y) * dy) / lengthSquared))
        return point.distance(to: Pose(x: start.x + t * dx, y: start.y + t * dy, heading: 0))
    }

    /// A card with names long enough for the plaintext check, and sometimes a photo.
    private static func card(_ random: inout DeterministicRandom, index: Int) -> ProfileCard {
        let suffix = String(random.uniform(below: 0x10000), radix: 16)
        let name = dogNames[Int(random.uniform(below: UInt64(dogNames.count)))] + "-\(suffix)"
        let owner = owners[Int(random.uniform(below: UInt64(owners.count)))] + "-\(index)\(suffix)"
        var chosen: [String] = []
        for _ in 0..<random.uniform(below: 4) {
            let keyword = keywords[Int(random.uniform(below: UInt64(keywords.count)))]
            if !chosen.contains(keyword) { chosen.append(keyword) }
        }
        let age = Int(random.uniform(below: 16))
        let sex: ProfileCard.Sex = random.uniform(below: 2) == 0 ? .male : .female
        let size = ProfileCard.Size.allCases[Int(random.uniform(below: 3))]
        let neutered = random.uniform(below: 2) == 0
        let photoBytes = random.unitDouble() < 0.15 ? 1024 + Int(random.uniform(below: 31 * 1024)) : nil
        do {
            let photo = try photoBytes.map { bytes throws(CardError) in
                try SyntheticPhoto.jpeg(byteCount: bytes, label: "\(name)/\(index)")
            }
            return try ProfileCard(
                name: name, age: age, sex: sex, neutered: neutered, size: size, keywords: chosen,
                owner: owner,
                photo: photo)
        } catch {
            preconditionFailure("swarm cards are drawn within the card limits: \(error)")
        }
    }
}
