import Foundation
import ProfileDropCapture
import ProfileDropCore
import ProfileDropCrypto
import ProfileDropTestSupport
import Testing

/// `bytes` followed by zeros up to a multiple of 4, as a Custom Block carries them.
func padded(_ bytes: [UInt8]) -> [UInt8] {
    bytes + [UInt8](repeating: 0, count: (4 - bytes.count % 4) % 4)
}

/// Replay records and keylogs: every value read encodes again to the bytes it was read from.
struct CaptureRecordsTests {
    // MARK: Honest values, boundaries included

    static func extremeTimeouts() -> Timeouts {
        var timeouts = Timeouts()
        timeouts.announceInitial = .zero
        timeouts.announceCap = Self.longestDuration
        timeouts.queryResponseDelay = Self.longestDuration...Self.longestDuration
        timeouts.handshakeAttempts = Int(UInt32.max)
        timeouts.closeAttempts = 0
        timeouts.rtoRange = .zero ... .zero
        timeouts.overall = .nanoseconds(1)
        return timeouts
    }

    /// The longest timer a capture records: a day.
    static let longestDuration = Duration.seconds(86_400)

    static func extremeLimits() -> Limits {
        var limits = Limits()
        limits.maxPeers = 1 << 20
        limits.maxCardBytes = 64 * 1024 * 1024
        limits.sendWindow = Int(UInt32.max)
        limits.maxKnownAnswers = 0
        limits.farAbortDistance = -0.0
        limits.unsolicitedPerSecond = Int(UInt32.max)
        limits.rateLimitedSources = 1 << 20
        limits.maxUnverifiedPeers = 0
        limits.globalUnsolicitedPerSecond = Int(UInt32.max)
        return limits
    }

    static func device(
        name: String = "résumé", interfaceID: UInt32 = 3, limits: Limits = Limits(),
        timeouts: Timeouts = Timeouts(), gate: ProximityGate.Configuration = .default,
        measurement: MeasurementModel = .default
    ) -> DeviceRecord {
        DeviceRecord(
            interfaceID: interfaceID, name: name, deviceID: DeviceID(rawValue: 0xDEAD_BEEF),
            localAddress: PeerAddress(192, 168, 1, 9, port: 4000), staticPublicKey: Array(0..<32),
            consent: .receiveOnly, hasCard: true, timeouts: timeouts, limits: limits, gate: gate,
            measurement: measurement, startTime: Instant(nanoseconds: 77), startRandomBytes: 120,
            epochNanoseconds: 5)
    }

    static func input(_ input: CapturedInput, randomBytes: UInt32 = 0) -> CaptureRecord {
        .input(
            InputRecord(
                interfaceID: 1, sequence: 4, time: Instant(nanoseconds: 1_000), input: input,
                randomBytes: randomBytes))
    }

    static let limit = Pose.encodableCoordinateLimit

