import Foundation
import ProfileDropCrypto
import ProfileDropJSON
import ProfileDropTestSupport
import Testing

@testable import ProfileDropCore
@testable import ProfileDropNoise

/// The conformance vectors in `Vectors/` (format in `Vectors/README.md`), checked in both
/// directions: decoding the bytes gives the fields (or the error code a receiver counts), encoding
/// the fields gives the bytes, and the cryptographic outputs are recomputed from their inputs.
///
/// Run `PROFILEDROP_REGENERATE_VECTORS=1 swift test --filter ConformanceVectorTests` to rewrite the
/// files after a deliberate change; `scripts/check-vectors.py` checks them again from PROTOCOL.md.
@Suite struct ConformanceVectorTests {
    static let directory = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Vectors")
    static let regenerate = ProcessInfo.processInfo.environment["PROFILEDROP_REGENERATE_VECTORS"] == "1"

    /// The committed file `name`, or, while regenerating, the value being written to it (the tests
    /// run side by side, so a file may be read while it is rewritten).
    static func load(_ name: String) throws -> JSONValue {
        if regenerate,
            let value = try ConformanceVectorGenerator.files().first(where: { $0.name == name })?.value
        {
            return value
        }
        let text = try String(contentsOf: directory.appendingPathComponent("\(name).json"), encoding: .utf8)
        return try JSONValue.parse(text)
    }

    @Test func eachFileIsWhatTheImplementationWritesFromTheFixedInputs() throws {
        for (name, value) in try ConformanceVectorGenerator.files() {
            let url = Self.directory.appendingPathComponent("\(name).json")
            let text = value.serialized(.prettySorted) + "\n"
            if Self.regenerate {
                try text.write(to: url, atomically: true, encoding: .utf8)
            }
            let committed = try String(contentsOf: url, encoding: .utf8)
            #expect(committed == text, "Vectors/\(name).json differs from what the implementation writes")
        }
    }

    // MARK: - Datagrams and frames

    @Test func everyDatagramVectorDecodesToItsFieldsAndEncodesToItsBytes() throws {
        var covered: Set<PacketType> = []
        for vector in try Self.load("wire").member("vectors").items() {
            let name = try vector.member("name").text()
            let bytes = try vector.member("bytes").bytes()
            let type = try VectorFormat.packetType(named: vector.member("type").text())
            let expected = try VectorFormat.packet(type, from: vector.member("fields"))
            #expect(try Packet(datagram: bytes) == expected, "\(name)")
            #expect(expected.encoded() == bytes, "\(name)")
            covered.insert(type)
        }
        for type in PacketType.allCases {
            #expect(covered.contains(type), "Vectors/wire.json has no \(VectorFormat.name(of: type))")
        }
    }

    @Test func everyFrameVectorDecodesToItsFramesAndEncodesToItsBytes() throws {
        var covered: Set<FrameType> = []
        for vector in try Self.load("frames").member("vectors").items() {
            let name = try vector.member("name").text()
            let bytes = try vector.member("bytes").bytes()
            let frames = try vector.member("frames").items().map(VectorFormat.frame(from:))
            #expect(try Frame.decodeAll(bytes) == frames, "\(name)")
            #expect(Frame.encode(frames) == bytes, "\(name)")
            covered.formUnion(frames.map(\.type))
        }
        for type in FrameType.allCases {
            #expect(covered.contains(type), "Vectors/frames.json has no \(VectorFormat.name(of: type))")
        }
    }

