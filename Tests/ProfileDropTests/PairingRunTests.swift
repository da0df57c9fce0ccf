import Foundation
import ProfileDrop
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Two runs of the library in this one process, pairing on the loopback interface.
@Suite struct PairingRunTests {
    static let examples = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Examples")

    static func card(_ name: String) throws -> ProfileCard {
        try CardFiles.load(contentsOf: examples.appendingPathComponent("\(name).json").path)
    }

    static func configuration(
        _ card: ProfileCard?, port: UInt16, consent: PairingConfiguration.ConsentPolicy = .ask,
        identity: PairingConfiguration.Identity = .generated, knownPeers: KnownPeerList = KnownPeerList(),
        timeout: Duration = .seconds(20)
    ) -> PairingConfiguration {
        PairingConfiguration(
            card: card, identity: identity, knownPeers: .memory(knownPeers),
            network: .init(interfaces: ["lo"], port: port), consent: consent, timeout: timeout)
    }

    /// Every snapshot of `run`, answering each question with `answer`.
    static func collect(_ run: PairingRun, answer: ConsentAnswer? = .share) async throws -> [PairingSnapshot]
    {
        var snapshots: [PairingSnapshot] = []
        for try await snapshot in run {
            snapshots.append(snapshot)
            if snapshot.event == .consent, let answer { #expect(run.answer(answer)) }
        }
        return snapshots
    }

    @Test func twoRunsInOneProcessExchangeCards() async throws {
        let port = freeUDPPort()
        let maxPeers = KnownPeerList()
        let boriPeers = KnownPeerList()
        let max = try PairingRun(Self.configuration(try Self.card("max"), port: port, knownPeers: maxPeers))
        let bori = try PairingRun(
            Self.configuration(try Self.card("bori"), port: port, knownPeers: boriPeers))
        async let maxSnapshots = Self.collect(max)
        async let boriSnapshots = Self.collect(bori)
        let (fromMax, fromBori) = try await (maxSnapshots, boriSnapshots)

        for (snapshots, received) in [(fromMax, "Bori"), (fromBori, "Max")] {
            let last = try #require(snapshots.last)
            #expect(last.event == .closed)
            #expect(last.stage == .closed)
            #expect(last.outcome?.reason == .exchanged)
            #expect(last.outcome?.card?.name == received)
            #expect(last.outcome?.cardAcknowledged == true)
            // The question came with the code both screens show, and no snapshot repeats the one before.
            let question = try #require(snapshots.first { $0.event == .consent }?.question)
            #expect(question.code.count == 6 && question.knownPeerName == nil && question.offersCard)
            #expect(snapshots.contains { $0.event == .decision(.share) })
            for (earlier, later) in zip(snapshots, snapshots.dropFirst()) { #expect(earlier != later) }
            // Stages only move forward in the one session this pairing took.
            let numbers = snapshots.map(\.stage.number)
            #expect(numbers == numbers.sorted())
        }
        let maxCode = fromMax.first { $0.event == .consent }?.question?.code
        #expect(maxCode == fromBori.first { $0.event == .consent }?.question?.code)
        #expect(fromMax.last?.peer == fromBori.first?.device)
        #expect(maxPeers.peers.map(\.name) == ["Bori (minji)"])
        #expect(boriPeers.peers.count == 1)
    }

    @Test func knownPeersPairWithoutAQuestionUnderTheKnownPeersPolicy() async throws {
        let secrets = (Array(repeating: UInt8(7), count: 32), Array(repeating: UInt8(9), count: 32))
        let (maxPeers, boriPeers) = (KnownPeerList(), KnownPeerList())
        for round in 1...2 {
            let port = freeUDPPort()
            let consent: PairingConfiguration.ConsentPolicy = round == 1 ? .always : .knownPeers
            let max = try PairingRun(
                Self.configuration(
                    try Self.card("max"), port: port, consent: consent, identity: .secret(secrets.0),
                    knownPeers: maxPeers))
            let bori = try PairingRun(
                Self.configuration(
                    nil, port: port, consent: consent, identity: .secret(secrets.1), knownPeers: boriPeers))
            async let maxSnapshots = Self.collect(max, answer: nil)
            async let boriSnapshots = Self.collect(bori, answer: nil)
            let (fromMax, fromBori) = try await (maxSnapshots, boriSnapshots)
            #expect(!fromMax.contains { $0.event == .consent } && !fromBori.contains { $0.event == .consent })
            // Receive only: Bori gets Max's card and sends none.
            #expect(fromBori.last?.outcome?.card?.name == "Max")
            #expect(fromMax.last?.outcome?.reason == .exchanged)
            #expect(fromMax.last?.outcome?.card == nil)
            let verified = try #require(fromMax.last { if case .verified = $0.event { true } else { false } })
            #expect(verified.isKnownPeer == (round == 2))
            if round == 2 { #expect(verified.knownPeerName == maxPeers.peers.first?.name) }
        }
    }

    /// Whether `snapshots` show a session ended by the peer's decline, the run going on.
    static func heardDecline(_ snapshots: [PairingSnapshot]) -> Bool {
        snapshots.contains {
            if case .sessionEnded(let reason, let detail) = $0.event {
                reason == "declined" && detail == "declined by peer"
            } else {
                false
            }
        }
    }

    @Test func cancellingTheTaskDeclinesAtOnceAndEndsInterrupted() async throws {
        let port = freeUDPPort()
        let max = try PairingRun(Self.configuration(try Self.card("max"), port: port))
        // The peer's decline ends only the session, so Bori goes on until its own timeout.
        let bori = try PairingRun(
            Self.configuration(try Self.card("bori"), port: port, timeout: .seconds(14)))
        let maxTask = Task { () throws -> [PairingSnapshot] in
            var snapshots: [PairingSnapshot] = []
            for try await snapshot in max {
                snapshots.append(snapshot)
                // The question is left unanswered: the task is cancelled instead.
                if snapshot.event == .consent { withUnsafeCurrentTask { $0?.cancel() } }
            }
            return snapshots
        }
        let start = ContinuousClock.now
        let fromBori = try await Self.collect(bori, answer: nil)
        let fromMax = try await maxTask.value
        #expect(fromMax.last?.event == .closed)
        #expect(fromMax.last?.outcome?.reason == .interrupted)
        #expect(fromMax.last?.outcome?.detail == "interrupted")
        #expect(fromMax.last?.outcome?.card == nil)
        // The peer heard the decline: it did not wait out its 60 s question, and it says why it
        // did not pair once its own timeout ended the run.
        #expect(Self.heardDecline(fromBori))
        #expect(fromBori.last?.outcome?.closeReason == .declined(by: .peer))
        #expect(ContinuousClock.now - start < .seconds(20))
    }

    /// An answer posted after a stop is refused: the stop declines the pending request, so nothing
    /// agreed to after it can still go out, and the peer, which shares with anyone, gets no card.
    @Test func anAnswerAfterAStopIsRefusedAndTheStopDeclines() async throws {
        let port = freeUDPPort()
        let max = try PairingRun(Self.configuration(try Self.card("max"), port: port))
        let bori = try PairingRun(
            Self.configuration(try Self.card("bori"), port: port, consent: .always, timeout: .seconds(14)))
        let maxTask = Task { () throws -> (snapshots: [PairingSnapshot], taken: Bool?) in
            var snapshots: [PairingSnapshot] = []
            var taken: Bool?
            for try await snapshot in max {
                snapshots.append(snapshot)
                if snapshot.event == .consent, taken == nil {
                    max.stop()
                    taken = max.share()
                }
            }
            return (snapshots, taken)
        }
        let fromBori = try await Self.collect(bori, answer: nil)
        let (fromMax, taken) = try await maxTask.value
        #expect(taken == false)
        #expect(fromMax.last?.outcome?.reason == .interrupted)
        #expect(fromBori.last?.outcome?.closeReason == .declined(by: .peer))
        #expect(fromBori.last?.outcome?.card == nil)
    }

    /// Poses the program gives: one device held still, the other brought into range by an
    /// `AsyncStream` the test feeds once both are secured.
    @Test func posesFromTheProgramBringTheDevicesIntoRange() async throws {
        let port = freeUDPPort()
        let (poses, feed) = AsyncStream<Pose>.makeStream()
        var still = Self.configuration(try Self.card("max"), port: port, consent: .always)
        still.motion = .fixed(Pose(x: 0, y: 0, heading: 0))
        var moving = Self.configuration(try Self.card("bori"), port: port, consent: .always)
        moving.motion = .stream(Pose(x: 40, y: 0, heading: 180), poses)
        let held = try PairingRun(still)
        let brought = try PairingRun(moving)
        async let fromHeld = Self.collect(held, answer: nil)
        var fromBrought: [PairingSnapshot] = []
        for try await snapshot in brought {
            fromBrought.append(snapshot)
            if snapshot.event == .ranging, (snapshot.distanceCm ?? 0) > 20 {
                feed.yield(Pose(x: 7, y: 0, heading: 180))
            }
        }
        feed.finish()
        let heldSnapshots = try await fromHeld
        #expect(fromBrought.last?.outcome?.reason == .exchanged)
        #expect(heldSnapshots.last?.outcome?.card?.name == "Bori")
        // It was measured out of range before the stream moved it in.
        #expect(fromBrought.contains { ($0.distanceCm ?? 0) > 20 })
        #expect(fromBrought.contains { $0.stage == .inRange })
    }

    /// A pose the run samples from the program: far for the first second, then held right.
    @Test func aSampledPoseBringsTheDeviceIntoRange() async throws {
        let port = freeUDPPort()
        var still = Self.configuration(try Self.card("max"), port: port, consent: .always)
        still.motion = .fixed(Pose(x: 0, y: 0, heading: 0))
        var sampled = Self.configuration(try Self.card("bori"), port: port, consent: .always)
        sampled.motion = .sampled { elapsed in
            elapsed < .seconds(1) ? Pose(x: 40, y: 0, heading: 180) : Pose(x: 7, y: 0, heading: 180)
        }
        async let fromStill = Self.collect(try PairingRun(still), answer: nil)
        let fromSampled = try await Self.collect(try PairingRun(sampled), answer: nil)
        #expect(fromSampled.last?.outcome?.reason == .exchanged)
        #expect(try await fromStill.last?.outcome?.card?.name == "Bori")
    }

    @Test func leavingTheLoopEarlyStopsTheRun() async throws {
        let port = freeUDPPort()
        let quitter = try PairingRun(Self.configuration(try Self.card("max"), port: port))
        let bori = try PairingRun(
            Self.configuration(try Self.card("bori"), port: port, timeout: .seconds(14)))
        let quitting = Task {
            for try await snapshot in quitter where snapshot.event == .consent { break }
        }
        let start = ContinuousClock.now
        let fromBori = try await Self.collect(bori, answer: nil)
        try await quitting.value
        #expect(Self.heardDecline(fromBori))
        #expect(fromBori.last?.outcome?.closeReason == .declined(by: .peer))
        #expect(ContinuousClock.now - start < .seconds(20))
    }

    @Test func anAnswerWithNoQuestionPendingIsRefused() throws {
        let run = try PairingRun(Self.configuration(nil, port: freeUDPPort()))
        #expect(!run.share())
        #expect(!run.decline())
    }

    @Test func configurationErrorsCarryTheCommandLinesMessages() throws {
        var unknown = Self.configuration(nil, port: freeUDPPort())
        unknown.network.interfaces = ["no-such-interface0"]
        let error = try #require(throws: PairingError.self) { try PairingRun(unknown) }
        #expect(error.code == .configuration)
        #expect(error.diagnostic.contains("no-such-interface0"))

        var short = Self.configuration(nil, port: freeUDPPort())
        short.identity = .secret([1, 2, 3])
        #expect(throws: PairingError(.configuration, "an identity secret is 32 bytes, got 3")) {
            try PairingRun(short)
        }

        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "pd-\(UUID().uuidString)")
        #expect(
            FileManager.default.createFile(
                atPath: directory.appendingPathExtension("key").path, contents: Data("not a key\n".utf8),
                attributes: [.posixPermissions: 0o600]))
        defer { try? FileManager.default.removeItem(at: directory.appendingPathExtension("key")) }
        var badKey = Self.configuration(nil, port: freeUDPPort())
        badKey.identity = .keyFile(directory.appendingPathExtension("key").path)
        let keyError = try #require(throws: PairingError.self) { try PairingRun(badKey) }
        #expect(keyError.code == .configuration)
        #expect(keyError.diagnostic.hasSuffix("does not hold a static key (64 hex digits expected)"))
    }

