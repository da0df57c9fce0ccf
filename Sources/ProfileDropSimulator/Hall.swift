import ProfileDropCore
import ProfileDropCrypto

/// A conference hall, drawn from one seed: many devices on one segment (the network of
/// ``CrowdedRoom/faults``, 2 % loss), close pairs that come together at staggered times, a few of
/// which meet twice, clusters of people standing 30–60 cm apart, and devices switched on at once
/// or late.
///
/// Layout, on a grid of ``CrowdedRoom/cellSize`` cells laid out in bands two cells deep:
/// - a **pair** (each meeting) takes four cells of a band's first row: its standing device at the first cell's
///   centre facing +x, and a walker 300 cm along +x facing it, which walks to 7 cm in front of it
///   over ``walk`` and arrives at the pair's ``Meeting/arrival``; the three cells it walks through
///   hold nobody. The four cells below hold bystanders, 100 cm below the pair's line, or, in every
///   other pair (a pair in a crowd), 39–51 cm below it, so that someone stands within the 50 cm
///   reach of both devices while they meet;
/// - a **cluster** takes two by two cells: up to 16 devices 45 cm apart, each jittered up to 6 cm
///   along each axis, so that neighbours stand 30–60 cm apart;
/// - a **single** cell holds one bystander jittered up to 10 cm, as in a ``CrowdedRoom``.
///
/// Everyone outside a cluster stays at least 66 cm from anyone else but their own partner.
///
/// Times: first meetings are spread evenly, with jitter, from ``firstArrival`` to 30 s before the
/// horizon. Every third pair is switched on late, ``lateLead`` before it arrives; the others, and
/// 80 % of the bystanders, at once; the other bystanders at a uniform time in the first third of
/// the horizon. A device closes after exchanging, so a pair that **meets twice** does so as two
/// runs: after the first meeting its walker stays ``parting`` and walks back; two new devices,
/// switched on ``lateLead`` before the second arrival, ``secondMeetingAfter`` after the first, meet
/// as the first two did at a place of their own elsewhere in the hall (new identities: the
/// simulator keeps no known peers from one run to the next). Had the first run not exchanged, its
/// devices would still be on, and at the same place they would meet the second run's. Every device's overall limit is the horizon, counted from when it is
/// switched on.
public enum Hall {
    /// How long a walker takes from its start to its partner.
    public static let walk: Duration = .seconds(4)
    /// How far (cm) a walker starts from its partner, along +x: three cells, well out of reach.
    public static let walkerStart = 3 * CrowdedRoom.cellSize
    /// When the first meeting may happen at the earliest.
    public static let firstArrival: Duration = .seconds(8)
    /// How long before its arrival a pair switched on late comes on: the walker is on for a few
    /// seconds before it walks.
    public static let lateLead: Duration = .seconds(8)
    /// How long a pair that meets twice stays together after its first arrival before parting.
    public static let parting: Duration = .seconds(10)
    /// The second arrival of a pair that meets twice, after its first.
    public static let secondMeetingAfter: Duration = .seconds(20)
    /// The share of the devices outside pairs that stand in clusters.
    public static let clusterShare = 0.3
    /// The share of bystanders switched on late.
    public static let lateBystanderShare = 0.2
    /// Devices in a full cluster, four by four.
    public static let clusterSize = 16
    /// The pitch (cm) of a cluster's grid.
    public static let clusterPitch = 45.0

    /// One meeting of a close pair: two devices, the standing one and the walker.
    public struct Meeting: Sendable, Equatable {
        /// The pair's number, from 0, in order of first arrival.
        public var pair: Int
        /// Whether this is the pair's second meeting.
        public var isSecond: Bool
        /// The standing device's index in the scenario.
        public var standing: Int
        /// The walker's index in the scenario.
        public var walker: Int
        /// When the walker stands 7 cm in front of the standing device: what the pair's time to
        /// exchange counts from.
        public var arrival: Instant
        /// When both were switched on.
        public var start: Duration
        /// Whether bystanders stand within reach of the pair (39–51 cm).
        public var inCrowd: Bool

        /// `pair 7`, or `pair 7 again` for a second meeting.
        public var label: String { "pair \(pair)" + (isSecond ? " again" : "") }
    }

