import ProfileDropCore
import ProfileDropCrypto

/// A conference hall (``Hall``) as the crowd around someone else's pair: an attack run's victims
/// stand in for one of the hall's close pairs, at its place, and every other device of the hall
/// runs as ``Simulation`` would run it (switched on at its time, moved by its script, its owner
/// accepting after the reaction time), on the hall's network (``CrowdedRoom/faults``), in the room
/// the run's driver steps.
///
/// The pair stood in for is the first that meets once and has bystanders within reach (a pair in a
/// crowd, 39–51 cm below its line); the hall is moved so that its standing device's place is the
/// origin, where victim A of an attack run stands facing +x, with B 7 cm along +x facing it, as
/// the pair's two devices met. Its three cells along +x hold nobody, and the next pair's row is
/// 200 cm away.
package struct HallCrowd {
    /// The fewest devices a hall around a pair holds: three pairs, one of which meets twice.
    package static let minimumDevices = 8

    /// The hall's devices, the pair stood in for left out, moved so that its place is the origin.
    package let devices: [Scenario.DeviceSpec]
    /// The hall's timers.
    package let timeouts: Timeouts
    /// The hall's network.
    package let faults: NetworkFaults
    /// The run's seed, which the hall and its devices' draws come from.
    package let seed: UInt64
    /// Close pairs of the hall, the one stood in for included.
    package let pairs: Int

    /// The close pairs of a hall of `devices` devices: one per twenty devices, as in the
    /// benchmark's thousand with fifty, and at least three, so that one meets once in a crowd.
    package static func pairs(devices: Int) -> Int { max(3, devices / 20) }

    /// The hall of `devices` devices (at least ``minimumDevices``) drawn from `seed`, with `duration`
    /// as every device's overall limit (at least 45 s), around a pair at the origin.
    package init(devices: Int, seed: UInt64, duration: Duration) {
        precondition(devices >= Self.minimumDevices, "a hall around a pair holds at least its pairs")
        pairs = Self.pairs(devices: devices)
        let layout = Hall.layout(devices: devices, pairs: pairs, seed: seed, duration: duration)
        let again = Hall.secondMeetings(pairs: pairs)
        // Pairs from `again` on meet once; of any two in a row, the odd one is in a crowd.
        guard
            let meeting = layout.meetings.first(where: { !$0.isSecond && $0.pair >= again && $0.inCrowd })
        else { preconditionFailure("a hall of three pairs or more has a pair in a crowd that meets once") }
        let place = layout.scenario.devices[meeting.standing].pose
        self.devices = layout.scenario.devices.enumerated().compactMap { index, spec in
            guard index != meeting.standing && index != meeting.walker else { return nil }
            var moved = spec
            moved.pose = Self.moved(spec.pose, by: place)
            moved.motion = spec.motion.map { step in
                switch step {
                case .hold: step
                case .move(let pose, let duration): .move(to: Self.moved(pose, by: place), over: duration)
                }
            }
            return moved
        }
        timeouts = layout.scenario.timeouts
        faults = layout.scenario.faults
        self.seed = seed
    }

    private static func moved(_ pose: Pose, by origin: Pose) -> Pose {
        Pose(x: pose.x - origin.x, y: pose.y - origin.y, heading: pose.heading)
    }

    /// Adds the hall's devices to `room` as its crowd, each at the address of its member number
    /// (``Simulation/address(ofNode:)``), and tells each its first pose; returns their members.
    @discardableResult
    package func join(_ room: inout Room, options: SimulationOptions = SimulationOptions()) -> Range<Int> {
        let first = room.count
        let members = devices.enumerated().map { offset, spec -> any SansIODevice in
            let member = first + offset
            let context = DeviceContext(
                index: member, spec: spec,
                seedMaterial: Simulation.seedMaterial(seed, "hall-crowd/\(offset)"),
                ipv4: DeviceContext.ipv4(ofNode: member), port: DeviceContext.simulatedPort, options: options,
                timeouts: timeouts)
            let start = max(context.startTime, room.now)
            let core = Device(
                configuration: context.coreConfiguration,
                random: DeterministicRandom(seedMaterial: context.seedMaterial), now: start,
                localAddress: context.localAddress)
            if start > room.now {
                return ScriptedDevice(
                    LateDevice(core, start: start), spec: spec, now: room.now,
                    poseInterval: options.poseInterval)
            }
            return ScriptedDevice(core, spec: spec, now: room.now, poseInterval: options.poseInterval)
        }
        var keys = DeterministicRandom(seedMaterial: Simulation.seedMaterial(seed, "hall-crowd/network"))
        let network = CrowdNetwork(faults: faults, key: keys.nextUInt64())
        let crowd = room.addCrowd(members, address: Simulation.address(ofNode:), network: network)
        for (offset, spec) in devices.enumerated() {
            room.updatePose(spec.motionScript.pose(at: room.now), of: crowd.lowerBound + offset)
        }
        return crowd
    }
}