    /// Records at the edges of every field's range.
    static func honestRecords() -> [CaptureRecord] {
        var edge = device(
            name: String(repeating: "n", count: CaptureFormat.maximumNameBytes), interfaceID: .max,
            limits: extremeLimits(), timeouts: extremeTimeouts(),
            gate: ProximityGate.Configuration(
                distanceBand: -0.0...Double.greatestFiniteMagnitude, maximumBearing: 180,
                distanceHysteresis: 0, bearingHysteresis: 0, dwellTime: .zero, window: .nanoseconds(1),
                minimumSamples: Int(UInt32.max), minimumSamplesWhileOpen: 1,
                outlierDistance: .leastNonzeroMagnitude, outlierBearing: .greatestFiniteMagnitude),
            measurement: MeasurementModel(
                distanceNoise: 0, bearingNoise: .greatestFiniteMagnitude, outlierProbability: 1,
                outlierBiasMean: 0, dropoutProbability: 0, sampleRate: 0.001,
                maximumRange: .leastNonzeroMagnitude))
        edge.deviceID = DeviceID(rawValue: .max)
        edge.localAddress = PeerAddress(ipv4: .max, port: .max)
        edge.consent = .askUser
        edge.hasCard = false
        edge.startTime = Instant(nanoseconds: .max)
        edge.startRandomBytes = CaptureFormat.uncounted
        edge.epochNanoseconds = .max
        var low = device(
            name: "", interfaceID: 0,
            measurement: MeasurementModel(
                distanceNoise: 1, bearingNoise: 1, outlierProbability: 0, outlierBiasMean: 1,
                dropoutProbability: 1, sampleRate: 1000, maximumRange: 1))
        low.consent = .share
        low.deviceID = DeviceID(rawValue: 0)
        var declining = device(name: "雪")
        declining.consent = .decline
        var knownOnly = device(name: "known")
        knownOnly.consent = .shareWithKnownPeers
        return [
            .device(device()), .device(edge), .device(low), .device(declining), .device(knownOnly),
            input(.timeout), input(.timeout, randomBytes: CaptureFormat.uncounted),
            input(.pose(Pose(x: limit, y: -limit, heading: 0))),
            input(.pose(Pose(x: -0.0, y: 0, heading: Double(360).nextDown))),
            input(.pose(Pose(x: -1.5, y: 2, heading: -0.0))),
            input(.decision(.share)), input(.decision(.receiveOnly)), input(.decision(.decline)),
            input(.candidateDecision(.share, peer: DeviceID(rawValue: 0x0102_0304_0506_0708))),
            input(.candidateDecision(.decline, peer: DeviceID(rawValue: .max))),
            input(.cancel),
            input(.datagram(bytes: [], source: PeerAddress(ipv4: 0, port: 0))),
            input(.datagram(bytes: [1, 2, 3], source: PeerAddress(10, 0, 0, 1, port: 5000))),
            input(
                .datagram(
                    bytes: [UInt8](repeating: 0xA5, count: Int(UInt16.max)),
                    source: PeerAddress(ipv4: .max, port: .max))),
            .input(
                InputRecord(
                    interfaceID: .max, sequence: .max, time: Instant(nanoseconds: .max), input: .timeout,
                    randomBytes: .max)),
            .end(EndRecord(interfaceID: 0, inputs: 0, outbound: 0)),
            .end(EndRecord(interfaceID: .max, inputs: .max, outbound: .max)),
        ]
    }

    @Test func honestRecordsDecodeAndEncodeToTheSameBytes() throws {
        for record in Self.honestRecords() {
            let bytes = record.encoded()
            // Bare, and padded as a reader returns a Custom Block's data.
            for data in [bytes, padded(bytes)] {
                let decoded = try CaptureRecord(customData: data)
                #expect(decoded == record)
                #expect(decoded.encoded() == bytes)
            }
        }
    }

    // MARK: Every configuration field

    /// The labels of `value`'s stored properties whose values equal those of `reference`.
    static func unchangedFields<T>(_ value: T, from reference: T) -> [String] {
        zip(Mirror(reflecting: value).children, Mirror(reflecting: reference).children).compactMap {
            mine, theirs in
            String(describing: mine.value) == String(describing: theirs.value) ? mine.label ?? "?" : nil
        }
    }

    /// Every timer set through the field table to its own non-default value.
    static func distinctTimeouts() -> Timeouts {
        var timeouts = Timeouts()
        for (index, field) in Timeouts.fields.enumerated() {
            let base = Duration.nanoseconds(1_000_003 * Int64(index + 1))
            switch field {
            case .duration(_, let path): timeouts[keyPath: path] = base
            case .durationRange(_, let path):
                timeouts[keyPath: path] = base...(base + .nanoseconds(index + 1))
            case .count(_, let path): timeouts[keyPath: path] = 1_000 + index
            }
        }
        return timeouts
    }

