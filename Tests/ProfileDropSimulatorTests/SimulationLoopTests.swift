import ProfileDropCore
import ProfileDropCrypto
import Testing

@testable import ProfileDropSimulator

/// A small stand-in device with a toy protocol, to test the event loop apart from the real core:
/// beacons carry the true pose; a peer in range prompts the owner; an accepted prompt sends the card
/// (masked, or in the clear when `leaky`) until acknowledged; nothing in range for 3 s closes it.
private struct ToyDevice: SansIODevice {
    let index: Int
    let card: ProfileCard
    let options = SimulationOptions()
    var leaky = false
    var tamper = false
    /// Closes as exchanged as soon as the peer's card arrives, without waiting for its own to land.
    var careless = false
    /// Two phases, like the real close rule: a card that arrives is verified and acknowledged, and
    /// delivered only when the device decides, `hold` after it holds both the card and the
    /// acknowledgement (sending a one-shot CLOSE, type 5), or, with `followsPeer`, on the peer's
    /// CLOSE. `ignoresClose` is a broken follower that drops the peer's CLOSE.
    var twoPhase: (hold: Duration, followsPeer: Bool, ignoresClose: Bool)?
    var doneAt: Instant?
    var pendingCard: ProfileCard?
    var pose = Pose(x: 0, y: 0, heading: 0)
    var outbox: [OutgoingDatagram] = []
    var events: [DeviceEvent] = []
    var nextBeacon = Instant.zero
    var giveUpAt = Instant.zero + .seconds(3)
    var peer: PeerAddress?
    var accepted = false
    var cardAcknowledged = false
    var received = false
    var isClosed = false
    var deviceID: DeviceID { DeviceID(rawValue: UInt64(index)) }

    init(context: DeviceContext, leaky: Bool = false, tamper: Bool = false, careless: Bool = false) {
        index = context.index
        card = context.spec.card
        self.leaky = leaky
        self.tamper = tamper
        self.careless = careless
    }

    var nextDeadline: Instant? {
        guard !isClosed else { return nil }
        if let twoPhase, !twoPhase.followsPeer, let doneAt {
            return min(nextBeacon, giveUpAt, doneAt + twoPhase.hold)
        }
        return min(nextBeacon, giveUpAt)
    }

    /// A two-phase device decides: it delivers the card it verified and tells the peer.
    mutating func decideIfDue(at time: Instant) {
        guard let twoPhase, !twoPhase.followsPeer, !isClosed, let doneAt, time >= doneAt + twoPhase.hold,
            let peer, let pendingCard
        else { return }
        outbox.append(OutgoingDatagram(destination: .unicast(peer), bytes: [5]))
        events.append(.cardReceived(pendingCard, from: Self.peerID(of: peer)))
        close(.exchanged)
    }

    static func mask(_ bytes: [UInt8]) -> [UInt8] {
        var stream = DeterministicRandom(seed: 0xC0FFEE)
        return zip(bytes, stream.bytes(bytes.count)).map { $0 ^ $1 }
    }

    mutating func close(_ reason: CloseReason) {
        isClosed = true
        events.append(.closed(reason))
    }

    /// The toy names a peer by its node index, which the simulation's directory maps back.
    static func peerID(of address: PeerAddress) -> DeviceID {
        DeviceID(rawValue: UInt64(address.ipv4 - DeviceContext.ipv4(ofNode: 0)))
    }

    mutating func handleDatagram(_ bytes: [UInt8], from source: PeerAddress, at time: Instant) {
        guard let type = bytes.first else { return }
        switch type {
        case 1:
            guard peer == nil, let peerPose = try? Pose(decoding: bytes.dropFirst()),
                options.allowsExchange(pose, peerPose)
            else { return }
            peer = source
            giveUpAt = time + .seconds(3)
            events.append(.consentRequested(peer: Self.peerID(of: source)))
        case 2:
            guard source == peer else { return }
            outbox.append(OutgoingDatagram(destination: .unicast(source), bytes: [4]))
            guard !received, let decoded = try? ProfileCard(decoding: Self.mask(Array(bytes.dropFirst())))
            else { return }
            received = true
            if twoPhase != nil {
                pendingCard = decoded
                events.append(.cardVerified(decoded, from: Self.peerID(of: source)))
                break
            }
            var card = decoded
            if tamper {
                card =
                    (try? ProfileCard(
                        name: "Forged", age: 1, sex: .male, neutered: false, size: .small, owner: "x"))
                    ?? decoded
            }
            events.append(.cardReceived(card, from: Self.peerID(of: source)))
        case 3:
            if source == peer { close(.declined(by: .peer)) }
        case 4:
            if source == peer { cardAcknowledged = true }
        case 5:
            guard let twoPhase, twoPhase.followsPeer, !twoPhase.ignoresClose, source == peer, !isClosed,
                let pendingCard
            else { return }
            events.append(.cardReceived(pendingCard, from: Self.peerID(of: source)))
            close(.exchanged)
        default: return
        }
        if twoPhase != nil {
            if received && cardAcknowledged && doneAt == nil { doneAt = time }
            decideIfDue(at: time)
        } else if received && (cardAcknowledged || careless) && !isClosed {
            close(.exchanged)
        }
    }