    @Test func aSnapshotIsTheJSONLineOfShare() throws {
        let snapshot = PairingSnapshot(
            event: .peerFound(peer: "a1b2"), stage: .peerFound, device: "c3d4", peer: "a1b2", code: nil,
            isKnownPeer: nil, knownPeerName: nil, distanceCm: 7.5, bearingDeg: nil,
            progress: .init(sent: 0, sendTotal: 0, received: 0, receiveTotal: 0), question: nil, outcome: nil)
        #expect(
            snapshot.jsonLine(timestamp: "T")
                == #"{"v":1,"ts":"T","event":"peer_found","peer":"a1b2","stage":"peer found","device":"c3d4","#
                + #""code":null,"distance_cm":7.5,"bearing_deg":null,"#
                + #""progress":{"sent":0,"send_total":0,"received":0,"receive_total":0}}"#)
    }

    @Test func savingAReceivedCardNeverOverwrites() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "pd-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        try CardFiles.checkDirectory(directory.path)
        let card = try Self.card("bori")
        let first = try CardFiles.save(card, in: directory.path)
        let second = try CardFiles.save(card, in: directory.path)
        #expect(first.hasSuffix("/Bori.json") && second.hasSuffix("/Bori-2.json"))
        #expect(try CardFiles.load(contentsOf: second) == card)
    }
}

/// A UDP port on loopback that nothing holds now.
func freeUDPPort() -> UInt16 {
    let descriptor = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
    defer { close(descriptor) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
            bind(descriptor, pointer, length) == 0 && getsockname(descriptor, pointer, &length) == 0
        }
    }
    return bound ? UInt16(bigEndian: address.sin_port) : 49_731
}
