import ProfileDropCore
import ProfileDropCrypto
import ProfileDropJSON

/// Crowded rooms of any size from one generator: one close pair, alice and bob, 7 cm apart and
/// facing each other at the origin, and every other device on a jittered grid at least
/// ``minimumSpacing`` from every other device, all drawn from one seed. The network is the one of
/// `crowded-room-20.json`: 2 ms delay, 2 ms jitter, 2 % loss. Every owner accepts; cards are small.
///
/// The lone pair of a seed is the same close pair, with the same cards and the same seed, without
/// anyone else: what the room's pair is measured against.
public enum CrowdedRoom {
    /// The grid's cell size (cm).
    public static let cellSize = 100.0
    /// How far (cm) a device may sit from its cell's centre along each axis.
    public static let maximumJitter = 10.0
    /// The least distance (cm) between a device outside the close pair and any other device: a cell
    /// minus twice the jitter. The pair's cell holds only the pair, whose bob is 7 cm off centre, so
    /// its neighbours stay at least 83 cm away.
    public static let minimumSpacing = cellSize - 2 * maximumJitter
    /// The close pair's separation (cm).
    public static let pairSeparation = 7.0
    /// The network of every crowded room.
    public static let faults = NetworkFaults(
        delay: .milliseconds(2), jitter: .milliseconds(2), lossRate: 0.02)

    /// A room of `devices` devices (at least 2) drawn from `seed`. Every device's overall limit is
    /// `duration`, so the room runs for about that long in virtual time: the close pair closes as
    /// soon as it exchanged, the others at the limit.
    public static func scenario(devices: Int, seed: UInt64, duration: Duration) -> Scenario {
        precondition(devices >= 2, "a crowded room holds at least the close pair")
        var random = DeterministicRandom(seedMaterial: Simulation.seedMaterial(seed, "crowded-room"))
        var specs = closePair(&random)
        let poses = bystanderPoses(count: devices - 2, random: &random)
        for (offset, pose) in poses.enumerated() {
            let index = offset + 2
            specs.append(
                Scenario.DeviceSpec(
                    name: "dev\(index)", pose: pose,
                    consent: .accept(after: Scenario.Consent.defaultReaction),
                    card: card(&random, index: index)))
        }
        return scenario(specs, seed: seed, duration: duration)
    }

    /// The close pair of ``scenario(devices:seed:duration:)`` with the same seed, alone.
    public static func lonePair(seed: UInt64, duration: Duration) -> Scenario {
        var random = DeterministicRandom(seedMaterial: Simulation.seedMaterial(seed, "crowded-room"))
        return scenario(closePair(&random), seed: seed, duration: duration)
    }

    /// `count` poses on a jittered grid around the origin, skipping the origin's cell (the close
    /// pair's), row by row; headings are uniform. Any two are at least ``minimumSpacing`` apart, and
    /// at least that far from a pair at the origin and ``pairSeparation`` along +x.
    public static func bystanderPoses(count: Int, random: inout DeterministicRandom) -> [Pose] {
        guard count > 0 else { return [] }
        // The smallest square of cells that holds the pair's cell and `count` more.
        var side = 1
        while side * side < count + 1 { side += 1 }
        let first = -(side / 2)
        var poses: [Pose] = []
        for row in first..<(first + side) {
            for column in first..<(first + side) where !(row == 0 && column == 0) {
                guard poses.count < count else { return poses }
                let jitterX = Double(Int(random.uniform(below: 21)) - 10)
                let jitterY = Double(Int(random.uniform(below: 21)) - 10)
                poses.append(
                    Pose(
                        x: Double(column) * cellSize + jitterX, y: Double(row) * cellSize + jitterY,
                        heading: Double(random.uniform(below: 360))))
            }
        }
        return poses
    }

