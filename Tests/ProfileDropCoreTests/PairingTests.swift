import ProfileDropCrypto
import Testing

@testable import ProfileDropCore

/// Version 2's pairing: the commit-then-reveal code, private recognition of known peers, bonds,
/// interrupted pairings, and devices of another version.
@Suite struct PairingTests {
    static let bori = Fixtures.identity("bori")
    static let kong = Fixtures.identity("kong")

    /// Bori and Kong, 7 cm apart and facing, with identities and known peers.
    static func room(
        bori: DeviceIdentity = bori, boriKnows: [KnownPeer] = [], kong: DeviceIdentity = kong,
        kongKnows: [KnownPeer] = [], consent: ConsentPolicy = .share, timeouts: Timeouts = Timeouts()
    ) -> VirtualRoom {
        var room = VirtualRoom()
        room.add(
            Fixtures.configuration(
                "Bori", consent: consent, seed: 1, timeouts: timeouts, identity: bori, knownPeers: boriKnows),
            pose: Pose(x: 0, y: 0, heading: 0), seed: 11)
        room.add(
            Fixtures.configuration(
                "Kong", consent: consent, seed: 2, timeouts: timeouts, identity: kong, knownPeers: kongKnows),
            pose: Pose(x: 7, y: 0, heading: 180), seed: 12)
        return room
    }

    static func verifications(_ room: VirtualRoom, _ index: Int) -> [Verification] {
        room.events[index].compactMap {
            if case .verified(let verification) = $0 { verification } else { nil }
        }
    }

    static func remembered(_ room: VirtualRoom, _ index: Int) -> [KnownPeer] {
        room.events[index].compactMap { if case .peerRemembered(let peer) = $0 { peer } else { nil } }
    }

    static func mismatches(_ room: VirtualRoom, _ index: Int) -> [String] {
        room.events[index].compactMap { if case .knownPeerMismatch(let name) = $0 { name } else { nil } }
    }

    /// Two strangers that exchanged, and what each remembered of the other.
    static func firstExchange() -> (VirtualRoom, bori: KnownPeer?, kong: KnownPeer?) {
        var room = room()
        room.run(until: Instant.zero + .seconds(30))
        return (room, remembered(room, 0).first, remembered(room, 1).first)
    }

    @Test func strangersSeeTheSameFreshCodeAndBondOnceBothAgreed() throws {
        let (room, boriRemembers, kongRemembers) = Self.firstExchange()
        #expect(room.boriAndKongSwappedCards)
        let codes = [0, 1].map { Self.verifications(room, $0).map(\.code) }
        #expect(codes[0].count == 1 && codes[0] == codes[1] && codes[0].first?.count == 6)
        #expect([0, 1].allSatisfy { Self.verifications(room, $0).allSatisfy { $0.knownPeer == nil } })
        let bori = try #require(boriRemembers)
        let kong = try #require(kongRemembers)
        #expect(bori.resolvingKey == Self.kong.resolvingKey && bori.name == "Kong (owner)")
        #expect(kong.resolvingKey == Self.bori.resolvingKey && kong.name == "Bori (owner)")
        #expect(bori.bondKey == kong.bondKey && bori.bondKey.count == 32)
    }

