import ProfileDropCrypto
import Testing

@testable import ProfileDropCore

/// Discovery's invitee ranking alone (PROTOCOL.md section 5): established peers first, then fewest
/// failures, then the nearest by hint, with every hint inside the gate band equally near; host
/// back-offs exclude; and the refusal rule.
@Suite struct InviteeRankingTests {
    static let here = Pose(x: 0, y: 0, heading: 0)

    static func context() -> SessionContext {
        SessionContext(
            configuration: Fixtures.configuration("Bori", seed: 11), deviceID: DeviceID(rawValue: 1),
            random: DeterministicRandom(seed: 11), measurementNoise: DeterministicRandom(seed: 11),
            now: .zero,
            pose: here)
    }

    /// A table of peers `id` at `x` cm, heard twice at once (so none is established by hearing).
    static func table(_ peers: [(id: UInt64, x: Int32)], context: inout SessionContext) throws -> PeerTable {
        var table = PeerTable(reach: 50)
        for (id, x) in peers {
            for sequence in UInt32(1)...2 {
                try table.take(
                    Beacon(
                        deviceID: DeviceID(rawValue: id), port: 4000, busy: false, sequence: sequence,
                        position: PositionHint(x: x, y: 0)),
                    from: PeerAddress(10, 0, 0, UInt8(id), port: 4000), pose: here, context: &context)
            }
        }
        return table
    }

    /// Peer `id` of ``table(_:context:)`` echoes a PROBE of ours at its address.
    static func answer(_ id: UInt8, in table: inout PeerTable, context: inout SessionContext) {
        table.addressAnswered(
            PeerAddress(10, 0, 0, id, port: 4000),
            beacon: Beacon(deviceID: DeviceID(rawValue: UInt64(id)), port: 4000, busy: false, sequence: 2),
            pose: here, context: &context)
    }

