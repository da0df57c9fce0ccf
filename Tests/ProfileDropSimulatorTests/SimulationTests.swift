import Foundation
import ProfileDropCore
import Testing

@testable import ProfileDropSimulator

private func scenario(_ name: String) throws -> Scenario {
    try Scenario.load(contentsOf: scenariosDirectory + "/\(name).json")
}

private func reasons(_ report: SimulationReport) -> [String] {
    report.devices.map { $0.close?.transcriptName ?? "open" }
}

/// Runs with the real protocol core (`Device`), in virtual time.
@Suite struct SimulationTests {
    @Test func happyPairExchangesBothCards() throws {
        let report = Simulation.run(scenario: try scenario("happy-pair"))
        #expect(report.violations == [])
        #expect(reasons(report) == ["exchanged", "exchanged"])
        #expect(report.devices[0].receivedCard == report.scenario.devices[1].card)
        #expect(report.devices[1].receivedCard == report.scenario.devices[0].card)
        #expect(report.devices.map(\.receivedFrom) == ["bob", "alice"])
        #expect(report.devices.allSatisfy { $0.cardMatchesSender == true })
        #expect(report.network.totalSentDatagrams == report.devices.map(\.sentDatagrams).reduce(0, +))
        #expect(report.virtualDuration < .seconds(10))
        #expect(
            report.lines.first
                == "simulate: seed=1 devices=2 limit=\(Instant.zero + report.scenario.timeLimit) "
                + "pose-interval=50ms"
        )
        #expect(
            report.lines.last?.hasPrefix("summary: 2 devices, 2 exchanged, 0 aborted, 0 unclosed") == true)
    }

    @Test func aDeviceSwitchedOnLateHearsAndSendsNothingBefore() throws {
        var late = try scenario("happy-pair")
        late.devices[1].start = .seconds(6)
        late.timeLimit = .seconds(6) + late.timeouts.closeBound + .seconds(1)
        let alone = Simulation.run(scenario: try scenario("happy-pair"))
        let report = Simulation.run(scenario: late)
        #expect(report.violations == [])
        #expect(reasons(report) == ["exchanged", "exchanged"])
        // Until bob comes on, alice's beacons reach nobody who answers: the pair meets after 6 s.
        let closed = try #require(report.devices.compactMap(\.closedAt).max())
        let closedAlone = try #require(alone.devices.compactMap(\.closedAt).max())
        #expect(closed > Instant.zero + .seconds(6))
        #expect(closed - (Instant.zero + .seconds(6)) < (closedAlone - .zero) + .seconds(2))
        // Bob, off, received none of the beacons alice sent in the first 6 s (the only multicast
        // then), nor what she sent later and the network lost.
        let early = report.network.multicastPerSecond.prefix(6).reduce(0, +)
        let bob = try #require(report.devices[1].counters)
        #expect(early > 0)
        #expect(bob.datagramsReceived <= report.devices[0].sentDatagrams - early)
    }

    @Test func thirtyPercentLossStillCompletes() throws {
        let report = Simulation.run(scenario: try scenario("lossy-30"))
        #expect(report.violations == [])
        #expect(reasons(report) == ["exchanged", "exchanged"])
        #expect(report.network.lost > 0)
        #expect(report.network.duplicated > 0 || report.network.reordered > 0)
    }

    @Test func sameSeedSameTranscriptByteForByte() throws {
        let lossy = try scenario("lossy-30")
        let options = SimulationOptions(logDatagrams: true, verbose: true)
        let first = Simulation.run(scenario: lossy, options: options)
        let second = Simulation.run(scenario: lossy, options: options)
        #expect(
            first.lines.joined(separator: "\n").utf8.elementsEqual(second.lines.joined(separator: "\n").utf8))
        #expect(first.transcript.count > 50)
        let reseeded = Simulation.run(scenario: lossy, seed: 12_345, options: options)
        #expect(reseeded.transcript != first.transcript)
        #expect(reseeded.lines.first?.hasPrefix("simulate: seed=12345 ") == true)
    }

    @Test(arguments: ["out-of-range", "too-close", "misaligned"])
    func neverExchangesOutsideTheGate(name: String) throws {
        let report = Simulation.run(scenario: try scenario(name))
        #expect(report.violations == [])
        #expect(report.exchangedCount == 0)
        #expect(report.devices.allSatisfy { $0.receivedCard == nil && $0.close != nil })
        #expect(!report.transcript.contains { $0.contains("card received") || $0.contains("asks to share") })
    }

    @Test func declineClosesBothWithoutCards() throws {
        let report = Simulation.run(scenario: try scenario("declined"))
        #expect(report.violations == [])
        #expect(reasons(report) == ["declined-by-peer", "declined-by-us"])
        #expect(report.devices.allSatisfy { $0.receivedCard == nil })
        #expect(report.transcript.contains { $0.hasSuffix("bob <- user declines") })
    }

    @Test func crossedInvitationsSettleOnOneSession() throws {
        // A 350 ms link makes both devices invite before either invitation arrives.
        let report = Simulation.run(scenario: try scenario("simultaneous-invite"))
        #expect(report.violations == [])
        #expect(report.transcript.contains { $0.contains("alice -> inviting bob") })
        #expect(report.transcript.contains { $0.contains("bob -> inviting alice") })
        #expect(reasons(report) == ["exchanged", "exchanged"])
        #expect(report.transcript.filter { $0.contains("card received") }.count == 2)
        // Every session both sides verified is the same session: its code appears exactly twice.
        let codes = report.transcript.compactMap { line -> String? in
            guard line.contains("-> verified"), let range = line.range(of: "code ") else { return nil }
            return String(line[range.upperBound...].prefix(6))
        }
        #expect(!codes.isEmpty)
        #expect(codes.allSatisfy { code in codes.filter { $0 == code }.count == 2 })
    }

    @Test func pairsStartedTogetherAlwaysExchange() {
        for seed in UInt64(1)...8 {
            let report = Simulation.run(
                scenario: SimulationBenchmark.pairScenario(photoBytes: nil), seed: seed)
            #expect(report.violations == [], "seed \(seed)")
            #expect(reasons(report) == ["exchanged", "exchanged"], "seed \(seed)")
        }
    }

    @Test func crowdedRoomOnlyTheClosePairExchanges() throws {
        let report = Simulation.run(scenario: try scenario("crowded-room-20"))
        #expect(report.violations == [])
        #expect(report.devices.count == 20)
        #expect(report.devices.filter(\.exchanged).map(\.name) == ["alice", "bob"])
        #expect(report.devices.dropFirst(2).allSatisfy { $0.receivedCard == nil && $0.close != nil })
        #expect(report.unclosedCount == 0)
    }

    @Test func fullSizePhotosCrossALossyLink() throws {
        let report = Simulation.run(scenario: try scenario("walk-in-photo"))
        #expect(report.violations == [])
        #expect(reasons(report) == ["exchanged", "exchanged"])
        #expect(report.devices[0].receivedCard?.photo?.data.count == ProfileCard.Limits.photoBytes)
        #expect(report.network.totalSentBytes > 2 * ProfileCard.Limits.photoBytes)
    }

    @Test func walkingAwayMidTransferCancelsTheExchange() throws {
        // Bob leaves 80 cm away while 256 KiB photos are in flight: both devices cancel.
        let report = Simulation.run(scenario: try scenario("walk-away"))
        #expect(report.violations == [])
        #expect(reasons(report) == ["out-of-range", "out-of-range"])
        #expect(report.devices.allSatisfy { $0.receivedCard == nil })
        #expect(report.transcript.contains { $0.contains("alice -> exchanging 0/") })
        #expect(report.transcript.contains { $0.hasSuffix("session with alice ended: out of range") })
        #expect(!report.transcript.contains { $0.contains("card received") })
    }

    @Test func unclosedAtTheLimitIsReported() throws {
        var outOfRange = try scenario("out-of-range")
        outOfRange.timeLimit = .seconds(5)
        let report = Simulation.run(scenario: outOfRange)
        #expect(report.unclosedCount == 2)
        #expect(report.violations.contains { $0.hasPrefix("alice did not close by t=5.000s") })
    }

    @Test func benchmarkCountsTraffic() {
        let result = SimulationBenchmark.run(exchanges: 2, seed: 1, cpuTime: { 0 })
        #expect(result.completed == 2)
        #expect(result.datagramsPerExchange > 10)
        #expect(result.bytesPerExchange > 500)
        #expect(result.line.hasPrefix("bench simulate (no photo): 2/2 exchanged, "))
    }

    @Test func benchmarkLeavesTheWorkBetweenExchangesOutOfTheirTime() {
        // A fake clock: each reading advances it by 1 s, and the work between exchanges by 100 s.
        var clock = 0.0
        var calls = 0
        let result = SimulationBenchmark.run(
            exchanges: 3, seed: 1,
            cpuTime: {
                clock += 1
                return clock
            },
            between: {
                calls += 1
                clock += 100
            })
        #expect(calls == 3)
        #expect(result.cpuSeconds == 3)
    }
}
