import ProfileDropCrypto
import Testing

@testable import ProfileDropCore

/// The device's session table alone: one lookup by session id or peer address finds a session
/// whatever its role, and the index follows sessions as they come, move between roles and go.
@Suite struct SessionTableTests {
    static let me = DeviceID(rawValue: 42)
    static let peer = DeviceID(rawValue: 7)

    static func address(_ last: UInt8) -> PeerAddress { PeerAddress(10, 0, 0, last, port: 4000) }

    static func context(_ device: DeviceID = me, seed: UInt64) -> SessionContext {
        SessionContext(
            configuration: Fixtures.configuration("Bori", seed: 5), deviceID: device,
            random: DeterministicRandom(seed: seed), measurementNoise: DeterministicRandom(seed: 5),
            now: .zero, pose: Pose(x: 0, y: 0, heading: 0))
    }

    /// Our invitation to `peer` at `address`, awaiting ACCEPT; its id is drawn from `seed`.
    static func invitation(to address: PeerAddress, seed: UInt64) -> ExchangeSession {
        var context = context(seed: seed)
        return ExchangeSession.initiate(to: peer, at: address, proven: true, context: &context)
    }

    /// A handshake we accepted from `address`, awaiting CONFIRM: a real INVITE, read by our side.
    static func halfOpen(from address: PeerAddress, seed: UInt64, context: inout SessionContext) throws
        -> ExchangeSession
    {
        var theirs = Self.context(peer, seed: seed)
        _ = ExchangeSession.initiate(to: me, at: address, proven: true, context: &theirs)
        let sent = theirs.outbox.pop()
        let datagram = try #require(sent)
        guard case .invite(let invite) = try Packet(datagram: datagram.bytes) else {
            Issue.record("not an INVITE")
            throw ProtocolError(.unexpectedMessage, "not an INVITE")
        }
        let session = try ExchangeSession.accept(invite, from: address, context: &context)
        #expect(session.isHalfOpen)
        return session
    }

    @Test func aSessionIsRoutedByItsIdAndFoundAtItsAddressUntilRemoved() {
        var table = SessionTable()
        let first = Self.invitation(to: Self.address(1), seed: 1)
        let second = Self.invitation(to: Self.address(2), seed: 2)
        #expect(table.route(sessionID: first.sessionID) == nil)
        #expect(!table.isKnownSource(Self.address(1)))
        table.insertLive(first)
        table.insertLive(second)
        #expect(table.route(sessionID: first.sessionID) == .init(role: .live, index: 0))
        #expect(table.route(sessionID: second.sessionID) == .init(role: .live, index: 1))
        #expect(table.sessions(at: Self.address(2)) == [.init(role: .live, index: 1)])
        #expect(table.peerAddress(at: .init(role: .live, index: 1)) == Self.address(2))
        #expect(table.isKnownSource(Self.address(1)) && table.isKnownSource(Self.address(2)))

        let removed = table.removeLive(at: 0)
        #expect(removed.sessionID == first.sessionID)
        #expect(table.route(sessionID: first.sessionID) == nil)
        #expect(table.sessions(at: Self.address(1)).isEmpty && !table.isKnownSource(Self.address(1)))
        // The one behind it moved up, and the index with it.
        #expect(table.route(sessionID: second.sessionID) == .init(role: .live, index: 0))
        #expect(table.session(at: .init(role: .live, index: 0)).sessionID == second.sessionID)
        table.removeLive(at: 0)
        #expect(table.isEmpty && table.route(sessionID: second.sessionID) == nil)
    }

    @Test func ourInvitationIsTheLiveSessionAwaitingAcceptUntilItStopsAwaiting() throws {
        var table = SessionTable()
        var context = Self.context(seed: 9)
        let candidate = try Self.halfOpen(from: Self.address(1), seed: 3, context: &context)
        table.insertLive(candidate)
        #expect(table.invitationIndex == nil)
        table.insertLive(Self.invitation(to: Self.address(2), seed: 4))
        #expect(table.invitationIndex == 1)
        table.removeLive(at: 0)
        #expect(table.invitationIndex == 0)
        // Cancelled in place: it no longer awaits ACCEPT, so it is no invitation any more.
        table[live: 0].cancelByOwner(context: &context)
        #expect(!table.live[0].isAwaitingAccept)
        #expect(table.invitationIndex == nil)
    }

    @Test func aHalfOpenHandshakeThatCompletesMovesToLiveAndItsAddressBecomesAKnownSource() throws {
        var table = SessionTable()
        var context = Self.context(seed: 9)
        let session = try Self.halfOpen(from: Self.address(3), seed: 3, context: &context)
        table.insertHalfOpen(session, context: context)
        #expect(table.route(sessionID: session.sessionID) == .init(role: .halfOpen, index: 0))
        #expect(table.index(of: session.sessionID, in: .halfOpen) == 0)
        #expect(table.index(of: session.sessionID, in: .live) == nil)
        #expect(table.sessions(at: Self.address(3)) == [.init(role: .halfOpen, index: 0)])
        // A half-open handshake's sender proved nothing: no known source.
        #expect(!table.isKnownSource(Self.address(3)))

        table.removeHalfOpen(at: 0)
        table.insertLive(session)
        #expect(table.route(sessionID: session.sessionID) == .init(role: .live, index: 0))
        #expect(table.sessions(at: Self.address(3)) == [.init(role: .live, index: 0)])
        #expect(table.isKnownSource(Self.address(3)))
        #expect(table.halfOpen.sessions.isEmpty)
    }