    /// The close pair, alice at the origin facing +x and bob 7 cm along +x facing her, with their
    /// cards: the first draws of a room's stream, so that the room and its lone pair share them.
    private static func closePair(_ random: inout DeterministicRandom) -> [Scenario.DeviceSpec] {
        let reaction = Scenario.Consent.defaultReaction
        let alice = Scenario.DeviceSpec(
            name: "alice", pose: Pose(x: 0, y: 0, heading: 0), consent: .accept(after: reaction),
            card: card(&random, index: 0))
        let bob = Scenario.DeviceSpec(
            name: "bob", pose: Pose(x: pairSeparation, y: 0, heading: 180), consent: .accept(after: reaction),
            card: card(&random, index: 1))
        return [alice, bob]
    }

    private static func scenario(_ devices: [Scenario.DeviceSpec], seed: UInt64, duration: Duration)
        -> Scenario
    {
        var timeouts = Timeouts()
        timeouts.overall = duration
        return Scenario(
            seed: seed, timeLimit: timeouts.closeBound + .seconds(1), faults: faults, timeouts: timeouts,
            devices: devices)
    }

    private static let dogNames = [
        "Bori", "Kong", "Maru", "Choco", "Dubu", "Hodu", "Nabi", "Haru", "Luna", "Coco",
    ]
    private static let keywords = ["calm", "walks", "treats", "fetch", "swims", "shy"]

    /// A small card without a photo.
    static func card(_ random: inout DeterministicRandom, index: Int) -> ProfileCard {
        let name = dogNames[Int(random.uniform(below: UInt64(dogNames.count)))]
        let keyword = keywords[Int(random.uniform(below: UInt64(keywords.count)))]
        let age = 1 + Int(random.uniform(below: 15))
        let sex: ProfileCard.Sex = random.uniform(below: 2) == 0 ? .male : .female
        let size = ProfileCard.Size.allCases[Int(random.uniform(below: 3))]
        let neutered = random.uniform(below: 2) == 0
        do {
            return try ProfileCard(
                name: name, age: age, sex: sex, neutered: neutered, size: size, keywords: [keyword],
                owner: "owner\(index)")
        } catch {
            preconditionFailure("crowded-room cards are drawn within the card limits: \(error)")
        }
    }

    /// `scenario` as a scenario file (pretty, keys in the order the format documents), for the
    /// rooms this generator makes: still devices that accept, inline cards without photos, faults
    /// without partitions.
    public static func fileText(_ scenario: Scenario) -> String {
        func seconds(_ duration: Duration) -> JSONValue { .number(Double(duration.nanosecondsClamped) / 1e9) }
        func milliseconds(_ duration: Duration) -> JSONValue {
            .number(Double(duration.nanosecondsClamped) / 1e6)
        }
        var members: [(key: String, value: JSONValue)] = []
        if let seed = scenario.seed {
            members.append(("seed", seed < 1 << 53 ? .integer(Int(seed)) : .string(String(seed))))
        }
        members.append(("timeLimit", seconds(scenario.timeLimit)))
        members.append(
            (
                "faults",
                .object([
                    ("delayMs", milliseconds(scenario.faults.delay)),
                    ("jitterMs", milliseconds(scenario.faults.jitter)),
                    ("loss", .number(scenario.faults.lossRate)),
                ])
            ))
        members.append(("timeouts", .object([("overall", seconds(scenario.timeouts.overall))])))
        let devices = scenario.devices.map { spec -> JSONValue in
            .object([
                ("name", .string(spec.name)),
                (
                    "pose",
                    .object([
                        ("x", .number(spec.pose.x)), ("y", .number(spec.pose.y)),
                        ("heading", .number(spec.pose.heading)),
                    ])
                ),
                ("consent", .string("accept")),
                ("card", spec.card.json(photoFileName: nil)),
            ])
        }
        members.append(("devices", .array(devices)))
        return JSONValue.object(members).serialized(JSONValue.Format(pretty: true, sortedKeys: false)) + "\n"
    }
}