/// The network of a room's crowd: the delay, jitter and loss of `faults` (nothing else), each
/// copy's fate drawn from its sender, how many datagrams the sender had sent, and its recipient
/// alone, rather than from one stream in the order of sending (``NetworkFaultHook``). So a change
/// in what some participants send (an attacker's, its victims' answers to it) changes no other
/// copy's fate, and a hall with an attacker loses what the same hall without it loses.
package struct CrowdNetwork {
    let faults: NetworkFaults
    let key: UInt64
    /// Per sender: the number of its latest datagram and how many it sent.
    private var sends: [Int: (number: UInt64, count: UInt64)] = [:]

    init(faults: NetworkFaults, key: UInt64) {
        self.faults = faults
        self.key = key
    }

    /// When `copy` arrives, or `.drop`.
    mutating func route(_ copy: InFlightDatagram) -> DatagramVerdict {
        guard let source = copy.source else { return .deliver }
        var sent = sends[source] ?? (number: .max, count: 0)
        if sent.number != copy.number {
            sent = (copy.number, sent.count &+ 1)
            sends[source] = sent
        }
        var state =
            key ^ (UInt64(truncatingIfNeeded: source) &* 0x9E37_79B9_7F4A_7C15)
            ^ (sent.count &* 0xC2B2_AE3D_27D4_EB4F) ^ (UInt64(truncatingIfNeeded: copy.recipient) << 1)
        let lossDraw = Double(Self.splitMix(&state) >> 11) / Double(1 << 53)
        if lossDraw < faults.lossRate { return .drop }
        let jitter = UInt64(faults.jitter.nanosecondsClamped)
        let extra = jitter > 0 ? Self.splitMix(&state) % (jitter + 1) : 0
        return .arriveAt(copy.sentAt + faults.delay + .nanoseconds(Int64(extra)))
    }

    /// SplitMix64: a fast, well-mixed draw from `state`.
    private static func splitMix(_ state: inout UInt64) -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var mixed = state
        mixed = (mixed ^ (mixed >> 30)) &* 0xBF58_476D_1CE4_E5B9
        mixed = (mixed ^ (mixed >> 27)) &* 0x94D0_49BB_1331_11EB
        return mixed ^ (mixed >> 31)
    }
}

/// A device that can say whom its owner is being asked about.
protocol AskingDevice: SansIODevice {
    /// The candidates on screen, in the order asked.
    var askedPeers: [DeviceID] { get }
}

extension Device: AskingDevice {}

extension LateDevice: AskingDevice where Inner == Device {
    var askedPeers: [DeviceID] { inner.askedPeers }
}

/// A scenario's device that drives itself as ``Simulation`` drives it: told its pose every
/// `poseInterval` while its script moves it, and its owner's answer given the scenario's reaction
/// time after each consent request (accepting the candidate asked about first), for a room whose
/// driver knows nothing of it.
struct ScriptedDevice<Inner: AskingDevice>: SansIODevice {
    private var inner: Inner
    private let script: MotionScript
    private let consent: Scenario.Consent
    private let poseInterval: Duration
    /// The pose last told.
    private var pose: Pose
    /// When the pose is next looked at; nil once the script is over.
    private var nextTick: Instant?
    /// When the owner answers the requests made so far, in order.
    private var answers: [Instant] = []
    /// The time of the latest input.
    private var now: Instant

    init(_ inner: Inner, spec: Scenario.DeviceSpec, now: Instant, poseInterval: Duration) {
        self.inner = inner
        script = spec.motionScript
        consent = spec.consent
        self.poseInterval = poseInterval
        pose = script.pose(at: now)
        self.now = now
        nextTick = spec.motion.isEmpty ? nil : now + poseInterval
    }

    var deviceID: DeviceID { inner.deviceID }
    var isClosed: Bool { inner.isClosed }

    var nextDeadline: Instant? {
        guard !inner.isClosed else { return inner.nextDeadline }
        return Instant.earliest(Instant.earliest(inner.nextDeadline, nextTick), answers.first)
    }

    mutating func handleDatagram(_ bytes: [UInt8], from source: PeerAddress, at time: Instant) {
        now = time
        inner.handleDatagram(bytes, from: source, at: time)
    }

    mutating func handleTimeout(at time: Instant) {
        now = time
        if let tick = nextTick, tick <= time {
            let next = script.pose(at: time)
            if next != pose {
                pose = next
                inner.updatePose(next, at: time)
            }
            nextTick = time < script.end ? tick + poseInterval : nil
        }
        while let answer = answers.first, answer <= time {
            answers.removeFirst()
            guard !inner.isClosed else { continue }
            switch consent {
            case .accept:
                if let first = inner.askedPeers.first {
                    inner.decide(.share, for: first, at: time)
                } else {
                    inner.decide(.share, at: time)
                }
            case .decline: inner.decide(.decline, at: time)
            case .ignore: break
            }
        }
        if let deadline = inner.nextDeadline, deadline <= time { inner.handleTimeout(at: time) }
    }

    mutating func updatePose(_ pose: Pose, at time: Instant) {
        now = time
        self.pose = pose
        inner.updatePose(pose, at: time)
    }

    mutating func decide(_ decision: ConsentDecision, at time: Instant) {
        now = time
        inner.decide(decision, at: time)
    }

    mutating func decide(_ decision: ConsentDecision, for peer: DeviceID, at time: Instant) {
        now = time
        inner.decide(decision, for: peer, at: time)
    }

    mutating func cancel(at time: Instant) {
        now = time
        inner.cancel(at: time)
    }

    mutating func pollTransmit() -> OutgoingDatagram? { inner.pollTransmit() }

    mutating func pollEvent() -> DeviceEvent? {
        let event = inner.pollEvent()
        if let event { noteAsked(event) }
        return event
    }

    mutating func takeOutput(datagrams: inout [OutgoingDatagram], events: inout [DeviceEvent])
        -> DeviceStatus
    {
        let known = events.count
        let status = inner.takeOutput(datagrams: &datagrams, events: &events)
        for event in events[known...] { noteAsked(event) }
        return DeviceStatus(nextDeadline: nextDeadline, isClosed: status.isClosed)
    }

    /// Plans the owner's answer to a consent request.
    private mutating func noteAsked(_ event: DeviceEvent) {
        guard case .consentRequested = event else { return }
        switch consent {
        case .accept(let after), .decline(let after): answers.append(now + after)
        case .ignore: break
        }
    }
}