    /// Every bound set through the field table to its own non-default value.
    static func distinctLimits() -> Limits {
        var limits = Limits()
        for (index, field) in Limits.fields.enumerated() {
            switch field {
            case .count(_, let path): limits[keyPath: path] = 100 + index
            case .number(_, let path): limits[keyPath: path] = 0.25 + Double(index)
            }
        }
        return limits
    }

    /// The tables are the codec's field lists: they must name every stored property once.
    @Test func fieldTablesListEveryStoredProperty() {
        #expect(Timeouts.fields.count == Mirror(reflecting: Timeouts()).children.count)
        #expect(Limits.fields.count == Mirror(reflecting: Limits()).children.count)
        #expect(MeasurementModel.fields.count == Mirror(reflecting: MeasurementModel.default).children.count)
        #expect(Set(MeasurementModel.fields.map(\.path)).count == MeasurementModel.fields.count)
        let gateFields = ProximityGate.Configuration.fields
        #expect(gateFields.count == Mirror(reflecting: ProximityGate.Configuration.default).children.count)
        // A table naming one field twice and missing another would leave the other at its default.
        #expect(Self.unchangedFields(Self.distinctTimeouts(), from: Timeouts()) == [])
        #expect(Self.unchangedFields(Self.distinctLimits(), from: Limits()) == [])
    }

    /// Each configuration field the record holds, set to its own non-default value, comes back.
    @Test func everyConfigurationFieldSurvivesTheCodec() throws {
        let gate = ProximityGate.Configuration(
            distanceBand: 1.5...20.25, maximumBearing: 45.5, distanceHysteresis: 0.75, bearingHysteresis: 6.5,
            dwellTime: .milliseconds(321), window: .milliseconds(1_234), minimumSamples: 7,
            minimumSamplesWhileOpen: 4, outlierDistance: 3.5, outlierBearing: 26.5)
        let measurement = MeasurementModel(
            distanceNoise: 1.3, bearingNoise: 5.5, outlierProbability: 0.03, outlierBiasMean: 21,
            dropoutProbability: 0.06, sampleRate: 9, maximumRange: 2001)
        #expect(Self.unchangedFields(gate, from: .default) == [])
        #expect(Self.unchangedFields(measurement, from: .default) == [])
        let record = DeviceRecord(
            interfaceID: 6, name: "every field", deviceID: DeviceID(rawValue: 0x0102_0304_0506_0708),
            localAddress: PeerAddress(10, 1, 2, 3, port: 4321), staticPublicKey: Array(100..<132),
            consent: .decline, hasCard: true, timeouts: Self.distinctTimeouts(),
            limits: Self.distinctLimits(), gate: gate, measurement: measurement,
            startTime: Instant(nanoseconds: 987_654_321), startRandomBytes: 77,
            epochNanoseconds: 1_700_000_000)
        guard
            case .device(let decoded) = try CaptureRecord(customData: CaptureRecord.device(record).encoded())
        else {
            Issue.record("a device record decoded as another kind")
            return
        }
        #expect(decoded == record)
        var random = DeterministicRandom(seed: 6)
        let configuration = decoded.configuration(card: nil, staticKey: X25519.PrivateKey(using: &random))
        #expect(configuration.timeouts == record.timeouts)
        #expect(configuration.limits == record.limits)
        #expect(configuration.gate == gate)
        #expect(configuration.measurement == measurement)
        #expect(configuration.consent == record.consent)
    }

    /// A name longer than the record holds is cut before a character that would not fit whole,
    /// so the file still reads (and reads back as the same bytes).
    @Test func longNamesAreCutAtACharacterBoundary() throws {
        for name in [
            String(repeating: "a", count: 254) + "é", String(repeating: "é", count: 200),
            String(repeating: "a", count: 253) + "😀", String(repeating: "x", count: 300),
        ] {
            let bytes = CaptureRecord.device(Self.device(name: name)).encoded()
            guard case .device(let read) = try CaptureRecord(customData: bytes) else {
                Issue.record("not a device record")
                continue
            }
            #expect(read.name.utf8.count <= CaptureFormat.maximumNameBytes)
            #expect(read.name.utf8.count > CaptureFormat.maximumNameBytes - 4)
            #expect(name.unicodeScalars.starts(with: read.name.unicodeScalars))
            #expect(CaptureRecord.device(read).encoded() == bytes)
        }
    }

