import Foundation
import ProfileDropCapture
import ProfileDropCore
import ProfileDropCrypto
import Testing

/// Two devices driven by a small loop through ``CapturingDevice``: what reaches the file, with and
/// without a keylog.
struct CaptureRecorderTests {
    /// Strangers and known peers: the keylog carries each device's identity and known peers, and
    /// replay rebuilds the device with them.
    @Test(arguments: [false, true])
    func capturedRunReplaysIdentically(bonded: Bool) throws {
        var run = try TwoDeviceRun(options: CaptureOptions(keylog: true), bonded: bonded)
        run.run(until: Instant.zero + .seconds(30))
        #expect(run.closeReasons == [.exchanged, .exchanged])
        let verifications = run.events.map { list in
            list.compactMap { event -> Verification? in
                if case .verified(let verification) = event { return verification }
                return nil
            }
        }
        #expect(verifications.map(\.count) == [1, 1])
        #expect(verifications.joined().allSatisfy { ($0.knownPeer != nil) == bonded })
        let capture = try CaptureFile(bytes: run.recorder.fileBytes())
        #expect(capture.devices.map(\.record.name) == ["left", "right"])
        #expect(capture.hasKeylog)
        for (index, device) in capture.devices.enumerated() {
            #expect(device.secrets?.identity == TwoDeviceRun.identity(index))
            #expect(device.secrets?.knownPeers == (bonded ? [TwoDeviceRun.knownPeer(of: index)] : []))
            #expect(device.record.deviceID == run.devices[index].device.deviceID)
            #expect(device.outbound.count == run.devices[index].device.counters.datagramsSent)
            // A share capture names no key source: replay needs the key file's key.
            #expect(throws: CaptureError.self) { try Replay.run(device) }
            let result = try Replay.run(device, staticKey: TwoDeviceRun.staticKey(index))
            #expect(result == .identical(datagrams: device.outbound.count))
        }
    }

    /// The owner stopping a device mid-session is an input like any other: recorded, and replayed
    /// to the same CLOSE(declined).
    @Test func aCancelledRunReplaysIdentically() throws {
        var run = try TwoDeviceRun(options: CaptureOptions(keylog: true))
        run.run(until: Instant.zero + .milliseconds(700))
        run.act(0) { $0.cancel(at: $1) }
        run.run(until: Instant.zero + .seconds(10))
        // Cancelled while ranging: the peer's session ends, and it goes on looking (PROTOCOL.md 9).
        #expect(run.closeReasons == [.declined(by: .local), nil])
        let capture = try CaptureFile(bytes: run.recorder.fileBytes())
        #expect(capture.devices[0].inputs.contains { $0.input == .cancel })
        for (index, device) in capture.devices.enumerated() {
            let result = try Replay.run(device, staticKey: TwoDeviceRun.staticKey(index))
            #expect(result == .identical(datagrams: device.outbound.count))
        }
    }

