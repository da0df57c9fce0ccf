import Foundation
import ProfileDropCore
import ProfileDropCrypto

/// The outcome of `GateTrials.run`: how often the proximity gate opened when it should not have
/// (false accept) and stayed shut when it should have opened (false reject).
public struct GateQualityReport: Equatable, Sendable {
    /// One kind of trial and what it measures.
    public enum Kind: String, CaseIterable, Equatable, Sendable {
        /// Held still for 5 s at exactly 13 cm, facing each other: must not open.
        case tooFar = "too-far"
        /// Held still for 5 s at exactly 2 cm, facing each other: must not open.
        case tooClose = "too-close"
        /// Held still for 5 s at 6–9 cm, both devices turned exactly 45° away: must not open.
        case offAxis = "off-axis"
        /// Held at 6–9 cm with bearings of 0–20°: both gates must open within 2 s.
        case inRange = "in-range"

        /// Whether a failure of this kind is a false accept (otherwise a false reject).
        public var isFalseAcceptTrial: Bool {
            switch self {
            case .tooFar, .tooClose, .offAxis: return true
            case .inRange: return false
            }
        }
    }

    /// The counts for one kind.
    public struct KindResult: Equatable, Sendable {
        /// The kind of trial.
        public var kind: Kind
        /// Trials run.
        public var trials: Int
        /// Trials that failed: the gate opened (false accept kinds) or did not (in-range).
        public var failures: Int

        /// Failures as a percentage of trials.
        public var failurePercent: Double { trials == 0 ? 0 : 100 * Double(failures) / Double(trials) }
    }

    /// Largest acceptable false accept rate, percent.
    public static let falseAcceptTargetPercent = 0.1
    /// Largest acceptable false reject rate, percent.
    public static let falseRejectTargetPercent = 1.0

    /// The seed the trials were drawn from.
    public var seed: UInt64
    /// The measurement model the trials sampled.
    public var model: MeasurementModel
    /// The gate tuning under test.
    public var gate: ProximityGate.Configuration
    /// Results per kind, in `Kind.allCases` order.
    public var results: [KindResult]
    /// Mean time from the start of an in-range trial until both gates were open, over the trials
    /// that opened, in seconds.
    public var meanTimeToOpen: Double
    /// Pairs held still after their gates opened, and how many of them a false cancel ended.
    public var held: [HeldResult] = []

    /// Pairs held still in the band, as a user holds two devices together: how often the leaving
    /// rule (PROTOCOL.md 6.7) took noise for a walk-away.
    public struct HeldResult: Equatable, Sendable {
        /// The distance the pairs were held at, in centimetres.
        public var distance: Double
        /// Pairs held, each for ``GateTrials/heldTime``.
        public var pairs: Int
        /// Pairs in which a device saw the peer leave.
        public var falseCancels: Int

        /// Hours of holding.
        public var hours: Double { Double(pairs) * GateTrials.heldTime.secondsDouble / 3600 }
    }

    /// The result for `kind`.
    public func result(_ kind: Kind) -> KindResult {
        results.first { $0.kind == kind } ?? KindResult(kind: kind, trials: 0, failures: 0)
    }

    /// False accepts over all false-accept trials, percent.
    public var falseAcceptPercent: Double {
        Self.percent(results.filter { $0.kind.isFalseAcceptTrial })
    }

    /// False rejects over all in-range trials, percent.
    public var falseRejectPercent: Double {
        Self.percent(results.filter { !$0.kind.isFalseAcceptTrial })
    }

    /// Whether every false-accept kind, the false-accept total and the false-reject rate are
    /// within target.
    public var meetsTargets: Bool {
        results.allSatisfy { result in
            result.failurePercent
                <= (result.kind.isFalseAcceptTrial
                    ? Self.falseAcceptTargetPercent : Self.falseRejectTargetPercent)
        }
    }

