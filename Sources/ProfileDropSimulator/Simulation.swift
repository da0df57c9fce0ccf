import ProfileDropCore
import ProfileDropCrypto

/// Knobs of a simulation run that scenario files do not set.
public struct SimulationOptions: Sendable {
    /// How often a moving device is told its pose (a still one is told once).
    public var poseInterval: Duration
    /// Every device must be closed by this time; nil means by the scenario's time limit.
    public var closeBound: Duration?
    /// The proximity rule used to judge, from true poses, whether a delivered card was allowed.
    public var gate: ProximityGate.Configuration
    /// Slack (cm) on the distance band when judging from true poses: the gate sees filtered noisy
    /// measurements and has hysteresis, so it may act a little outside the exact band. The default
    /// 2 cm accepts 3–12 cm, inside the 2 cm and 13 cm the gate trials require it to refuse.
    public var distanceTolerance: Double
    /// Slack (degrees) on the maximum bearing, for the same reason. The default 10° accepts up to
    /// 40°, inside the 45° the gate trials require it to refuse.
    public var bearingTolerance: Double
    /// How long a peer's pose stays usable for a measurement: three ranging intervals (PROTOCOL.md
    /// section 6.4). A side decides an exchange only at a round that measured the peer, so it heard
    /// the peer at most this long before deciding; the checker holds it to that.
    public var poseFreshness: Duration
    /// Whether the report keeps a transcript at all; a benchmark of a large room needs only the
    /// outcomes, and its transcript would hold hundreds of thousands of lines.
    public var keepsTranscript: Bool
    /// When set, the transcript keeps the lines of these devices (scenario indices) alone: a
    /// large room's transcript is read for a few devices.
    public var transcriptDevices: Set<Int>? = nil
    /// Whether the transcript records every datagram sent.
    public var logDatagrams: Bool
    /// Whether the transcript also records ranging estimates, transfer progress and rejected
    /// datagrams.
    public var verbose: Bool
    /// A test-only hook passed to the network.
    public var impairment: (@Sendable (Int, Int, [UInt8], Instant) -> LinkImpairment)?

    /// Creates options; the defaults suit scenario runs.
    public init(
        poseInterval: Duration = .milliseconds(50), closeBound: Duration? = nil,
        gate: ProximityGate.Configuration = .default, distanceTolerance: Double = 2,
        bearingTolerance: Double = 10, poseFreshness: Duration = MeasurementModel.default.sampleInterval * 3,
        keepsTranscript: Bool = true, logDatagrams: Bool = false, verbose: Bool = false,
        impairment: (@Sendable (Int, Int, [UInt8], Instant) -> LinkImpairment)? = nil
    ) {
        self.poseInterval = poseInterval
        self.closeBound = closeBound
        self.gate = gate
        self.distanceTolerance = distanceTolerance
        self.bearingTolerance = bearingTolerance
        self.poseFreshness = poseFreshness
        self.keepsTranscript = keepsTranscript
        self.logDatagrams = logDatagrams
        self.verbose = verbose
        self.impairment = impairment
    }

    /// Whether two true poses are close and aligned enough for a card to pass between them.
    public func allowsExchange(_ first: Pose, _ second: Pose) -> Bool {
        let distance = first.distance(to: second)
        let nearest = gate.distanceBand.lowerBound - distanceTolerance
        let farthest = gate.distanceBand.upperBound + distanceTolerance
        let maximumBearing = gate.maximumBearing + bearingTolerance
        return distance >= nearest && distance <= farthest && first.bearing(to: second) <= maximumBearing
            && second.bearing(to: first) <= maximumBearing
    }
}

/// What a device factory gets to build one simulated device.
public struct DeviceContext {
    /// The device's index, which is also its network node.
    public let index: Int
    /// The device's description from the scenario.
    public let spec: Scenario.DeviceSpec
    /// Seed material for this device alone, so that its draws do not shift anyone else's.
    public let seedMaterial: [UInt8]
    /// The IPv4 address the device holds on the simulated LAN (10.0.0.1 for node 0, and so on).
    public let ipv4: UInt32
    /// The UDP port every simulated device uses.
    public let port: UInt16
    /// The run's options.
    public let options: SimulationOptions
    /// The devices' timers, from the scenario.
    public let timeouts: Timeouts

    /// When the device is switched on (``Scenario/DeviceSpec/start``); a factory builds the device
    /// with its clock at this time.
    public var startTime: Instant { .zero + spec.start }

