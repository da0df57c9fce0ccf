import Foundation
import ProfileDropCapture
import ProfileDropCore
import ProfileDropCrypto
import Testing

/// Two devices driven by a small loop through ``CapturingDevice``: what reaches the file, with and
/// without a keylog.
struct CaptureRecorderTests {
    @Test func capturedRunReplaysIdentically() throws {
        var run = try TwoDeviceRun(options: CaptureOptions(keylog: true))
        run.run(until: Instant.zero + .seconds(30))
        #expect(run.closeReasons == [.exchanged, .exchanged])
        let capture = try CaptureFile(bytes: run.recorder.fileBytes())
        #expect(capture.devices.map(\.record.name) == ["left", "right"])
        #expect(capture.hasKeylog)
        for (index, device) in capture.devices.enumerated() {
            #expect(device.record.deviceID == run.devices[index].device.deviceID)
            #expect(device.outbound.count == run.devices[index].device.counters.datagramsSent)
            // A share capture names no key source: replay needs the key file's key.
            #expect(throws: CaptureError.self) { try Replay.run(device) }
            let result = try Replay.run(device, staticKey: TwoDeviceRun.staticKey(index))
            #expect(result == .identical(datagrams: device.outbound.count))
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
        var withKeylog = try TwoDeviceRun(options: CaptureOptions(keylog: true))
        withKeylog.run(until: Instant.zero + .seconds(30))
        var withoutKeylog = try TwoDeviceRun(
            options: CaptureOptions(keylog: false),
            staticKeys: [
                .embedded(TwoDeviceRun.staticKey(0).rawRepresentation), .seedMaterial([1, 2, 3]),
            ])
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
                "retryBackoffCap", "busyBackoff", "inviteDelay", "overall",
            ])
        #expect(
            labels(Limits()) == [
                "maxPeers", "maxCardBytes", "sendWindow", "maxKnownAnswers", "farAbortDistance",
                "unsolicitedPerSecond", "rateLimitedSources",
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
                "card", "consent", "staticKey", "timeouts", "limits", "gate", "measurement",
            ])
    }

    @Test func otherRecordVersionsAreRejectedClearly() throws {
        var run = try TwoDeviceRun(options: CaptureOptions(keylog: true))
        run.run(until: Instant.zero + .seconds(1))
        let blocks = try PcapngReader.read(run.recorder.fileBytes())
        var writer = PcapngWriter()
        for block in blocks.dropFirst() {
            guard case .custom(var custom) = block, custom.enterpriseNumber == CaptureFormat.enterpriseNumber
            else {
                writer.append(block)
                continue
            }
            custom.data[5] = 2  // the version field follows the 4-byte record length
            writer.append(.custom(custom))
        }
        do {
            _ = try CaptureFile(bytes: writer.bytes)
            Issue.record("a version 2 record was read")
        } catch {
            #expect(error.code == .unsupportedVersion)
            #expect(error.diagnostic == "replay records of format version 2; this build reads version 1")
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
