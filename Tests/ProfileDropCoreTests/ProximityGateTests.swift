import ProfileDropCrypto
import Testing

@testable import ProfileDropCore

private let interval = MeasurementModel.default.sampleInterval

private func seconds(_ value: Double) -> Instant {
    Instant(nanoseconds: UInt64(value * 1e9))
}

/// Feeds `gate` the model's view of `peer` from `device` every sample interval in `[from, until]`
/// and returns every state the gate was in, with its time.
@discardableResult
private func run(
    _ gate: inout ProximityGate, device: MotionScript, peer: MotionScript, from start: Instant = .zero,
    until end: Instant, model: MeasurementModel, random: inout DeterministicRandom
) -> [(Instant, ProximityGate.State)] {
    var history: [(Instant, ProximityGate.State)] = []
    var now = start
    while now <= end {
        let sample = model.sample(
            truePose: device.pose(at: now), peerPose: peer.pose(at: now), random: &random)
        gate.add(sample, at: now)
        history.append((now, gate.state))
        now = now + interval
    }
    return history
}

/// A device at the origin turned `bearing` away from a peer `distance` cm along +x.
private func pair(distance: Double, bearing: Double = 0) -> (MotionScript, MotionScript) {
    (
        MotionScript(from: Pose(x: 0, y: 0, heading: bearing)),
        MotionScript(from: Pose(x: distance, y: 0, heading: 180))
    )
}

private func firstOpening(_ history: [(Instant, ProximityGate.State)]) -> Instant? {
    history.first { entry in
        if case .inRange = entry.1 { return true }
        return false
    }?.0
}

@Suite("Proximity gate")
struct ProximityGateTests {
    /// The filtered estimate, recomputed from the window by sorting, matches the gate's (whose
    /// medians come from a transposition network) exactly, ties and even windows included. The
    /// samples stay out of the band, so the gate keeps searching and shows every estimate.
    @Test func theEstimateIsTheMedianCentredMeanOfTheWindow() {
        let configuration = ProximityGate.Configuration.default
        var gate = ProximityGate(configuration: configuration)
        var random = DeterministicRandom(seed: 20_261_201)
        var window: [(time: Instant, sample: RangingSample)] = []
        var compared = 0
        for step in 0..<2_000 {
            let now = Instant(nanoseconds: UInt64(step) * 90_000_000)
            // Coarse values, so that ties are common; a dropout now and then.
            let sample: RangingSample? =
                random.uniform(below: 10) == 0
                ? nil
                : RangingSample(
                    distance: 20 + Double(random.uniform(below: 16)) / 2,
                    bearing: Double(random.uniform(below: 20)) * 3)
            gate.add(sample, at: now)
            window.removeAll {
                now.nanoseconds >= configuration.window.nanosecondsClamped
                    && $0.time.nanoseconds <= now.nanoseconds - configuration.window.nanosecondsClamped
            }
            if let sample { window.append((now, sample)) }
            #expect(!gate.isOpen)
            #expect(gate.estimate == Self.reference(window.map(\.sample), configuration), "step \(step)")
            if gate.estimate != nil { compared += 1 }
        }
        #expect(compared > 1_000)
    }

    private static func reference(_ samples: [RangingSample], _ configuration: ProximityGate.Configuration)
        -> ProximityGate.Estimate?
    {
        guard samples.count >= configuration.minimumSamples else { return nil }
        func median(_ values: [Double]) -> Double {
            let sorted = values.sorted()
            let middle = sorted.count / 2
            return sorted.count % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
        }
        let medianDistance = median(samples.map(\.distance))
        let medianBearing = median(samples.map(\.bearing))
        let inliers = samples.filter {
            abs($0.distance - medianDistance) <= configuration.outlierDistance
                && abs($0.bearing - medianBearing) <= configuration.outlierBearing
        }
        guard inliers.count >= configuration.minimumSamples else { return nil }
        var distanceSum = 0.0
        var bearingSum = 0.0
        for inlier in inliers {
            distanceSum += inlier.distance
            bearingSum += inlier.bearing
        }
        return ProximityGate.Estimate(
            distance: distanceSum / Double(inliers.count), bearing: bearingSum / Double(inliers.count),
            sampleCount: inliers.count)
    }