    @Test func everyInvalidDatagramAndFrameFailsWithItsCode() throws {
        let file = try Self.load("invalid")
        for vector in try file.member("datagrams").items() {
            let bytes = try vector.member("bytes").bytes()
            let code = try VectorFormat.expectedCode(vector)
            #expect(
                caught(ProtocolError.self) { _ = try Packet(datagram: bytes) }?.code == code,
                "\(vector)")
        }
        for vector in try file.member("frames").items() {
            let bytes = try vector.member("bytes").bytes()
            let code = try VectorFormat.expectedCode(vector)
            #expect(
                caught(ProtocolError.self) { _ = try Frame.decodeAll(bytes) }?.code == code,
                "\(vector)")
        }
    }

    @Test func posesEncodeAtTheirLimitsAndInvalidOnesAreRefused() throws {
        let file = try Self.load("pose")
        for vector in try file.member("valid").items() {
            let input = try vector.member("pose")
            let pose = Pose(
                x: try input.member("x_cm").double(), y: try input.member("y_cm").double(),
                heading: try input.member("heading_degrees").double())
            let bytes = try vector.member("bytes").bytes()
            #expect(pose.encoded() == bytes, "\(vector)")
            let decoded = try VectorFormat.pose(from: vector.member("decoded"))
            #expect(try Pose(decoding: bytes) == decoded)
            #expect(decoded.encoded() == bytes)
        }
        for vector in try file.member("invalid").items() {
            let bytes = try vector.member("bytes").bytes()
            let ranging = [FrameType.ranging.rawValue, 0, 0, 0, 1] + bytes + [UInt8](repeating: 0, count: 16)
            #expect(
                caught(ProtocolError.self) { _ = try Frame.decodeAll(ranging) }?.code
                    == (try VectorFormat.expectedCode(vector)))
            #expect(caught(Pose.DecodingError.self) { _ = try Pose(decoding: bytes) }?.code == .malformed)
        }
    }

    // MARK: - Handshake and secure channel

    @Test func theHandshakeForFixedKeysGivesItsMessagesHashAndTransportKeys() throws {
        let file = try Self.load("handshake")
        #expect(try file.member("protocol_name").text() == WireConstants.noiseProtocolName)
        let sessionID = try file.member("session_id").id()
        let initiatorID = DeviceID(rawValue: try file.member("initiator_id").id())
        let responderID = DeviceID(rawValue: try file.member("responder_id").id())
        #expect(
            HandshakeRules.prologue(sessionID: sessionID, initiator: initiatorID, responder: responderID)
                == (try file.member("prologue").bytes()))
        let initiatorStatic = try X25519.PrivateKey(
            rawRepresentation: try file.member("initiator_static_private").bytes())
        let responderStatic = try X25519.PrivateKey(
            rawRepresentation: try file.member("responder_static_private").bytes())
        #expect(
            initiatorStatic.publicKey.rawRepresentation
                == (try file.member("initiator_static_public").bytes()))
        #expect(
            responderStatic.publicKey.rawRepresentation
                == (try file.member("responder_static_public").bytes()))
        var initiatorRandom = ScriptedRandom(try file.member("initiator_ephemeral_private").bytes())
        var responderRandom = ScriptedRandom(try file.member("responder_ephemeral_private").bytes())
        var (initiator, responder) = ConformanceVectorGenerator.handshakes(
            sessionID: sessionID, initiatorID: initiatorID, responderID: responderID,
            initiatorStatic: initiatorStatic, responderStatic: responderStatic)

        let messages = try file.member("messages").items()
        try #require(messages.count == 3)
        let altered = try file.member("messages_invalid").items()
        for (index, message) in messages.enumerated() {
            let payload = try message.member("payload").bytes()
            let noise = try message.member("noise_message").bytes()
            let initiatorWrites = index != 1
            // An altered message fails at its reader, which stays ready for the genuine one.
            for vector in altered where try vector.member("message_index").integer() == index {
                #expect(try VectorFormat.expectedCode(vector) == .handshakeFailed)
                let bytes = try vector.member("noise_message").bytes()
                if initiatorWrites {
                    #expect(throws: (any Error).self) { try responder.readMessage(bytes) }
                } else {
                    #expect(throws: (any Error).self) { try initiator.readMessage(bytes) }
                }
            }
            let written =
                initiatorWrites
                ? try initiator.writeMessage(payload: payload, random: &initiatorRandom)
                : try responder.writeMessage(payload: payload, random: &responderRandom)
            #expect(written == noise, "message \(index + 1)")
            let read = initiatorWrites ? try responder.readMessage(noise) : try initiator.readMessage(noise)
            #expect(read == payload)
            if index > 0 { #expect(try HandshakeParameters(decoding: read).encoded() == payload) }
            let handshake = HandshakePacket(
                sessionID: sessionID, sender: initiatorWrites ? initiatorID : responderID,
                receiver: initiatorWrites ? responderID : initiatorID, noiseMessage: noise)
            let packet: Packet = [.invite(handshake), .accept(handshake), .confirm(handshake)][index]
            #expect(try message.member("datagram_type").text() == VectorFormat.name(of: packet.type))
            let datagram = try message.member("datagram").bytes()
            #expect(packet.encoded() == datagram)
            #expect(try Packet(datagram: datagram) == packet)
        }
        #expect(initiatorRandom.isExhausted && responderRandom.isExhausted)
        #expect(initiator.handshakeHash == (try file.member("handshake_hash").bytes()))
        #expect(responder.handshakeHash == initiator.handshakeHash)
        let initiatorTransport = initiator.split()
        let responderTransport = responder.split()
        let forward = try file.member("initiator_to_responder_key").bytes()
        let backward = try file.member("responder_to_initiator_key").bytes()
        #expect(initiatorTransport.sender.key?.rawRepresentation == forward)
        #expect(responderTransport.receiver.key?.rawRepresentation == forward)
        #expect(initiatorTransport.receiver.key?.rawRepresentation == backward)
        #expect(responderTransport.sender.key?.rawRepresentation == backward)

        var channels = [
            "initiator": SecureChannel(
                sessionID: sessionID, peerAddress: PeerAddress(192, 0, 2, 2, port: 1),
                transport: initiatorTransport),
            "responder": SecureChannel(
                sessionID: sessionID, peerAddress: PeerAddress(192, 0, 2, 1, port: 1),
                transport: responderTransport),
        ]
        let keys = ["initiator": forward, "responder": backward]
        for vector in try file.member("secure_packets").items() {
            let sender = try vector.member("sender").text()
            let receiver = sender == "initiator" ? "responder" : "initiator"
            let frames = try vector.member("frames").items().map(VectorFormat.frame(from:))
            let plaintext = try vector.member("plaintext").bytes()
            let datagram = try vector.member("datagram").bytes()
            let packetNumber = try vector.member("packet_number").id()
            #expect(Frame.encode(frames) == plaintext)
            // The sender's channel numbers its packets in order: the vectors list them so.
            #expect(channels[sender]?.seal(frames).bytes == datagram, "\(vector)")
            // The same bytes from the key and nonce alone.
            let header = SecurePacket.header(
                sessionID: sessionID, packetNumber: packetNumber,
                ciphertextLength: plaintext.count + WireConstants.tagSize)
            #expect(header == (try vector.member("associated_data").bytes()))
            let key = try ChaChaPoly.Key(rawRepresentation: keys[sender] ?? [])
            let nonce = [0, 0, 0, 0] + (0..<8).map { UInt8(truncatingIfNeeded: packetNumber >> ($0 * 8)) }
            #expect(nonce == (try vector.member("nonce").bytes()))
            #expect(
                header
                    + (try CipherState(key: key).encrypt(
                        nonce: packetNumber, ad: header, plaintext: plaintext))
                    == datagram)
            guard case .secure(let packet) = try Packet(datagram: datagram) else {
                Issue.record("not a SECURE datagram")
                continue
            }
            #expect(try channels[receiver]?.open(packet) == frames)
        }
        for vector in try file.member("secure_invalid").items() {
            let datagram = try vector.member("datagram").bytes()
            guard case .secure(let packet) = try Packet(datagram: datagram) else {
                Issue.record("not a SECURE datagram")
                continue
            }
            let sender = try vector.member("sender").text()
            var receiver = channels[sender == "initiator" ? "responder" : "initiator"]
            #expect(
                caught(ProtocolError.self) { _ = try receiver?.open(packet) }?.code
                    == (try VectorFormat.expectedCode(vector)), "\(vector)")
        }
    }

    @Test func theReplayWindowTakesEachNumberOnceAndNoneTooOld() throws {
        let file = try Self.load("handshake").member("replay_window")
        #expect(try file.member("size").integer() == Int(ReplayWindow.size))
        var window = ReplayWindow()
        for arrival in try file.member("arrivals").items() {
            let number = UInt64(try arrival.member("packet_number").integer())
            var outcome = "accepted"
            do throws(ProtocolError) {
                try window.check(number)
                window.record(number)
            } catch {
                outcome = error.code.name
            }
            #expect(outcome == (try arrival.member("result").text()), "packet \(number)")
        }
    }

    @Test func handshakeParametersDecodeEncodeAndFailWithTheirCodes() throws {
        let file = try Self.load("handshake").member("parameters")
        for vector in try file.member("valid").items() {
            var parameters = HandshakeParameters(
                maxCardBytes: UInt32(try vector.member("max_card_bytes").integer()),
                receiveWindow: UInt16(try vector.member("receive_window").integer()))
            parameters.version = UInt8(try vector.member("version").integer())
            let bytes = try vector.member("bytes").bytes()
            #expect(parameters.encoded() == bytes)
            #expect(try HandshakeParameters(decoding: bytes) == parameters)
        }
        for vector in try file.member("invalid").items() {
            let bytes = try vector.member("bytes").bytes()
            #expect(
                caught(ProtocolError.self) { _ = try HandshakeParameters(decoding: bytes) }?.code
                    == (try VectorFormat.expectedCode(vector)), "\(vector)")
        }
    }

    // MARK: - Recognition, verification, cookie

    @Test func recognitionValuesComeFromTheirInputs() throws {
        let file = try Self.load("recognition")
        for vector in try file.member("identities").items() {
            let identity = DeviceIdentity(secret: try vector.member("identity_secret").bytes())
            #expect(identity.resolvingKey == (try vector.member("resolving_key").bytes()))
            var random = ScriptedRandom(try vector.member("ident_nonce").bytes())
            #expect(Recognition.ident(for: identity, random: &random) == (try vector.member("ident").bytes()))
            #expect(random.isExhausted)
        }
        for vector in try file.member("resolution").items() {
            let known = try vector.member("known_resolving_keys").items().map { try $0.bytes() }
            let peers = known.enumerated().map { index, key in
                KnownPeer(resolvingKey: key, bondKey: [UInt8](repeating: 0, count: 32), name: "\(index)")
            }
            let match = try vector.member("match")
            let resolved = Recognition.resolve(try vector.member("ident").bytes(), among: peers)
            #expect(resolved?.name == (match == .null ? nil : String(try match.integer())))
        }
        for vector in try file.member("bonds").items() {
            let h = try vector.member("handshake_hash").bytes()
            let bondKey = Recognition.bondKey(
                initiatorShare: try vector.member("initiator_share").bytes(),
                responderShare: try vector.member("responder_share").bytes(), handshakeHash: h)
            #expect(bondKey == (try vector.member("bond_key").bytes()))
            let bond = KnownPeer(resolvingKey: [UInt8](repeating: 0, count: 32), bondKey: bondKey, name: "")
            // A device draws its 32 random PROOF bytes whether or not it uses them (PROTOCOL.md 6.5):
            // with a bond, they are drawn and not sent.
            var random = ScriptedRandom([UInt8](repeating: 0xEE, count: 64))
            #expect(
                Recognition.proof(bond: bond, handshakeHash: h, senderIsInitiator: true, random: &random)
                    == (try vector.member("initiator_proof").bytes()))
            #expect(
                Recognition.proof(bond: bond, handshakeHash: h, senderIsInitiator: false, random: &random)
                    == (try vector.member("responder_proof").bytes()))
            #expect(random.isExhausted)
        }
    }

    @Test func verificationCodesComeFromTheirNonces() throws {
        for vector in try Self.load("verification").member("vectors").items() {
            let h = try vector.member("handshake_hash").bytes()
            let responderNonce = try vector.member("responder_nonce").bytes()
            #expect(
                VerificationCode.commitment(handshakeHash: h, responderNonce: responderNonce)
                    == (try vector.member("commitment").bytes()))
            let code = VerificationCode.code(
                handshakeHash: h, initiatorNonce: try vector.member("initiator_nonce").bytes(),
                responderNonce: responderNonce)
            #expect(code == (try vector.member("code").text()))
            #expect(
                Frame.encode([
                    .commit(try vector.member("commitment").bytes()),
                    .nonce(try vector.member("initiator_nonce").bytes()), .reveal(responderNonce),
                ]) == (try vector.member("frames").bytes()))
            #expect(code.count == 6 && code.allSatisfy(\.isASCII) && code.allSatisfy(\.isNumber))
        }
    }

    @Test func cookiesComeFromTheirInputs() throws {
        let file = try Self.load("cookie")
        let bucketLength = UInt64(try file.member("bucket_length_ns").integer())
        #expect(
            bucketLength == UInt64(HalfOpenHandshakes.lifetime(Timeouts()).nanosecondsClamped))
        for vector in try file.member("vectors").items() {
            let bucket = UInt64(try vector.member("bucket").integer())
            #expect(UInt64(try vector.member("time_ns").integer()) / bucketLength == bucket)
            let octets = try vector.member("source_ipv4").text().split(separator: ".").compactMap {
                UInt8($0)
            }
            try #require(octets.count == 4)
            let source = PeerAddress(
                octets[0], octets[1], octets[2], octets[3],
                port: UInt16(try vector.member("source_port").integer()))
            let secret = try vector.member("secret").bytes()
            let sessionID = try vector.member("session_id").id()
            let sender = DeviceID(rawValue: try vector.member("sender_id").id())
            let receiver = DeviceID(rawValue: try vector.member("receiver_id").id())
            let cookie = try vector.member("cookie").bytes()
            #expect(
                HalfOpenHandshakes.cookie(
                    secret: secret, bucket: bucket, source: source, sessionID: sessionID, sender: sender,
                    receiver: receiver) == cookie)
            let message = try vector.member("hmac_message").bytes()
            #expect(Array(HMACBLAKE2b.authenticate(key: secret, parts: [message]).prefix(16)) == cookie)
            let busy = Packet.busy(
                Busy(sessionID: sessionID, sender: receiver, receiver: sender, reason: .retry, cookie: cookie)
            )
            let datagram = try vector.member("busy_retry_datagram").bytes()
            #expect(busy.encoded() == datagram)
            #expect(try Packet(datagram: datagram) == busy)
        }
    }

    // MARK: - Card

    @Test func cardsEncodeToTheirBytesAndDigestsAndInvalidOnesAreRefused() throws {
        let file = try Self.load("card")
        for vector in try file.member("valid").items() {
            let card = try VectorFormat.card(from: vector.member("card"))
            let bytes = try vector.member("bytes").bytes()
            #expect(card.encoded() == bytes, "\(vector)")
            #expect(try ProfileCard(decoding: bytes) == card)
            #expect(card.digest == (try vector.member("digest").bytes()))
            #expect(BLAKE2b.hash(bytes, outputLength: 32) == card.digest)
        }
        for vector in try file.member("invalid").items() {
            #expect(try VectorFormat.expectedCode(vector) == .cardInvalid)
            let bytes = try vector.member("bytes").bytes()
            #expect(
                caught(CardError.self) { _ = try ProfileCard(decoding: bytes) } != nil,
                "\(vector)")
        }
    }
}

