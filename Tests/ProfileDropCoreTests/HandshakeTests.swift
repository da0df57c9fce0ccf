import ProfileDropCrypto
import ProfileDropNoise
import Testing

@testable import ProfileDropCore

/// The invitation handshake against a hand-driven peer.
@Suite struct HandshakeTests {
    static let ghost = PeerAddress(10, 0, 0, 7, port: 4000)
    static let ghostID = DeviceID(rawValue: 0xFFFF_0000_0000_0001)

    /// A device that heard the ghost's beacon and sent it an INVITE.
    static func invited(ghostID: DeviceID = ghostID) throws -> (DiscoverySessionTests.Lone, HandshakePacket) {
        var lone = DiscoverySessionTests.Lone()
        lone.deliver(
            .beacon(Beacon(deviceID: ghostID, port: 4000, busy: false, sequence: 7)), from: ghost, at: .zero)
        lone.run(until: Instant.zero + .milliseconds(700))
        let invites = lone.sent.compactMap { if case .invite(let invite) = $0.packet { invite } else { nil } }
        guard let invite = invites.first else { throw ProtocolError(.unexpectedMessage, "no INVITE") }
        return (lone, invite)
    }

    static func accept(_ invite: HandshakePacket, seed: UInt64) throws -> (HandshakeState, Packet) {
        var random = DeterministicRandom(seed: seed)
        var responder = try HandshakeState(
            protocolName: WireConstants.noiseProtocolName, role: .responder,
            prologue: HandshakeRules.prologue(
                sessionID: invite.sessionID, initiator: invite.sender, responder: invite.receiver),
            staticKey: X25519.PrivateKey(using: &random), remoteStaticKey: nil)
        _ = try responder.readMessage(invite.noiseMessage)
        let message = try responder.writeMessage(
            payload: HandshakeParameters(maxCardBytes: 1 << 20, receiveWindow: 16).encoded(), random: &random)
        let accept = Packet.accept(
            HandshakePacket(
                sessionID: invite.sessionID, sender: invite.receiver, receiver: invite.sender,
                noiseMessage: message))
        return (responder, accept)
    }

    @Test func acceptFromAnotherAddressIsRejectedAndTheRealOneSecures() throws {
        var (lone, invite) = try Self.invited()
        #expect(invite.receiver == Self.ghostID && invite.noiseMessage.count == 32)
        let (_, forged) = try Self.accept(invite, seed: 66)
        lone.deliver(forged, from: PeerAddress(10, 0, 0, 66, port: 4000), at: lone.device.now)
        #expect(lone.device.counters.rejected(.unexpectedMessage) == 1)
        #expect(!lone.events.contains { if case .secured = $0 { true } else { false } })

        var (responder, accept) = try Self.accept(invite, seed: 7)
        lone.deliver(accept, from: Self.ghost, at: lone.device.now)
        #expect(lone.events.contains { if case .secured(Self.ghostID) = $0 { true } else { false } })
        let confirms = lone.sent.compactMap {
            if case .confirm(let confirm) = $0.packet { confirm } else { nil }
        }
        #expect(confirms.count == 1)
        if let confirm = confirms.first {
            let parameters = try HandshakeParameters(
                decoding: try responder.readMessage(confirm.noiseMessage))
            #expect(Int(parameters.maxCardBytes) == Limits().maxCardBytes)
            #expect(responder.isComplete)
        }
        // A duplicate ACCEPT (our CONFIRM was lost) is answered with the same CONFIRM again.
        lone.deliver(accept, from: Self.ghost, at: lone.device.now + .milliseconds(1))
        let again = lone.sent.compactMap {
            if case .confirm(let confirm) = $0.packet { confirm } else { nil }
        }
        #expect(again.count == 2 && again.first == again.last)
    }

    @Test func corruptedAcceptFailsTheHandshakeWithoutEndingTheSession() throws {
        var (lone, invite) = try Self.invited()
        let (_, accept) = try Self.accept(invite, seed: 7)
        guard case .accept(var body) = accept else { return }
        body.noiseMessage[40] ^= 1
        lone.deliver(.accept(body), from: Self.ghost, at: lone.device.now)
        #expect(lone.device.counters.rejected(.handshakeFailed) == 1)
        #expect(lone.device.stage == .connecting)
        // The genuine ACCEPT still completes it.
        lone.deliver(accept, from: Self.ghost, at: lone.device.now + .milliseconds(1))
        #expect(lone.device.stage == .ranging)
    }