    /// The address of node `index` on the simulated LAN.
    public static func ipv4(ofNode index: Int) -> UInt32 { 0x0A00_0001 + UInt32(index) }
    /// The UDP port of every simulated device.
    public static let simulatedPort: UInt16 = 47_474
}

/// Runs a scenario in virtual time and reports what happened.
public enum Simulation {
    /// Runs `scenario` with devices built by `makeDevice`.
    public static func run(
        scenario: Scenario, seed: UInt64? = nil, options: SimulationOptions = SimulationOptions(),
        makeDevice: (DeviceContext) -> any SansIODevice
    ) -> SimulationReport {
        run(scenario: scenario, seed: seed, options: options, scanner: nil, makeDevice: makeDevice)
    }

    /// Runs `scenario` with `scanner` when given, which must be the scanner of this scenario's cards
    /// and device names: a caller that runs one scenario many times builds it once (for photos,
    /// thousands of fragments).
    static func run(
        scenario: Scenario, seed: UInt64?, options: SimulationOptions, scanner: PlaintextScanner?,
        makeDevice: (DeviceContext) -> any SansIODevice
    ) -> SimulationReport {
        let resolvedSeed = seed ?? scenario.seed ?? Scenario.defaultSeed
        var engine = SimulationEngine(
            scenario: scenario, seed: resolvedSeed, options: options,
            scanner: scanner ?? PlaintextScanner(for: scenario), makeDevice: makeDevice)
        return engine.run()
    }

    /// The address node `index` holds on the simulated LAN.
    package static func address(ofNode index: Int) -> PeerAddress {
        PeerAddress(ipv4: DeviceContext.ipv4(ofNode: index), port: DeviceContext.simulatedPort)
    }

    /// The seed's bytes followed by `label`: the material for one independent random stream.
    package static func seedMaterial(_ seed: UInt64, _ label: String) -> [UInt8] {
        // Written into one array of its final size: no interpolated string, no second array.
        var material: [UInt8] = []
        material.reserveCapacity(8 + labelPrefix.count + label.utf8.count)
        for shift in stride(from: 56, through: 0, by: -8) {
            material.append(UInt8(truncatingIfNeeded: seed >> shift))
        }
        material.append(contentsOf: labelPrefix)
        material.append(contentsOf: label.utf8)
        return material
    }

    private static let labelPrefix = Array("simulation/".utf8)
}

/// One run's mutable state and its event loop.
private struct SimulationEngine {
    private enum Scheduled {
        case poseTick
        case decision(device: Int, accept: Bool)

        /// The room's alarm tag for this event.
        var tag: Int {
            switch self {
            case .poseTick: return -1
            case .decision(let device, let accept): return device * 2 + (accept ? 1 : 0)
            }
        }

        init(tag: Int) {
            self = tag < 0 ? .poseTick : .decision(device: tag / 2, accept: tag % 2 == 1)
        }
    }

    /// How a device fared, for the report.
    private struct DeviceState {
        var events: EventTranslator
        var close: CloseReason?
        var closedAt: Instant?
        var receivedCard: ProfileCard?
        var receivedFrom: Int?
        /// The true distance (cm) between the device and the card's sender when the card arrived.
        var receivedAtDistance: Double?
        var cardMatches: Bool?
    }

    /// More events than this at one instant means a device keeps asking to be woken "now".
    private static let maximumEventsPerInstant = 100_000

    let scenario: Scenario
    let seed: UInt64
    let options: SimulationOptions
    let scripts: [MotionScript]
    /// Devices whose script moves them: a still one is told its pose once, at the start.
    let movingDevices: [Int]
    /// The devices' names, for transcript lines: reading one from the scenario copies the whole
    /// device description, card included.
    let names: [String]
    private var devices: [DeviceState] = []
    /// The pose each device was last told, so that a still device is not told again.
    private var lastPoses: [Pose] = []
    /// The devices on the simulated LAN, whose hook is the scenario's fault model.
    private var room: Room
    /// The room's clock, except that a run cut off by the time limit ends at the limit.
    private var now = Instant.zero
    /// The events of the device being drained, moved out of the room; kept for its capacity.
    private var takenEvents: [DeviceEvent] = []
    private var transcript: [String] = []
    /// Judges the run from what it records.
    private var checker: SimulationChecker