/// A vector file that does not have the shape `Vectors/README.md` describes.
struct VectorFileError: Error, CustomStringConvertible {
    var description: String
}

extension JSONValue {
    func member(_ key: String) throws -> JSONValue {
        guard case .object(let members) = self, let value = members.first(where: { $0.key == key })?.value
        else {
            throw VectorFileError(description: "no member \"\(key)\"")
        }
        return value
    }

    func items() throws -> [JSONValue] {
        guard case .array(let items) = self else { throw VectorFileError(description: "not an array") }
        return items
    }

    func text() throws -> String {
        guard case .string(let text) = self else { throw VectorFileError(description: "not a string") }
        return text
    }

    func integer() throws -> Int {
        guard let value = wholeNumber(in: Int.min...Int.max) else {
            throw VectorFileError(description: "not a whole number")
        }
        return value
    }

    func double() throws -> Double {
        guard case .number(let value) = self else { throw VectorFileError(description: "not a number") }
        return value
    }

    func flag() throws -> Bool {
        guard case .bool(let value) = self else { throw VectorFileError(description: "not a boolean") }
        return value
    }

    func bytes() throws -> [UInt8] {
        guard let bytes = Hex.decode(try text()) else { throw VectorFileError(description: "not hex") }
        return bytes
    }

    /// A 64-bit value: 16 hex digits, big-endian.
    func id() throws -> UInt64 {
        let bytes = try bytes()
        guard bytes.count == 8 else { throw VectorFileError(description: "not 8 bytes") }
        return bytes.reduce(0) { $0 << 8 | UInt64($1) }
    }
}