    @Test func halfOpenHandshakesAreOnePerAddressAndBoundedOldestOut() throws {
        var table = SessionTable()
        var context = Self.context(seed: 9)
        var ids: [UInt64] = []
        for last in 1...UInt8(HalfOpenHandshakes.capacity + 1) {
            let session = try Self.halfOpen(from: Self.address(last), seed: UInt64(last), context: &context)
            ids.append(session.sessionID)
            table.insertHalfOpen(session, context: context)
        }
        #expect(table.halfOpen.sessions.count == HalfOpenHandshakes.capacity)
        #expect(table.route(sessionID: ids[0]) == nil && table.sessions(at: Self.address(1)).isEmpty)
        for (offset, id) in ids.dropFirst().enumerated() {
            #expect(table.route(sessionID: id) == .init(role: .halfOpen, index: offset))
        }
        // Another INVITE from the same address replaces that address's handshake.
        let again = try Self.halfOpen(from: Self.address(2), seed: 20, context: &context)
        table.insertHalfOpen(again, context: context)
        #expect(table.route(sessionID: ids[1]) == nil)
        #expect(table.sessions(at: Self.address(2)) == [.init(role: .halfOpen, index: 3)])
        #expect(table.route(sessionID: again.sessionID) == .init(role: .halfOpen, index: 3))

        table.removeHalfOpen(atOffsets: [0, 2])
        #expect(table.halfOpen.sessions.map(\.sessionID) == [ids[3], again.sessionID])
        #expect(table.route(sessionID: ids[2]) == nil && table.route(sessionID: ids[4]) == nil)
        #expect(table.route(sessionID: again.sessionID) == .init(role: .halfOpen, index: 1))
        table.removeAllHalfOpen()
        #expect(table.isEmpty && table.sessions(at: Self.address(4)).isEmpty)
    }

    @Test func aSessionThatEndsLingersAtItsAddressAndFinishedOrSurplusOnesAreDropped() {
        var table = SessionTable()
        var context = Self.context(seed: 9)
        var ids: [UInt64] = []
        for last in 1...UInt8(SessionTable.maxLingering + 2) {
            let session = Self.invitation(to: Self.address(last), seed: UInt64(last))
            ids.append(session.sessionID)
            table.insertLive(session)
        }
        // Each ends in turn and is kept while it has a deadline.
        while !table.live.isEmpty { table.insertLingering(table.removeLive(at: 0)) }
        #expect(table.route(sessionID: ids[0]) == .init(role: .lingering, index: 0))
        #expect(table.isKnownSource(Self.address(1)))
        table.pruneLingering()
        #expect(table.lingering.count == SessionTable.maxLingering)
        #expect(table.route(sessionID: ids[0]) == nil && table.route(sessionID: ids[1]) == nil)
        #expect(!table.isKnownSource(Self.address(1)) && !table.isKnownSource(Self.address(2)))
        #expect(table.route(sessionID: ids[2]) == .init(role: .lingering, index: 0))

        // One that finished (a cancelled handshake keeps no deadline) is dropped at the next prune.
        table[lingering: 1].cancelByOwner(context: &context)
        #expect(table.lingering[1].nextDeadline == nil)
        table.pruneLingering()
        #expect(table.lingering.map(\.sessionID) == [ids[2], ids[4], ids[5]])
        #expect(table.route(sessionID: ids[3]) == nil && table.sessions(at: Self.address(4)).isEmpty)
        #expect(table.route(sessionID: ids[5]) == .init(role: .lingering, index: 2))
    }

    @Test func anIdHeldTwiceRoutesToTheLiveSessionThenTheLingeringOne() {
        var table = SessionTable()
        // The same seed draws the same session id.
        let ended = Self.invitation(to: Self.address(1), seed: 6)
        let current = Self.invitation(to: Self.address(2), seed: 6)
        #expect(ended.sessionID == current.sessionID)
        table.insertLingering(ended)
        table.insertLive(current)
        #expect(table.route(sessionID: current.sessionID) == .init(role: .live, index: 0))
        #expect(table.index(of: current.sessionID, in: .lingering) == 0)
        table.removeLive(at: 0)
        #expect(table.route(sessionID: current.sessionID) == .init(role: .lingering, index: 0))
        #expect(table.sessions(at: Self.address(2)).isEmpty)
        #expect(table.sessions(at: Self.address(1)) == [.init(role: .lingering, index: 0)])
    }
}