    /// A human summary, one line per kind and one per rate.
    public var lines: [String] {
        let band = gate.distanceBand
        var lines = [
            "proximity gate trials, seed \(seed)",
            "  model: distance sigma \(model.distanceNoise) cm, bearing sigma \(model.bearingNoise) deg, "
                + "outliers \(model.outlierProbability * 100)%, dropouts \(model.dropoutProbability * 100)%, "
                + "\(model.sampleRate) Hz",
            "  gate: \(band.lowerBound)-\(band.upperBound) cm, bearing <= \(gate.maximumBearing) deg, "
                + "dwell \(gate.dwellTime.secondsDouble) s, window \(gate.window.secondsDouble) s",
        ]
        for result in results {
            let role = result.kind.isFalseAcceptTrial ? "opened" : "stayed shut"
            let name = result.kind.rawValue.padding(toLength: 10, withPad: " ", startingAt: 0)
            lines.append(
                "  \(name) \(result.trials) trials, \(result.failures) \(role) "
                    + "(\(String(format: "%.3f", result.failurePercent))%)")
        }
        lines.append(
            String(
                format: "  false accept rate %.3f%% (target <= %.1f%%)", falseAcceptPercent,
                Self.falseAcceptTargetPercent))
        lines.append(
            String(
                format: "  false reject rate %.3f%% (target <= %.1f%%), mean time to open %.2f s",
                falseRejectPercent, Self.falseRejectTargetPercent, meanTimeToOpen))
        for result in held {
            let rate =
                result.falseCancels == 0
                ? "" : String(format: " (one per %.0f h)", result.hours / Double(result.falseCancels))
            lines.append(
                String(
                    format:
                        "  held %.0f cm  %d pairs x %.0f s (%.0f h), %.0f%% of rounds failing: %d false cancels%@",
                    result.distance, result.pairs, GateTrials.heldTime.secondsDouble, result.hours,
                    GateTrials.heldFailedRounds * 100, result.falseCancels, rate))
        }
        lines.append(meetsTargets ? "  targets met" : "  TARGETS MISSED")
        return lines
    }

    private static func percent(_ results: [KindResult]) -> Double {
        let trials = results.reduce(0) { $0 + $1.trials }
        let failures = results.reduce(0) { $0 + $1.failures }
        return trials == 0 ? 0 : 100 * Double(failures) / Double(trials)
    }
}

/// Monte Carlo trials of the proximity gate under the measurement model, in virtual time.
///
/// Each trial places two devices, A at the origin and B along +x, and runs one gate per device,
/// each fed its own independent noisy measurements at the model's sample rate from t = 0. Trials are
/// judged at the pair level, the stricter way in both directions: a false accept is either gate
/// opening, a false reject is not both gates being open by 2 s.
///
/// False-accept trials sit exactly on the boundary of their condition (13 cm, 2 cm, 45°) with the
/// other quantities at their most favourable to opening (bearing 0° for the distance kinds), because
/// the boundary is the hardest case: anything beyond it is easier to reject.
public enum GateTrials {
    /// How long false-accept trials hold the devices still.
    public static let holdTime: Duration = .seconds(5)
    /// How long in-range trials allow for both gates to open.
    public static let openDeadline: Duration = .seconds(2)
    /// How long a held pair stays still.
    public static let heldTime: Duration = .seconds(60)
    /// The distances pairs are held at: 1 cm inside each end of the band, where noise crosses the
    /// leaving band most often (the swarm holds pairs at 6–9 cm).
    public static let heldDistances: [Double] = [6, 9]
    /// The share of a held pair's rounds that fail on top of the model's dropouts, as on a lossy
    /// link, which starves the gate of samples.
    public static let heldFailedRounds = 0.2

    /// Runs `trialsPerKind` trials of each `GateQualityReport.Kind`. The same arguments always give
    /// the same report: each kind draws from its own `DeterministicRandom` derived from `seed`.
    ///
    /// `heldPairs` pairs are also held still at each of ``heldDistances`` for ``heldTime``, facing
    /// each other, each device measuring and watching for the peer leaving as a session does; the
    /// report counts the pairs a device wrongly saw leave.
    public static func run(
        trialsPerKind: Int, seed: UInt64, model: MeasurementModel = .default,
        gate: ProximityGate.Configuration = .default, heldPairs: Int = 0
    ) -> GateQualityReport {
        precondition(trialsPerKind >= 0 && heldPairs >= 0, "trial count must not be negative")
        var results: [GateQualityReport.KindResult] = []
        var openTimeSum = 0.0
        var openedCount = 0
        for kind in GateQualityReport.Kind.allCases {
            var random = DeterministicRandom(seedMaterial: seedMaterial(seed: seed, kind: kind))
            var failures = 0
            for _ in 0..<trialsPerKind {
                let (deviceA, deviceB) = placement(for: kind, random: &random)
                let limit = kind.isFalseAcceptTrial ? holdTime : openDeadline
                let opened = runTrial(
                    deviceA, deviceB, until: limit, stopWhen: kind.isFalseAcceptTrial ? .either : .both,
                    model: model, gate: gate, random: &random)
                if kind.isFalseAcceptTrial {
                    if opened != nil { failures += 1 }
                } else if let opened {
                    openTimeSum += opened.seconds
                    openedCount += 1
                } else {
                    failures += 1
                }
            }
            results.append(.init(kind: kind, trials: trialsPerKind, failures: failures))
        }
        var report = GateQualityReport(
            seed: seed, model: model, gate: gate, results: results,
            meanTimeToOpen: openedCount == 0 ? 0 : openTimeSum / Double(openedCount))
        guard heldPairs > 0 else { return report }
        for distance in heldDistances {
            var random = DeterministicRandom(
                seedMaterial: seedMaterial(seed: seed, label: Array("gate trials held \(distance)".utf8)))
            var falseCancels = 0
            let deviceA = Pose(x: 0, y: 0, heading: 0)
            let deviceB = Pose(x: distance, y: 0, heading: 180)
            for _ in 0..<heldPairs {
                if holdEndsInACancel(deviceA, deviceB, model: model, gate: gate, random: &random) {
                    falseCancels += 1
                }
            }
            report.held.append(.init(distance: distance, pairs: heldPairs, falseCancels: falseCancels))
        }
        return report
    }

