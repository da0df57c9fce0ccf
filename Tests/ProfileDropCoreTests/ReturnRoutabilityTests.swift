import ProfileDropCrypto
import Testing

@testable import ProfileDropCore

/// Return routability (PROTOCOL.md 5): an address that has not proved it receives gets a PROBE,
/// paid by the bytes its host sent, and the INVITE only once the PROBE_ACK echoes the challenge.
@Suite struct ReturnRoutabilityTests {
    typealias Lone = DiscoverySessionTests.Lone

    /// Bytes the device sent `address`.
    static func bytes(_ lone: Lone, to address: PeerAddress) -> Int {
        lone.sent.filter { $0.destination == .unicast(address) }.reduce(0) { $0 + $1.packet.encoded().count }
    }

    @Test func aSpoofedBeaconDrawsOnlyProbesWithinItsOwnBytes() {
        var lone = Lone()
        lone.echoesProbes = false
        let victim = PeerAddress(10, 0, 0, 7, port: 4000)
        var received = 0
        // One BEACON a second for 10 s, each a fresh id, as a reflector keeps its phantoms alive.
        for second in 0..<10 {
            let beacon = Packet.beacon(
                Beacon(
                    deviceID: DeviceID(rawValue: UInt64(100 + second)), port: 4000, busy: false, sequence: 1))
            received += beacon.encoded().count
            lone.deliver(beacon, from: victim, at: .zero + .seconds(second))
        }
        lone.run(until: .zero + .seconds(12))
        let toVictim = lone.sent.filter { $0.destination == .unicast(victim) }
        #expect(!toVictim.isEmpty, "the device never tried its invitation")
        #expect(toVictim.allSatisfy { if case .probe = $0.packet { true } else { false } })
        #expect(Self.bytes(lone, to: victim) <= received)
        #expect(lone.device.counters.probesSent == toVictim.count)
        // Retransmissions waited for credit: more PROBEs were due than the BEACONs paid for.
        #expect(lone.device.counters.probesWithoutCredit > 0)
    }

    @Test func theInviteWaitsForTheEchoOfItsChallenge() throws {
        var lone = Lone()
        lone.echoesProbes = false
        let peer = PeerAddress(10, 0, 0, 7, port: 4000)
        lone.deliver(
            .beacon(
                Beacon(
                    deviceID: DeviceID(rawValue: 5), port: 4000, busy: false, sequence: 1,
                    position: PositionHint(x: 0, y: 0))),
            from: peer, at: .zero)
        lone.run(until: .zero + .seconds(1))
        let probes = lone.sent.compactMap { entry -> Probe? in
            if case .probe(let probe) = entry.packet, entry.destination == .unicast(peer) {
                probe
            } else {
                nil
            }
        }
        // The first went ahead on the BEACON ("Probing ahead"); the invitation's own came next.
        #expect(probes.count == 2)
        let probe = try #require(probes.last)
        #expect(!lone.sent.contains { if case .invite = $0.packet { true } else { false } })
        // A wrong challenge, or the right one from another address, is dropped and sends nothing.
        lone.deliver(.probeAck(Probe(challenge: probe.challenge ^ 1)), from: peer, at: lone.device.now)
        lone.deliver(
            .probeAck(probe), from: PeerAddress(10, 0, 0, 8, port: 4000), at: lone.device.now)
        #expect(lone.device.counters.rejected(.unexpectedMessage) == 2)
        #expect(!lone.sent.contains { if case .invite = $0.packet { true } else { false } })
        // The echo from the probed address: the INVITE goes out at once, there.
        let echoedAt = lone.device.now
        lone.deliver(.probeAck(probe), from: peer, at: echoedAt)
        let invite = try #require(lone.sent.first { if case .invite = $0.packet { true } else { false } })
        #expect(invite.destination == .unicast(peer) && invite.time == echoedAt)
        #expect(lone.device.routability.isProven(peer, now: echoedAt))
    }

