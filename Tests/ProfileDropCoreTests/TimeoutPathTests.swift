import ProfileDropCrypto
import Testing

@testable import FuzzSupport
@testable import ProfileDropCore

/// Every wait ends, and says which wait it was.
@Suite struct TimeoutPathTests {
    /// Two facing devices 7 cm apart, with timers shortened where a test needs it.
    func room(timeouts: Timeouts = Timeouts(), photoBytes: Int = 0) -> VirtualRoom {
        var room = VirtualRoom()
        let (first, second) = Fixtures.facingPair(distance: 7)
        room.add(
            Fixtures.configuration("Bori", seed: 1, photoBytes: photoBytes, timeouts: timeouts), pose: first,
            seed: 1)
        room.add(
            Fixtures.configuration("Kong", seed: 2, photoBytes: photoBytes, timeouts: timeouts), pose: second,
            seed: 2)
        return room
    }

    func endedSessions(_ room: VirtualRoom, _ index: Int) -> [CloseReason] {
        room.events[index].compactMap { if case .sessionEnded(_, let reason) = $0 { reason } else { nil } }
    }

    @Test func handshakeWithNoAnswerEndsAsHandshakeTimeout() {
        var room = room()
        // The packet type is the fourth byte of every header; 4 is ACCEPT.
        room.tamper = { _, _, bytes in bytes.count > 3 && bytes[3] == 4 ? nil : bytes }
        room.run(until: .zero + .seconds(20))
        let ended = endedSessions(room, 0) + endedSessions(room, 1)
        #expect(ended.contains(.timeout(.handshake)), "\(ended)")
        #expect(room.cards(0).isEmpty && room.cards(1).isEmpty)
    }

    @Test func aPeerThatFallsSilentMidTransferEndsAsPeerSilent() {
        var room = room(photoBytes: 262_144)
        // Run until the cards are moving, then lose everything device 1 sends.
        for _ in 0..<2_000
        where !room.events[0].contains(where: { if case .exchanging = $0 { true } else { false } }) {
            room.run(until: room.now + .milliseconds(5))
        }
        #expect(room.events[0].contains { if case .exchanging = $0 { true } else { false } })
        room.tamper = { from, _, bytes in from == 1 ? nil : bytes }
        room.run(until: room.now + .seconds(30))
        let ended = endedSessions(room, 0) + [room.closeReason(0)].compactMap { $0 }
        #expect(ended.contains(.timeout(.peerSilent)), "\(ended)")
        #expect(room.cards(0).isEmpty)
    }

    @Test func aTransferThatCannotFinishInTimeEndsAsTransferTimeout() {
        var timeouts = Timeouts()
        // 256 KiB in 2 ms-paced chunks needs about half a second; allow a tenth of that.
        timeouts.transfer = .milliseconds(50)
        var room = room(timeouts: timeouts, photoBytes: 262_144)
        room.run(until: .zero + .seconds(20))
        let ended =
            endedSessions(room, 0) + endedSessions(room, 1)
            + [room.closeReason(0), room.closeReason(1)].compactMap { $0 }
        #expect(ended.contains(.timeout(.transfer)), "\(ended)")
        #expect(room.cards(0).isEmpty && room.cards(1).isEmpty)
    }

    /// Two devices 13 cm apart, the second's overall limit 40 ms after the first's: when the first
    /// closes just before the second invites it again (after the back-off of an out-of-range
    /// session), the first, closed, refuses, the refusal is held, and the second's limit cuts its
    /// handshake. That handshake says less than the sessions before it, so the second closes
    /// `out of range`, never `timeout: handshake` (as two `share` processes started a few
    /// milliseconds apart did). The first's limit runs over 6–9 s in 10 ms steps; at least one step
    /// must cut such a handshake, or the test proves nothing. (Seeds 2 and 3: with wire version 3's
    /// PROBE drawing its challenge, seeds 1 and 2 left the first device inviting every time, and
    /// with PROBEs sent ahead, seeds 3 and 4 did.)
    @Test func aHandshakeCutAtTheLimitAfterOutOfRangeClosesOutOfRange() {
        var handshakesCut = 0
        for step in 0..<300 {
            let limit = Duration.seconds(6) + .milliseconds(10 * step)
            var room = VirtualRoom()
            let (first, second) = Fixtures.facingPair(distance: 13)
            for (index, pose) in [first, second].enumerated() {
                var timeouts = Timeouts()
                timeouts.overall = limit + (index == 0 ? .zero : .milliseconds(40))
                room.add(
                    Fixtures.configuration(
                        index == 0 ? "Bori" : "Kong", seed: UInt64(index + 2), timeouts: timeouts),
                    pose: pose, seed: UInt64(index + 2))
            }
            room.run(until: .zero + .seconds(12))
            #expect(room.closeReason(0) == .outOfRange, "first limit \(limit)")
            #expect(room.closeReason(1) == .outOfRange, "first limit \(limit)")
            // Whether the second was still in a handshake when its limit came: its last session
            // began and was neither secured nor ended.
            let events = room.events[1]
            func last(_ matches: (DeviceEvent) -> Bool) -> Int { events.lastIndex(where: matches) ?? -1 }
            let connected = last { if case .connecting = $0 { true } else { false } }
            let secured = last { if case .secured = $0 { true } else { false } }
            let ended = last { if case .sessionEnded = $0 { true } else { false } }
            if connected > max(secured, ended) { handshakesCut += 1 }
        }
        #expect(handshakesCut > 0, "no step cut a handshake at the limit")
    }