/// The field layout of the vector files, both ways: the generator writes values with it, the tests
/// read them back into the implementation's types.
enum VectorFormat {
    static func hex(_ bytes: some Sequence<UInt8>) -> JSONValue { .string(Hex.encode(bytes)) }

    static func id(_ value: UInt64) -> JSONValue {
        hex((0..<8).reversed().map { UInt8(truncatingIfNeeded: value >> ($0 * 8)) })
    }

    static func name(of type: PacketType) -> String {
        switch type {
        case .beacon: "BEACON"
        case .query: "QUERY"
        case .invite: "INVITE"
        case .accept: "ACCEPT"
        case .confirm: "CONFIRM"
        case .busy: "BUSY"
        case .secure: "SECURE"
        case .probe: "PROBE"
        case .probeAck: "PROBE_ACK"
        }
    }

    static func name(of type: FrameType) -> String {
        switch type {
        case .token: "TOKEN"
        case .ranging: "RANGING"
        case .inRange: "IN_RANGE"
        case .consent: "CONSENT"
        case .cardChunk: "CARD_CHUNK"
        case .cardSack: "CARD_SACK"
        case .cardAck: "CARD_ACK"
        case .close: "CLOSE"
        case .closeAck: "CLOSE_ACK"
        case .receipt: "RECEIPT"
        case .ident: "IDENT"
        case .proof: "PROOF"
        case .commit: "COMMIT"
        case .nonce: "NONCE"
        case .reveal: "REVEAL"
        case .bond: "BOND"
        }
    }