    static func isBusyEvent(_ event: DeviceEvent) -> Bool {
        if case .peerBusy = event { true } else { false }
    }

    /// BUSY is believed only from the address we invited: a forged one from anywhere else is
    /// dropped and the invitation goes on; the invitee's own ends it once its hold is over.
    @Test func busyFromAnotherAddressIsDropped() throws {
        var (lone, invite) = try Self.invited()
        let busy = Packet.busy(
            Busy(
                sessionID: invite.sessionID, sender: Self.ghostID, receiver: invite.sender, reason: .inSession
            ))
        lone.deliver(busy, from: PeerAddress(10, 0, 0, 66, port: 4000), at: lone.device.now)
        #expect(lone.device.counters.rejected(.unexpectedMessage) == 1)
        #expect(lone.device.stage == .connecting && !lone.events.contains(where: Self.isBusyEvent))
        lone.deliver(busy, from: Self.ghost, at: lone.device.now + .milliseconds(1))
        #expect(lone.device.stage == .connecting && !lone.events.contains(where: Self.isBusyEvent))
        lone.runUntilTheHeldRefusalEnds()
        #expect(lone.events.contains(where: Self.isBusyEvent))
        #expect(lone.device.stage == .discovering)
    }

    static func isSecuredEvent(_ event: DeviceEvent) -> Bool {
        if case .secured = event { true } else { false }
    }

    static func invites(_ lone: DiscoverySessionTests.Lone) -> Int {
        lone.sent.filter { if case .invite = $0.packet { true } else { false } }.count
    }

    /// A BUSY(1), (2) or (4) from the invitee's address is held, not believed at once, because
    /// anyone who sees the INVITE can forge it from there: the invitee's ACCEPT, arriving during the
    /// hold, overrules it. The handshake secures, the peer is neither shown busy nor forgotten, and
    /// the end of the hold changes nothing (PROTOCOL.md 5, "Refusals").
    @Test(arguments: [BusyReason.inSession, .unavailable, .staleID])
    func theInviteesAcceptOverrulesAHeldBusy(reason: BusyReason) throws {
        var (lone, invite) = try Self.invited()
        let busy = Packet.busy(
            Busy(sessionID: invite.sessionID, sender: Self.ghostID, receiver: invite.sender, reason: reason))
        let arrival = lone.device.now + .milliseconds(1)
        lone.deliver(busy, from: Self.ghost, at: arrival)
        #expect(lone.device.stage == .connecting && lone.device.heldRefusal != nil)
        #expect(lone.device.counters.datagramsRejected == 0)
        let (_, accept) = try Self.accept(invite, seed: 7)
        lone.deliver(accept, from: Self.ghost, at: arrival + .milliseconds(4))
        #expect(lone.events.contains(where: Self.isSecuredEvent))
        #expect(lone.device.heldRefusal == nil)
        lone.run(until: arrival + .seconds(1))
        #expect(lone.device.stage == .ranging)
        #expect(!lone.events.contains(where: Self.isBusyEvent))
        #expect(lone.device.snapshot.peersSeen == 1)
    }

    /// A refusal is held as long again as it took to come since the INVITE last went out, at least
    /// 50 ms, and never past the INVITE's next retransmission.
    @Test func aRefusalIsHeldAsLongAgainAsTheInvitationWaited() {
        let invited = Instant.zero + .seconds(2)
        let retransmitAt = invited + .milliseconds(250)
        func until(afterWaiting waited: Duration) -> Duration {
            HeldRefusal.until(now: invited + waited, invitedAt: invited, retransmitAt: retransmitAt) - invited
        }
        #expect(until(afterWaiting: .milliseconds(4)) == .milliseconds(54))
        #expect(until(afterWaiting: .milliseconds(80)) == .milliseconds(160))
        #expect(until(afterWaiting: .milliseconds(200)) == .milliseconds(250))
        #expect(until(afterWaiting: .milliseconds(240)) == .milliseconds(250))
    }