    mutating func handleTimeout(at time: Instant) {
        decideIfDue(at: time)
        if isClosed { return }
        if time >= giveUpAt {
            close(peer == nil ? .outOfRange : .timeout(.noExchange))
            return
        }
        if accepted && !cardAcknowledged, let peer {
            let body = leaky ? card.encoded() : Self.mask(card.encoded())
            outbox.append(OutgoingDatagram(destination: .unicast(peer), bytes: [2] + body))
        } else if peer == nil {
            outbox.append(OutgoingDatagram(destination: .multicast, bytes: [1] + pose.encoded()))
        }
        nextBeacon = time + .milliseconds(100)
    }

    mutating func updatePose(_ pose: Pose, at time: Instant) { self.pose = pose }

    mutating func cancel(at time: Instant) {}

    mutating func decide(_ decision: ConsentDecision, for peer: DeviceID, at time: Instant) {
        decide(decision, at: time)
    }

    mutating func decide(_ decision: ConsentDecision, at time: Instant) {
        guard let peer else { return }
        if decision != .decline {
            accepted = true
            nextBeacon = time
        } else {
            outbox.append(OutgoingDatagram(destination: .unicast(peer), bytes: [3]))
            close(.declined(by: .local))
        }
    }

    mutating func pollTransmit() -> OutgoingDatagram? {
        outbox.isEmpty ? nil : outbox.removeFirst()
    }

    mutating func pollEvent() -> DeviceEvent? {
        events.isEmpty ? nil : events.removeFirst()
    }
}

private func card(_ name: String) -> ProfileCard {
    // Literal fields within the documented limits.
    try! ProfileCard(
        name: name, age: 3, sex: .female, neutered: true, size: .small, keywords: ["calm"],
        owner: "owner-\(name)")
}

private func pairScenario(
    distance: Double, loss: Double = 0, consentB: Scenario.Consent = .accept(after: .milliseconds(300))
) -> Scenario {
    Scenario(
        seed: 9, timeLimit: .seconds(10), faults: NetworkFaults(lossRate: loss),
        devices: [
            .init(name: "alice", pose: Pose(x: 0, y: 0, heading: 0), card: card("Boribori")),
            .init(
                name: "bob", pose: Pose(x: distance, y: 0, heading: 180), consent: consentB,
                card: card("Kongkong")),
        ])
}

/// How often a ``StuckDevice`` was woken.
private final class WakeCounter {
    var wakes = 0
}

/// A device that asks to be woken at 1 s again after every wake, and never closes.
private struct StuckDevice: SansIODevice {
    let counter: WakeCounter
    var deviceID: DeviceID { DeviceID(rawValue: 1) }
    var nextDeadline: Instant? { Instant.zero + .seconds(1) }
    var isClosed: Bool { false }

    mutating func handleDatagram(_ bytes: [UInt8], from source: PeerAddress, at time: Instant) {}
    mutating func handleTimeout(at time: Instant) { counter.wakes += 1 }
    mutating func updatePose(_ pose: Pose, at time: Instant) {}
    mutating func decide(_ decision: ConsentDecision, at time: Instant) {}

    mutating func decide(_ decision: ConsentDecision, for peer: DeviceID, at time: Instant) {}
    mutating func cancel(at time: Instant) {}
    mutating func pollTransmit() -> OutgoingDatagram? { nil }
    mutating func pollEvent() -> DeviceEvent? { nil }
}

@Suite struct SimulationLoopTests {
    @Test func groundTruthRangeStaysInsideTheGateTrialBoundaries() {
        let options = SimulationOptions()
        func pair(_ distance: Double, turnedBy turn: Double = 0) -> (Pose, Pose) {
            (Pose(x: 0, y: 0, heading: turn), Pose(x: distance, y: 0, heading: 180))
        }
        #expect(options.allowsExchange(pair(7).0, pair(7).1))
        #expect(options.allowsExchange(pair(12).0, pair(12).1))
        #expect(!options.allowsExchange(pair(13).0, pair(13).1))
        #expect(options.allowsExchange(pair(3).0, pair(3).1))
        #expect(!options.allowsExchange(pair(2).0, pair(2).1))
        #expect(options.allowsExchange(pair(7, turnedBy: 40).0, pair(7, turnedBy: 40).1))
        #expect(!options.allowsExchange(pair(7, turnedBy: 45).0, pair(7, turnedBy: 45).1))
        #expect(!options.allowsExchange(pair(7, turnedBy: -45).0, pair(7, turnedBy: -45).1))
    }