    static func packetType(named name: String) throws -> PacketType {
        guard let type = PacketType.allCases.first(where: { self.name(of: $0) == name }) else {
            throw VectorFileError(description: "no datagram type \(name)")
        }
        return type
    }

    static func frameType(named name: String) throws -> FrameType {
        guard let type = FrameType.allCases.first(where: { self.name(of: $0) == name }) else {
            throw VectorFileError(description: "no frame type \(name)")
        }
        return type
    }

    // MARK: Datagrams

    private static func position(_ hint: PositionHint?) -> JSONValue {
        guard let hint else { return .null }
        return .object([("x_cm", .integer(Int(hint.x))), ("y_cm", .integer(Int(hint.y)))])
    }

    private static func position(from value: JSONValue) throws -> PositionHint? {
        if value == .null { return nil }
        return PositionHint(
            x: Int32(try value.member("x_cm").integer()), y: Int32(try value.member("y_cm").integer()))
    }

    private static func handshake(_ packet: HandshakePacket, cookie: Bool) -> JSONValue {
        var members: [(key: String, value: JSONValue)] = [
            ("session_id", id(packet.sessionID)), ("sender_id", id(packet.sender.rawValue)),
            ("receiver_id", id(packet.receiver.rawValue)),
        ]
        if cookie { members.append(("cookie", hex(packet.cookie))) }
        members.append(("noise_message", hex(packet.noiseMessage)))
        return .object(members)
    }

