import ProfileDropCrypto
import Testing

@testable import ProfileDropCore

/// Discovery's host reputation alone (PROTOCOL.md 5, "Faulty hosts"): back-offs per host that double
/// per fault, failed sessions per host, and both tables bounded.
@Suite struct HostReputationTests {
    static func context(at seconds: Double = 1) -> SessionContext {
        var context = SessionContext(
            configuration: Fixtures.configuration("Bori", seed: 3), deviceID: DeviceID(rawValue: 99),
            random: DeterministicRandom(seed: 3), measurementNoise: DeterministicRandom(seed: 3), now: .zero,
            pose: Pose(x: 0, y: 0, heading: 0))
        context.now = Instant.zero + .seconds(seconds)
        return context
    }

    @Test func aFaultBacksOffFromTheHostWhateverThePortAndTheBackOffDoubles() {
        var context = Self.context()
        var reputation = HostReputation()
        let faulty = PeerAddress(10, 0, 0, 7, port: 4000)
        let base = context.timeouts.retryBackoff
        reputation.peerFaulted(at: faulty, context: &context)
        let first = context.now
        #expect(reputation.isBackingOff(fromHost: faulty.ipv4, now: first + base * 0.79))
        #expect(!reputation.isBackingOff(fromHost: faulty.ipv4, now: first + base * 1.21))
        #expect(!reputation.isBackingOff(fromHost: PeerAddress(10, 0, 0, 8, port: 4000).ipv4, now: first))
        #expect(reputation.backoffEnd(faulty.ipv4) > first)
        #expect(reputation.backoffEnd(PeerAddress(10, 0, 0, 8, port: 4000).ipv4) == .zero)
        context.now = first + base * 1.5
        reputation.peerFaulted(at: PeerAddress(ipv4: faulty.ipv4, port: 5000), context: &context)
        #expect(reputation.faultyHosts.count == 1 && reputation.faultyHosts[0].faults == 2)
        #expect(reputation.isBackingOff(fromHost: faulty.ipv4, now: context.now + base * 1.59))
        #expect(!reputation.isBackingOff(fromHost: faulty.ipv4, now: context.now + base * 2.41))
    }

    @Test func aFullTableOfFaultsForgetsTheBackOffThatEndsFirst() {
        var context = Self.context()
        var reputation = HostReputation()
        let longest = PeerAddress(10, 0, 0, 7, port: 4000)
        for _ in 0..<3 { reputation.peerFaulted(at: longest, context: &context) }
        for host in 1...(context.limits.maxFaultyHosts + 3) {
            reputation.peerFaulted(at: PeerAddress(10, 1, 0, UInt8(host), port: 4000), context: &context)
        }
        #expect(reputation.faultyHosts.count == context.limits.maxFaultyHosts)
        #expect(reputation.isBackingOff(fromHost: longest.ipv4, now: context.now))
    }

    @Test func failedSessionsCountPerHostAndTheRefusalRuleTakesTheMoreOfIdAndHost() {
        let context = Self.context()
        var reputation = HostReputation()
        let host = PeerAddress(10, 0, 0, 9, port: 4000)
        #expect(reputation.failedSessions(atHost: host.ipv4) == 0)
        reputation.hostSessionFailed(at: host, context: context)
        reputation.hostSessionFailed(at: PeerAddress(ipv4: host.ipv4, port: 6000), context: context)
        #expect(reputation.failedSessions(atHost: host.ipv4) == 2)
        #expect(reputation.countedFailures(1, atHost: host.ipv4) == 2)
        #expect(reputation.countedFailures(5, atHost: host.ipv4) == 5)
        // A full table forgets the host with the fewest failures, not this one.
        for other in UInt8(20)..<UInt8(20 + context.limits.maxFaultyHosts) {
            reputation.hostSessionFailed(at: PeerAddress(10, 0, 1, other, port: 4000), context: context)
        }
        #expect(reputation.failedHosts.count == context.limits.maxFaultyHosts)
        #expect(reputation.failedSessions(atHost: host.ipv4) == 2)
    }
}