    @Test("The leaving band is the band widened by three hysteresis margins: 3.5-11.5 cm and 45 degrees")
    func leavingBand() {
        let gate = ProximityGate()
        for (distance, bearing, outside) in [
            (7.0, 0.0, false), (11.4, 0.0, false), (11.6, 0.0, true), (3.6, 0.0, false), (3.4, 0.0, true),
            (7.0, 44.0, false), (7.0, 46.0, true), (10.8, 38.0, false),
        ] {
            #expect(
                gate.isOutsideLeavingBand(RangingSample(distance: distance, bearing: bearing)) == outside,
                "\(distance) cm, \(bearing)°")
        }
        #expect(ProximityGate.leavingSamples == 6)
    }

    @Test("Exact samples at 7 cm: searching, then dwelling at 0.5 s, open at 1.0 s")
    func opensAfterDwell() throws {
        var gate = ProximityGate()
        var random = DeterministicRandom(seed: 1)
        let (device, peer) = pair(distance: 7, bearing: 10)
        let history = run(
            &gate, device: device, peer: peer, until: seconds(1.5), model: .exact, random: &random)

        // Five samples are needed for an estimate: t = 0, 0.125, ..., 0.5.
        for (time, state) in history where time < seconds(0.5) {
            #expect(state == .searching(.init(estimate: nil)))
        }
        let estimate = ProximityGate.Estimate(distance: 7, bearing: 10, sampleCount: 5)
        #expect(history[4].1 == .dwelling(.init(since: seconds(0.5), estimate: estimate)))
        #expect(firstOpening(history) == seconds(1.0))
        guard case .inRange(let open) = gate.state else {
            Issue.record("gate not open: \(gate.state)")
            return
        }
        #expect(open.since == seconds(1.0))
        #expect(gate.isOpen)
        let current = try #require(gate.estimate)
        #expect(abs(current.distance - 7) < 1e-9)
        #expect(current.sampleCount == 8)  // The one-second window holds eight rounds.
    }

    @Test(
        "Held still out of bounds, the gate never opens",
        arguments: [(13.0, 0.0), (2.0, 0.0), (7.5, 45.0), (30.0, 0.0)]
    )
    func staysShut(distance: Double, bearing: Double) {
        let (device, peer) = pair(distance: distance, bearing: bearing)
        for (seed, model) in [(0, MeasurementModel.exact), (1, .default), (2, .default), (3, .default)] {
            var gate = ProximityGate()
            var random = DeterministicRandom(seed: UInt64(seed))
            let history = run(
                &gate, device: device, peer: peer, until: seconds(10), model: model, random: &random)
            #expect(firstOpening(history) == nil, "opened at \(distance) cm, \(bearing) deg, seed \(seed)")
            #expect(gate.estimate != nil)
        }
    }

    @Test("Held at 6-9 cm facing within 20 degrees under the default model, the gate opens within 2 s")
    func opensUnderNoise() {
        var random = DeterministicRandom(seed: 42)
        for trial in 0..<50 {
            let distance = 6 + 3 * random.unitDouble()
            let bearing = 20 * random.unitDouble()
            let (device, peer) = pair(distance: distance, bearing: bearing)
            var gate = ProximityGate()
            let history = run(
                &gate, device: device, peer: peer, until: seconds(3), model: .default, random: &random)
            let opened = firstOpening(history)
            #expect(opened != nil && opened! <= seconds(2), "trial \(trial): \(distance) cm, \(bearing) deg")
        }
    }

    @Test("An open gate closes once the devices are pulled apart, and a gate on the way past does not open")
    func closesWhenMovedAway() {
        let device = MotionScript(from: Pose(x: 0, y: 0, heading: 0))
        let peer = MotionScript(
            from: Pose(x: 8, y: 0, heading: 180),
            steps: [.hold(.seconds(2)), .move(to: Pose(x: 40, y: 0, heading: 180), over: .seconds(1))])
        var gate = ProximityGate()
        var random = DeterministicRandom(seed: 9)
        let history = run(
            &gate, device: device, peer: peer, until: seconds(5), model: .default, random: &random)
        #expect(firstOpening(history) != nil)
        // The peer leaves the hysteresis band (10.5 cm) at about t = 2.08 s.
        let closed = history.first { entry in
            guard entry.0 > seconds(2) else { return false }
            if case .searching = entry.1 { return true }
            return false
        }?.0
        #expect(closed != nil && closed! <= seconds(2.75), "closed at \(String(describing: closed))")
        #expect(!gate.isOpen)

        // Swinging through the band in under the dwell time never opens the gate.
        let passing = MotionScript(
            from: Pose(x: 40, y: 0, heading: 180),
            steps: [
                .move(to: Pose(x: 4, y: 0, heading: 180), over: .milliseconds(600)),
                .move(to: Pose(x: 40, y: 0, heading: 180), over: .milliseconds(600)),
            ])
        var passingGate = ProximityGate()
        let passingHistory = run(
            &passingGate, device: device, peer: passing, until: seconds(3), model: .exact, random: &random)
        #expect(firstOpening(passingHistory) == nil)
    }

    @Test("Reflections are rejected: every third sample 25 cm long does not stop the gate")
    func rejectsOutliers() throws {
        var gate = ProximityGate()
        var now = Instant.zero
        for round in 0..<12 {
            let reflected = round % 3 == 2
            gate.add(RangingSample(distance: reflected ? 33 : 8, bearing: reflected ? 90 : 5), at: now)
            now = now + interval
        }
        #expect(gate.isOpen)
        let estimate = try #require(gate.estimate)
        #expect(estimate.distance == 8)
        #expect(estimate.bearing == 5)
    }

    @Test("Hysteresis keeps a gate open just outside the band and closes it further out")
    func hysteresis() {
        var gate = ProximityGate()
        var now = Instant.zero
        func feed(_ distance: Double, rounds: Int) {
            for _ in 0..<rounds {
                gate.add(RangingSample(distance: distance, bearing: 0), at: now)
                now = now + interval
            }
        }
        feed(9.8, rounds: 10)
        #expect(gate.isOpen)
        feed(10.4, rounds: 16)
        #expect(gate.isOpen)
        feed(11, rounds: 16)
        #expect(!gate.isOpen)
        // A fresh approach at 10.4 cm does not start a dwell: entering needs the band itself.
        var fresh = ProximityGate()
        for round in 0..<16 {
            fresh.add(RangingSample(distance: 10.4, bearing: 0), at: seconds(Double(round) * 0.125))
        }
        #expect(fresh.state == .searching(.init(estimate: fresh.estimate)))
        #expect(fresh.estimate != nil)
    }

    @Test("A dwell interrupted before it completes starts over")
    func dwellRestarts() {
        var gate = ProximityGate()
        var now = Instant.zero
        for distance in [8.0, 8, 8, 8, 8, 8, 8] + Array(repeating: 30.0, count: 8)
            + Array(repeating: 8.0, count: 12)
        {
            gate.add(RangingSample(distance: distance, bearing: 0), at: now)
            if case .dwelling(let dwelling) = gate.state, dwelling.since > seconds(1) {
                #expect(!gate.isOpen)
            }
            now = now + interval
        }
        #expect(gate.isOpen)
        guard case .inRange(let open) = gate.state else { return }
        #expect(open.since > seconds(2))
    }

    @Test(
        "Dropouts: a few keep an open gate open, a silent window closes it; nothing but dropouts never opens")
    func dropouts() {
        var gate = ProximityGate()
        var now = Instant.zero
        for _ in 0..<12 {
            gate.add(RangingSample(distance: 7, bearing: 0), at: now)
            now = now + interval
        }
        #expect(gate.isOpen)
        for _ in 0..<4 {
            gate.add(nil, at: now)
            now = now + interval
        }
        #expect(gate.isOpen)
        for _ in 0..<4 {
            gate.add(nil, at: now)
            now = now + interval
        }
        #expect(!gate.isOpen)
        #expect(gate.estimate == nil)

        var silent = ProximityGate()
        for round in 0..<40 { silent.add(nil, at: seconds(Double(round) * 0.125)) }
        #expect(silent.state == .searching(.init(estimate: nil)))
    }

    @Test("A flood of rounds within one window keeps only the latest samples")
    func boundedSamples() throws {
        var gate = ProximityGate()
        for round in 0..<1000 {
            let distance = round < 900 ? 30.0 : 7.0
            gate.add(
                RangingSample(distance: distance, bearing: 0), at: Instant(nanoseconds: UInt64(round) * 1000))
        }
        let estimate = try #require(gate.estimate)
        #expect(estimate.sampleCount <= ProximityGate.sampleCapacity)
        #expect(estimate.distance == 7)
    }

    @Test("Reset forgets samples and state")
    func reset() {
        var gate = ProximityGate()
        for round in 0..<12 {
            gate.add(RangingSample(distance: 7, bearing: 0), at: seconds(Double(round) * 0.125))
        }
        #expect(gate.isOpen)
        gate.reset()
        #expect(gate.state == .searching(.init(estimate: nil)))
        #expect(gate.lastUpdate == nil)
        gate.add(RangingSample(distance: 7, bearing: 0), at: .zero)
        #expect(gate.estimate == nil)
    }
}