    private static func handshake(from fields: JSONValue, cookie: Bool) throws -> HandshakePacket {
        HandshakePacket(
            sessionID: try fields.member("session_id").id(),
            sender: DeviceID(rawValue: try fields.member("sender_id").id()),
            receiver: DeviceID(rawValue: try fields.member("receiver_id").id()),
            noiseMessage: try fields.member("noise_message").bytes(),
            cookie: cookie ? try fields.member("cookie").bytes() : [])
    }

    static func fields(of packet: Packet) -> JSONValue {
        switch packet {
        case .beacon(let beacon):
            .object([
                ("device_id", id(beacon.deviceID.rawValue)), ("port", .integer(Int(beacon.port))),
                ("busy", .bool(beacon.busy)), ("sequence", .integer(Int(beacon.sequence))),
                ("position", position(beacon.position)),
            ])
        case .query(let query):
            .object([
                ("device_id", id(query.deviceID.rawValue)), ("position", position(query.position)),
                ("known_answers", .array(query.knownAnswers.map { id($0.rawValue) })),
            ])
        case .invite(let invite): handshake(invite, cookie: true)
        case .accept(let accept): handshake(accept, cookie: false)
        case .confirm(let confirm): handshake(confirm, cookie: false)
        case .busy(let busy):
            .object([
                ("session_id", id(busy.sessionID)), ("sender_id", id(busy.sender.rawValue)),
                ("receiver_id", id(busy.receiver.rawValue)), ("reason", .integer(Int(busy.reason.rawValue))),
                ("cookie", hex(busy.cookie)),
            ])
        case .secure(let secure):
            .object([
                ("session_id", id(secure.sessionID)), ("packet_number", id(secure.packetNumber)),
                ("ciphertext", hex(secure.ciphertext)),
            ])
        case .probe(let probe), .probeAck(let probe): .object([("challenge", id(probe.challenge))])
        }
    }

    static func packet(_ type: PacketType, from fields: JSONValue) throws -> Packet {
        switch type {
        case .beacon:
            return .beacon(
                Beacon(
                    deviceID: DeviceID(rawValue: try fields.member("device_id").id()),
                    port: UInt16(try fields.member("port").integer()), busy: try fields.member("busy").flag(),
                    sequence: UInt32(try fields.member("sequence").integer()),
                    position: try position(from: fields.member("position"))))
        case .query:
            return .query(
                Query(
                    deviceID: DeviceID(rawValue: try fields.member("device_id").id()),
                    position: try position(from: fields.member("position")),
                    knownAnswers: try fields.member("known_answers").items().map {
                        DeviceID(rawValue: try $0.id())
                    }))
        case .invite: return .invite(try handshake(from: fields, cookie: true))
        case .accept: return .accept(try handshake(from: fields, cookie: false))
        case .confirm: return .confirm(try handshake(from: fields, cookie: false))
        case .busy:
            guard let reason = BusyReason(rawValue: UInt8(try fields.member("reason").integer())) else {
                throw VectorFileError(description: "no such BUSY reason")
            }
            return .busy(
                Busy(
                    sessionID: try fields.member("session_id").id(),
                    sender: DeviceID(rawValue: try fields.member("sender_id").id()),
                    receiver: DeviceID(rawValue: try fields.member("receiver_id").id()), reason: reason,
                    cookie: try fields.member("cookie").bytes()))
        case .secure:
            return .secure(
                SecurePacket(
                    sessionID: try fields.member("session_id").id(),
                    packetNumber: try fields.member("packet_number").id(),
                    ciphertext: try fields.member("ciphertext").bytes()))
        case .probe: return .probe(Probe(challenge: try fields.member("challenge").id()))
        case .probeAck: return .probeAck(Probe(challenge: try fields.member("challenge").id()))
        }
    }