    @Test func aDeviceAloneClosesAtTheOverallLimitWithNoExchange() {
        var timeouts = Timeouts()
        timeouts.overall = .seconds(5)
        var room = VirtualRoom()
        room.add(
            Fixtures.configuration("Bori", seed: 1, timeouts: timeouts), pose: Pose(x: 0, y: 0, heading: 0),
            seed: 1)
        room.run(until: .zero + .seconds(30))
        #expect(room.closeReason(0) == .timeout(.noExchange))
        #expect(room.devices[0].nextDeadline == nil)
    }
}

/// The device under test against a ``ScriptedPeer`` that invites it (or, with `peerInvites` false,
/// that announces itself and waits for the device's INVITE), with datagrams handed over at once (no
/// loss, no delay), in virtual time.
struct ScriptedPeerRun {
    var device: Device
    var peer: ScriptedPeer
    var findings = FuzzFindings()
    /// Every event of the device, with when it came.
    var events: [(time: Instant, event: DeviceEvent)] = []
    /// How often the peer speaks: a ranging interval, as an honest peer; a slowloris speaks rarely.
    var tickInterval: Duration = .milliseconds(125)
    var nextTick = Instant.zero + .milliseconds(40)
    /// Called after every round of the peer, before what it queued is delivered: a test's chance to
    /// add packets of its own.
    var afterTick: ((inout ScriptedPeer) -> Void)?

    /// The device with `configuration`, and a peer offering a card with a `peerPhotoBytes` photo,
    /// or `peerCardBytes` when given. The peer invites the device, or, unless `peerInvites`, sends
    /// it a BEACON and answers its INVITE as responder.
    init(
        configuration: DeviceConfiguration, peerPhotoBytes: Int = 1500, peerCardBytes: [UInt8]? = nil,
        peerInvites: Bool = true, peerParameters: HandshakeParameters? = nil
    ) {
        device = Device(
            configuration: configuration, random: DeterministicRandom(seed: 0xF022), now: .zero,
            localAddress: PeerAddress(10, 0, 0, 1, port: 5001))
        let card = peerCardBytes ?? DeviceFuzz.card("Kong", photoBytes: peerPhotoBytes).encoded()
        if peerInvites {
            peer = ScriptedPeer(target: device.deviceID, cardBytes: card, seed: 0x9EE2)
            if let peerParameters { peer.parameters = peerParameters }
            peer.invite()
        } else {
            peer = ScriptedPeer(respondingTo: device.deviceID, cardBytes: card, seed: 0x9EE2)
            if let peerParameters { peer.parameters = peerParameters }
            peer.beacon()
        }
        deliver()
    }

    var now: Instant { device.now }

    /// Hands each side what the other sent, until both are quiet.
    mutating func deliver() {
        for _ in 0..<64 {
            var moved = false
            while let datagram = device.pollTransmit() {
                guard datagram.destination == .unicast(peer.address) else { continue }
                peer.receive(datagram.bytes, &findings)
                moved = true
            }
            let outbox = peer.outbox
            peer.outbox = []
            for bytes in outbox {
                device.handleDatagram(bytes, from: peer.address, at: now)
                moved = true
            }
            while let event = device.pollEvent() { events.append((now, event)) }
            if !moved { return }
        }
    }

    /// Runs the device's timers and the peer's rounds until `limit`, or until `stop` holds.
    mutating func run(until limit: Instant, stop: (Self) -> Bool = { _ in false }) {
        while now < limit && !stop(self) {
            let next = min(device.nextDeadline ?? limit, nextTick, limit)
            // Early calls are harmless; this one also moves the device's clock to the peer's round.
            device.handleTimeout(at: next)
            if next >= nextTick {
                peer.tick()
                afterTick?(&peer)
                nextTick = next + tickInterval
            }
            deliver()
        }
    }

    /// When the first event matching `match` came.
    func time(of match: (DeviceEvent) -> Bool) -> Instant? {
        events.first { match($0.event) }?.time
    }

    /// Why sessions ended, and when, without closing the device.
    var endedSessions: [(time: Instant, reason: CloseReason)] {
        events.compactMap {
            if case .sessionEnded(_, let reason) = $0.event { ($0.time, reason) } else { nil }
        }
    }