    /// A hall and what the benchmark needs to know about it.
    public struct Layout: Sendable {
        /// The hall as a scenario; the meetings' devices come first.
        public var scenario: Scenario
        /// Every meeting, first meetings in order of arrival, then second meetings.
        public var meetings: [Meeting]
        /// Devices standing in clusters.
        public var clusterDevices: Int
        /// Devices switched on after time zero.
        public var lateDevices: Int

        /// The meeting's two devices, with the same motion, cards, start and timers, alone on the
        /// same network with the same seed.
        public func alone(_ meeting: Meeting) -> Scenario {
            let pair = [scenario.devices[meeting.standing], scenario.devices[meeting.walker]]
            var lone = scenario
            lone.devices = pair
            lone.timeLimit = meeting.start + scenario.timeouts.closeBound + .seconds(1)
            return lone
        }
    }

    /// The number of pairs among `pairs` that meet twice: one in ten, at least one when there are
    /// three pairs or more.
    public static func secondMeetings(pairs: Int) -> Int { pairs >= 3 ? max(1, pairs / 10) : 0 }

    /// A hall of `devices` devices (at least two per meeting) with `pairs` close pairs, drawn from
    /// `seed`; `duration` is every device's overall limit, at least 45 s.
    public static func layout(devices: Int, pairs: Int, seed: UInt64, duration: Duration) -> Layout {
        let again = secondMeetings(pairs: pairs)
        precondition(pairs >= 1, "a hall holds at least one pair")
        precondition(devices >= 2 * (pairs + again), "a hall holds at least its pairs' devices")
        precondition(duration >= .seconds(45), "a hall runs at least 45 s")
        var random = DeterministicRandom(seedMaterial: Simulation.seedMaterial(seed, "hall"))
        let reaction = Scenario.Consent.defaultReaction

        // Arrival times, evenly spread with jitter, in order.
        let window = (duration - .seconds(30) - firstArrival).secondsDouble
        let arrivals = (0..<pairs).map { pair -> Duration in
            let fraction = (Double(pair) + random.unitDouble()) / Double(pairs)
            return firstArrival + .milliseconds(Int64((window * fraction * 1000).rounded()))
        }
        let rest = devices - 2 * (pairs + again)
        let clustered = Int((Double(rest) * clusterShare).rounded(.down))
        var singlesLeft = rest - clustered

        // Items, shuffled, then laid out band by band.
        enum Item {
            case pair(Int)
            case cluster(Int)
            case single
        }
        // A place per meeting: a pair meets again elsewhere in the hall.
        let places = pairs + again
        var items: [Item] = (0..<places).map { .pair($0) }
        var clusterLeft = clustered
        while clusterLeft > 0 {
            let size = min(clusterSize, clusterLeft)
            items.append(.cluster(size))
            clusterLeft -= size
        }
        let pairRowSingles = min(singlesLeft, 4 * places)
        let singleCells = (singlesLeft - pairRowSingles + 1) / 2
        items += Array(repeating: .single, count: singleCells)
        for index in items.indices.reversed() where index > 0 {
            items.swapAt(index, Int(random.uniform(below: UInt64(index + 1))))
        }
        let columns = 4 * places + 2 * ((clustered + clusterSize - 1) / clusterSize) + singleCells
        var width = 4
        while width * width < 2 * columns { width += 1 }

        var pairPlaces = Array(repeating: Pose(x: 0, y: 0, heading: 0), count: places)
        var crowded = Array(repeating: false, count: places)
        var bystanders: [Pose] = []
        var clusterMembers = 0
        var column = 0
        var band = 0
        let cell = CrowdedRoom.cellSize
        func jitter(_ random: inout DeterministicRandom, _ limit: Int) -> Double {
            Double(Int(random.uniform(below: UInt64(2 * limit + 1))) - limit)
        }
        for item in items {
            let span: Int
            switch item {
            case .pair: span = 4
            case .cluster: span = 2
            case .single: span = 1
            }
            if column + span > width {
                column = 0
                band += 1
            }
            let left = Double(column) * cell
            let top = Double(2 * band) * cell
            switch item {
            case .pair(let pair):
                pairPlaces[pair] = Pose(x: left, y: top, heading: 0)
                crowded[pair] = (pair < pairs ? pair : pair - pairs) % 2 == 1
                for offset in 0..<4 where singlesLeft > 0 {
                    singlesLeft -= 1
                    let x = left + Double(offset) * cell
                    let y = crowded[pair] ? top + 45 + jitter(&random, 6) : top + cell + jitter(&random, 10)
                    bystanders.append(
                        Pose(x: x + jitter(&random, 6), y: y, heading: Double(random.uniform(below: 360))))
                }
            case .cluster(let size):
                let centreX = left + cell / 2
                let centreY = top + cell / 2
                for member in 0..<size {
                    let offsetX = (Double(member % 4) - 1.5) * clusterPitch
                    let offsetY = (Double(member / 4) - 1.5) * clusterPitch
                    bystanders.append(
                        Pose(
                            x: centreX + offsetX + jitter(&random, 6),
                            y: centreY + offsetY + jitter(&random, 6),
                            heading: Double(random.uniform(below: 360))))
                }
                clusterMembers += size
            case .single:
                for row in 0..<2 where singlesLeft > 0 {
                    singlesLeft -= 1
                    bystanders.append(
                        Pose(
                            x: left + jitter(&random, 10), y: top + Double(row) * cell + jitter(&random, 10),
                            heading: Double(random.uniform(below: 360))))
                }
            }
            column += span
        }

        // The meetings' devices first, then the bystanders.
        var specs: [Scenario.DeviceSpec] = []
        var meetings: [Meeting] = []
        func addMeeting(pair: Int, second: Bool, arrival: Duration, start: Duration, partsAfter: Duration?) {
            let slot = second ? pairs + pair : pair
            let place = pairPlaces[slot]
            let suffix = second ? "again" : ""
            let name = "pair\(pair)" + suffix
            let meetingPose = Pose(x: place.x + CrowdedRoom.pairSeparation, y: place.y, heading: 180)
            let startPose = Pose(x: place.x + walkerStart, y: place.y, heading: 180)
            var motion: [MotionScript.Step] = [.hold(arrival - walk), .move(to: meetingPose, over: walk)]
            if let partsAfter { motion += [.hold(partsAfter), .move(to: startPose, over: walk)] }
            let standing = specs.count
            specs.append(
                Scenario.DeviceSpec(
                    name: name + "a", pose: place, consent: .accept(after: reaction),
                    card: CrowdedRoom.card(&random, index: standing), start: start))
            specs.append(
                Scenario.DeviceSpec(
                    name: name + "b", pose: startPose, motion: motion, consent: .accept(after: reaction),
                    card: CrowdedRoom.card(&random, index: standing + 1), start: start))
            meetings.append(
                Meeting(
                    pair: pair, isSecond: second, standing: standing, walker: standing + 1,
                    arrival: .zero + arrival, start: start, inCrowd: crowded[slot]))
        }
        for pair in 0..<pairs {
            let arrival = arrivals[pair]
            let start = pair % 3 == 2 ? arrival - lateLead : .zero
            addMeeting(
                pair: pair, second: false, arrival: arrival, start: start,
                partsAfter: pair < again ? parting : nil)
        }
        for pair in 0..<again {
            let arrival = arrivals[pair] + secondMeetingAfter
            addMeeting(pair: pair, second: true, arrival: arrival, start: arrival - lateLead, partsAfter: nil)
        }
        var late = specs.count { $0.start > .zero }
        let lateWindow = duration.secondsDouble / 3
        for (offset, pose) in bystanders.enumerated() {
            let index = specs.count
            var start = Duration.zero
            if random.unitDouble() < lateBystanderShare {
                start = .milliseconds(Int64((1 + random.unitDouble() * (lateWindow - 1)) * 1000))
                late += 1
            }
            specs.append(
                Scenario.DeviceSpec(
                    name: "hall\(offset)", pose: pose, consent: .accept(after: reaction),
                    card: CrowdedRoom.card(&random, index: index), start: start))
        }

        var timeouts = Timeouts()
        timeouts.overall = duration
        let lastStart = specs.map(\.start).max() ?? .zero
        let scenario = Scenario(
            seed: seed, timeLimit: lastStart + timeouts.closeBound + .seconds(1), faults: CrowdedRoom.faults,
            timeouts: timeouts, devices: specs)
        return Layout(
            scenario: scenario, meetings: meetings, clusterDevices: clusterMembers, lateDevices: late)
    }
}
