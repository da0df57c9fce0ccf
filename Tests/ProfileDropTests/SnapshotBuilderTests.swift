import Testing

@testable import ProfileDrop
@testable import ProfileDropCore

/// How the core's events become snapshots: one per change a consumer can see, in order.
@Suite struct SnapshotBuilderTests {
    static let device = DeviceID(rawValue: 0x0102_0304_0506_0708)
    static let peer = DeviceID(rawValue: 0x1112_1314_1516_1718)
    static let other = DeviceID(rawValue: 0x2122_2324_2526_2728)

    static func state(peer: DeviceID? = nil, distance: Double? = nil, peersSeen: Int = 0) -> DeviceSnapshot {
        DeviceSnapshot(
            stage: .discovering, deviceID: device, peer: peer, distanceCm: distance,
            bearingDeg: distance.map { _ in 4 },
            sentChunks: 0, totalSendChunks: 0, receivedChunks: 0, totalReceiveChunks: 0, peersSeen: peersSeen,
            closeReason: nil)
    }

    @Test func oneSnapshotPerStateChangeInOrder() {
        var builder = SnapshotBuilder()
        var snapshots = [builder.started(Self.state())]
        // The core's own first advertising event repeats what the start announced.
        snapshots.append(builder.event(.advertising, Self.state()))
        snapshots.append(builder.event(.peerFound(Self.peer), Self.state()))
        snapshots.append(builder.event(.connecting(peer: Self.peer, initiator: true), Self.state()))
        snapshots.append(builder.event(.secured(peer: Self.peer), Self.state()))
        // Another device found during the session is no step back for this one.
        snapshots.append(builder.event(.peerFound(Self.other), Self.state(peer: Self.peer)))
        snapshots.append(builder.event(.inRange, Self.state(peer: Self.peer)))
        snapshots.append(builder.event(.exchanging(sent: 0, total: 2), Self.state(peer: Self.peer)))
        snapshots.append(builder.event(.acknowledged, Self.state(peer: Self.peer)))
        // Late progress after the acknowledgement tells nothing new.
        snapshots.append(builder.event(.exchanging(sent: 2, total: 2), Self.state(peer: Self.peer)))
        let shown = snapshots.compactMap { $0 }
        #expect(
            shown.map(\.event.name) == [
                "advertising", "peer_found", "connecting", "secured", "in_range", "exchanging",
                "acknowledged",
            ])
        #expect(shown.map(\.stage.number) == [1, 2, 2, 3, 5, 6, 7])
        // Every event about a peer names it, whatever the core's snapshot still lacks.
        for snapshot in shown.dropFirst() {
            #expect(snapshot.jsonLine(timestamp: "T").contains(#""peer":"\#(Self.peer)""#), "\(snapshot)")
        }
    }

    @Test func aSnapshotThatRepeatsTheLastIsNotMade() {
        var builder = SnapshotBuilder()
        _ = builder.started(Self.state())
        #expect(
            builder.event(
                .ranging(distanceCm: 12.04, bearingDeg: 4), Self.state(peer: Self.peer, distance: 12.04))
                != nil)
        // Below the one decimal shown, a measurement is no change.
        #expect(
            builder.event(
                .ranging(distanceCm: 12.01, bearingDeg: 4), Self.state(peer: Self.peer, distance: 12.01))
                == nil)
        #expect(
            builder.event(
                .ranging(distanceCm: 11.5, bearingDeg: 4), Self.state(peer: Self.peer, distance: 11.5))?
                .distanceCm == 11.5)
    }

    @Test func theQuestionCarriesTheVerification() throws {
        var builder = SnapshotBuilder()
        _ = builder.started(Self.state())
        let known = KnownPeer(
            resolvingKey: Array(repeating: 1, count: 32), bondKey: Array(repeating: 2, count: 32),
            name: "Kong (jae)")
        _ = builder.event(
            .verified(Verification(peer: Self.peer, code: "123456", knownPeer: known, interruptedBefore: 1)),
            Self.state(peer: Self.peer))
        let question = builder.asked(
            peer: Self.peer, timeoutSeconds: 60, offersCard: true, Self.state(peer: Self.peer))
        let asked = try #require(question)
        #expect(asked.event == .consent)
        #expect(
            asked.question
                == ConsentQuestion(
                    peer: Self.peer.description, code: "123456", knownPeerName: "Kong (jae)",
                    interruptedBefore: 1,
                    timeoutSeconds: 60, offersCard: true))
        #expect(asked.code == "123456" && asked.isKnownPeer == true)
        let answer = builder.answered(.share, candidate: nil, Self.state(peer: Self.peer))
        let answered = try #require(answer)
        #expect(answered.question == nil && answered.event == .decision(.share))
        #expect(answered.jsonLine(timestamp: "T").contains(#""event":"decision","decision":"share""#))
    }

    /// Two candidates asked about at once: each question joins the list with its own code, the
    /// code shown stays the first one's, an answer naming one removes what it answers, and a
    /// candidate whose session ends leaves the list.
    @Test func candidatesAskedAboutAtOnceAreListedAndAnsweredByName() throws {
        var builder = SnapshotBuilder()
        _ = builder.started(Self.state())
        _ = builder.event(.inRange, Self.state(peer: Self.peer))
        let third = DeviceID(rawValue: 0x3132_3334_3536_3738)
        for (peer, code) in [(Self.peer, "111111"), (Self.other, "222222"), (third, "333333")] {
            _ = builder.event(
                .verified(Verification(peer: peer, code: code, knownPeer: nil, interruptedBefore: 0)),
                Self.state(peer: Self.peer))
            _ = builder.asked(peer: peer, timeoutSeconds: 60, offersCard: true, Self.state(peer: Self.peer))
        }
        let declinedSnapshot = builder.answered(
            .decline, candidate: Self.other.description, Self.state(peer: Self.peer))
        let declined = try #require(declinedSnapshot)
        #expect(declined.candidates.map(\.code) == ["111111", "333333"])
        #expect(declined.code == "111111" && declined.answeredCandidate == Self.other.description)
        // The first one's session ends by itself: the next one's code is shown.
        let endedSnapshot = builder.event(
            .sessionEnded(peer: Self.peer, reason: .timeout(.consent)), Self.state(peer: third))
        let ended = try #require(endedSnapshot)
        #expect(ended.candidates.map(\.code) == ["333333"] && ended.code == "333333")
        #expect(ended.stage == .inRange)
        // Sharing with the last one leaves none listed, its code shown while the peer is awaited.
        let pickedSnapshot = builder.answered(.share, candidate: third.description, Self.state(peer: third))
        let picked = try #require(pickedSnapshot)
        #expect(picked.candidates.isEmpty && picked.question == nil && picked.code == "333333")
        #expect(picked.jsonLine(timestamp: "T").contains(#""candidate":"\#(third.description)""#))
    }

    @Test func hintsSayWhereTheDevicesWereOrWhereToLook() {
        var snapshot = PairingSnapshot(
            event: .closed, stage: .closed, device: "d", distanceCm: 13.5, bearingDeg: 4)
        #expect(
            SnapshotBuilder.hint(for: .outOfRange, snapshot: snapshot, peersSeen: 1)
                == "last seen at 13.5 cm, 4°: hold the devices 5–10 cm apart, facing each other")
        snapshot.distanceCm = nil
        let nobody = SnapshotBuilder.hint(for: .timeout(.noExchange), snapshot: snapshot, peersSeen: 0)
        #expect(nobody?.hasPrefix("no peer was seen: the same --port on both?") == true)
        #expect(nobody?.contains("Troubleshooting discovery") == true)
        #expect(SnapshotBuilder.hint(for: .timeout(.noExchange), snapshot: snapshot, peersSeen: 2) == nil)
    }
}