    /// Without an ACCEPT the refusal is believed exactly when its hold ends, in place of the INVITE's
    /// retransmission: nothing goes out meanwhile, and a second BUSY during the hold does not
    /// prolong it.
    @Test func aHeldBusyIsBelievedWhenItsHoldEndsAndNotLater() throws {
        var (lone, invite) = try Self.invited()
        guard let last = lone.sent.last(where: { if case .invite = $0.packet { true } else { false } })
        else {
            Issue.record("no INVITE")
            return
        }
        let busy = Packet.busy(
            Busy(
                sessionID: invite.sessionID, sender: Self.ghostID, receiver: invite.sender, reason: .inSession
            ))
        // 100 ms after the INVITE: held 100 ms more, before the retransmission 250 ms or more after it.
        let arrival = last.time + .milliseconds(100)
        lone.deliver(busy, from: Self.ghost, at: arrival)
        let sentBefore = Self.invites(lone)
        let waited = arrival - last.time
        let end = arrival + waited
        #expect(lone.device.heldRefusal?.until == end)
        lone.deliver(busy, from: Self.ghost, at: arrival + .milliseconds(40))
        #expect(lone.device.heldRefusal?.until == end)
        lone.run(until: arrival + (waited - .milliseconds(1)))
        #expect(lone.device.stage == .connecting && !lone.events.contains(where: Self.isBusyEvent))
        lone.run(until: end)
        #expect(lone.device.stage == .discovering && lone.events.contains(where: Self.isBusyEvent))
        #expect(Self.invites(lone) == sentBefore)
        #expect(lone.device.heldRefusal == nil)
    }

    /// BUSY(2) and BUSY(4, stale id) are held to the same address check as BUSY(1): from anywhere
    /// but the invited address they are dropped, the invitation goes on, the peer is neither backed
    /// off from nor forgotten, and the invitee's ACCEPT still secures (PROTOCOL.md 5).
    @Test func unavailableAndStaleIdBusyFromAnotherAddressAreDropped() throws {
        var (lone, invite) = try Self.invited()
        let spoofed = PeerAddress(10, 0, 0, 66, port: 4000)
        // The invitee's IP address with another port is another address too.
        let otherPort = PeerAddress(10, 0, 0, 7, port: 4001)
        for (index, reason) in [BusyReason.unavailable, .staleID].enumerated() {
            let busy = Packet.busy(
                Busy(
                    sessionID: invite.sessionID, sender: Self.ghostID, receiver: invite.sender, reason: reason
                ))
            lone.deliver(busy, from: spoofed, at: lone.device.now + .milliseconds(1))
            lone.deliver(busy, from: otherPort, at: lone.device.now + .milliseconds(1))
            #expect(lone.device.counters.rejected(.unexpectedMessage) == 2 * (index + 1), "\(reason)")
            #expect(lone.device.stage == .connecting, "\(reason)")
            #expect(lone.device.live.contains { $0.sessionID == invite.sessionID }, "\(reason)")
            #expect(lone.device.snapshot.peersSeen == 1, "\(reason)")
        }
        #expect(!lone.events.contains(where: Self.isBusyEvent))
        let (_, accept) = try Self.accept(invite, seed: 7)
        lone.deliver(accept, from: Self.ghost, at: lone.device.now + .milliseconds(1))
        #expect(lone.events.contains { if case .secured(Self.ghostID) = $0 { true } else { false } })
    }

    /// Once ACCEPT has arrived the invitation is over: a BUSY of any reason for its session, even
    /// from the invitee's own address, is dropped and changes nothing: the session stays secured,
    /// no INVITE goes out again, the peer is neither shown busy nor forgotten.
    @Test func busyAfterTheHandshakeCompletedChangesNothing() throws {
        var (lone, invite) = try Self.invited()
        let (_, accept) = try Self.accept(invite, seed: 7)
        lone.deliver(accept, from: Self.ghost, at: lone.device.now)
        #expect(lone.device.stage == .ranging)
        let invitesBefore = lone.sent.filter { $0.packet.type == .invite }.count
        let reasons: [BusyReason] = [.inSession, .unavailable, .retry, .staleID]
        for reason in reasons {
            let busy = Packet.busy(
                Busy(
                    sessionID: invite.sessionID, sender: Self.ghostID, receiver: invite.sender,
                    reason: reason,
                    cookie: reason == .retry ? Array(repeating: 5, count: WireConstants.cookieLength) : []))
            lone.deliver(busy, from: Self.ghost, at: lone.device.now + .milliseconds(1))
            #expect(lone.device.stage == .ranging, "\(reason)")
            #expect(lone.device.live.contains { $0.sessionID == invite.sessionID }, "\(reason)")
        }
        #expect(lone.device.counters.rejected(.unknownSession) == reasons.count)
        #expect(lone.sent.filter { $0.packet.type == .invite }.count == invitesBefore)
        #expect(!lone.events.contains(where: Self.isBusyEvent))
        #expect(!lone.events.contains { if case .sessionEnded = $0 { true } else { false } })
        #expect(lone.device.snapshot.peersSeen == 1)
    }