    @Test func toyPairExchangesAndReportsIt() {
        let report = Simulation.run(scenario: pairScenario(distance: 7)) { ToyDevice(context: $0) }
        #expect(report.violations == [])
        #expect(report.devices.map(\.close?.transcriptName) == ["exchanged", "exchanged"])
        #expect(report.devices[0].receivedCard?.name == "Kongkong")
        #expect(report.devices[0].receivedFrom == "bob")
        #expect(report.devices[1].cardMatchesSender == true)
        #expect(report.transcript.contains { $0.hasSuffix("alice <- user accepts") })
        #expect(report.lines.first?.hasPrefix("simulate: seed=9 devices=2") == true)
        #expect(report.lines.last == report.summaryLine)
        #expect(report.summaryLine.hasPrefix("summary: 2 devices, 2 exchanged, 0 aborted, 0 unclosed"))
        #expect(report.virtualDuration < .seconds(2))
    }

    @Test func sameSeedSameTranscriptUnderLoss() {
        let scenario = pairScenario(distance: 7, loss: 0.3)
        let first = Simulation.run(scenario: scenario) { ToyDevice(context: $0) }
        let second = Simulation.run(scenario: scenario) { ToyDevice(context: $0) }
        #expect(first.lines == second.lines)
        #expect(first.network.lost > 0)
        let other = Simulation.run(scenario: scenario, seed: 10) { ToyDevice(context: $0) }
        #expect(other.lines != first.lines)
    }

    @Test func outOfRangeClosesWithoutExchange() {
        let report = Simulation.run(scenario: pairScenario(distance: 20)) { ToyDevice(context: $0) }
        #expect(report.violations == [])
        #expect(report.devices.map(\.close?.transcriptName) == ["out-of-range", "out-of-range"])
        #expect(report.virtualDuration == .seconds(3))
    }

    @Test func declineIsScriptedAfterTheReactionTime() {
        let report = Simulation.run(
            scenario: pairScenario(distance: 7, consentB: .decline(after: .seconds(1)))
        ) {
            ToyDevice(context: $0)
        }
        #expect(report.devices.map(\.close?.transcriptName) == ["declined-by-peer", "declined-by-us"])
        let prompt = report.transcript.first { $0.contains("bob -> asks to share with alice") }
        let decision = report.transcript.first { $0.contains("bob <- user declines") }
        #expect(prompt != nil && decision != nil)
        #expect(report.abortedCount == 2)
    }