    // MARK: Mutated records

    /// Mutations of every honest record: each one that decodes encodes to exactly its bytes
    /// (without padding, or with the zero padding it was read with).
    @Test func mutatedRecordsThatDecodeEncodeToTheirBytes() throws {
        // The 65535-byte datagram would make every mutation slow; the others cover its fields.
        let seeds = Self.honestRecords().map { padded($0.encoded()) }.filter { $0.count < 4096 }
        var mutations = ByteMutations(seed: 0xCA97)
        let accepted = mutations.accepted(
            rounds: 6_500, of: seeds, decode: { try? CaptureRecord(customData: $0) },
            check: { record, bytes, round in
                let again = record.encoded()
                #expect(bytes == again || bytes == padded(again), "round \(round)")
            })
        #expect(accepted > 1_000)
    }

    // MARK: What the reader refuses

    static func errorOf(_ data: [UInt8]) -> CaptureError? {
        caught(CaptureError.self) { _ = try CaptureRecord(customData: data) }
    }

    /// Replaces the bytes at `offset` of the record's encoding.
    static func patched(_ record: CaptureRecord, at offset: Int, with replacement: [UInt8]) -> [UInt8] {
        var bytes = record.encoded()
        bytes.replaceSubrange(offset..<(offset + replacement.count), with: replacement)
        return bytes
    }

    /// Offset of an input record's body (after length, version, kind, interface, sequence, time,
    /// random byte count and input kind).
    static let inputBody = 4 + 2 + 1 + 4 + 8 + 8 + 4 + 1

