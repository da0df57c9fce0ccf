import ProfileDropCore
import ProfileDropSimulator
import Testing

@Suite("Proximity gate trials")
struct GateTrialsTests {
    @Test("The same seed gives the same report; another seed gives another")
    func determinism() {
        let first = GateTrials.run(trialsPerKind: 150, seed: 77)
        let second = GateTrials.run(trialsPerKind: 150, seed: 77)
        #expect(first == second)
        #expect(first.lines == second.lines)
        let other = GateTrials.run(trialsPerKind: 150, seed: 78)
        #expect(other.meanTimeToOpen != first.meanTimeToOpen)
    }

    @Test("2,000 trials of each kind meet the targets with the default model and gate")
    func meetsTargets() {
        let report = GateTrials.run(trialsPerKind: 2000, seed: 2026)
        #expect(report.results.map(\.kind) == GateQualityReport.Kind.allCases)
        #expect(report.results.allSatisfy { $0.trials == 2000 })
        for kind in [GateQualityReport.Kind.tooFar, .tooClose, .offAxis] {
            #expect(
                report.result(kind).failurePercent <= GateQualityReport.falseAcceptTargetPercent, "\(kind)")
        }
        #expect(report.falseAcceptPercent <= 0.1)
        #expect(report.falseRejectPercent <= 1.0)
        #expect(report.meanTimeToOpen >= 1.0 && report.meanTimeToOpen <= 2.0)
        #expect(report.meetsTargets, "\(report.lines.joined(separator: "\n"))")
    }

    @Test("A much noisier radio misses the targets, and the report says so")
    func detectsPoorRanging() {
        let noisy = MeasurementModel(distanceNoise: 3)
        let report = GateTrials.run(trialsPerKind: 300, seed: 5, model: noisy)
        #expect(report.result(.inRange).failures > 3)
        #expect(report.falseRejectPercent > 1.0)
        #expect(!report.meetsTargets)
        #expect(report.lines.last?.contains("MISSED") == true)
    }

    @Test("A gate without a bearing limit lets the off-axis trials through")
    func bearingLimitMatters() {
        var careless = ProximityGate.Configuration.default
        careless.maximumBearing = 180
        let report = GateTrials.run(trialsPerKind: 100, seed: 3, gate: careless)
        #expect(report.result(.offAxis).failures == 100)
        #expect(report.result(.tooFar).failures == 0)
    }

    @Test("Pairs held still in the band are not taken for a walk-away; a radio twice as noisy is")
    func heldPairsAreNotCancelledByNoise() {
        let report = GateTrials.run(trialsPerKind: 0, seed: 4, heldPairs: 120)
        #expect(report.held.map(\.distance) == GateTrials.heldDistances)
        #expect(report.held.allSatisfy { $0.pairs == 120 && $0.falseCancels == 0 }, "\(report.lines)")
        #expect(report.lines.contains { $0.contains("held 9 cm  120 pairs x 60 s (2 h)") })
        let noisy = GateTrials.run(
            trialsPerKind: 0, seed: 4, model: MeasurementModel(distanceNoise: 2.4), heldPairs: 120)
        #expect(noisy.held.allSatisfy { $0.falseCancels > 0 }, "\(noisy.lines)")
        #expect(noisy.lines.contains { $0.contains("false cancels (one per") })
    }

    @Test("The summary names every kind with its counts and both rates")
    func summaryLines() {
        let report = GateTrials.run(trialsPerKind: 40, seed: 1)
        let text = report.lines.joined(separator: "\n")
        for kind in GateQualityReport.Kind.allCases {
            #expect(text.contains(kind.rawValue))
        }
        #expect(text.contains("40 trials"))
        #expect(text.contains("false accept rate"))
        #expect(text.contains("false reject rate"))
        #expect(text.contains("seed 1"))
    }
}