    @Test func ignoredPromptLeavesTheOtherSideToTimeOut() {
        let report = Simulation.run(scenario: pairScenario(distance: 7, consentB: .ignore)) {
            ToyDevice(context: $0)
        }
        #expect(!report.transcript.contains { $0.contains("bob <- user") })
        #expect(
            report.devices.map(\.close?.transcriptName) == ["timeout(no-exchange)", "timeout(no-exchange)"])
    }

    @Test func plaintextOnTheWireIsAViolation() {
        let report = Simulation.run(scenario: pairScenario(distance: 7)) {
            ToyDevice(context: $0, leaky: true)
        }
        #expect(report.violations.contains { $0.contains("alice sent alice's card name in the clear") })
    }

    @Test func repeatedViolationsAreCapped() {
        // Acknowledgements never arrive, so both leaky devices resend their cards until they give up.
        let options = SimulationOptions(impairment: { _, _, bytes, _ in bytes.first == 4 ? .drop : .pass })
        let report = Simulation.run(scenario: pairScenario(distance: 7), options: options) {
            ToyDevice(context: $0, leaky: true)
        }
        #expect(report.violations.count == 51)
        #expect(report.violations.last?.hasPrefix("and ") == true)
        #expect(report.violations.last?.hasSuffix(" more violations") == true)
    }

    @Test func alteredCardIsAViolation() {
        let report = Simulation.run(scenario: pairScenario(distance: 7)) {
            ToyDevice(context: $0, tamper: $0.index == 1)
        }
        #expect(report.violations.contains { $0.contains("bob received a card from alice that differs") })
        #expect(report.devices[1].cardMatchesSender == false)
    }

    @Test func oneSidedExchangeIsAViolation() {
        // Alice answers slowly but closes as soon as Bob's card arrives, so hers is never sent.
        var scenario = pairScenario(distance: 7)
        scenario.devices[0].consent = .accept(after: .seconds(2))
        let report = Simulation.run(scenario: scenario) { ToyDevice(context: $0, careless: $0.index == 0) }
        #expect(report.devices[0].exchanged)
        #expect(report.devices[1].receivedCard == nil)
        #expect(
            report.violations.contains(
                "alice closed as exchanged but bob never received alice's card, nor verified it"))
    }

    @Test func cardDeliveredOutOfRangeIsAViolation() {
        // Bob walks away right after the prompt; the toy device does not notice and finishes anyway.
        var scenario = pairScenario(distance: 7)
        scenario.devices[1].motion = [
            .hold(.milliseconds(250)), .move(to: Pose(x: 60, y: 0, heading: 180), over: .zero),
        ]
        let report = Simulation.run(scenario: scenario) { ToyDevice(context: $0) }
        #expect(report.violations.contains { $0.contains("card out of range: 60 cm") })
    }

    @Test func unclosedDevicesAreViolations() {
        var scenario = pairScenario(distance: 20)
        scenario.timeLimit = .seconds(1)
        let report = Simulation.run(scenario: scenario) { ToyDevice(context: $0) }
        #expect(report.unclosedCount == 2)
        #expect(report.violations.contains { $0.hasPrefix("alice did not close by t=1.000s") })
        let bounded = Simulation.run(
            scenario: pairScenario(distance: 20), options: SimulationOptions(closeBound: .seconds(2))
        ) {
            ToyDevice(context: $0)
        }
        #expect(bounded.violations.contains { $0.hasPrefix("alice closed at t=3.000s, after the bound") })
    }
}

/// The checker's close rule (PROTOCOL.md section 6.7), with two-phase toy devices: alice decides
/// one second after she holds bob's card and his acknowledgement, and tells bob with a one-shot
/// CLOSE; bob verifies and acknowledges alice's card but delivers it only on that CLOSE.
@Suite struct CloseRuleCheckTests {
    static func run(partition: Partition? = nil, bobIgnoresClose: Bool = false) -> SimulationReport {
        var scenario = pairScenario(distance: 7)
        scenario.faults.partitions = partition.map { [$0] } ?? []
        return Simulation.run(scenario: scenario) { context in
            var device = ToyDevice(context: context)
            device.twoPhase =
                context.index == 0
                ? (hold: .seconds(1), followsPeer: false, ignoresClose: false)
                : (hold: .zero, followsPeer: true, ignoresClose: bobIgnoresClose)
            return device
        }
    }

    /// When alice decides, in a run without faults (the runs below match it until their cut).
    static let decision: Instant = run().devices[0].closedAt!

    @Test func bothDeliverWhenTheCloseArrives() {
        let report = Self.run()
        #expect(report.violations == [])
        #expect(report.devices.map(\.close?.transcriptName) == ["exchanged", "exchanged"])
    }

    @Test func aCutForGoodAsAliceDecidesIsTheTwoGenerals() {
        let report = Self.run(partition: Partition(isolated: [1], start: Self.decision, end: nil))
        #expect(report.violations == [])
        #expect(report.devices[0].exchanged && !report.devices[1].exchanged)
        #expect(report.devices[1].receivedCard == nil)
        #expect(report.notes.count == 1)
        #expect(
            report.notes.first?.hasSuffix("(the two generals' problem, allowed by the close rule)") == true)
        #expect(report.outcomeLines.contains("note: \(report.notes.first ?? "")"))
    }

    @Test func aDecisionLongIntoTheCutIsAViolation() {
        let report = Self.run(
            partition: Partition(
                isolated: [1], start: Instant(nanoseconds: Self.decision.nanoseconds - 500_000_000), end: nil)
        )
        #expect(report.devices[0].exchanged)
        #expect(
            report.violations.contains {
                $0.hasPrefix("alice closed as exchanged but bob never received alice's card: alice decided")
                    && $0.hasSuffix("into a cut that never healed, without a fresh measurement of bob")
            })
    }

    @Test func aCutThatHealsExcusesNothing() {
        let report = Self.run(
            partition: Partition(isolated: [1], start: Self.decision, end: Self.decision + .milliseconds(500))
        )
        #expect(
            report.violations == [
                "alice closed as exchanged but bob never received alice's card, and no partition that never "
                    + "heals separated them"
            ])
    }

    @Test func aCloseThatArrivedExcusesNothing() {
        let report = Self.run(
            partition: Partition(isolated: [1], start: Self.decision + .milliseconds(100), end: nil),
            bobIgnoresClose: true)
        #expect(
            report.violations == [
                "alice closed as exchanged but bob never received alice's card, though alice's CLOSE(exchanged) "
                    + "reached bob before the cut"
            ])
    }
}

