import ProfileDropCrypto
import ProfileDropTestSupport
import Testing

@testable import ProfileDropCore

@Suite struct WireCodecTests {
    static let digest = (0..<32).map { UInt8($0) }
    static let token = DiscoveryToken((0..<16).map { UInt8(0xA0 + $0) })

    /// A handshake packet of `sessionID` from device `sender` to device `receiver`.
    static func handshake(
        _ sessionID: UInt64, from sender: UInt64, to receiver: UInt64, noise: [UInt8], cookie: [UInt8] = []
    ) -> HandshakePacket {
        HandshakePacket(
            sessionID: sessionID, sender: DeviceID(rawValue: sender), receiver: DeviceID(rawValue: receiver),
            noiseMessage: noise, cookie: cookie)
    }

    /// A BUSY of session 5 from device 3 to device 4.
    static func busy(_ reason: BusyReason, cookie: [UInt8] = []) -> Busy {
        Busy(
            sessionID: 5, sender: DeviceID(rawValue: 3), receiver: DeviceID(rawValue: 4), reason: reason,
            cookie: cookie)
    }

    static let packets: [Packet] = [
        .beacon(
            Beacon(
                deviceID: DeviceID(rawValue: 0x0102_0304_0506_0708), port: 5353, busy: false,
                sequence: 0x0A0B_0C0D)),
        .beacon(Beacon(deviceID: DeviceID(rawValue: .max), port: 1, busy: true, sequence: .max)),
        .beacon(
            Beacon(
                deviceID: DeviceID(rawValue: 3), port: 9, busy: false, sequence: 1,
                position: PositionHint(x: -100_000, y: 100_000))),
        .query(Query(deviceID: DeviceID(rawValue: 7), knownAnswers: [])),
        .query(
            Query(
                deviceID: DeviceID(rawValue: 7), position: PositionHint(x: 12, y: -7),
                knownAnswers: [DeviceID(rawValue: 1)])),
        .query(Query(deviceID: DeviceID(rawValue: 7), knownAnswers: (1...32).map { DeviceID(rawValue: $0) })),
        .invite(handshake(42, from: 1, to: 2, noise: Array(repeating: 9, count: 32))),
        .accept(handshake(42, from: 2, to: 1, noise: Array(repeating: 8, count: 103))),
        .confirm(handshake(42, from: 1, to: 2, noise: [])),
        .busy(busy(.inSession)),
        .busy(busy(.unavailable)),
        .secure(
            SecurePacket(sessionID: 77, packetNumber: 1 << 40, ciphertext: Array(repeating: 1, count: 16))),
        .secure(SecurePacket(sessionID: 77, packetNumber: 0, ciphertext: Array(repeating: 2, count: 1178))),
        .invite(handshake(43, from: 1, to: 2, noise: Array(repeating: 9, count: 32), cookie: Array(1...16))),
        // A Noise message long enough that the INVITE needs no padding.
        .invite(handshake(44, from: 1, to: 2, noise: Array(repeating: 7, count: 120))),
        .busy(busy(.retry, cookie: Array(repeating: 0xC0, count: 16))),
        .busy(busy(.staleID)),
        .probe(Probe(challenge: 0x0102_0304_0506_0708)),
        .probeAck(Probe(challenge: .max)),
    ]

    static let frames: [Frame] = [
        .token(token),
        .ranging(RangingFrame(sequence: 3, pose: Pose(x: -12.5, y: 7.3, heading: 181.25), token: token)),
        .inRange(true),
        .inRange(false),
        .consent(.share, CardOffer(length: 262_300, chunkSize: 1120, digest: digest)),
        .consent(.receiveOnly, nil),
        .consent(.decline, nil),
        .cardChunk(index: 65_534, data: ArraySlice(repeating: 0x55, count: 1120)),
        .cardChunk(index: 0, data: [1]),
        .cardSack(CardSack(cumulative: 17, bitmap: [])),
        .cardSack(CardSack(cumulative: 0, bitmap: Array(repeating: 0xAA, count: 32))),
        .cardAck(digest: digest),
        .close(CloseFrame(code: .exchanged)),
        .close(CloseFrame(code: .error, errorCode: ProtocolError.Code.tokenMismatch.wireValue)),
        .closeAck,
        .receipt([]),
        .receipt(.all),
        .ident(Array(repeating: 0x11, count: 32)),
        .proof(Array(repeating: 0x22, count: 32)),
        .commit(Array(repeating: 0x33, count: 32)),
        .nonce(Array(repeating: 0x44, count: 32)),
        .reveal(Array(repeating: 0x55, count: 32)),
        .bond(resolvingKey: Array(repeating: 0x66, count: 32), share: Array(repeating: 0x77, count: 32)),
    ]

