import ProfileDropCrypto
import Testing

@testable import ProfileDropCore

/// Discovery's peer table alone (PROTOCOL.md section 4): beacons taken or refused, the two tiers,
/// eviction, and what handshakes and unanswered invitations change.
@Suite struct PeerTableTests {
    static let here = Pose(x: 0, y: 0, heading: 0)

    static func context(maxPeers: Int = 32, maxUnverified: Int = 8) -> SessionContext {
        var configuration = Fixtures.configuration("Bori", seed: 7)
        configuration.limits.maxPeers = maxPeers
        configuration.limits.maxUnverifiedPeers = maxUnverified
        return SessionContext(
            configuration: configuration, deviceID: DeviceID(rawValue: 1),
            random: DeterministicRandom(seed: 7),
            measurementNoise: DeterministicRandom(seed: 7), now: .zero, pose: here)
    }

    static func address(_ host: UInt8) -> PeerAddress { PeerAddress(10, 0, 0, host, port: 4000) }

    static func beacon(_ id: UInt64, _ sequence: UInt32, x: Int32? = nil) -> Beacon {
        Beacon(
            deviceID: DeviceID(rawValue: id), port: 4000, busy: false, sequence: sequence,
            position: x.map { PositionHint(x: $0, y: 0) })
    }

    @Test func aBeaconAddsAPeerInIdOrderAndAnotherAddressOrAnOldSequenceIsRefused() throws {
        var context = Self.context()
        var table = PeerTable(reach: 50)
        try table.take(Self.beacon(9, 1), from: Self.address(9), pose: Self.here, context: &context)
        try table.take(Self.beacon(3, 1), from: Self.address(3), pose: Self.here, context: &context)
        #expect(table.peers.map(\.id.rawValue) == [3, 9])
        #expect(context.events.pop() == .peerFound(DeviceID(rawValue: 9)))
        #expect(throws: ProtocolError.self) {
            try table.take(Self.beacon(9, 2), from: Self.address(10), pose: Self.here, context: &context)
        }
        #expect(table.entry(DeviceID(rawValue: 9))?.conflictAt != nil)
        #expect(throws: ProtocolError.self) {
            try table.take(Self.beacon(3, 1), from: Self.address(3), pose: Self.here, context: &context)
        }
        // A port field other than the source's is a conflict too.
        #expect(throws: ProtocolError.self) {
            try table.take(
                Beacon(deviceID: DeviceID(rawValue: 4), port: 4001, busy: false, sequence: 1),
                from: Self.address(4), pose: Self.here, context: &context)
        }
    }

    @Test func aPeerHeardLongEnoughIsEstablished() throws {
        var context = Self.context()
        var table = PeerTable(reach: 50)
        try table.take(Self.beacon(5, 1), from: Self.address(5), pose: Self.here, context: &context)
        #expect(!table.isEstablished(peer: DeviceID(rawValue: 5)))
        context.now = Instant.zero + PeerTable.longHeard
        try table.take(Self.beacon(5, 2), from: Self.address(5), pose: Self.here, context: &context)
        #expect(table.isEstablished(peer: DeviceID(rawValue: 5)))
        #expect(table.isEstablished(Self.address(5)))
        #expect(table.establishedCount == 1)
    }

    @Test func aFullUnverifiedTierEvictsAPeerHeardOnceFarthestFirst() throws {
        var context = Self.context(maxPeers: 8, maxUnverified: 3)
        var table = PeerTable(reach: 50)
        for (id, x) in [(UInt64(1), Int32(10)), (2, 40), (3, 20)] {
            try table.take(
                Self.beacon(id, 1, x: x), from: Self.address(UInt8(id)), pose: Self.here, context: &context)
        }
        // Heard twice: it stays.
        try table.take(Self.beacon(2, 2, x: 40), from: Self.address(2), pose: Self.here, context: &context)
        try table.take(Self.beacon(4, 1, x: 5), from: Self.address(4), pose: Self.here, context: &context)
        #expect(table.peers.map(\.id.rawValue) == [1, 2, 4], "the farthest heard once (3, at 20 cm) went")
    }

    /// PROTOCOL.md 4, "Tiers", and 5, "Probing ahead": an entry whose address answered a PROBE is
    /// no entry heard once that a newcomer may displace, and a newcomer that answered displaces an
    /// entry that did not however often it was heard; newcomers that did not answer still churn
    /// only among entries heard once.
    @Test func anEntryThatAnsweredAProbeIsKeptOverPhantomsAndAnAnsweredNewcomerDisplacesThem() throws {
        var context = Self.context(maxPeers: 8, maxUnverified: 2)
        var table = PeerTable(reach: 50)
        try table.take(Self.beacon(1, 1), from: Self.address(1), pose: Self.here, context: &context)
        try table.take(Self.beacon(2, 1), from: Self.address(2), pose: Self.here, context: &context)
        table.addressAnswered(Self.address(1), beacon: Self.beacon(1, 1), pose: Self.here, context: &context)
        #expect(table.entry(DeviceID(rawValue: 1))?.answered == true)
        #expect(table.entry(DeviceID(rawValue: 2))?.answered == false)
        // Phantoms heard once churn among themselves; the answered entry stays.
        for id in UInt64(3)...6 {
            try table.take(
                Self.beacon(id, 1), from: Self.address(UInt8(id)), pose: Self.here, context: &context)
        }
        #expect(table.peers.map(\.id.rawValue) == [1, 6])
        // Heard twice, an unanswered entry refuses a newcomer that did not answer ...
        try table.take(Self.beacon(6, 2), from: Self.address(6), pose: Self.here, context: &context)
        #expect(throws: ProtocolError.self) {
            try table.take(Self.beacon(7, 1), from: Self.address(7), pose: Self.here, context: &context)
        }
        // ... but not one whose address proved it receives, whether from its BEACON or its echo.
        try table.take(
            Self.beacon(7, 1), from: Self.address(7), pose: Self.here, proven: true, context: &context)
        #expect(table.peers.map(\.id.rawValue) == [1, 7])
        #expect(table.entry(DeviceID(rawValue: 7))?.answered == true)
        // Two answered entries fill the tier: an echo for an evicted peer finds no place.
        table.addressAnswered(Self.address(8), beacon: Self.beacon(8, 1), pose: Self.here, context: &context)
        #expect(table.peers.map(\.id.rawValue) == [1, 7])
        // A host answers for one id: another id from host 7, on another port, is not answered.
        let otherPort = PeerAddress(10, 0, 0, 7, port: 4001)
        table.addressAnswered(
            otherPort, beacon: Beacon(deviceID: DeviceID(rawValue: 9), port: 4001, busy: false, sequence: 1),
            pose: Self.here, context: &context)
        #expect(table.entry(DeviceID(rawValue: 9)) == nil)
    }

    /// An echo for a peer churned out before it came brings the peer back, answered.
    @Test func anEchoForAnEvictedPeerBringsItBackAnswered() throws {
        var context = Self.context(maxPeers: 8, maxUnverified: 2)
        var table = PeerTable(reach: 50)
        for id in UInt64(1)...3 {
            try table.take(
                Self.beacon(id, 1), from: Self.address(UInt8(id)), pose: Self.here, context: &context)
        }
        #expect(table.entry(DeviceID(rawValue: 1)) == nil)
        table.addressAnswered(Self.address(1), beacon: Self.beacon(1, 1), pose: Self.here, context: &context)
        #expect(table.entry(DeviceID(rawValue: 1))?.answered == true)
        #expect(table.count == 2)
        // An echo from a port the BEACON did not name brings nothing.
        table.addressAnswered(
            Self.address(9),
            beacon: Beacon(deviceID: DeviceID(rawValue: 4), port: 4001, busy: false, sequence: 1),
            pose: Self.here, context: &context)
        #expect(table.entry(DeviceID(rawValue: 4)) == nil)
    }

    @Test func aHandshakeVerifiesAndAnUnansweredInvitationDemotes() throws {
        var context = Self.context()
        var table = PeerTable(reach: 50)
        try table.take(Self.beacon(5, 1), from: Self.address(5), pose: Self.here, context: &context)
        let disputed = table.invitationUnanswered(
            to: DeviceID(rawValue: 5), at: Self.address(5), pose: Self.here, context: context)
        #expect(!disputed)
        #expect(table.entry(DeviceID(rawValue: 5))?.unanswered == true)
        table.handshakeCompleted(
            with: DeviceID(rawValue: 5), at: Self.address(5), closed: false, pose: Self.here, context: context
        )
        #expect(
            table.isVerified(peer: DeviceID(rawValue: 5))
                && table.entry(DeviceID(rawValue: 5))?.unanswered == false)
        // A peer never heard that completed a handshake gets a verified entry.
        table.handshakeCompleted(
            with: DeviceID(rawValue: 6), at: Self.address(6), closed: false, pose: Self.here, context: context
        )
        #expect(table.isVerified(peer: DeviceID(rawValue: 6)))
        // Disputed (another address claimed the id): suspended, and the caller is told.
        try table.take(Self.beacon(7, 1), from: Self.address(7), pose: Self.here, context: &context)
        _ = try? table.take(Self.beacon(7, 2), from: Self.address(17), pose: Self.here, context: &context)
        let claimed = table.invitationUnanswered(
            to: DeviceID(rawValue: 7), at: Self.address(7), pose: Self.here, context: context)
        #expect(claimed)
        #expect(table.entry(DeviceID(rawValue: 7))?.suspended == true)
    }

    @Test func failuresBackOffAndExpiryRemovesSilentPeers() throws {
        var context = Self.context()
        var table = PeerTable(reach: 50)
        try table.take(Self.beacon(5, 1), from: Self.address(5), pose: Self.here, context: &context)
        table.sessionFailed(with: DeviceID(rawValue: 5), context: &context)
        let entry = try #require(table.entry(DeviceID(rawValue: 5)))
        #expect(entry.failures == 1 && entry.retryAt > context.now)
        table.peerBusy(DeviceID(rawValue: 5), context: &context)
        #expect((table.entry(DeviceID(rawValue: 5))?.busyUntil ?? .zero) > context.now)
        #expect(table.oldestLastSeen == .zero)
        table.expire(now: Instant.zero + .seconds(14), lifetime: .seconds(15))
        #expect(table.count == 1)
        table.expire(now: Instant.zero + .seconds(15), lifetime: .seconds(15))
        #expect(table.count == 0)
    }
}