    init(
        scenario: Scenario, seed: UInt64, options: SimulationOptions, scanner: PlaintextScanner,
        makeDevice: (DeviceContext) -> any SansIODevice
    ) {
        self.scenario = scenario
        self.seed = seed
        self.options = options
        scripts = scenario.devices.map(\.motionScript)
        movingDevices = scenario.devices.indices.filter { !scenario.devices[$0].motion.isEmpty }
        checker = SimulationChecker(scenario: scenario, options: options, scanner: scanner)
        names = scenario.devices.map(\.name)
        var faults = NetworkFaultHook(
            nodeCount: scenario.devices.count, faults: scenario.faults,
            random: DeterministicRandom(seedMaterial: Simulation.seedMaterial(seed, "network")))
        faults.impairment = options.impairment
        room = Room(hook: faults)
        let directory = PeerDirectory()
        for (index, spec) in scenario.devices.enumerated() {
            let context = DeviceContext(
                index: index, spec: spec, seedMaterial: Simulation.seedMaterial(seed, "device/\(index)"),
                ipv4: DeviceContext.ipv4(ofNode: index), port: DeviceContext.simulatedPort,
                options: options, timeouts: scenario.timeouts)
            let device = switchedOn(makeDevice(context), at: context.startTime)
            directory.add(identity: device.deviceID.rawValue, node: index, name: spec.name)
            room.add(device, at: Simulation.address(ofNode: index))
            devices.append(
                DeviceState(
                    events: EventTranslator(
                        directory: directory, verbose: options.verbose,
                        keepsText: options.keepsTranscript
                            && options.transcriptDevices?.contains(index) != false)))
        }
    }

    mutating func run() -> SimulationReport {
        let limit = Instant.zero + scenario.timeLimit
        for index in devices.indices {
            let pose = scripts[index].pose(at: now)
            lastPoses.append(pose)
            room.updatePose(pose, of: index)
            drained(index)
        }
        // Ticks only tell moving devices their poses: a still scene needs none.
        if !movingDevices.isEmpty { room.setAlarm(Scheduled.poseTick.tag, at: now + options.poseInterval) }
        var eventsThisInstant = 0
        while !allClosed {
            // Asked only when the instant is full, so that the room finds the next event once per step.
            if eventsThisInstant == Self.maximumEventsPerInstant, room.nextEventTime == now {
                checker.record(.livelock(events: Self.maximumEventsPerInstant, at: now))
                break
            }
            guard let step = room.step(notAfter: limit) else {
                now = limit
                break
            }
            if room.now > now {
                now = room.now
                eventsThisInstant = 0
            }
            eventsThisInstant += 1
            switch step {
            case .delivered(let copy):
                checker.record(
                    .delivered(
                        number: copy.number, source: copy.source, recipient: copy.recipient,
                        altered: copy.altered))
                drained(copy.recipient)
            case .lost:
                break
            case .alarm(let tag):
                handle(Scheduled(tag: tag))
            case .timeout(let member):
                drained(member)
            }
        }
        return finish(limit: limit)
    }

    private var allClosed: Bool { room.openDeviceCount == 0 }

    private mutating func handle(_ event: Scheduled) {
        switch event {
        case .poseTick:
            var anyMoving = false
            for index in movingDevices where !isClosed(index) {
                anyMoving = true
                let pose = scripts[index].pose(at: now)
                guard pose != lastPoses[index] else { continue }
                lastPoses[index] = pose
                room.updatePose(pose, of: index)
                drained(index)
            }
            // Once every moving device closed, further ticks would do nothing.
            if anyMoving { room.setAlarm(Scheduled.poseTick.tag, at: now + options.poseInterval) }
        case .decision(let index, let accept):
            guard !isClosed(index) else { return }
            record(index, "<- user \(accept ? "accepts" : "declines")")
            // With several candidates on screen, accepting names the one asked about first (and
            // declines the others); a decline declines them all.
            if accept, let first = room.device(index)?.withCoreDevice({ $0.askedPeers.first }) ?? nil {
                room.decide(.share, about: first, for: index)
            } else {
                room.decide(accept ? .share : .decline, for: index)
            }
            drained(index)
        }
    }

    private mutating func record(_ index: Int, _ text: @autoclosure () -> String) {
        guard options.keepsTranscript, options.transcriptDevices?.contains(index) != false else { return }
        let line = text()
        transcript.append("t=\(now) \(names[index]) \(line)")
    }

    private func isClosed(_ index: Int) -> Bool { room.isClosed(index) }