/// Short timers; their close bound (about 11 s) still covers the toy device's 3 s give-up.
private let toyTimeouts: Timeouts = {
    var timeouts = Timeouts()
    timeouts.overall = .milliseconds(100)
    timeouts.handshakeAttempts = 1
    timeouts.closeAttempts = 1
    timeouts.rangingWindow = .milliseconds(100)
    timeouts.consent = .milliseconds(100)
    timeouts.transfer = .milliseconds(100)
    timeouts.idle = .milliseconds(100)
    return timeouts
}()

@Suite struct SwarmLoopTests {
    @Test func wakingAtOneInstantForeverIsALivelock() {
        let counter = WakeCounter()
        let scenario = Scenario(
            seed: 1, timeLimit: .seconds(5),
            devices: [.init(name: "stuck", pose: Pose(x: 0, y: 0, heading: 0), card: card("Stuck"))])
        let report = Simulation.run(scenario: scenario) { _ in StuckDevice(counter: counter) }
        // Exactly the allowed number of events at the instant ran; the one after it did not.
        #expect(counter.wakes == 100_000)
        #expect(
            report.violations.first
                == "t=\(Instant.zero + .seconds(1)) livelock: more than 100000 events at one instant")
        #expect(report.virtualDuration == .seconds(1))
    }

    @Test func toySwarmIsDeterministicAndCounts() {
        let first = Swarm.run(runs: 20, seed: 77, timeouts: toyTimeouts) { ToyDevice(context: $0) }
        let second = Swarm.run(runs: 20, seed: 77, timeouts: toyTimeouts) { ToyDevice(context: $0) }
        #expect(first.lines == second.lines)
        #expect(
            first.lines.first == "swarm: seed=77 runs=20 close-bound=\(Instant.zero + toyTimeouts.closeBound)"
        )
        #expect(first.lines.last == first.summaryLine)
        #expect(first.runs.count == 20)
        #expect(first.runs[0].runSeed == 77)
        #expect(first.exchangedRuns + first.abortedRuns == 20)
        #expect(first.exchangedRuns > 0)
        #expect(
            first.summaryLine
                == "swarm: 20 runs, \(first.exchangedRuns) exchanged, \(first.abortedRuns) aborted, "
                + "\(first.violations.count) violations"
        )
    }

    @Test func aFailingRunNamesItsReproduction() {
        let report = Swarm.run(runs: 3, seed: 5, timeouts: toyTimeouts) {
            ToyDevice(context: $0, leaky: true)
        }
        #expect(!report.violations.isEmpty)
        let failing = report.runs.first { !$0.violations.isEmpty }
        let seed = try! #require(failing?.runSeed)
        #expect(report.lines.contains("  reproduce: profiledrop simulate --swarm --runs 1 --seed \(seed)"))
        let replay = Swarm.run(runs: 1, seed: seed, timeouts: toyTimeouts) {
            ToyDevice(context: $0, leaky: true)
        }
        #expect(replay.runs == [failing!])
        #expect(replay.lines.contains { $0.hasPrefix("  t=") })
    }

    @Test func plansDrawTheAdvertisedRanges() {
        for runSeed in Swarm.runSeeds(seed: 3, count: 200) {
            let plan = SwarmPlan(runSeed: runSeed, timeouts: toyTimeouts)
            let devices = plan.scenario.devices
            #expect((plan.crowded ? SwarmPlan.crowdedSizes : 2...6).contains(devices.count))
            #expect(plan.scenario.faults.lossRate <= 0.3)
            let pairA = devices[0].motionScript.finalPose
            let pairB = devices[1].motionScript.finalPose
            #expect((6...9).contains(pairA.distance(to: pairB)))
            #expect(pairA.bearing(to: pairB) <= 15.001 && pairB.bearing(to: pairA) <= 15.001)
            for bystander in devices.dropFirst(2) {
                let script = bystander.motionScript
                for tenth in 0...100 {
                    let pose = script.pose(at: Instant.zero + .milliseconds(100 * tenth))
                    #expect(pose.distance(to: pairA) >= 79.9 && pose.distance(to: pairB) >= 79.9)
                }
            }
            for partition in plan.scenario.faults.partitions {
                if let end = partition.end {
                    #expect(end - partition.start <= SwarmPlan.maximumTemporaryPartition)
                }
            }
        }
    }
}