    // MARK: Frames

    /// A decoded pose as the integers on the wire.
    static func fields(of pose: Pose) -> JSONValue {
        .object([
            ("x_mm", .integer(Int((pose.x * 10).rounded()))),
            ("y_mm", .integer(Int((pose.y * 10).rounded()))),
            ("heading_centidegrees", .integer(Int((pose.heading * 100).rounded()))),
        ])
    }

    static func pose(from fields: JSONValue) throws -> Pose {
        Pose(
            x: Double(try fields.member("x_mm").integer()) / 10,
            y: Double(try fields.member("y_mm").integer()) / 10,
            heading: Double(try fields.member("heading_centidegrees").integer()) / 100)
    }

    static func fields(of frame: Frame) -> JSONValue {
        var members: [(key: String, value: JSONValue)] = [("type", .string(name(of: frame.type)))]
        switch frame {
        case .token(let token): members.append(("token", hex(token.bytes)))
        case .ranging(let ranging):
            members += [
                ("sequence", .integer(Int(ranging.sequence))), ("pose", fields(of: ranging.pose)),
                ("token", hex(ranging.token.bytes)),
            ]
        case .inRange(let flag): members.append(("flag", .integer(flag ? 1 : 0)))
        case .consent(let decision, let offer):
            members.append(("decision", .integer(Int(decision.rawValue))))
            members.append(
                (
                    "offer",
                    offer.map {
                        .object([
                            ("length", .integer(Int($0.length))), ("chunk_size", .integer(Int($0.chunkSize))),
                            ("digest", hex($0.digest)),
                        ])
                    } ?? .null
                ))
        case .cardChunk(let index, let data):
            members += [("index", .integer(Int(index))), ("data", hex(data))]
        case .cardSack(let sack):
            members += [("cumulative", .integer(Int(sack.cumulative))), ("bitmap", hex(sack.bitmap))]
        case .cardAck(let digest): members.append(("digest", hex(digest)))
        case .close(let close):
            members += [
                ("code", .integer(Int(close.code.rawValue))), ("error_code", .integer(Int(close.errorCode))),
            ]
        case .closeAck: break
        case .receipt(let receipts): members.append(("flags", .integer(Int(receipts.rawValue))))
        case .ident(let ident):
            members += [("nonce", hex(ident.prefix(16))), ("tag", hex(ident.dropFirst(16)))]
        case .proof(let proof): members.append(("proof", hex(proof)))
        case .commit(let commitment): members.append(("commitment", hex(commitment)))
        case .nonce(let nonce), .reveal(let nonce): members.append(("nonce", hex(nonce)))
        case .bond(let resolvingKey, let share):
            members += [("resolving_key", hex(resolvingKey)), ("share", hex(share))]
        }
        return .object(members)
    }