    /// The identity and the known peers change what a device sends (IDENT tags, PROOFs): a replay
    /// without either of them differs from the capture.
    @Test func replayWithoutTheRecordedIdentityOrKnownPeersDiverges() throws {
        var run = try TwoDeviceRun(options: CaptureOptions(keylog: true), bonded: true)
        run.run(until: Instant.zero + .seconds(30))
        let capture = try CaptureFile(bytes: run.recorder.fileBytes())
        var device = capture.devices[0]
        let secrets = try #require(device.secrets)
        var withoutIdentity = secrets
        withoutIdentity.identity = nil
        var withoutPeers = secrets
        withoutPeers.knownPeers = []
        #expect(
            try Replay.run(device, staticKey: TwoDeviceRun.staticKey(0))
                == .identical(datagrams: device.outbound.count))
        for (what, stripped) in [("identity", withoutIdentity), ("known peers", withoutPeers)] {
            device.secrets = stripped
            let result = try Replay.run(device, staticKey: TwoDeviceRun.staticKey(0))
            guard case .diverged = result else {
                Issue.record("replayed without its \(what): \(result)")
                continue
            }
        }
    }

    @Test func wrongKeyFileIsAClearError() throws {
        var run = try TwoDeviceRun(options: CaptureOptions(keylog: true))
        run.run(until: Instant.zero + .seconds(2))
        let capture = try CaptureFile(bytes: run.recorder.fileBytes())
        do {
            _ = try Replay.run(capture.devices[0], staticKey: TwoDeviceRun.staticKey(1))
            Issue.record("replay accepted the other device's key")
        } catch {
            #expect(error.code == .staticKey)
            #expect(error.diagnostic.contains("does not match") || error.diagnostic.contains("recorded"))
        }
    }

    @Test func embeddedKeyOnlyWhenAskedFor() throws {
        let key = TwoDeviceRun.staticKey(0).rawRepresentation
        var plain = try TwoDeviceRun(options: CaptureOptions(keylog: true))
        plain.run(until: Instant.zero + .seconds(2))
        #expect(!contains(plain.recorder.fileBytes(), key))
        var embedded = try TwoDeviceRun(
            options: CaptureOptions(keylog: true), staticKeys: [.embedded(key), .external])
        embedded.run(until: Instant.zero + .seconds(2))
        let bytes = embedded.recorder.fileBytes()
        #expect(contains(bytes, key))
        let capture = try CaptureFile(bytes: bytes)
        let result = try Replay.run(capture.devices[0])
        #expect(result == .identical(datagrams: capture.devices[0].outbound.count))
    }

    @Test func noSecretWithoutKeylog() throws {
        var withKeylog = try TwoDeviceRun(options: CaptureOptions(keylog: true), bonded: true)
        withKeylog.run(until: Instant.zero + .seconds(30))
        var withoutKeylog = try TwoDeviceRun(
            options: CaptureOptions(keylog: false),
            staticKeys: [
                .embedded(TwoDeviceRun.staticKey(0).rawRepresentation), .seedMaterial([1, 2, 3]),
            ], bonded: true)
        withoutKeylog.run(until: Instant.zero + .seconds(30))
        #expect(withoutKeylog.closeReasons == [.exchanged, .exchanged])
        let secretFile = try CaptureFile(bytes: withKeylog.recorder.fileBytes())
        let bytes = withoutKeylog.recorder.fileBytes()
        let capture = try CaptureFile(bytes: bytes)
        #expect(!capture.hasKeylog)
        // The same seeds drew the same bytes: ephemeral keys, tokens, session ids and all.
        var secrets: [[UInt8]] = []
        for device in secretFile.devices {
            let stream = try #require(device.secrets?.randomStream)
            #expect(stream.count > 64)
            // Every 32-byte draw window, which covers each ephemeral private key wherever it starts.
            secrets += stride(from: 0, to: stream.count - 32, by: 1).map { Array(stream[$0..<($0 + 32)]) }
            secrets.append(try #require(device.secrets?.card))
        }
        secrets += [TwoDeviceRun.staticKey(0).rawRepresentation, TwoDeviceRun.staticKey(1).rawRepresentation]
        secrets += try TwoDeviceRun.cardStrings().map { Array($0.utf8) }
        // The identities and the bond, which the keylog carries.
        secrets += [0, 1].map { TwoDeviceRun.identity($0).resolvingKey } + [TwoDeviceRun.bondKey]
        #expect(secrets.suffix(3).allSatisfy { contains(withKeylog.recorder.fileBytes(), $0) })
        let leaks = Set(secrets.filter { contains(bytes, $0) }.map { $0.prefix(8).description })
        #expect(leaks.isEmpty, "secret bytes in a capture without keylog: \(leaks.sorted().prefix(3))")
        // Replay needs what was left out, and says so.
        do {
            _ = try Replay.run(capture.devices[0], staticKey: TwoDeviceRun.staticKey(0))
            Issue.record("replayed without a keylog")
        } catch {
            #expect(error.code == .missingSecrets)
            #expect(error.diagnostic.contains("--keylog"))
        }
    }

    @Test func recordsRoundTrip() throws {
        var timeouts = Timeouts()
        timeouts.overall = .seconds(12)
        timeouts.rangingFarAbort = .milliseconds(123)
        timeouts.busyBackoff = .milliseconds(1) ... .milliseconds(9)
        var limits = Limits()
        limits.sendWindow = 7
        limits.farAbortDistance = 33.5
        let device = DeviceRecord(
            interfaceID: 3, name: "résumé", deviceID: DeviceID(rawValue: 0xDEAD_BEEF),
            localAddress: PeerAddress(192, 168, 1, 9, port: 4000), staticPublicKey: Array(0..<32),
            consent: .receiveOnly, hasCard: true, timeouts: timeouts, limits: limits,
            gate: ProximityGate.Configuration(distanceBand: 4...11, dwellTime: .milliseconds(300)),
            measurement: .exact, startTime: Instant(nanoseconds: 77), startRandomBytes: 120,
            epochNanoseconds: 5)
        let records: [CaptureRecord] = [
            .device(device),
            .input(
                InputRecord(
                    interfaceID: 3, sequence: 0, time: Instant(nanoseconds: 9), input: .timeout,
                    randomBytes: 8)),
            .input(
                InputRecord(
                    interfaceID: 3, sequence: 1, time: .zero,
                    input: .pose(Pose(x: -1.5, y: 2, heading: 359.99)), randomBytes: 0)),
            .input(
                InputRecord(
                    interfaceID: 3, sequence: 2, time: .zero, input: .decision(.decline), randomBytes: 0)),
            .input(
                InputRecord(
                    interfaceID: 3, sequence: 3, time: .zero,
                    input: .datagram(bytes: [1, 2, 3], source: PeerAddress(1, 2, 3, 4, port: 5)),
                    randomBytes: 48)),
            .end(EndRecord(interfaceID: 3, inputs: 4, outbound: 0)),
        ]
        for record in records {
            var data = record.encoded()
            data += [UInt8](repeating: 0, count: (4 - data.count % 4) % 4)  // padding as a reader returns it
            #expect(try CaptureRecord(customData: data) == record)
        }
        let secrets = DeviceSecrets(
            interfaceID: 3, staticKey: .seedMaterial([1, 2]), card: [9], random: .stream([4, 5, 6]))
        #expect(try DeviceSecrets(decoding: secrets.encoded()) == secrets)
        let seeded = DeviceSecrets(
            interfaceID: 0, staticKey: .external, card: nil, random: .seedMaterial([7, 7]))
        #expect(try DeviceSecrets(decoding: seeded.encoded()) == seeded)
    }

    /// The DEVICE record encodes these fields; a field added to a configuration type must be added
    /// to the record (and the format version raised), or replays would silently use its default.
    @Test func deviceRecordCoversEveryConfigurationField() {
        func labels(_ value: Any) -> [String] { Mirror(reflecting: value).children.compactMap(\.label) }
        #expect(
            labels(Timeouts()) == [
                "announceInitial", "announceCap", "queryInitial", "queryCap", "queryResponseDelay",
                "answerSuppression", "peerLifetime", "handshakeRetransmit", "handshakeAttempts",
                "rangingWindow",
                "rangingFarAbort", "consent", "controlCap", "idle", "chunkPacing", "initialRTO", "rtoRange",
                "sackDelay", "transfer", "closeRetransmit", "closeAttempts", "drain", "retryBackoff",
                "retryBackoffCap", "busyBackoff", "inviteDelay", "overall", "stall",
            ])
        #expect(
            labels(Limits()) == [
                "maxPeers", "maxCardBytes", "sendWindow", "maxKnownAnswers", "farAbortDistance",
                "unsolicitedPerSecond", "rateLimitedSources", "maxUnverifiedPeers",
                "globalUnsolicitedPerSecond", "maxFaultyHosts",
            ])
        #expect(
            labels(ProximityGate.Configuration.default) == [
                "distanceBand", "maximumBearing", "distanceHysteresis", "bearingHysteresis", "dwellTime",
                "window",
                "minimumSamples", "minimumSamplesWhileOpen", "outlierDistance", "outlierBearing",
            ])
        #expect(
            labels(MeasurementModel.default) == [
                "distanceNoise", "bearingNoise", "outlierProbability", "outlierBiasMean",
                "dropoutProbability",
                "sampleRate", "maximumRange",
            ])
        #expect(
            labels(DeviceConfiguration(card: nil, consent: .share, staticKey: TwoDeviceRun.staticKey(0))) == [
                "card", "consent", "staticKey", "identity", "knownPeers", "timeouts", "limits", "gate",
                "measurement",
            ])
    }

    /// A configuration with every field away from its default, recorded with a keylog and rebuilt
    /// as replay rebuilds it (DEVICE record and keylog): every field comes back.
    @Test func recordedConfigurationComesBackWhole() throws {
        let card = try TwoDeviceRun.cards()[1]
        var configuration = DeviceConfiguration(
            card: card, consent: .decline, staticKey: TwoDeviceRun.staticKey(1),
            identity: TwoDeviceRun.identity(1),
            knownPeers: [
                TwoDeviceRun.knownPeer(of: 1),
                KnownPeer(
                    resolvingKey: Array(repeating: 7, count: 32), bondKey: Array(repeating: 8, count: 32),
                    name: "Ödön"),
            ],
            timeouts: CaptureRecordsTests.distinctTimeouts(), limits: CaptureRecordsTests.distinctLimits(),
            gate: ProximityGate.Configuration(distanceBand: 4...11, dwellTime: .milliseconds(300)),
            measurement: .exact)
        configuration.limits.maxCardBytes = 100_000
        let recorder = CaptureRecorder(options: CaptureOptions(keylog: true))
        _ = CapturingDevice(
            configuration: configuration, random: DeterministicRandom(seed: 9), now: .zero,
            localAddress: TwoDeviceRun.address(0), name: "whole", recorder: recorder,
            staticKey: .embedded(configuration.staticKey.rawRepresentation))
        let device = try #require(try CaptureFile(bytes: recorder.fileBytes()).devices.first)
        let secrets = try #require(device.secrets)
        let rebuilt = device.record.configuration(
            card: try ProfileCard(decoding: try #require(secrets.card)),
            staticKey: try X25519.PrivateKey(rawRepresentation: configuration.staticKey.rawRepresentation),
            identity: secrets.identity, knownPeers: secrets.knownPeers)
        #expect(rebuilt.card == configuration.card)
        #expect(rebuilt.consent == configuration.consent)
        #expect(rebuilt.staticKey.rawRepresentation == configuration.staticKey.rawRepresentation)
        #expect(rebuilt.identity == configuration.identity)
        #expect(rebuilt.knownPeers == configuration.knownPeers)
        #expect(rebuilt.timeouts == configuration.timeouts)
        #expect(rebuilt.limits == configuration.limits)
        #expect(rebuilt.gate == configuration.gate)
        #expect(rebuilt.measurement == configuration.measurement)
        // The checks above name every field there is.
        #expect(Mirror(reflecting: rebuilt).children.count == 9)
    }

    /// Records and keylogs of an earlier format version (1: protocol version 1; 2: before the fault
    /// back-off; 3: wire version 2) and of a later one are refused in one line that says which.
    @Test(
        arguments: [(1, true), (3, true), (5, true), (1, false), (3, false), (5, false)] as [(UInt8, Bool)])
    func otherRecordVersionsAreRejectedClearly(version: UInt8, withKeylog: Bool) throws {
        var run = try TwoDeviceRun(options: CaptureOptions(keylog: withKeylog))
        run.run(until: Instant.zero + .seconds(1))
        let blocks = try PcapngReader.read(run.recorder.fileBytes())
        var writer = PcapngWriter()
        for block in blocks.dropFirst() {
            switch block {
            case .custom(var custom) where custom.enterpriseNumber == CaptureFormat.enterpriseNumber:
                custom.data[5] = version  // the version field follows the 4-byte record length
                writer.append(.custom(custom))
            case .secrets(var secrets) where secrets.secretsType == CaptureFormat.secretsType:
                secrets.data[1] = version  // the keylog starts with its version
                writer.append(.secrets(secrets))
            default:
                writer.append(block)
            }
        }
        let older = version < CaptureFormat.version ? ", written by an earlier build" : ""
        let advice = version < CaptureFormat.version ? ": capture the run again" : ""
        // The keylog comes first in the file, so its version is the first one read.
        let what = withKeylog ? "keylog" : "replay records"
        do {
            _ = try CaptureFile(bytes: writer.bytes)
            Issue.record("a version \(version) record was read")
        } catch {
            #expect(error.code == .unsupportedVersion)
            #expect(
                error.diagnostic
                    == "\(what) of format version \(version)\(older); this build reads version \(CaptureFormat.version)\(advice)"
            )
        }
    }

    private func contains(_ haystack: [UInt8], _ needle: [UInt8]) -> Bool {
        guard !needle.isEmpty, haystack.count >= needle.count else { return false }
        let first = needle[0]
        for start in 0...(haystack.count - needle.count) where haystack[start] == first {
            if haystack[start..<(start + needle.count)].elementsEqual(needle) { return true }
        }
        return false
    }

    /// Input times that run backwards or past a day would feed the core times it was never given
    /// (and huge round-trip samples): the reader refuses them as malformed.
    @Test(arguments: [Instant.zero + .seconds(1), Instant.zero + .seconds(200_000)])
    func inputTimesOutOfOrderOrTooLateAreMalformed(badTime: Instant) throws {
        var run = try TwoDeviceRun(options: CaptureOptions(keylog: true))
        run.run(until: Instant.zero + .seconds(5))
        run.act(0) { device, _ in device.updatePose(Pose(x: 0, y: 0, heading: 0), at: badTime) }
        do {
            _ = try CaptureFile(bytes: run.recorder.fileBytes())
            Issue.record("a capture with an input at \(badTime) was accepted")
        } catch {
            #expect(error.code == .malformed)
            #expect(error.diagnostic.contains("out of time order or more than a day"))
        }
    }
}