    @Test func theNearestIsInvitedAndEveryHintInsideTheBandIsEquallyNear() throws {
        var context = Self.context()
        let table = try Self.table([(2, 30), (3, 12), (4, 25)], context: &context)
        let view = InviteeRanking.View(table: table, reputation: HostReputation(), pose: Self.here)
        let ranking = InviteeRanking(inviteAt: .zero)
        #expect(ranking.nextInvitee(in: view, context: &context)?.id.rawValue == 3)
        // Before its time, nobody.
        #expect(
            InviteeRanking(inviteAt: Instant.zero + .seconds(1)).nextInvitee(in: view, context: &context)
                == nil)
        let close = try Self.table([(5, 6), (6, 9), (7, 20)], context: &context)
        let tied = InviteeRanking.View(table: close, reputation: HostReputation(), pose: Self.here)
        #expect(
            InviteeRanking.hasEquallyNearCandidate(than: DeviceID(rawValue: 5), in: tied, context: context))
        #expect(
            !InviteeRanking.hasEquallyNearCandidate(than: DeviceID(rawValue: 7), in: tied, context: context))
        var drawn: Set<UInt64> = []
        for _ in 0..<32 { drawn.insert(ranking.nextInvitee(in: tied, context: &context)?.id.rawValue ?? 0) }
        #expect(drawn == [5, 6], "both inside the band are drawn, the one at 20 cm never")
    }

    /// PROTOCOL.md 5, "Probing ahead": a peer whose address answered a PROBE is invited before any
    /// other, however near the others claim to be; with none answered, the nearest as before.
    @Test func aPeerThatAnsweredAProbeIsInvitedFirst() throws {
        var context = Self.context()
        var table = try Self.table([(2, 6), (3, 30), (4, 6)], context: &context)
        let unanswered = InviteeRanking.View(table: table, reputation: HostReputation(), pose: Self.here)
        let ranking = InviteeRanking(inviteAt: .zero)
        var drawn: Set<UInt64> = []
        for _ in 0..<32 {
            drawn.insert(ranking.nextInvitee(in: unanswered, context: &context)?.id.rawValue ?? 0)
        }
        #expect(drawn == [2, 4])
        #expect(
            !InviteeRanking.hasAnsweredCandidate(
                than: DeviceID(rawValue: 2), in: unanswered, now: context.now))
        Self.answer(3, in: &table, context: &context)
        let answered = InviteeRanking.View(table: table, reputation: HostReputation(), pose: Self.here)
        for _ in 0..<8 { #expect(ranking.nextInvitee(in: answered, context: &context)?.id.rawValue == 3) }
        #expect(
            InviteeRanking.hasAnsweredCandidate(than: DeviceID(rawValue: 2), in: answered, now: context.now))
        #expect(
            !InviteeRanking.hasAnsweredCandidate(than: DeviceID(rawValue: 3), in: answered, now: context.now))
    }

    /// PROTOCOL.md 5, "Tentative invitations": an invitee whose address answered a PROBE ties only
    /// with candidates that answered too, so a phantom claiming our spot does not make the device
    /// give up the peer held against it; an invitee that did not answer ties with both.
    @Test func anAnsweredInviteeTiesOnlyWithAnsweredCandidates() throws {
        var context = Self.context()
        var table = try Self.table([(2, 6), (3, 7), (4, 8)], context: &context)
        Self.answer(2, in: &table, context: &context)
        let oneAnswered = InviteeRanking.View(table: table, reputation: HostReputation(), pose: Self.here)
        #expect(
            !InviteeRanking.hasEquallyNearCandidate(
                than: DeviceID(rawValue: 2), in: oneAnswered, context: context))
        #expect(
            InviteeRanking.hasEquallyNearCandidate(
                than: DeviceID(rawValue: 3), in: oneAnswered, context: context))
        Self.answer(4, in: &table, context: &context)
        let twoAnswered = InviteeRanking.View(table: table, reputation: HostReputation(), pose: Self.here)
        #expect(
            InviteeRanking.hasEquallyNearCandidate(
                than: DeviceID(rawValue: 2), in: twoAnswered, context: context))
    }

    /// The same for the other rules that give a tentative invitation up: a candidate established by
    /// hearing (a phantom kept alive) or heard more often outranks an invitee whose address answered
    /// only if its own address answered too.
    @Test func anAnsweredInviteeIsOutrankedOnlyByAnsweredCandidates() throws {
        var context = Self.context()
        var table = PeerTable(reach: 50)
        func hear(_ id: UInt8, _ sequence: UInt32) throws {
            try table.take(
                Beacon(
                    deviceID: DeviceID(rawValue: UInt64(id)), port: 4000, busy: false, sequence: sequence,
                    position: PositionHint(x: 6, y: 0)),
                from: PeerAddress(10, 0, 0, id, port: 4000), pose: Self.here, context: &context)
        }
        // 3 is heard at 0 and 1.6 s, so established; 4 twice; 2, the invitee, once at 1.6 s.
        try hear(3, 1)
        context.now = Instant.zero + .milliseconds(1_600)
        try hear(3, 2)
        try hear(4, 1)
        try hear(4, 2)
        try hear(2, 1)
        let invitee = DeviceID(rawValue: 2)
        var view: InviteeRanking.View {
            InviteeRanking.View(table: table, reputation: HostReputation(), pose: Self.here)
        }
        #expect(table.isEstablished(peer: DeviceID(rawValue: 3)))
        #expect(InviteeRanking.hasEstablishedCandidate(than: invitee, in: view, now: context.now))
        #expect(InviteeRanking.hasBetterHeardCandidate(than: invitee, in: view, now: context.now))
        Self.answer(2, in: &table, context: &context)
        #expect(!InviteeRanking.hasEstablishedCandidate(than: invitee, in: view, now: context.now))
        #expect(!InviteeRanking.hasBetterHeardCandidate(than: invitee, in: view, now: context.now))
        Self.answer(3, in: &table, context: &context)
        Self.answer(4, in: &table, context: &context)
        #expect(InviteeRanking.hasEstablishedCandidate(than: invitee, in: view, now: context.now))
        #expect(InviteeRanking.hasBetterHeardCandidate(than: invitee, in: view, now: context.now))
    }

    @Test func fewerFailuresComeFirstAndABackedOffHostIsNoCandidate() throws {
        var context = Self.context()
        var table = try Self.table([(2, 6), (3, 30)], context: &context)
        table.sessionFailed(with: DeviceID(rawValue: 2), context: &context)
        context.now = Instant.zero + .seconds(600)
        let ranking = InviteeRanking(inviteAt: .zero)
        let view = InviteeRanking.View(table: table, reputation: HostReputation(), pose: Self.here)
        #expect(
            ranking.nextInvitee(in: view, context: &context)?.id.rawValue == 3,
            "fewer failures, though farther")
        var reputation = HostReputation()
        reputation.peerFaulted(at: PeerAddress(10, 0, 0, 3, port: 9), context: &context)
        let backedOff = InviteeRanking.View(table: table, reputation: reputation, pose: Self.here)
        #expect(ranking.nextInvitee(in: backedOff, context: &context)?.id.rawValue == 2)
        #expect(
            !InviteeRanking.hasOtherCandidate(than: DeviceID(rawValue: 2), in: backedOff, now: context.now))
        // The earliest a peer was or becomes available: the failed peer's retry time, not the
        // backed-off host's end.
        let retry = try #require(table.entry(DeviceID(rawValue: 2))?.retryAt)
        #expect(ranking.nextCandidateAt(in: backedOff) == retry)
        #expect(reputation.backoffEnd(PeerAddress(10, 0, 0, 3, port: 4000).ipv4) > retry)
    }

    @Test func anInvitationIsRefusedWhileABetterCandidateWaitsOrTheHostIsBackedOff() throws {
        var context = Self.context()
        var table = try Self.table([(2, 6), (3, 8)], context: &context)
        // Both established by a handshake, and the inviter (2) has failed once.
        for id in [UInt64(2), 3] {
            table.handshakeCompleted(
                with: DeviceID(rawValue: id), at: PeerAddress(10, 0, 0, UInt8(id), port: 4000), closed: false,
                pose: Self.here, context: context)
        }
        table.sessionFailed(with: DeviceID(rawValue: 2), context: &context)
        let inviter = PeerAddress(10, 0, 0, 2, port: 4000)
        let view = InviteeRanking.View(table: table, reputation: HostReputation(), pose: Self.here)
        #expect(
            InviteeRanking.prefersNotToAccept(
                DeviceID(rawValue: 2), from: inviter, in: view, now: context.now))
        #expect(
            !InviteeRanking.prefersNotToAccept(
                DeviceID(rawValue: 3), from: PeerAddress(10, 0, 0, 3, port: 4000), in: view, now: context.now)
        )
        var reputation = HostReputation()
        reputation.peerFaulted(at: PeerAddress(10, 0, 0, 3, port: 9), context: &context)
        let faulty = InviteeRanking.View(table: table, reputation: reputation, pose: Self.here)
        #expect(
            InviteeRanking.prefersNotToAccept(
                DeviceID(rawValue: 3), from: PeerAddress(10, 0, 0, 3, port: 4000), in: faulty,
                now: context.now))
    }
}