    /// When the device closed, and why.
    var closed: (time: Instant, reason: CloseReason)? {
        events.lazy.compactMap { if case .closed(let reason) = $0.event { ($0.time, reason) } else { nil } }
            .first
    }

    static func isInRange(_ event: DeviceEvent) -> Bool { if case .inRange = event { true } else { false } }
    static func isVerified(_ event: DeviceEvent) -> Bool { if case .verified = event { true } else { false } }
    static func isExchanging(_ event: DeviceEvent) -> Bool {
        if case .exchanging = event { true } else { false }
    }
}

/// Peers that keep a session alive without letting it finish: every live state ends within a
/// bound the peer cannot move, and the device's overall limit ends it whatever the session does.
@Suite struct StallingPeerTests {
    /// A device with a card with a 3000-byte photo (three chunks), sharing by policy, with `timeouts`.
    func configuration(consent: ConsentPolicy = .share, timeouts: Timeouts = Timeouts())
        -> DeviceConfiguration
    {
        Fixtures.configuration("Bori", consent: consent, seed: 1, photoBytes: 3000, timeouts: timeouts)
    }

    /// A slowloris: honest until the stage it stalls, then one packet every 4 s (within the 5 s
    /// idle time, so the session stays alive) withholding the next step. Each wait ends after its
    /// own bound, not the overall limit's: verification 10 s after the gates opened (the peer never
    /// sends its NONCE, so there is no code), the peer's decision its user's time plus 10 s after
    /// our code (the peer never decides), the transfer 10 s after its last step (the peer sends no
    /// chunk and acknowledges none). The argument is the wait that should run out.
    @Test(arguments: [TimeoutKind.verification, .peerConsent, .transferStalled])
    func aSlowlorisPeerIsCutWhereverItStalls(expected: TimeoutKind) throws {
        var timeouts = Timeouts()
        timeouts.consent = .seconds(20)
        var run = ScriptedPeerRun(configuration: configuration(timeouts: timeouts))
        let withheld: ScriptedPeer.Withheld
        let startsAt: (DeviceEvent) -> Bool
        let bound: Duration
        switch expected {
        case .verification: (withheld, startsAt, bound) = (.nonce, ScriptedPeerRun.isInRange, .seconds(10))
        case .peerConsent: (withheld, startsAt, bound) = (.consent, ScriptedPeerRun.isVerified, .seconds(30))
        case .transferStalled:
            (withheld, startsAt, bound) = (
                [.chunks, .acknowledgements], ScriptedPeerRun.isExchanging, .seconds(10)
            )
        case .handshake, .peerSilent, .consent, .transfer, .peerGaveUp, .noExchange:
            preconditionFailure("no slowloris stalls to make \(expected) run out")
        }
        // The peer withholds from the start; it slows down once the device reaches the stage.
        run.peer.withheld = withheld
        run.run(until: .zero + .seconds(20)) { $0.time(of: startsAt) != nil }
        let start = try #require(run.time(of: startsAt), "\(run.events.map(\.event))")
        run.tickInterval = .seconds(4)
        run.run(until: .zero + .seconds(100)) { !$0.endedSessions.isEmpty }
        let ended = try #require(run.endedSessions.first, "\(run.events.suffix(5).map(\.event))")
        #expect(ended.reason == .timeout(expected))
        let waited = ended.time - start
        #expect(waited > bound - .milliseconds(500) && waited <= bound, "ended \(waited) after \(start)")
        #expect(run.peer.receivedClose?.code == .timeout)
        // An interrupted pairing is one that ended after verification began and before both
        // decisions (PROTOCOL.md 6.5). A peer that withholds its NONCE never began it on our side:
        // as responder we never held NONCE, so the peer learnt no code (11.4, NONCE withheld). A
        // peer that never decides ends a pairing whose code we showed. The transfer began with both
        // decisions.
        let interrupted = run.events.compactMap {
            if case .pairingInterrupted(_, let code, let reason) = $0.event {
                (code: code, reason: reason)
            } else {
                nil
            }
        }
        switch expected {
        case .verification:
            #expect(interrupted.isEmpty, "\(interrupted)")
            #expect(
                run.peer.session.peerCommitment != nil, "the device committed: verification was under way")
        case .peerConsent:
            #expect(interrupted.map(\.reason) == [.timeout(.peerConsent)])
            #expect(interrupted.first?.code != nil && interrupted.first?.code == run.peer.code)
        case .transferStalled, .handshake, .peerSilent, .consent, .transfer, .peerGaveUp, .noExchange:
            #expect(interrupted.isEmpty, "\(interrupted)")
        }
        #expect(run.findings.violations.isEmpty, "\(run.findings.violations)")
    }

    /// The peer receives our whole card but never says so: the transfer is cut 10 s after its last
    /// step forward (the peer's card verified), not after the 90 s transfer limit.
    @Test func aPeerThatNeverAcknowledgesIsCutAsStalled() throws {
        var run = ScriptedPeerRun(configuration: configuration())
        run.peer.withheld = .acknowledgements
        run.run(until: .zero + .seconds(60)) { !$0.endedSessions.isEmpty }
        let verified = try #require(run.time { if case .cardVerified = $0 { true } else { false } })
        let ended = try #require(run.endedSessions.first)
        #expect(ended.reason == .timeout(.transferStalled))
        #expect(ended.time == verified + .seconds(10), "verified at \(verified), ended at \(ended.time)")
        // The peer did get every chunk: only its acknowledgements were missing.
        #expect(run.peer.session.verifiedPeerCard != nil)
        #expect(!run.events.contains { if case .cardReceived = $0.event { true } else { false } })
    }

    /// The overall limit ends the device with a live session: the session is closed with CLOSE as
    /// its own wait would (CLOSE(timeout) for a peer's missing decision; our user's unanswered
    /// request declines), and the device closes with that reason at exactly the limit.
    @Test(arguments: [ConsentPolicy.share, .askUser])
    func theOverallLimitEndsALiveSession(policy: ConsentPolicy) throws {
        var timeouts = Timeouts()
        timeouts.overall = .seconds(8)
        var run = ScriptedPeerRun(configuration: configuration(consent: policy, timeouts: timeouts))
        run.peer.withheld = .consent
        run.run(until: .zero + .seconds(30))
        #expect(run.time(of: ScriptedPeerRun.isVerified) != nil)
        let closed = try #require(run.closed, "\(run.events.suffix(5).map(\.event))")
        #expect(closed.time == .zero + .seconds(8))
        #expect(run.endedSessions.isEmpty, "the cut session is the device's end, not a session's")
        switch policy {
        case .askUser:
            #expect(closed.reason == .timeout(.consent))
            #expect(run.peer.receivedClose?.code == .declined)
        default:
            #expect(closed.reason == .timeout(.peerConsent))
            #expect(run.peer.receivedClose?.code == .timeout)
        }
        // Closing, then draining: the session's own timers still end, and nothing else starts.
        #expect(run.device.nextDeadline == nil)
        #expect(run.findings.violations.isEmpty, "\(run.findings.violations)")
    }

    enum Fault: String, CaseIterable, Sendable {
        /// An offer over our card limit.
        case oversizeOffer
        /// A chunk whose index is past the offer's last chunk.
        case badChunkIndex
        /// Chunks whose bytes do not match the offered digest.
        case badDigest
    }

    /// A session that ended with the peer's error is what the device reports when its limit
    /// passes with no exchange, rather than `timeout: no exchange`: the same reason, with its
    /// diagnostic.
    @Test(arguments: Fault.allCases)
    func theDeviceReportsTheErrorThatEndedItsSession(fault: Fault) throws {
        var timeouts = Timeouts()
        timeouts.overall = .seconds(15)
        var configuration = configuration(timeouts: timeouts)
        let expected: ProtocolError.Code
        switch fault {
        case .oversizeOffer:
            configuration.limits.maxCardBytes = 1000
            expected = .cardTooLarge
        case .badChunkIndex: expected = .malformed
        case .badDigest: expected = .cardDigestMismatch
        }
        var run = ScriptedPeerRun(configuration: configuration)
        if fault != .oversizeOffer { run.peer.withheld = .chunks }
        run.run(until: .zero + .seconds(10)) {
            $0.time(of: ScriptedPeerRun.isExchanging) != nil || $0.peer.isFinished
        }
        switch fault {
        case .oversizeOffer: break
        case .badChunkIndex:
            run.peer.send([.cardChunk(index: 40, data: [1, 2, 3])])
        case .badDigest:
            let card = DeviceFuzz.card("Kong", photoBytes: 1500).encoded()
            var forged = card
            forged[forged.count - 1] ^= 0xFF
            for start in stride(from: 0, to: forged.count, by: WireConstants.chunkSize) {
                let end = min(start + WireConstants.chunkSize, forged.count)
                run.peer.send([
                    .cardChunk(
                        index: UInt16(start / WireConstants.chunkSize), data: forged[start..<end])
                ])
            }
        }
        run.deliver()
        run.run(until: .zero + .seconds(30))
        let ended = try #require(run.endedSessions.first)
        guard case .error(let error) = ended.reason else {
            Issue.record("the session ended with \(ended.reason)")
            return
        }
        #expect(error.code == expected)
        #expect(run.peer.receivedClose?.code == .error)
        let closed = try #require(run.closed)
        #expect(closed.time == .zero + .seconds(15))
        #expect(closed.reason == ended.reason, "\(closed.reason)")
    }
}