    /// PROTOCOL.md 5, "Probing ahead": every candidate's BEACON draws a PROBE at once, within its
    /// host's credit, at most ``ReturnRoutability/maxProbesAhead`` waiting; the one address that
    /// echoes is proven, and its peer invited next with no PROBE of its own; an echo of a PROBE that
    /// made way is dropped.
    @Test func candidatesAreProbedAheadAndTheOneThatEchoesIsInvitedFirst() throws {
        var lone = Lone()
        lone.echoesProbes = false
        func address(_ index: Int) -> PeerAddress {
            PeerAddress(10, 1, UInt8(index / 250), UInt8(1 + index % 250), port: 4000)
        }
        func beacon(_ index: Int) -> Packet {
            .beacon(
                Beacon(
                    deviceID: DeviceID(rawValue: UInt64(100 + index)), port: 4000, busy: false, sequence: 1,
                    position: PositionHint(x: 0, y: 0)))
        }
        // A hundred fresh ids within 100 ms, before the first invitation is due.
        for index in 0..<100 {
            lone.deliver(beacon(index), from: address(index), at: .zero + .milliseconds(index))
        }
        #expect(lone.device.counters.probesSent == 100)
        #expect(lone.device.routability.probesAhead.count == ReturnRoutability.maxProbesAhead)
        for index in 0..<100 {
            let probes = lone.sent.filter { $0.destination == .unicast(address(index)) }
            #expect(
                probes.count == 1 && probes.allSatisfy { if case .probe = $0.packet { true } else { false } })
        }
        // The oldest made way: its echo proves nothing.
        let first = try #require(lone.sent.first { $0.destination == .unicast(address(0)) })
        guard case .probe(let stale) = first.packet else { return }
        lone.deliver(.probeAck(stale), from: address(0), at: lone.device.now)
        #expect(lone.device.counters.rejected(.unexpectedMessage) == 1)
        // The latest echoes: proven, and invited next, with its INVITE at once.
        let last = try #require(lone.sent.last { $0.destination == .unicast(address(99)) })
        guard case .probe(let echo) = last.packet else { return }
        lone.deliver(.probeAck(echo), from: address(99), at: lone.device.now)
        #expect(lone.device.routability.isProven(address(99), now: lone.device.now))
        lone.run(until: .zero + .seconds(1))
        let invite = try #require(lone.sent.first { if case .invite = $0.packet { true } else { false } })
        #expect(invite.destination == .unicast(address(99)))
        let probes = lone.sent.filter {
            if case .probe = $0.packet { $0.destination == .unicast(address(99)) } else { false }
        }
        #expect(probes.count == 1, "no second PROBE")
    }

    /// PROTOCOL.md 7, rule 1: a proven address is a known source, charged on its own budget, so a
    /// flood that spends the global budget no longer sheds it; an unproven one still meets it.
    @Test func aProvenAddressIsChargedOnItsOwnBudgetNotTheGlobalOne() throws {
        var lone = Lone(unsolicitedPerSecond: 20, globalUnsolicitedPerSecond: 1)
        lone.echoesProbes = false
        let peer = PeerAddress(10, 1, 0, 7, port: 4000)
        func beacon(_ id: UInt64, _ sequence: UInt32) -> Packet {
            .beacon(Beacon(deviceID: DeviceID(rawValue: id), port: 4000, busy: false, sequence: sequence))
        }
        lone.deliver(beacon(5, 1), from: peer, at: .zero)
        let ahead = try #require(lone.sent.first { $0.destination == .unicast(peer) })
        guard case .probe(let probe) = ahead.packet else { return }
        lone.deliver(.probeAck(probe), from: peer, at: .zero + .milliseconds(1))
        #expect(lone.device.routability.isProven(peer, now: lone.device.now))
        // Fresh sources spend the global budget (1 a second, burst 2).
        for index in 0..<4 {
            lone.deliver(
                beacon(UInt64(50 + index), 1), from: PeerAddress(10, 1, 1, UInt8(index), port: 4000),
                at: .zero + .milliseconds(2))
        }
        let limited = lone.device.counters.rejected(.rateLimited)
        #expect(limited > 0)
        lone.deliver(beacon(5, 2), from: peer, at: .zero + .milliseconds(3))
        #expect(lone.device.counters.rejected(.rateLimited) == limited, "the proven address was shed")
        lone.deliver(beacon(60, 1), from: PeerAddress(10, 1, 2, 1, port: 4000), at: .zero + .milliseconds(3))
        #expect(lone.device.counters.rejected(.rateLimited) == limited + 1)
    }

    @Test func everyProbeIsAnsweredOnceWithItsOwnSize() {
        var lone = Lone()
        let stranger = PeerAddress(10, 0, 0, 9, port: 5000)
        for index in 0..<3 {
            lone.deliver(
                .probe(Probe(challenge: UInt64(index) &* 0x9E37_79B9)), from: stranger,
                at: .zero + .milliseconds(10 * index))
        }
        let answers = lone.sent.filter { $0.destination == .unicast(stranger) }
        #expect(
            answers.map(\.packet) == (0..<3).map { .probeAck(Probe(challenge: UInt64($0) &* 0x9E37_79B9)) })
        #expect(answers.allSatisfy { $0.packet.encoded().count == WireConstants.probeSize })
    }

    @Test func creditIsBoundedAndExpires() {
        var table = ReturnRoutability()
        let host: UInt32 = 0x0A00_0007
        table.received(1_000, fromHost: host, now: .zero)
        var spent = 0
        while table.spend(WireConstants.probeSize, toHost: host, now: .zero) { spent += 1 }
        #expect(spent == ReturnRoutability.maxCredit / WireConstants.probeSize)
        table.received(27, fromHost: host, now: .zero)
        let expired = table.spend(
            WireConstants.probeSize, toHost: host, now: .zero + ReturnRoutability.creditHorizon)
        #expect(!expired, "credit outlived its horizon")
        let otherHost = table.spend(WireConstants.probeSize, toHost: host + 1, now: .zero)
        #expect(!otherHost, "another host's credit paid")
    }
}