    @Test func theCodeIsOnlyComputedOnceBothGatesOpened() {
        var room = VirtualRoom()
        var timeouts = Timeouts()
        timeouts.overall = .seconds(20)
        let (a, b) = Fixtures.facingPair(distance: 30)
        room.add(
            Fixtures.configuration("Bori", seed: 1, timeouts: timeouts, identity: Self.bori), pose: a,
            seed: 11)
        room.add(
            Fixtures.configuration("Kong", seed: 2, timeouts: timeouts, identity: Self.kong), pose: b,
            seed: 12)
        room.run(until: Instant.zero + .seconds(30))
        #expect(room.closeReason(0) != .exchanged)
        #expect(Self.verifications(room, 0).isEmpty && Self.verifications(room, 1).isEmpty)
        // Far sessions ended before verification began: nothing to warn about.
        #expect(
            !room.events.joined().contains { if case .pairingInterrupted = $0 { true } else { false } })
    }

    @Test func knownPeersRecogniseEachOtherPrivatelyTheNextTime() throws {
        let (_, boriRemembers, kongRemembers) = Self.firstExchange()
        let boriKnows = try #require(boriRemembers)
        let kongKnows = try #require(kongRemembers)
        var again = Self.room(boriKnows: [boriKnows], kongKnows: [kongKnows])
        again.run(until: Instant.zero + .seconds(30))
        #expect(again.boriAndKongSwappedCards)
        #expect(Self.verifications(again, 0).map { $0.knownPeer?.name } == ["Kong (owner)"])
        #expect(Self.verifications(again, 1).map { $0.knownPeer?.name } == ["Bori (owner)"])
        // Known peers keep their bond: no BOND travels, the record stays the same.
        #expect(Self.remembered(again, 0) == [boriKnows] && Self.remembered(again, 1) == [kongKnows])
    }

    static func askedUser(_ room: VirtualRoom, _ index: Int) -> Bool {
        room.events[index].contains { if case .consentRequested = $0 { true } else { false } }
    }

    /// `share --yes-known`: a peer that proves the bond gets the card at once, nobody is asked.
    @Test func sharingWithKnownPeersOnlyNeedsNoAnswerFromAKnownPeer() throws {
        let (_, boriRemembers, kongRemembers) = Self.firstExchange()
        let boriKnows = try #require(boriRemembers)
        let kongKnows = try #require(kongRemembers)
        var again = Self.room(boriKnows: [boriKnows], kongKnows: [kongKnows], consent: .shareWithKnownPeers)
        again.run(until: Instant.zero + .seconds(30))
        #expect(again.boriAndKongSwappedCards)
        #expect(!Self.askedUser(again, 0) && !Self.askedUser(again, 1))
    }

    /// `share --yes-known` with a stranger, or with a device that claims a known peer's identity
    /// without the bond: the user is asked, and without an answer no card moves. The unanswered
    /// question ends its session only: the device goes on for known peers.
    @Test func sharingWithKnownPeersOnlyAsksAboutAnyOtherDevice() throws {
        var timeouts = Timeouts()
        timeouts.consent = .seconds(5)
        var strangers = Self.room(consent: .shareWithKnownPeers, timeouts: timeouts)
        strangers.run(until: Instant.zero + .seconds(30))
        #expect(Self.askedUser(strangers, 0) && Self.askedUser(strangers, 1))
        #expect(strangers.cards(0).isEmpty && strangers.cards(1).isEmpty)
        // The side whose question came first times out; the other may hear its decline first.
        let reasons = [0, 1].compactMap { index in
            strangers.events[index].lazy.compactMap {
                if case .sessionEnded(_, let reason) = $0 { reason } else { nil }
            }.first
        }
        #expect(reasons.contains(.timeout(.consent)), "\(reasons)")
        #expect(reasons.allSatisfy { $0 == .timeout(.consent) || $0 == .declined(by: .peer) }, "\(reasons)")
        #expect(strangers.closeReason(0) == nil && strangers.closeReason(1) == nil)

        let (_, _, kongRemembers) = Self.firstExchange()
        let kongKnows = try #require(kongRemembers)
        let forgedBond = KnownPeer(
            resolvingKey: Self.kong.resolvingKey, bondKey: Array(repeating: 7, count: 32), name: "Kong")
        var impostor = Self.room(
            boriKnows: [forgedBond], kongKnows: [kongKnows], consent: .shareWithKnownPeers, timeouts: timeouts
        )
        impostor.run(until: Instant.zero + .seconds(30))
        #expect(impostor.cards(0).isEmpty && impostor.cards(1).isEmpty)
        #expect(Self.mismatches(impostor, 1).first == "Bori (owner)")
    }

    static func provedFailures(_ room: VirtualRoom, _ index: Int) -> Int {
        room.events[index].count {
            if case .sessionEnded(_, .error(let error)) = $0 {
                error.code == .identityProofFailed
            } else {
                false
            }
        }
    }

    /// PROTOCOL.md 6.5: a device that presents a known peer's identity without its bond is warned
    /// about on our screen and met as a stranger in everything it can observe, so that no reaction
    /// tells it whom we know. Here each side holds a record of the other that the other cannot
    /// prove: both warn, once, neither is shown the other as known, no session ends
    /// `identity-proof-failed`, and neither record is replaced by the new bond.
    @Test func anUnprovenKnownPeerIsWarnedAboutAndMetAsAStranger() throws {
        let (_, _, kongRemembers) = Self.firstExchange()
        let kongKnows = try #require(kongRemembers)
        // The impostor has Kong's resolving key (a bonded device could leak it) but not the bond.
        let forgedBond = KnownPeer(
            resolvingKey: Self.kong.resolvingKey, bondKey: Array(repeating: 7, count: 32), name: "Kong")
        var timeouts = Timeouts()
        timeouts.overall = .seconds(20)
        var room = Self.room(boriKnows: [forgedBond], kongKnows: [kongKnows], timeouts: timeouts)
        room.run(until: Instant.zero + .seconds(30))
        #expect(Self.mismatches(room, 1) == ["Bori (owner)"])
        #expect(Self.mismatches(room, 0) == ["Kong"])
        for index in [0, 1] {
            #expect(Self.provedFailures(room, index) == 0)
            let verifications = Self.verifications(room, index)
            #expect(!verifications.isEmpty && verifications.allSatisfy { $0.knownPeer == nil })
            #expect(Self.remembered(room, index).isEmpty)
        }
        // Both users share with anyone (`.share`): as strangers, they exchange.
        #expect(room.boriAndKongSwappedCards)
    }

    /// No recognition oracle (PROTOCOL.md 6.5, 11.3): a device that presents the IDENT of someone
    /// Bori knows, without the bond (replayed from another session, or made with a stolen resolving
    /// key), sees exactly what it sees when Bori does not know that identity: the same datagrams, of
    /// the same sizes, in the same order, and the same events, codes and close on its side. Bori's
    /// own user alone is warned.
    @Test(arguments: [ConsentPolicy.shareWithKnownPeers, .askUser, .share])
    func whatAnImpostorSeesDoesNotDependOnWhetherItsIdentityIsKnown(policy: ConsentPolicy) {
        let max = Fixtures.identity("max")
        let recordOfMax = KnownPeer(
            resolvingKey: max.resolvingKey, bondKey: Array(repeating: 0x33, count: 32), name: "Max (joon)")
        let unrelated = KnownPeer(
            resolvingKey: Fixtures.identity("rex").resolvingKey, bondKey: Array(repeating: 0x44, count: 32),
            name: "Rex (sam)")
        var timeouts = Timeouts()
        timeouts.consent = .seconds(5)
        timeouts.overall = .seconds(20)
        func world(boriKnows: KnownPeer) -> (sizes: [Int], impostorSaw: [DeviceEvent], boriWarned: [String]) {
            // The impostor is Kong's device holding Max's identity, which Bori may or may not know.
            var room = Self.room(
                boriKnows: [boriKnows], kong: max, consent: policy, timeouts: timeouts)
            let sizes = SizeLog()
            room.tamper = { from, _, bytes in
                if from == 0 { sizes.sizes.append(bytes.count) }
                return bytes
            }
            room.run(until: Instant.zero + .seconds(30))
            return (sizes.sizes, room.events[1], Self.mismatches(room, 0))
        }
        let known = world(boriKnows: recordOfMax)
        let unknown = world(boriKnows: unrelated)
        // An unanswered or declined session ends only itself, so the impostor may be met again:
        // each meeting warns, about Max alone.
        #expect(!known.boriWarned.isEmpty && known.boriWarned.allSatisfy { $0 == "Max (joon)" })
        #expect(unknown.boriWarned.isEmpty)
        #expect(!known.sizes.isEmpty)
        #expect(known.sizes == unknown.sizes)
        #expect(known.impostorSaw == unknown.impostorSaw)
    }

    /// What Bori sent, kept by the room's tamper hook.
    final class SizeLog: @unchecked Sendable {  // Used by one test's room, on one thread.
        var sizes: [Int] = []
    }

    /// A known peer that forgot us proves nothing: our user is warned, the peer is met as a stranger,
    /// and our record of it is kept, not replaced by the bond of a meeting that proved nothing.
    @Test func aPeerThatForgotUsIsWarnedAboutNotASilentStranger() throws {
        let (_, boriRemembers, _) = Self.firstExchange()
        let boriKnows = try #require(boriRemembers)
        var timeouts = Timeouts()
        timeouts.overall = .seconds(20)
        var room = Self.room(boriKnows: [boriKnows], timeouts: timeouts)
        room.run(until: Instant.zero + .seconds(30))
        #expect(Self.mismatches(room, 0) == ["Kong (owner)"])
        #expect(Self.mismatches(room, 1).isEmpty)
        #expect(Self.verifications(room, 0).allSatisfy { $0.knownPeer == nil })
        #expect(Self.remembered(room, 0).isEmpty)
        #expect(Self.remembered(room, 1).count == 1)
    }

    @Test func aPairingCutAfterVerificationIsShownOnBothScreens() {
        // Both users are asked and have not answered yet when the link is cut.
        var room = Self.room(consent: .askUser)
        var cutAt: Instant?
        while room.now < Instant.zero + .seconds(30) {
            room.run(until: room.now + .milliseconds(25))
            if cutAt == nil, !Self.verifications(room, 0).isEmpty, !Self.verifications(room, 1).isEmpty {
                cutAt = room.now
                room.tamper = { _, _, _ in nil }
            }
        }
        #expect(cutAt != nil)
        let interrupted = [0, 1].map { index in
            room.events[index].compactMap {
                if case .pairingInterrupted(_, let code, let reason) = $0 { (code, reason) } else { nil }
            }
        }
        let codes = Self.verifications(room, 0).map(\.code)
        for index in [0, 1] {
            #expect(interrupted[index].first?.0 == codes.first)
            #expect(interrupted[index].first?.1 == .timeout(.peerSilent))
        }
        #expect(room.cards(0).isEmpty && room.cards(1).isEmpty)
    }

    @Test func identsAreFreshEverySessionAndResolveOnlyForKnownPeers() {
        var random: any RandomSource = DeterministicRandom(seed: 3)
        let first = Recognition.ident(for: Self.bori, random: &random)
        let second = Recognition.ident(for: Self.bori, random: &random)
        #expect(first != second && first.count == 32)
        let record = KnownPeer(
            resolvingKey: Self.bori.resolvingKey, bondKey: Array(repeating: 1, count: 32), name: "B")
        let other = KnownPeer(
            resolvingKey: Self.kong.resolvingKey, bondKey: Array(repeating: 2, count: 32), name: "K")
        #expect(Recognition.resolve(first, among: [other, record]) == record)
        #expect(Recognition.resolve(second, among: [other, record]) == record)
        #expect(Recognition.resolve(first, among: [other]) == nil)
        // A stranger's PROOF is random bytes, different every time.
        let proofs = (0..<2).map { _ in
            Recognition.proof(bond: nil, handshakeHash: [1], senderIsInitiator: true, random: &random)
        }
        #expect(proofs[0] != proofs[1])
    }

    @Test func aRevealThatDoesNotOpenTheCommitmentIsAnError() throws {
        var random: any RandomSource = DeterministicRandom(seed: 4)
        let hash = Array(repeating: UInt8(9), count: 64)
        var initiator = Pairing(isInitiator: true, handshakeHash: hash, identity: nil, random: &random)
        let honest = Array(repeating: UInt8(1), count: 32)
        let commitment = VerificationCode.commitment(handshakeHash: hash, responderNonce: honest)
        #expect(try initiator.absorb(.commit(commitment), knownPeers: [], random: &random))
        initiator.beginVerification(random: &random)
        #expect(initiator.localNonce != nil)
        #expect(throws: ProtocolError.self) {
            try initiator.absorb(.reveal(Array(repeating: 2, count: 32)), knownPeers: [], random: &random)
        }
        #expect(initiator.code == nil)
        #expect(try initiator.absorb(.reveal(honest), knownPeers: [], random: &random))
        #expect(initiator.code?.count == 6)
        // Frames a role never sends are errors, not silently taken.
        #expect(throws: ProtocolError.self) {
            try initiator.absorb(.nonce(honest), knownPeers: [], random: &random)
        }
    }

    @Test func aDeviceOfAnotherVersionIsReportedOnce() {
        var room = Self.room()
        var beacon = Packet.beacon(
            Beacon(deviceID: DeviceID(rawValue: 0xAB), port: 9, busy: false, sequence: 1)
        ).encoded()
        beacon[2] = 1
        for _ in 0..<3 {
            room.act(0) { device, now in
                device.handleDatagram(beacon, from: PeerAddress(10, 0, 0, 9, port: 9), at: now)
            }
        }
        let reports = room.events[0].filter {
            if case .incompatiblePeer(DeviceID(rawValue: 0xAB), version: 1) = $0 { true } else { false }
        }
        #expect(reports.count == 1)
        #expect(room.rejections(0).filter { $0.code == .unsupportedVersion }.count == 3)
    }

    /// A configuration of zero peers (a capture may hold one) still remembers one device of another
    /// version: each new one replaces it and is reported, and nothing traps on the empty list.
    @Test func aTableOfZeroPeersStillReportsOtherVersions() {
        var room = VirtualRoom()
        var configuration = Fixtures.configuration("Bori", seed: 1, identity: Self.bori)
        configuration.limits.maxPeers = 0
        room.add(configuration, pose: Pose(x: 0, y: 0, heading: 0), seed: 11)
        for id: UInt64 in [0xAB, 0xAC, 0xAB] {
            var beacon = Packet.beacon(
                Beacon(deviceID: DeviceID(rawValue: id), port: 9, busy: false, sequence: 1)
            ).encoded()
            beacon[2] = 1
            room.act(0) { device, now in
                device.handleDatagram(beacon, from: PeerAddress(10, 0, 0, 9, port: 9), at: now)
            }
        }
        let reported = room.events[0].compactMap {
            if case .incompatiblePeer(let peer, version: 1) = $0 { peer.rawValue } else { nil }
        }
        #expect(reported == [0xAB, 0xAC, 0xAB])
    }
}