    static func frame(from fields: JSONValue) throws -> Frame {
        switch try frameType(named: fields.member("type").text()) {
        case .token: return .token(DiscoveryToken(try fields.member("token").bytes()))
        case .ranging:
            return .ranging(
                RangingFrame(
                    sequence: UInt32(try fields.member("sequence").integer()),
                    pose: try pose(from: fields.member("pose")),
                    token: DiscoveryToken(try fields.member("token").bytes())))
        case .inRange: return .inRange(try fields.member("flag").integer() == 1)
        case .consent:
            guard let decision = ConsentDecision(rawValue: UInt8(try fields.member("decision").integer()))
            else {
                throw VectorFileError(description: "no such decision")
            }
            let offer = try fields.member("offer")
            if offer == .null { return .consent(decision, nil) }
            return .consent(
                decision,
                CardOffer(
                    length: UInt32(try offer.member("length").integer()),
                    chunkSize: UInt16(try offer.member("chunk_size").integer()),
                    digest: try offer.member("digest").bytes()))
        case .cardChunk:
            return .cardChunk(
                index: UInt16(try fields.member("index").integer()),
                data: try fields.member("data").bytes()[...])
        case .cardSack:
            return .cardSack(
                CardSack(
                    cumulative: UInt16(try fields.member("cumulative").integer()),
                    bitmap: try fields.member("bitmap").bytes()))
        case .cardAck: return .cardAck(digest: try fields.member("digest").bytes())
        case .close:
            guard let code = CloseCode(rawValue: UInt8(try fields.member("code").integer())) else {
                throw VectorFileError(description: "no such close code")
            }
            return .close(
                CloseFrame(code: code, errorCode: UInt16(try fields.member("error_code").integer())))
        case .closeAck: return .closeAck
        case .receipt: return .receipt(Receipts(rawValue: UInt8(try fields.member("flags").integer())))
        case .ident: return .ident(try fields.member("nonce").bytes() + fields.member("tag").bytes())
        case .proof: return .proof(try fields.member("proof").bytes())
        case .commit: return .commit(try fields.member("commitment").bytes())
        case .nonce: return .nonce(try fields.member("nonce").bytes())
        case .reveal: return .reveal(try fields.member("nonce").bytes())
        case .bond:
            return .bond(
                resolvingKey: try fields.member("resolving_key").bytes(),
                share: try fields.member("share").bytes())
        }
    }

    // MARK: Cards

    static func fields(of card: ProfileCard) -> JSONValue {
        .object([
            ("name", .string(card.name)), ("age", .integer(card.age)),
            ("sex", .integer(ProfileCard.Sex.allCases.firstIndex(of: card.sex) ?? 0)),
            ("neutered", .bool(card.neutered)),
            ("size", .integer(ProfileCard.Size.allCases.firstIndex(of: card.size) ?? 0)),
            ("keywords", .array(card.keywords.map { .string($0) })), ("owner", .string(card.owner)),
            (
                "photo",
                card.photo.map { photo in
                    .object([("kind", .integer(photo.format == .jpeg ? 1 : 2)), ("data", hex(photo.data))])
                } ?? .null
            ),
        ])
    }

    static func card(from fields: JSONValue) throws -> ProfileCard {
        let sexes = ProfileCard.Sex.allCases
        let sizes = ProfileCard.Size.allCases
        let sex = try fields.member("sex").integer()
        let size = try fields.member("size").integer()
        guard sexes.indices.contains(sex), sizes.indices.contains(size) else {
            throw VectorFileError(description: "no such sex or size")
        }
        let photo = try fields.member("photo")
        return try ProfileCard(
            name: try fields.member("name").text(), age: try fields.member("age").integer(), sex: sexes[sex],
            neutered: try fields.member("neutered").flag(), size: sizes[size],
            keywords: try fields.member("keywords").items().map { try $0.text() },
            owner: try fields.member("owner").text(),
            photo: photo == .null ? nil : try ProfileCard.Photo(data: photo.member("data").bytes()))
    }

    // MARK: Failures

    /// The code `body` fails with; the generator only lists inputs that fail.
    static func failure(_ body: () throws(ProtocolError) -> Void) -> ProtocolError.Code {
        do {
            try body()
        } catch {
            return error.code
        }
        preconditionFailure("an invalid vector's input was accepted")
    }

    static func failureVector(_ name: String, _ bytes: [UInt8], _ code: ProtocolError.Code) -> JSONValue {
        .object([
            ("name", .string(name)), ("bytes", hex(bytes)), ("error", .string(code.name)),
            ("code", .integer(Int(code.wireValue))),
        ])
    }

    /// The failure vectors of the named `inputs`, each with the code `decode` fails with on it.
    static func failureVectors(
        _ inputs: [(String, [UInt8])], decode: ([UInt8]) throws(ProtocolError) -> Void
    ) -> JSONValue {
        .array(
            inputs.map { name, bytes in
                failureVector(name, bytes, failure { () throws(ProtocolError) in try decode(bytes) })
            })
    }

    /// The error a failure vector names, checked to be one code by name and number.
    static func expectedCode(_ vector: JSONValue) throws -> ProtocolError.Code {
        let name = try vector.member("error").text()
        guard let code = ProtocolError.Code.allCases.first(where: { $0.name == name }),
            Int(code.wireValue) == (try vector.member("code").integer())
        else { throw VectorFileError(description: "no error code \(name)") }
        return code
    }
}