    @Test func everyPacketTypeRoundTrips() throws {
        #expect(Set(Self.packets.map(\.type)) == Set(PacketType.allCases))
        for packet in Self.packets {
            let bytes = packet.encoded()
            #expect(bytes.count <= WireConstants.maxDatagramSize)
            #expect(Array(bytes.prefix(4)) == [0x50, 0x44, 3, packet.type.rawValue])
            #expect(try Packet(datagram: bytes) == packet)
            var reader = ByteReader(bytes)
            #expect(try reader.readPacket() == packet)
        }
    }

    /// BEACON is 19 bytes: header, device id, port, flags, then the sequence number; with flag bit 1
    /// a position hint follows, x and y as signed 32-bit centimetres: 27 bytes (PROTOCOL.md 3).
    @Test func beaconLayoutIsExact() throws {
        var beacon = Beacon(
            deviceID: DeviceID(rawValue: 0x0102_0304_0506_0708), port: 5353, busy: true, sequence: 0x0A0B_0C0D
        )
        let bytes = Packet.beacon(beacon).encoded()
        #expect(
            bytes == [0x50, 0x44, 3, 1, 1, 2, 3, 4, 5, 6, 7, 8, 0x14, 0xE9, 0x01, 0x0A, 0x0B, 0x0C, 0x0D])
        #expect(try Packet(datagram: bytes) == .beacon(beacon))
        beacon.position = PositionHint(Pose(x: 7.4, y: -2.6, heading: 180))
        #expect(beacon.position == PositionHint(x: 7, y: -3))
        let hinted = Packet.beacon(beacon).encoded()
        #expect(
            hinted == [
                0x50, 0x44, 3, 1, 1, 2, 3, 4, 5, 6, 7, 8, 0x14, 0xE9, 0x03, 0x0A, 0x0B, 0x0C, 0x0D,
                0, 0, 0, 7, 0xFF, 0xFF, 0xFF, 0xFD,
            ])
        #expect(try Packet(datagram: hinted) == .beacon(beacon))
        // A position outside the room is malformed, not a trap in the distance arithmetic.
        var outside = hinted
        outside[19] = 0x7F
        #expect(caught(ProtocolError.self) { _ = try Packet(datagram: outside) }?.code == .malformed)
        #expect(
            caught(ProtocolError.self) { _ = try Packet(datagram: Array(hinted.prefix(23))) }?.code
                == .truncated)
    }

    /// QUERY: header, device id, flags (bit 0: a position hint follows), the hint, the count of
    /// known answers and the answers (PROTOCOL.md 3).
    @Test func queryLayoutIsExact() throws {
        let query = Query(
            deviceID: DeviceID(rawValue: 9), position: PositionHint(x: 1, y: 2),
            knownAnswers: [DeviceID(rawValue: 5)])
        let bytes = Packet.query(query).encoded()
        #expect(
            bytes == [
                0x50, 0x44, 3, 2, 0, 0, 0, 0, 0, 0, 0, 9, 1, 0, 0, 0, 1, 0, 0, 0, 2, 1, 0, 0, 0, 0, 0, 0, 0,
                5,
            ])
        #expect(try Packet(datagram: bytes) == .query(query))
        var reserved = bytes
        reserved[12] = 3
        #expect(caught(ProtocolError.self) { _ = try Packet(datagram: reserved) }?.code == .malformed)
    }

    /// A QUERY shorter than 28 bytes is padded with zero bytes to 28, so that the BEACON (at most 27
    /// bytes) each device in reach answers with is smaller (PROTOCOL.md 3); non-zero padding is
    /// malformed, a missing byte of it truncated.
    @Test func queryIsPaddedToTwentyEightBytes() throws {
        let bare = Packet.query(Query(deviceID: DeviceID(rawValue: 9), knownAnswers: [])).encoded()
        #expect(bare == [0x50, 0x44, 3, 2, 0, 0, 0, 0, 0, 0, 0, 9, 0, 0] + [UInt8](repeating: 0, count: 14))
        let placed = Packet.query(
            Query(deviceID: DeviceID(rawValue: 9), position: PositionHint(x: 0, y: 0), knownAnswers: [])
        ).encoded()
        #expect(placed.count == WireConstants.queryMinimumSize)
        for packet in Self.packets {
            if case .query = packet { #expect(packet.encoded().count >= WireConstants.queryMinimumSize) }
            if case .beacon = packet { #expect(packet.encoded().count < WireConstants.queryMinimumSize) }
        }
        var dirty = bare
        dirty[27] = 1
        #expect(caught(ProtocolError.self) { _ = try Packet(datagram: dirty) }?.code == .malformed)
        #expect(
            caught(ProtocolError.self) { _ = try Packet(datagram: Array(bare.prefix(27))) }?.code
                == .truncated)
        #expect(caught(ProtocolError.self) { _ = try Packet(datagram: bare + [0]) }?.code == .trailingBytes)
    }

    /// PROBE and PROBE_ACK: header and an 8-byte challenge, 12 bytes, smaller than any BEACON.
    @Test func probeLayoutIsExact() throws {
        let probe = Packet.probe(Probe(challenge: 0x0102_0304_0506_0708)).encoded()
        #expect(probe == [0x50, 0x44, 3, 8, 1, 2, 3, 4, 5, 6, 7, 8])
        let echo = Packet.probeAck(Probe(challenge: 0x0102_0304_0506_0708)).encoded()
        #expect(echo == [0x50, 0x44, 3, 9, 1, 2, 3, 4, 5, 6, 7, 8])
        #expect(probe.count == WireConstants.probeSize)
        #expect(
            caught(ProtocolError.self) { _ = try Packet(datagram: Array(probe.prefix(11))) }?.code
                == .truncated)
        // Another version is dropped before its type is looked at.
        var old = probe
        old[2] = 2
        #expect(caught(ProtocolError.self) { _ = try Packet(datagram: old) }?.code == .unsupportedVersion)
    }

    @Test func everyFrameTypeRoundTrips() throws {
        #expect(Set(Self.frames.map(\.type)) == Set(FrameType.allCases))
        for frame in Self.frames {
            let bytes = Frame.encode([frame])
            #expect(bytes.count == frame.encodedSize)
            let decoded = try Frame.decodeAll(bytes)
            if case .ranging(let original) = frame, case .ranging(let copy) = decoded.first {
                // Poses are quantized to millimetres and hundredths of a degree.
                #expect(
                    abs(copy.pose.x - original.pose.x) < 0.051 && abs(copy.pose.y - original.pose.y) < 0.051)
                #expect(copy.token == original.token && copy.sequence == original.sequence)
            } else {
                #expect(decoded == [frame])
            }
        }
        let all = Self.frames.filter { $0.type != .ranging && $0.type != .cardChunk }
        #expect(try Frame.decodeAll(Frame.encode(all)) == all)
    }

    @Test func tokenLayoutsAreExact() throws {
        let tokenBytes = (0..<16).map { UInt8(0xA0 + $0) }
        #expect(Self.token.bytes == tokenBytes)
        #expect(Frame.encode([.token(Self.token)]) == [1] + tokenBytes)
        let ranging = RangingFrame(
            sequence: 0x0102_0304, pose: Pose(x: 0, y: 0, heading: 0), token: Self.token)
        #expect(
            Frame.encode([.ranging(ranging)]) == [2, 1, 2, 3, 4] + Array(repeating: 0, count: 8) + tokenBytes)
        #expect(DiscoveryToken(tokenBytes).description == "a0a1a2a3a4a5a6a7a8a9aaabacadaeaf")
    }

    @Test func handshakeParametersRoundTrip() throws {
        let parameters = HandshakeParameters(maxCardBytes: 524_288, receiveWindow: 64)
        #expect(try HandshakeParameters(decoding: parameters.encoded()) == parameters)
        #expect(throws: ProtocolError.self) { try HandshakeParameters(decoding: parameters.encoded() + [0]) }
    }

    // MARK: Decode, then encode: the same bytes

    /// The 8-byte pose encoding with `x`, `y` as raw 24-bit patterns and a heading in hundredths.
    static func poseBytes(x: UInt32, y: UInt32, hundredths: UInt16) -> [UInt8] {
        [x, y].flatMap {
            [
                UInt8(truncatingIfNeeded: $0 >> 16), UInt8(truncatingIfNeeded: $0 >> 8),
                UInt8(truncatingIfNeeded: $0),
            ]
        }
            + [UInt8(hundredths >> 8), UInt8(truncatingIfNeeded: hundredths)]
    }

    /// Every coordinate pattern but 0x800000 decodes and encodes to the same bytes: the edges of
    /// the range exhaustively, the rest by a seeded sample. Headings likewise.
    @Test func everyDecodablePoseEncodesToItsBytes() throws {
        let edges: [UInt32] = [0, 1, 0x7F_FFFE, 0x7F_FFFF, 0x80_0001, 0x80_0002, 0xFF_FFFE, 0xFF_FFFF]
        var mutations = ByteMutations(seed: 0x9053)
        let sample = (0..<20_000).map { _ in UInt32(mutations.uniform(below: 1 << 24)) }
        let headings: [UInt16] = [0, 1, 9_000, 18_000, 35_998, 35_999]
        var checked = 0
        for (index, x) in (edges + sample).enumerated() where x != 0x80_0000 {
            let y = (edges + sample)[(index * 7 + 3) % (edges.count + sample.count)]
            guard y != 0x80_0000 else { continue }
            let bytes = Self.poseBytes(x: x, y: y, hundredths: headings[index % headings.count])
            let pose = try Pose(decoding: bytes)
            #expect(pose.encoded() == bytes, "\(pose)")
            checked += 1
        }
        #expect(checked > 20_000)
    }

    /// 0x800000 (−8,388,608 mm) has no positive counterpart, so it is refused on either axis, and so
    /// is a heading of 360° or more.
    @Test func unpairedNegativeCoordinateIsMalformed() {
        for bytes in [
            Self.poseBytes(x: 0x80_0000, y: 0, hundredths: 0),
            Self.poseBytes(x: 0, y: 0x80_0000, hundredths: 0),
            Self.poseBytes(x: 0, y: 0, hundredths: 36_000),
        ] {
            #expect(throws: Pose.DecodingError.self) { try Pose(decoding: bytes) }
            do {
                _ = try Pose(decoding: bytes)
            } catch {
                #expect(error.code == .malformed)
            }
        }
        // The limits of the range itself encode.
        for limit in [Pose.encodableCoordinateLimit, -Pose.encodableCoordinateLimit] {
            let pose = Pose(x: limit, y: limit, heading: 359.99)
            #expect(
                pose.encoded()
                    == Self.poseBytes(
                        x: limit > 0 ? 0x7F_FFFF : 0x80_0001, y: limit > 0 ? 0x7F_FFFF : 0x80_0001,
                        hundredths: 35_999))
        }
    }

    /// The libFuzzer finding: a RANGING frame whose y is 0x800000. It decoded, then trapped when
    /// encoded again; now it is a malformed frame.
    @Test func rangingFrameWithUnpairedNegativePoseIsMalformed() {
        let input: [UInt8] = [
            0x02, 0xFF, 0x02, 0x44, 0x3C, 0xE4, 0x00, 0x00, 0x80, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
            0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x06, 0x06, 0x06, 0x06, 0x06, 0x02, 0x02, 0xFF,
        ]
        #expect(caught(ProtocolError.self) { _ = try Frame.decodeAll(input) }?.code == .malformed)
    }

    /// A pose turned or moved by local input keeps a heading the encoding can carry: turning right
    /// from 0° used to leave -5°, which trapped the encoder.
    @Test func turnedPosesStayEncodable() throws {
        var pose = Pose(x: 0, y: 0, heading: 0)
        for step in 0..<200 {
            pose = step % 3 == 0 ? pose.moved(forward: -1) : pose.turned(by: step < 100 ? -5 : 7.5)
            #expect((0..<360).contains(pose.heading))
            let bytes = pose.encoded()
            #expect(try Pose(decoding: bytes).encoded() == bytes)
        }
    }

    /// Mutations of every honest datagram: each one either side's parser accepts encodes again to
    /// exactly its bytes, and the whole-datagram and streaming parsers agree.
    @Test func mutatedPacketsThatDecodeEncodeToTheirBytes() throws {
        var mutations = ByteMutations(seed: 0xDA7A)
        var accepted = 0
        for round in 0..<20_000 {
            let bytes = mutations.mutate(Self.packets[round % Self.packets.count].encoded())
            var streaming = ByteReader(bytes)
            let streamed = try? streaming.readPacket()
            if let streamed {
                #expect(streamed.encoded() == Array(bytes.prefix(bytes.count - streaming.readableBytes)))
            }
            guard let packet = try? Packet(datagram: bytes) else { continue }
            accepted += 1
            #expect(packet.encoded() == bytes)
            #expect(streamed == packet)
        }
        #expect(accepted > 1000)
    }

    /// INVITE is padded to 144 bytes, so that no answer to it (ACCEPT 133, BUSY 29, BUSY(retry) 45)
    /// is larger; its padding must be zero, and its cookie field of zeros means no cookie.
    @Test func inviteIsPaddedAndNoAnswerIsLarger() throws {
        let invite = Self.packets[6].encoded()
        #expect(invite.count == WireConstants.inviteMinimumSize)
        #expect(Self.packets[7].encoded().count == 133)  // ACCEPT carrying XX message 2
        #expect(Self.packets[9].encoded().count == 29 && Self.packets[15].encoded().count == 45)
        #expect(Self.packets[14].encoded().count == 4 + 24 + 16 + 2 + 120)
        for answer in [7, 9, 10, 15] { #expect(Self.packets[answer].encoded().count <= invite.count) }
        // Session, sender, receiver, then the cookie at offset 28: zeros when there is none.
        #expect(invite[28..<44].allSatisfy { $0 == 0 })
        #expect(Array(Self.packets[13].encoded()[28..<44]) == Array(1...16))
        var padded = invite
        padded[padded.count - 1] = 1
        #expect(caught(ProtocolError.self) { _ = try Packet(datagram: padded) }?.code == .malformed)
        #expect(caught(ProtocolError.self) { _ = try Packet(datagram: invite + [0]) }?.code == .trailingBytes)
        // BUSY(retry) without its cookie is cut short.
        let retry = Self.packets[15].encoded()
        #expect(
            caught(ProtocolError.self) { _ = try Packet(datagram: Array(retry.prefix(29))) }?.code
                == .truncated)
    }

    /// The streaming reader takes packets from a longer buffer, so it must not accept a QUERY that
    /// no datagram could carry (its encoder would refuse it).
    @Test func queryLongerThanADatagramIsOversized() throws {
        let fits = Query.maxKnownAnswers
        for count in [fits, fits + 1, 255] {
            let bytes: [UInt8] =
                [0x50, 0x44, WireConstants.version, PacketType.query.rawValue] + Array(repeating: 0, count: 8)
                + [1] + Array(repeating: 0, count: 8) + [UInt8(count)]
                + Array(repeating: 0x11, count: 8 * count)
            var reader = ByteReader(bytes + [0x50])
            if count <= fits {
                let packet = try #require(try reader.readPacket())
                #expect(packet.encoded() == bytes)
            } else {
                #expect(caught(ProtocolError.self) { _ = try reader.readPacket() }?.code == .oversized)
            }
        }
    }

    /// Mutations of every honest frame list: what decodes encodes to exactly its bytes.
    @Test func mutatedFramesThatDecodeEncodeToTheirBytes() throws {
        var mutations = ByteMutations(seed: 0xF4A3)
        let encodings = Self.frames.map { Frame.encode([$0]) } + [Frame.encode(Array(Self.frames.prefix(6)))]
        let accepted = mutations.accepted(
            rounds: 20_000, of: encodings, decode: { try? Frame.decodeAll($0) },
            check: {
                frames, bytes, _ in #expect(Frame.encode(frames) == bytes)
            })
        #expect(accepted > 1000)
    }

    /// Mutations of handshake parameters: what decodes encodes to exactly its bytes.
    @Test func mutatedParametersThatDecodeEncodeToTheirBytes() throws {
        var mutations = ByteMutations(seed: 0x9A4A)
        let honest = HandshakeParameters(maxCardBytes: 524_288, receiveWindow: 32).encoded()
        let accepted = mutations.accepted(
            rounds: 5_000, of: [honest], decode: { try? HandshakeParameters(decoding: $0) },
            check: { parameters, bytes, _ in #expect(parameters.encoded() == bytes) })
        #expect(accepted > 100)
    }

    /// Every proper prefix of every packet is rejected as truncated by the whole-datagram parser
    /// and reported as "needs more bytes" by the incremental one.
    @Test func everyTruncationIsTypedError() {
        for packet in Self.packets {
            let bytes = packet.encoded()
            for length in 0..<bytes.count {
                let prefix = Array(bytes.prefix(length))
                do {
                    _ = try Packet(datagram: prefix)
                    Issue.record("\(packet.type) truncated to \(length) bytes was accepted")
                } catch {
                    #expect(error.code == .truncated, "\(packet.type) at \(length): \(error)")
                }
                var reader = ByteReader(prefix)
                #expect((try? reader.readPacket()) == .some(nil), "\(packet.type) at \(length)")
                #expect(reader.readerIndex == 0)
            }
        }
        for frame in Self.frames {
            let bytes = Frame.encode([frame])
            for length in 1..<bytes.count {
                #expect(throws: ProtocolError.self) { try Frame.decodeAll(Array(bytes.prefix(length))) }
                var reader = ByteReader(Array(bytes.prefix(length)))
                #expect((try? reader.readFrame()) == .some(nil), "\(frame.type) at \(length)")
            }
        }
    }

    @Test func headerViolationsHaveTheirCodes() {
        let beacon = Self.packets[0].encoded()
        func code(_ bytes: [UInt8]) -> ProtocolError.Code? {
            do {
                _ = try Packet(datagram: bytes)
                return nil
            } catch { return error.code }
        }
        var badMagic = beacon
        badMagic[0] = 0x51
        #expect(code(badMagic) == .badMagic)
        for version: UInt8 in [0, 1, 2, 4, 255] {
            var badVersion = beacon
            badVersion[2] = version
            #expect(code(badVersion) == .unsupportedVersion)
        }
        var badType = beacon
        badType[3] = 99
        #expect(code(badType) == .unknownType)
        #expect(code(beacon + [0]) == .trailingBytes)
        #expect(code(Array(repeating: 0x50, count: 1201)) == .oversized)
        var badFlags = beacon
        badFlags[14] = 4
        #expect(code(badFlags) == .malformed)
        var noPort = beacon
        noPort[12] = 0
        noPort[13] = 0
        #expect(code(noPort) == .malformed)
        #expect(code(Array(beacon.dropLast())) == .truncated)
        var badBusy = Self.packets[9].encoded()
        badBusy[badBusy.count - 1] = 9
        #expect(code(badBusy) == .malformed)
        #expect(code([]) == .truncated)
    }

    @Test func frameViolationsHaveTheirCodes() {
        func code(_ bytes: [UInt8]) -> ProtocolError.Code? {
            do {
                _ = try Frame.decodeAll(bytes)
                return nil
            } catch { return error.code }
        }
        #expect(code([]) == .malformed)
        #expect(code([0]) == .unknownType)
        #expect(code([200]) == .unknownType)
        #expect(code([3, 2]) == .malformed)  // IN_RANGE flag
        #expect(code([4, 9]) == .malformed)  // consent decision
        #expect(code([4, 1, 0, 0, 0, 0, 4, 96] + Self.digest) == .malformed)  // empty card
        #expect(code([5, 0, 0, 0, 0]) == .malformed)  // empty chunk
        #expect(code([6, 0, 0, 33] + Array(repeating: 0, count: 33)) == .oversized)
        #expect(code([8, 7, 0, 0]) == .malformed)  // close code
        #expect(code([10, 0x80]) == .malformed)  // receipt reserved bit
        for type: UInt8 in 11...15 {
            #expect(code([type] + Array(repeating: 0, count: 31)) == .truncated)  // 32-byte fields
        }
        #expect(code([16] + Array(repeating: 0, count: 63)) == .truncated)  // BOND
        var pose = [UInt8](repeating: 0, count: 8)
        pose[6] = 0xFF  // heading 65280 hundredths
        #expect(code([2, 0, 0, 0, 1] + pose + Self.token.bytes) == .malformed)
    }

    /// Random bytes never trap the parsers; whatever is rejected is a typed error.
    @Test func garbageNeverTraps() {
        var random = DeterministicRandom(seed: 5)
        var accepted = 0
        for round in 0..<5000 {
            let length = Int(random.uniform(below: 80))
            var bytes = random.bytes(length)
            // Half of the inputs get a valid header so the body parsers are exercised too.
            if round % 2 == 0 && length >= 4 {
                bytes[0] = 0x50
                bytes[1] = 0x44
                bytes[2] = 1
                bytes[3] = UInt8(1 + random.uniform(below: 7))
            }
            if (try? Packet(datagram: bytes)) != nil { accepted += 1 }
            _ = try? Frame.decodeAll(bytes)
        }
        #expect(accepted < 5000)
    }
}