    /// An id whose device has gone (or a replayed BEACON) costs one round trip, not a handshake
    /// timeout: the device now at that address answers BUSY(stale id) naming the invited id, and
    /// the inviter forgets the id at once. A device invited under another id answers exactly so.
    @Test func aStaleIdIsForgottenOnTheDeviceNowAtItsAddress() throws {
        var (lone, invite) = try Self.invited()
        #expect(lone.device.snapshot.peersSeen == 1)
        // The device at the ghost's address now: invited under an id that is not its own.
        var other = DiscoverySessionTests.Lone(seed: 8)
        other.deliver(
            .invite(invite), from: PeerAddress(10, 0, 0, 1, port: 4000), at: .zero + .milliseconds(700))
        guard case .busy(let answer) = other.sent.last?.packet else {
            Issue.record("no answer to an INVITE for another id")
            return
        }
        #expect(
            answer
                == Busy(
                    sessionID: invite.sessionID, sender: Self.ghostID, receiver: invite.sender,
                    reason: .staleID))
        #expect(Packet.busy(answer).encoded().count < Packet.invite(invite).encoded().count)
        lone.deliver(.busy(answer), from: Self.ghost, at: lone.device.now)
        #expect(lone.device.snapshot.peersSeen == 1)
        lone.runUntilTheHeldRefusalEnds()
        #expect(lone.device.stage == .discovering)
        #expect(lone.device.snapshot.peersSeen == 0)
        #expect(!lone.events.contains { if case .sessionEnded = $0 { true } else { false } })
    }

    /// A crossing INVITE that names the peer we invite, but comes from another address, is no
    /// tie-break: our invitation goes on to secure. The invitee never completed a handshake with us,
    /// so the invitation is tentative and the INVITE runs beside it as a half-open handshake (the
    /// address we hold may be a racer's, PROTOCOL.md 2). From the invitee's address too, where the
    /// tie-break makes the higher id accept it, our invitation goes on beside it: anyone who read a
    /// BEACON can send that INVITE, and until 2026-12-02 it cancelled the invitation.
    @Test func aSpoofedCrossingInviteDoesNotCancelOurInvitation() throws {
        // The lowest id, so the tie-break would make us give our invitation up.
        let lowest = DeviceID(rawValue: 1)
        let (_, invite) = try Self.invited(ghostID: lowest)
        var random = DeterministicRandom(seed: 41)
        let crossing = Packet.invite(
            HandshakePacket(
                sessionID: random.nextUInt64(), sender: lowest, receiver: invite.sender,
                noiseMessage: X25519.PrivateKey(using: &random).publicKey.rawRepresentation))
        // From another address, then from the invitee's own: we accept it, and ours goes on.
        for (index, source) in [PeerAddress(10, 0, 0, 66, port: 4000), Self.ghost].enumerated() {
            var (lone, ours) = try Self.invited(ghostID: lowest)
            #expect(lone.device.isInvitingTentatively)
            lone.deliver(crossing, from: source, at: lone.device.now)
            #expect(lone.sent.last?.packet.type == .accept && lone.sent.last?.destination == .unicast(source))
            #expect(lone.device.halfOpen.sessions.count == 1 && lone.device.stage == .connecting)
            #expect(lone.device.live.contains { $0.sessionID == ours.sessionID })
            #expect(lone.device.halfOpen.sessions.first?.sessionID != ours.sessionID)
            // Our INVITE is still retransmitted. The invitee never sent that INVITE: its ACCEPT of
            // ours secures, and the other half-open handshake is dropped, with nothing ended or shown.
            let invitesBefore = lone.sent.filter { $0.packet.type == .invite }.count
            lone.run(until: lone.device.now + .milliseconds(600))
            #expect(lone.sent.filter { $0.packet.type == .invite }.count > invitesBefore)
            let (_, accept) = try Self.accept(ours, seed: 8 + UInt64(index))
            lone.deliver(accept, from: Self.ghost, at: lone.device.now)
            #expect(lone.events.contains { if case .secured(lowest) = $0 { true } else { false } })
            #expect(lone.device.halfOpen.sessions.isEmpty)
            #expect(!lone.events.contains { if case .sessionEnded = $0 { true } else { false } })
        }
    }

    /// A crossing INVITE from the invitee's address, when we stay initiator (the lower id), shows
    /// that the invitee has not seen our INVITE: ours goes again at once, at most once per 100 ms
    /// for crossing INVITEs, and the back-off and the attempts are those of a handshake without it.
    @Test func aCrossingInviteWeOutrankSendsOurInviteAgainAtOnce() throws {
        var (lone, invite) = try Self.invited()
        #expect(lone.device.deviceID < Self.ghostID)
        var random = DeterministicRandom(seed: 42)
        func crossing() -> Packet {
            .invite(
                HandshakePacket(
                    sessionID: random.nextUInt64(), sender: Self.ghostID, receiver: invite.sender,
                    noiseMessage: X25519.PrivateKey(using: &random).publicKey.rawRepresentation))
        }
        /// Our INVITEs of this invitation, after `time` if given.
        func ours(after time: Instant? = nil) -> [Instant] {
            lone.sent.filter { sent in
                guard case .invite(let packet) = sent.packet, packet.sessionID == invite.sessionID else {
                    return false
                }
                return time.map { sent.time > $0 } ?? true
            }.map(\.time)
        }
        let before = ours()
        let firstSent = try #require(before.first)
        let lastSent = try #require(before.last)
        // Past the gap since our last INVITE, and before the timer's next one (at least 250 ms on).
        let crossed = lastSent + .milliseconds(150)
        lone.deliver(crossing(), from: Self.ghost, at: crossed)
        #expect(ours(after: lastSent) == [crossed], "our INVITE did not go again at once")
        #expect(
            lone.device.live.contains { $0.sessionID == invite.sessionID }
                && lone.device.halfOpen.sessions.isEmpty)
        // Within the gap: nothing more.
        lone.deliver(crossing(), from: Self.ghost, at: crossed + .milliseconds(50))
        #expect(ours(after: crossed) == [])
        // Just after one of the timer's retransmissions, a crossing INVITE still draws ours: the gap
        // counts only the INVITEs that crossing INVITEs drew (the invitee's back-off runs in step
        // with ours, so its INVITEs tend to come just after each of ours).
        // Up to the timer's next INVITE and no further: a BEACON or QUERY of ours may come soon after.
        for step in 1...1_000 where ours(after: crossed).isEmpty {
            lone.run(until: crossed + .milliseconds(Int64(step)))
        }
        let retransmitted = try #require(ours(after: crossed).first)
        lone.deliver(crossing(), from: Self.ghost, at: retransmitted + .milliseconds(10))
        #expect(ours(after: retransmitted) == [retransmitted + .milliseconds(10)])
        // The timer's nine attempts are all still made, and the handshake gives up when it would have
        // without the crossing INVITEs: 7.75 s after the first.
        lone.run(until: firstSent + .seconds(9))
        #expect(ours().count == 9 + 2)
        let ended = lone.events.contains {
            $0 == .sessionEnded(peer: Self.ghostID, reason: .timeout(.handshake))
        }
        #expect(ended)
        #expect(!lone.device.live.contains { $0.sessionID == invite.sessionID })
    }

    /// An INVITE we accepted before we invited its sender, sent again once we invite it, is a
    /// crossing INVITE: the lower id sends its own INVITE again, not its ACCEPT again. The higher id
    /// keeps its invitation beside ours, so two ACCEPTs crossing would complete both handshakes,
    /// one at each device, each then in a session of its own (a lossy pair met it: both ended
    /// `out of range` 3 s later).
    @Test func anInviteWeAcceptedBeforeInvitingItsSenderIsACrossingOneOnceWeInvite() throws {
        let higher = DeviceID(rawValue: UInt64.max)
        var lone = DiscoverySessionTests.Lone()
        #expect(lone.device.deviceID < higher)
        lone.deliver(
            .beacon(Beacon(deviceID: higher, port: 4000, busy: false, sequence: 7)), from: Self.ghost,
            at: .zero)
        // Its INVITE comes first, and we accept it; our ACCEPT is lost.
        var random = DeterministicRandom(seed: 43)
        let theirs = HandshakePacket(
            sessionID: random.nextUInt64(), sender: higher, receiver: lone.device.deviceID,
            noiseMessage: X25519.PrivateKey(using: &random).publicKey.rawRepresentation)
        lone.deliver(.invite(theirs), from: Self.ghost, at: .zero + .milliseconds(10))
        #expect(lone.sent.last?.packet.type == .accept)
        // Once that half-open handshake is no longer fresh, we invite it too.
        lone.run(until: .zero + .milliseconds(1_500))
        let ours = lone.sent.compactMap { if case .invite(let invite) = $0.packet { invite } else { nil } }
        #expect(ours.count >= 1 && ours.allSatisfy { $0.receiver == higher })
        #expect(lone.device.halfOpen.sessions.map(\.sessionID) == [theirs.sessionID])
        // Its INVITE again: ours goes again, and no ACCEPT.
        let before = lone.sent.count
        lone.deliver(.invite(theirs), from: Self.ghost, at: lone.device.now + .milliseconds(1))
        #expect(lone.sent.dropFirst(before).map(\.packet.type) == [.invite])
    }

    /// BUSY(retry) from the invitee sends the INVITE again at once with the cookie, and every later
    /// retransmission carries it; the same cookie again, or more than three, are dropped.
    @Test func busyRetrySendsTheInviteAgainWithTheCookie() throws {
        var (lone, invite) = try Self.invited()
        func retry(_ fill: UInt8) -> Packet {
            .busy(
                Busy(
                    sessionID: invite.sessionID, sender: Self.ghostID, receiver: invite.sender,
                    reason: .retry,
                    cookie: Array(repeating: fill, count: WireConstants.cookieLength)))
        }
        let before = lone.sent.count
        lone.deliver(retry(7), from: Self.ghost, at: lone.device.now)
        let again = lone.sent.dropFirst(before).compactMap {
            if case .invite(let invite) = $0.packet { invite } else { nil }
        }
        #expect(again.count == 1)
        #expect(again.first?.cookie == Array(repeating: 7, count: 16))
        #expect(
            again.first?.noiseMessage == invite.noiseMessage && again.first?.sessionID == invite.sessionID)
        #expect(!lone.events.contains(where: Self.isBusyEvent) && lone.device.stage == .connecting)
        // The same cookie: dropped, nothing sent.
        let count = lone.sent.count
        lone.deliver(retry(7), from: Self.ghost, at: lone.device.now)
        #expect(lone.sent.count == count && lone.device.counters.rejected(.unexpectedMessage) == 1)
        // Retransmissions carry the cookie.
        lone.run(until: lone.device.now + .seconds(1))
        let later = lone.sent.dropFirst(count).compactMap {
            if case .invite(let invite) = $0.packet { invite } else { nil }
        }
        #expect(!later.isEmpty && later.allSatisfy { $0.cookie == Array(repeating: 7, count: 16) })
        // At most three new cookies per invitation send an INVITE at once; a fourth sends nothing but
        // is kept, so that the invitee's own cookie, coming after forged ones, is carried next.
        let beforeCap = lone.sent.count
        for fill: UInt8 in [8, 9, 10] { lone.deliver(retry(fill), from: Self.ghost, at: lone.device.now) }
        let atOnce = lone.sent.dropFirst(beforeCap).compactMap {
            if case .invite(let invite) = $0.packet { invite.cookie.first } else { nil }
        }
        #expect(atOnce == [8, 9])
        #expect(lone.device.counters.rejected(.unexpectedMessage) == 1)
        let beforeRetransmission = lone.sent.count
        lone.run(until: lone.device.now + .seconds(2))
        let carried = lone.sent.dropFirst(beforeRetransmission).compactMap {
            if case .invite(let invite) = $0.packet { invite.cookie.first } else { nil }
        }
        #expect(!carried.isEmpty && carried.allSatisfy { $0 == 10 }, "\(carried)")
        // A cookie from elsewhere is not believed.
        lone.deliver(retry(11), from: PeerAddress(10, 0, 0, 66, port: 4000), at: lone.device.now)
        #expect(lone.device.counters.rejected(.unexpectedMessage) == 2)
    }
}

extension DiscoverySessionTests.Lone {
    /// Runs the device until the refusal it holds is believed (nothing happens without one).
    mutating func runUntilTheHeldRefusalEnds() {
        guard let until = device.heldRefusal?.until else {
            Issue.record("no refusal held")
            return
        }
        run(until: until)
    }
}