    /// Moves what device `index` sent and reported in the room's last step into the transcript,
    /// the report and the trace.
    private mutating func drained(_ index: Int) {
        for datagram in room.lastSent {
            let bytes = datagram.bytes
            if options.logDatagrams {
                let target: String
                switch datagram.destination {
                case .multicast: target = "multicast"
                case .unicast:
                    // An address nobody holds is named as the node past the last.
                    target = datagram.recipient.map { scenario.devices[$0].name } ?? "node\(devices.count)"
                }
                record(index, "=> \(target) \(bytes.count) B")
            }
            checker.record(.sent(device: index, number: datagram.number, bytes: bytes, at: now))
        }
        room.takeLastEvents(into: &takenEvents)
        // Reversed, so that popping from the end hands the events over in order, each moved rather
        // than copied.
        if takenEvents.count > 1 { takenEvents.reverse() }
        while let deviceEvent = takenEvents.popLast() {
            guard let event = devices[index].events.translate(deviceEvent) else { continue }
            record(index, "-> \(event.text)")
            switch event.kind {
            case .note, .verified, .pairingInterrupted, .peerRemembered: break
            case .consentRequested:
                switch scenario.devices[index].consent {
                case .accept(let after):
                    room.setAlarm(Scheduled.decision(device: index, accept: true).tag, at: now + after)
                case .decline(let after):
                    room.setAlarm(Scheduled.decision(device: index, accept: false).tag, at: now + after)
                case .ignore: break
                }
            case .cardVerified(let card, let peer):
                checker.record(.cardVerified(device: index, card: card, from: peer))
            case .cardReceived(let card, let peer):
                received(card, from: peer, by: index)
            case .closed(let outcome):
                checker.record(
                    .closed(device: index, outcome: outcome, nextDatagram: room.nextDatagramNumber, at: now))
                guard devices[index].close == nil else { continue }
                devices[index].close = outcome
                devices[index].closedAt = now
            }
        }
    }

    /// Records `card` delivered by device `index`, from `peer` when the device named it.
    private mutating func received(_ card: ProfileCard, from peer: Int?, by index: Int) {
        let name = scenario.devices[index].name
        // An unidentified sender is taken to be whoever owns this exact card.
        let sender = peer ?? scenario.devices.firstIndex { $0.card == card && $0.name != name }
        devices[index].receivedCard = card
        devices[index].receivedFrom = sender
        var poses: (receiver: Pose, sender: Pose)?
        if let sender, scenario.devices.indices.contains(sender) {
            let receiverPose = scripts[index].pose(at: now)
            let senderPose = scripts[sender].pose(at: now)
            poses = (receiverPose, senderPose)
            devices[index].cardMatches = scenario.devices[sender].card == card
            devices[index].receivedAtDistance = receiverPose.distance(to: senderPose)
        } else {
            devices[index].cardMatches = false
        }
        checker.record(.cardReceived(device: index, card: card, sender: sender, poses: poses, at: now))
    }

    private mutating func finish(limit: Instant) -> SimulationReport {
        let bound = options.closeBound.map { Instant.zero + $0 } ?? limit
        let findings = checker.finish(
            SimulationTrace.End(
                time: now, closeBound: bound, closedInRoom: devices.indices.map { room.isClosed($0) }))
        guard let faults = room.hook as? NetworkFaultHook else {
            preconditionFailure("the room lost its fault model")
        }
        let statistics = faults.statistics
        let outcomes = devices.enumerated().map { index, state in
            SimulationReport.DeviceOutcome(
                name: scenario.devices[index].name, close: state.close, closedAt: state.closedAt,
                receivedCard: state.receivedCard,
                receivedFrom: state.receivedFrom.map { scenario.devices[$0].name },
                receivedAtDistance: state.receivedAtDistance, cardMatchesSender: state.cardMatches,
                sentDatagrams: statistics.sentDatagrams[index],
                sentBytes: statistics.sentBytes[index],
                counters: room.device(index).flatMap(coreCounters))
        }
        return SimulationReport(
            seed: seed, scenario: scenario, options: options, devices: outcomes, network: statistics,
            virtualDuration: now - .zero, violations: findings.lines, notes: findings.notes,
            transcript: transcript)
    }
}