    @Test func invalidUTF8NamesAreMalformed() {
        // "résumé" starts at offset 4 + 2 + 1 + 4 + 1 = 12, so its first é (C3 A9) is at 13.
        let record = CaptureRecord.device(Self.device())
        for bad: [UInt8] in [[0xFF], [0xC3, 0x41], [0xED, 0xA0]] {
            #expect(
                Self.errorOf(Self.patched(record, at: 13, with: bad))
                    == CaptureError(.malformed, "device name is not valid UTF-8"))
        }
    }

    /// Replay prints names, so a name with a control character (an escape that could rewrite the
    /// terminal) is malformed; a writer given one records U+FFFD in its place, which reads back.
    @Test func namesWithControlCharactersAreMalformedAndNeverWritten() throws {
        let record = CaptureRecord.device(Self.device())
        // "résumé" is at offset 12: its "r" becomes ESC, LF or DEL, or its first "é" (C3 A9) U+009B.
        for (offset, bad): (Int, [UInt8]) in [(12, [0x1B]), (12, [0x0A]), (12, [0x7F]), (13, [0xC2, 0x9B])] {
            #expect(
                Self.errorOf(Self.patched(record, at: offset, with: bad))
                    == CaptureError(.malformed, "device name has a control character"))
        }
        let written = CaptureRecord.device(Self.device(name: "a\u{1B}]b"))
        guard case .device(let read) = try CaptureRecord(customData: written.encoded()) else {
            Issue.record("not a device record")
            return
        }
        #expect(read.name == "a\u{FFFD}]b")
    }

    @Test func poseHeadingsOutsideTheNormalizedRangeAreMalformed() {
        let record = Self.input(.pose(Pose(x: 1, y: 2, heading: 3)))
        for heading in [360, 720.5, -1, -Double.leastNonzeroMagnitude] {
            let bytes = Self.patched(
                record, at: Self.inputBody + 16,
                with: withUnsafeBytes(of: heading.bitPattern.bigEndian, Array.init))
            #expect(
                Self.errorOf(bytes) == CaptureError(.malformed, "pose heading \(heading) is not in [0, 360)"))
        }
        // The largest coordinate the encoder takes is fine; the next double up is not.
        let over = Self.limit.nextUp
        let beyond = Self.patched(
            record, at: Self.inputBody, with: withUnsafeBytes(of: over.bitPattern.bigEndian, Array.init))
        #expect(
            Self.errorOf(beyond)
                == CaptureError(.malformed, "pose (\(over), 2.0) is outside the encodable room"))
    }

    /// A recorded timer longer than a day is malformed, wherever it sits: the core's timer
    /// arithmetic is not made for values near `Int64.max` nanoseconds, and no writer records one.
    @Test func recordedTimersLongerThanADayAreMalformed() {
        let tooLong = Self.longestDuration + .nanoseconds(1)
        var timeouts = Timeouts()
        timeouts.overall = tooLong
        #expect(
            Self.errorOf(CaptureRecord.device(Self.device(timeouts: timeouts)).encoded())
                == CaptureError(.malformed, "overall of 86400000000001 ns is longer than a day"))
        timeouts = Timeouts()
        timeouts.rtoRange = .zero...tooLong
        #expect(
            Self.errorOf(CaptureRecord.device(Self.device(timeouts: timeouts)).encoded())
                == CaptureError(.malformed, "RTO range (high) of 86400000000001 ns is longer than a day"))
        var gate = ProximityGate.Configuration.default
        gate.window = .nanoseconds(Int64.max)
        #expect(
            Self.errorOf(CaptureRecord.device(Self.device(gate: gate)).encoded())
                == CaptureError(.malformed, "gate window of \(Int64.max) ns is longer than a day"))
    }

    /// After the record only its padding may follow: zeros to the next multiple of 4.
    @Test func bytesAfterTheRecordOtherThanItsPaddingAreMalformed() throws {
        let bytes = Self.input(.timeout).encoded()  // a multiple of 4 already: no padding
        let odd = Self.input(.decision(.share)).encoded()  // one byte more: 3 bytes of padding
        #expect(bytes.count % 4 == 0 && odd.count % 4 == 1)
        #expect(try CaptureRecord(customData: odd + [0, 0, 0]).encoded() == odd)
        let (even, uneven) = (bytes.count - 4, odd.count - 4)
        for (data, length, after) in [
            (bytes + [0, 0, 0, 0], even, 4), (odd + [0], uneven, 1), (odd + [0, 0, 1], uneven, 3),
            (odd + [0, 0, 0, 0], uneven, 4),
        ] {
            #expect(
                Self.errorOf(data)
                    == CaptureError(
                        .malformed,
                        "record of \(length) bytes is followed by \(after) bytes that are not its padding"
                    ))
        }
    }

    // MARK: Keylog

    static func peer(_ byte: UInt8, name: String) -> KnownPeer {
        KnownPeer(
            resolvingKey: [UInt8](repeating: byte, count: 32), bondKey: Array(byte..<(byte + 32)), name: name)
    }

    static func honestSecrets() -> [DeviceSecrets] {
        [
            DeviceSecrets(
                interfaceID: 4, staticKey: .embedded(Array(32..<64)), card: [1, 2], random: .stream([8]),
                identity: DeviceIdentity(resolvingKey: Array(0..<32)),
                knownPeers: [
                    peer(0, name: ""), peer(0xC0, name: "Bori (minji)"),
                    peer(0xDF, name: String(repeating: "雪", count: CaptureFormat.maximumNameBytes / 3)),
                ]),
            DeviceSecrets(
                interfaceID: 5, staticKey: .external, card: nil, random: .seedMaterial([1]),
                identity: DeviceIdentity(resolvingKey: [UInt8](repeating: 0xFF, count: 32))),
            DeviceSecrets(
                interfaceID: 6, staticKey: .seedMaterial([3]), card: nil, random: .stream([]), identity: nil,
                knownPeers: [peer(9, name: String(repeating: "k", count: CaptureFormat.maximumNameBytes))]),
            DeviceSecrets(interfaceID: 0, staticKey: .external, card: nil, random: .stream([])),
            DeviceSecrets(
                interfaceID: 3, staticKey: .seedMaterial([1, 2]), card: [9], random: .stream([4, 5, 6])),
            DeviceSecrets(
                interfaceID: .max, staticKey: .embedded([UInt8](repeating: 0xFF, count: 32)),
                card: Array(0..<200), random: .seedMaterial([7, 7])),
            DeviceSecrets(
                interfaceID: 1, staticKey: .seedMaterial([]), card: nil, random: .seedMaterial([])),
            DeviceSecrets(
                interfaceID: 2, staticKey: .seedMaterial([UInt8](repeating: 1, count: Int(UInt16.max))),
                card: [0], random: .stream(Array(repeating: 3, count: 70_000))),
        ]
    }

    @Test func honestKeylogsDecodeAndEncodeToTheSameBytes() throws {
        for secrets in Self.honestSecrets() {
            let bytes = secrets.encoded()
            let decoded = try DeviceSecrets(decoding: bytes)
            #expect(decoded == secrets)
            #expect(decoded.encoded() == bytes)
        }
        // No encoded card is empty: an empty one is written as none, and read back as none.
        let empty = DeviceSecrets(interfaceID: 0, staticKey: .external, card: [], random: .stream([]))
        #expect(try DeviceSecrets(decoding: empty.encoded()).card == nil)
    }

    /// Offset of the identity flag in a keylog with an external key and no card.
    static let identityFlag = 2 + 4 + 1 + 4

    @Test func knownPeerNamesAreCutAtACharacterBoundaryAndMustBeUTF8() throws {
        let long = String(repeating: "a", count: 253) + "😀"
        let secrets = DeviceSecrets(
            interfaceID: 0, staticKey: .external, card: nil, random: .stream([]),
            knownPeers: [Self.peer(1, name: long)])
        let bytes = secrets.encoded()
        let read = try DeviceSecrets(decoding: bytes)
        #expect(read.knownPeers.map(\.name) == [String(repeating: "a", count: 253)])
        #expect(read.encoded() == bytes)
        // The name starts after the flag, the count, both keys and the name length.
        let name = Self.identityFlag + 1 + 4 + 64 + 1
        for bad: [UInt8] in [[0xFF], [0xC3, 0x41], [0xED, 0xA0]] {
            var damaged = bytes
            damaged.replaceSubrange(name..<(name + bad.count), with: bad)
            #expect(
                caught(CaptureError.self) { _ = try DeviceSecrets(decoding: damaged) }
                    == CaptureError(.malformed, "the name of known peer 0 is not valid UTF-8"))
        }
    }

    /// An identity flag other than 0 or 1, and a known-peer count the data cannot hold, are errors.
    @Test func identityFlagAndKnownPeerCountAreChecked() {
        let bytes = DeviceSecrets(interfaceID: 0, staticKey: .external, card: nil, random: .stream([]))
            .encoded()
        var flag = bytes
        flag[Self.identityFlag] = 2
        #expect(
            caught(CaptureError.self) { _ = try DeviceSecrets(decoding: flag) }
                == CaptureError(.malformed, "identity flag 2 is not 0 or 1"))
        var count = bytes
        count.replaceSubrange(
            (Self.identityFlag + 1)..<(Self.identityFlag + 5), with: [0xFF, 0xFF, 0xFF, 0xFF])
        #expect(caught(CaptureError.self) { _ = try DeviceSecrets(decoding: count) }?.code == .truncated)
    }

    @Test func mutatedKeylogsThatDecodeEncodeToTheirBytes() throws {
        let seeds = Self.honestSecrets().map { $0.encoded() }.filter { $0.count < 4096 }
        var mutations = ByteMutations(seed: 0x6E71)
        let accepted = mutations.accepted(
            rounds: 4_000, of: seeds, decode: { try? DeviceSecrets(decoding: $0) },
            check: {
                secrets, bytes, round in #expect(secrets.encoded() == bytes, "round \(round)")
            })
        #expect(accepted > 200)
    }

    // MARK: Whole captures

    /// A capture's blocks written again give the file; and every mutated capture the reader takes
    /// holds records, keylogs and outbound packets that each encode again to the bytes read.
    @Test func mutatedCapturesHoldOnlyCanonicalEncodings() throws {
        var run = try TwoDeviceRun(options: CaptureOptions(keylog: true))
        run.run(until: Instant.zero + .milliseconds(400))
        let file = run.recorder.fileBytes()
        #expect(try Self.rewritten(file) == file)
        var mutations = ByteMutations(seed: 0xF11E)
        var accepted = 0
        for round in 0..<1_500 {
            let bytes = mutations.mutate(file)
            guard let capture = try? CaptureFile(bytes: bytes) else { continue }
            accepted += 1
            #expect(try Self.rewritten(bytes) == bytes, "round \(round)")
            let blocks = try PcapngReader.read(bytes)
            for block in blocks {
                switch block {
                case .custom(let custom) where custom.enterpriseNumber == CaptureFormat.enterpriseNumber:
                    #expect(padded(try CaptureRecord(customData: custom.data).encoded()) == custom.data)
                case .secrets(let secrets) where secrets.secretsType == CaptureFormat.secretsType:
                    #expect(try DeviceSecrets(decoding: secrets.data).encoded() == secrets.data)
                default: continue
                }
            }
            let packets = blocks.compactMap { block -> [UInt8]? in
                guard case .packet(let packet) = block else { return nil }
                return packet.data
            }
            for device in capture.devices {
                for datagram in device.outbound {
                    let framed = IPv4UDP.frame(
                        datagram.payload, from: datagram.source, to: datagram.destination)
                    #expect(packets[datagram.packetIndex] == framed, "round \(round)")
                }
            }
        }
        #expect(accepted > 100)
    }

    /// The golden captures, read and written again block by block.
    @Test(arguments: GoldenCaptures.all)
    func goldenCapturesRewriteToTheirBytes(_ golden: GoldenCaptures.Golden) throws {
        let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: golden.capturePath)))
        #expect(try Self.rewritten(bytes) == bytes)
    }

    /// A device has one keylog and one end record: a capture holding a second of either is
    /// malformed, not read with the second silently replacing the first.
    @Test func aSecondKeylogOrEndRecordForADeviceIsMalformed() throws {
        let golden = try #require(GoldenCaptures.all.first)
        let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: golden.capturePath)))
        let blocks = try PcapngReader.read(bytes)
        guard case .section(let section)? = blocks.first else {
            Issue.record("no section header")
            return
        }
        let keylog = try #require(blocks.firstIndex { if case .secrets = $0 { true } else { false } })
        // The END record is the last Custom Block of its device.
        let end = try #require(blocks.lastIndex { if case .custom = $0 { true } else { false } })
        for (index, expected) in [
            (keylog, "a second keylog for interface "), (end, "a second end record for interface "),
        ] {
            var writer = PcapngWriter(section: section)
            for block in blocks.dropFirst() { writer.append(block) }
            writer.append(blocks[index])
            #expect(throws: CaptureError.self) { try CaptureFile(bytes: writer.bytes) }
            do {
                _ = try CaptureFile(bytes: writer.bytes)
            } catch {
                #expect(error.code == .malformed && error.diagnostic.hasPrefix(expected), "\(error)")
            }
        }
        // The file itself reads.
        #expect(try CaptureFile(bytes: bytes).devices.count == 2)
    }

    /// The file that the reader's blocks write.
    static func rewritten(_ bytes: [UInt8]) throws -> [UInt8] {
        let blocks = try PcapngReader.read(bytes)
        guard case .section(let section)? = blocks.first else { return [] }
        var writer = PcapngWriter(section: section)
        for block in blocks.dropFirst() { writer.append(block) }
        return writer.bytes
    }
}