    /// Holds a pair still for ``heldTime``: whether either device saw the peer leave after its gate
    /// had opened (the gate closed, and the last ``ProximityGate/leavingSamples`` measurements lay
    /// outside the leaving band).
    private static func holdEndsInACancel(
        _ deviceA: Pose, _ deviceB: Pose, model: MeasurementModel,
        gate configuration: ProximityGate.Configuration, random: inout DeterministicRandom
    ) -> Bool {
        var gates = [
            ProximityGate(configuration: configuration), ProximityGate(configuration: configuration),
        ]
        var opened = [false, false]
        var outside = [0, 0]
        let poses = [(deviceA, deviceB), (deviceB, deviceA)]
        let end = Instant.zero + heldTime
        var now = Instant.zero
        while now <= end {
            for device in 0..<2 {
                let fails = random.unitDouble() < heldFailedRounds
                let measured = model.sample(
                    truePose: poses[device].0, peerPose: poses[device].1, random: &random)
                let sample = fails ? nil : measured
                gates[device].add(sample, at: now)
                if let sample {
                    outside[device] = gates[device].isOutsideLeavingBand(sample) ? outside[device] + 1 : 0
                }
                if gates[device].isOpen { opened[device] = true }
                if opened[device] && !gates[device].isOpen && outside[device] >= ProximityGate.leavingSamples
                {
                    return true
                }
            }
            now = now + model.sampleInterval
        }
        return false
    }

    private enum Criterion {
        case either
        case both
    }

    private static func seedMaterial(seed: UInt64, kind: GateQualityReport.Kind) -> [UInt8] {
        seedMaterial(seed: seed, label: Array("gate trials ".utf8) + Array(kind.rawValue.utf8) + [0])
    }

    /// `label` followed by the seed's bytes, most significant first.
    private static func seedMaterial(seed: UInt64, label: [UInt8]) -> [UInt8] {
        var material = label
        for shift in stride(from: 56, through: 0, by: -8) {
            material.append(UInt8(truncatingIfNeeded: seed >> shift))
        }
        return material
    }

    /// Two poses for a trial of `kind`: A at the origin, B on the +x axis, each turned by its own
    /// bearing (on opposite sides, so the pair is not simply rotated).
    private static func placement(
        for kind: GateQualityReport.Kind, random: inout DeterministicRandom
    ) -> (Pose, Pose) {
        let distance: Double
        let bearingA: Double
        let bearingB: Double
        switch kind {
        case .tooFar:
            distance = 13
            bearingA = 0
            bearingB = 0
        case .tooClose:
            distance = 2
            bearingA = 0
            bearingB = 0
        case .offAxis:
            distance = 6 + 3 * random.unitDouble()
            bearingA = 45
            bearingB = 45
        case .inRange:
            distance = 6 + 3 * random.unitDouble()
            bearingA = 20 * random.unitDouble()
            bearingB = 20 * random.unitDouble()
        }
        return (Pose(x: 0, y: 0, heading: bearingA), Pose(x: distance, y: 0, heading: 180 + bearingB))
    }

    /// Runs both gates from t = 0 to `limit` and returns when `criterion` was first met, or nil.
    private static func runTrial(
        _ deviceA: Pose, _ deviceB: Pose, until limit: Duration, stopWhen criterion: Criterion,
        model: MeasurementModel, gate configuration: ProximityGate.Configuration,
        random: inout DeterministicRandom
    ) -> Instant? {
        var gateA = ProximityGate(configuration: configuration)
        var gateB = ProximityGate(configuration: configuration)
        let end = Instant.zero + limit
        let step = model.sampleInterval
        var now = Instant.zero
        while now <= end {
            gateA.add(model.sample(truePose: deviceA, peerPose: deviceB, random: &random), at: now)
            gateB.add(model.sample(truePose: deviceB, peerPose: deviceA, random: &random), at: now)
            switch criterion {
            case .either:
                if gateA.isOpen || gateB.isOpen { return now }
            case .both:
                if gateA.isOpen && gateB.isOpen { return now }
            }
            now = now + step
        }
        return nil
    }
}