/// Everything one simulation run produced.
public struct SimulationReport: Sendable {
    /// How one device fared.
    public struct DeviceOutcome: Equatable, Sendable {
        /// The device's name.
        public var name: String
        /// How it closed, or nil if it never did.
        public var close: CloseReason?
        /// When it closed.
        public var closedAt: Instant?
        /// The card it received, if any.
        public var receivedCard: ProfileCard?
        /// The name of the device that sent it.
        public var receivedFrom: String?
        /// The true distance (cm) between the device and that sender when the card arrived.
        public var receivedAtDistance: Double?
        /// Whether the received card equals the one its sender offered.
        public var cardMatchesSender: Bool?
        /// Datagrams it sent.
        public var sentDatagrams: Int
        /// Bytes it sent.
        public var sentBytes: Int
        /// The device's own traffic counters at the end, for a device running the protocol core.
        public var counters: DeviceCounters? = nil

        /// Whether it closed with the cards swapped.
        public var exchanged: Bool { close == .exchanged }
    }

    /// The seed the run used.
    public let seed: UInt64
    /// The scenario that ran.
    public let scenario: Scenario
    /// The options in force.
    public let options: SimulationOptions
    /// One outcome per device, in scenario order.
    public let devices: [DeviceOutcome]
    /// The network's counters.
    public let network: NetworkStatistics
    /// Virtual time from start until every device closed, or until the limit.
    public let virtualDuration: Duration
    /// Broken invariants, one line each; empty for a sound run.
    public let violations: [String]
    /// Outcomes the checker allowed only by a rule's exception (the other side of a pair cut off
    /// for good as the exchange was decided), one line each.
    public let notes: [String]
    /// What happened, one line per event (`t=1.234s alice -> ...`); identical for identical seeds.
    public let transcript: [String]

    /// Devices that closed with the cards swapped.
    public var exchangedCount: Int { devices.filter(\.exchanged).count }
    /// Devices that closed any other way.
    public var abortedCount: Int { devices.filter { $0.close != nil && !$0.exchanged }.count }
    /// Devices still open at the end.
    public var unclosedCount: Int { devices.filter { $0.close == nil }.count }

    /// The header: seed and options.
    public var headerLines: [String] {
        var lines = [
            "simulate: seed=\(seed) devices=\(devices.count) limit=\(Instant.zero + scenario.timeLimit) "
                + "pose-interval=\(NetworkFaults.millis(options.poseInterval))",
            "faults: \(scenario.faults.summary)",
            "timeouts: overall=\(Instant.zero + scenario.timeouts.overall) "
                + "consent=\(Instant.zero + scenario.timeouts.consent) "
                + "ranging-window=\(Instant.zero + scenario.timeouts.rangingWindow) "
                + "transfer=\(Instant.zero + scenario.timeouts.transfer) "
                + "close-bound=\(Instant.zero + scenario.timeouts.closeBound)",
        ]
        for spec in scenario.devices {
            lines.append(
                "device \(spec.name): pose \(spec.pose) motion \(spec.motion.count) steps "
                    + "consent \(spec.consent.summary) card \"\(spec.card.name)\" "
                    + "(\(spec.card.encoded().count) bytes encoded)")
        }
        return lines
    }

    /// One line per device, then the violations, then the summary.
    public var outcomeLines: [String] {
        var lines: [String] = []
        for outcome in devices {
            var text = "outcome \(outcome.name): "
            if let close = outcome.close, let closedAt = outcome.closedAt {
                text += "\(close.transcriptName) at t=\(closedAt)"
            } else {
                text += "not closed"
            }
            if let card = outcome.receivedCard {
                let verdict = outcome.cardMatchesSender == true ? "matches" : "DIFFERS"
                text += "; received \"\(card.name)\" from \(outcome.receivedFrom ?? "?") (\(verdict))"
            }
            text += "; sent \(outcome.sentDatagrams) datagrams, \(outcome.sentBytes) bytes"
            lines.append(text)
        }
        lines += notes.map { "note: \($0)" }
        lines += violations.map { "violation: \($0)" }
        lines.append(summaryLine)
        return lines
    }

    /// `summary: D devices, X exchanged, Y aborted, U unclosed, N datagrams, B bytes, virtual T,
    /// V violations`.
    public var summaryLine: String {
        "summary: \(devices.count) devices, \(exchangedCount) exchanged, \(abortedCount) aborted, "
            + "\(unclosedCount) unclosed, \(network.totalSentDatagrams) datagrams, "
            + "\(network.totalSentBytes) bytes, "
            + "virtual \(Instant.zero + virtualDuration), \(violations.count) violations"
    }

    /// The whole report for printing: header, transcript, outcomes and summary.
    public var lines: [String] { headerLines + transcript + outcomeLines }
}
