import Foundation
import ProfileDropCrypto
import ProfileDropJSON

@testable import ProfileDropCore
@testable import ProfileDropNoise

/// Builds the conformance vectors of `Vectors/` from fixed inputs through the implementation itself:
/// the codecs, the Noise handshake and the secure channel, recognition, the verification code, the
/// cookie and the card. Every random draw comes from a ``ScriptedRandom`` holding the fixed inputs, so
/// the same source always gives the same files (`Vectors/README.md` describes their format).
enum ConformanceVectorGenerator {
    /// The files of `Vectors/`, by name without extension, each as the value written there.
    static func files() throws -> [(name: String, value: JSONValue)] {
        [
            ("wire", wire()), ("frames", frames()), ("pose", try pose()), ("handshake", try handshake()),
            ("recognition", recognition()), ("verification", verification()), ("cookie", cookie()),
            ("card", try card()), ("invalid", invalid()),
        ]
    }

    /// Random-looking fixed bytes named by `label`: BLAKE2b-512 of the label and a block number, as
    /// many blocks as `count` needs. Inputs only, written into the vectors as they are.
    static func fixed(_ label: String, _ count: Int = 32) -> [UInt8] {
        var bytes: [UInt8] = []
        var block = 0
        while bytes.count < count {
            let part = BLAKE2b.hash(Array("\(label) \(block)".utf8), outputLength: 64)
            bytes += part.prefix(count - bytes.count)
            block += 1
        }
        return bytes
    }

    static let initiatorID = DeviceID(rawValue: 0x1122_3344_5566_7788)
    static let responderID = DeviceID(rawValue: 0x99AA_BBCC_DDEE_FF00)
    static let sessionID: UInt64 = 0x0123_4567_89AB_CDEF

    /// A handshake packet of ``sessionID`` from the initiator to the responder.
    static func fromInitiator(_ noiseMessage: [UInt8], cookie: [UInt8] = []) -> HandshakePacket {
        HandshakePacket(
            sessionID: sessionID, sender: initiatorID, receiver: responderID, noiseMessage: noiseMessage,
            cookie: cookie)
    }

    /// A handshake packet of ``sessionID`` from the responder to the initiator.
    static func fromResponder(_ noiseMessage: [UInt8]) -> HandshakePacket {
        HandshakePacket(
            sessionID: sessionID, sender: responderID, receiver: initiatorID, noiseMessage: noiseMessage)
    }

    // MARK: - Datagrams

    static func wire() -> JSONValue {
        let noise1 = fixed("wire noise message 1")
        let packets: [(String, Packet)] = [
            (
                "BEACON, free, no position",
                .beacon(Beacon(deviceID: initiatorID, port: 47_544, busy: false, sequence: 0x1234_5678))
            ),
            (
                "BEACON, busy, with a position",
                .beacon(
                    Beacon(
                        deviceID: responderID, port: 50_001, busy: true, sequence: 7,
                        position: PositionHint(x: -125, y: 3_040)))
            ),
            (
                "BEACON at the room's limits",
                .beacon(
                    Beacon(
                        deviceID: initiatorID, port: 65_535, busy: false, sequence: 0xFFFF_FFFF,
                        position: PositionHint(x: 100_000, y: -100_000)))
            ),
            (
                "QUERY, no position, no known answers: padded to 28 bytes",
                .query(Query(deviceID: initiatorID, knownAnswers: []))
            ),
            (
                "QUERY with a position and no known answers: padded to 28 bytes",
                .query(Query(deviceID: initiatorID, position: PositionHint(x: 0, y: 0), knownAnswers: []))
            ),
            (
                "QUERY with a position and two known answers",
                .query(
                    Query(
                        deviceID: responderID, position: PositionHint(x: 12, y: -7),
                        knownAnswers: [DeviceID(rawValue: 1), DeviceID(rawValue: 0xFEDC_BA98_7654_3210)]))
            ),
            (
                "QUERY, no position, 147 known answers (the most a datagram with a position holds)",
                .query(
                    Query(
                        deviceID: initiatorID,
                        knownAnswers: (1...147).map { DeviceID(rawValue: UInt64($0) * 0x0101_0101) }))
            ),
            (
                "INVITE without a cookie: padded to 144 bytes",
                .invite(fromInitiator(noise1))
            ),
            (
                "INVITE with a cookie",
                .invite(fromInitiator(noise1, cookie: fixed("wire cookie", 16)))
            ),
            (
                "INVITE whose Noise message needs no padding (100 bytes)",
                .invite(fromInitiator(fixed("wire long noise message", 100)))
            ),
            (
                "ACCEPT",
                .accept(fromResponder(fixed("wire noise message 2", 103)))
            ),
            (
                "CONFIRM",
                .confirm(fromInitiator(fixed("wire noise message 3", 71)))
            ),
            (
                "ACCEPT with an empty Noise message",
                .accept(
                    HandshakePacket(
                        sessionID: 0, sender: responderID, receiver: initiatorID, noiseMessage: []))
            ),
            (
                "BUSY(1, in session)",
                .busy(
                    Busy(sessionID: sessionID, sender: responderID, receiver: initiatorID, reason: .inSession)
                )
            ),
            (
                "BUSY(2, unavailable)",
                .busy(
                    Busy(
                        sessionID: sessionID, sender: responderID, receiver: initiatorID, reason: .unavailable
                    ))
            ),
            (
                "BUSY(3, retry) with its cookie",
                .busy(
                    Busy(
                        sessionID: sessionID, sender: responderID, receiver: initiatorID, reason: .retry,
                        cookie: fixed("wire cookie", 16)))
            ),
            (
                "BUSY(4, stale id): the sender is the invited id",
                .busy(
                    Busy(
                        sessionID: sessionID, sender: DeviceID(rawValue: 0xDEAD_BEEF_0000_0001),
                        receiver: initiatorID, reason: .staleID))
            ),
            (
                "SECURE with the shortest ciphertext (a tag alone)",
                .secure(
                    SecurePacket(sessionID: sessionID, packetNumber: 0, ciphertext: fixed("wire tag", 16)))
            ),
            (
                "SECURE with the longest ciphertext (1178 bytes)",
                .secure(
                    SecurePacket(
                        sessionID: sessionID, packetNumber: 0xFFFF_FFFF_FFFF_FFFE,
                        ciphertext: fixed("wire longest ciphertext", 1_178)))
            ),
            ("PROBE", .probe(Probe(challenge: 0x0123_4567_89AB_CDEF))),
            ("PROBE_ACK echoing that challenge", .probeAck(Probe(challenge: 0x0123_4567_89AB_CDEF))),
        ]
        return .object([
            ("description", .string("Every datagram type (PROTOCOL.md 3): its fields and its bytes.")),
            (
                "vectors",
                .array(
                    packets.map { name, packet in
                        .object([
                            ("name", .string(name)), ("type", .string(VectorFormat.name(of: packet.type))),
                            ("fields", VectorFormat.fields(of: packet)), ("bytes", hex(packet.encoded())),
                        ])
                    })
            ),
        ])
    }

    // MARK: - Frames

    static let token = DiscoveryToken(fixed("frames token", 16))

    static func frames() -> JSONValue {
        let digest = fixed("frames digest")
        let chunk = fixed("frames chunk", 40)
        let pose = Pose(x: 6.5, y: -3.2, heading: 271.25)
        let cases: [(String, [Frame])] = [
            ("TOKEN", [.token(token)]),
            ("RANGING", [.ranging(RangingFrame(sequence: 1, pose: pose, token: token))]),
            (
                "RANGING at the pose's limits",
                [
                    .ranging(
                        RangingFrame(
                            sequence: 0xFFFF_FFFF, pose: Pose(x: -838_860.7, y: 838_860.7, heading: 359.99),
                            token: token))
                ]
            ),
            ("IN_RANGE(1)", [.inRange(true)]),
            ("IN_RANGE(0)", [.inRange(false)]),
            (
                "CONSENT(share) with its offer",
                [.consent(.share, CardOffer(length: 2_345, chunkSize: 1_120, digest: digest))]
            ),
            (
                "CONSENT(share): 65535 chunks of 1 byte, the most an offer may have",
                [.consent(.share, CardOffer(length: 65_535, chunkSize: 1, digest: digest))]
            ),
            (
                "CONSENT(share): chunk size 1157, the largest, in 65535 chunks",
                [.consent(.share, CardOffer(length: 65_535 * 1_157, chunkSize: 1_157, digest: digest))]
            ),
            ("CONSENT(receive-only)", [.consent(.receiveOnly, nil)]),
            ("CONSENT(decline)", [.consent(.decline, nil)]),
            ("CARD_CHUNK", [.cardChunk(index: 2, data: chunk[...])]),
            ("CARD_SACK from PROTOCOL.md 6.6", [.cardSack(CardSack(cumulative: 4, bitmap: [0x64]))]),
            ("CARD_SACK with no bitmap", [.cardSack(CardSack(cumulative: 235, bitmap: []))]),
            (
                "CARD_SACK with a 32-byte bitmap",
                [.cardSack(CardSack(cumulative: 1, bitmap: fixed("frames bitmap", 32)))]
            ),
            ("CARD_ACK", [.cardAck(digest: digest)]),
            ("CLOSE(exchanged)", [.close(CloseFrame(code: .exchanged))]),
            (
                "CLOSE(error, identity-proof-failed)",
                [
                    .close(
                        CloseFrame(code: .error, errorCode: ProtocolError.Code.identityProofFailed.wireValue))
                ]
            ),
            (
                "CLOSE(timeout) with a non-zero error code, which is not checked",
                [.close(CloseFrame(code: .timeout, errorCode: 999))]
            ),
            ("CLOSE_ACK", [.closeAck]),
            ("RECEIPT, every flag", [.receipt(.all)]),
            ("RECEIPT, none", [.receipt([])]),
            ("IDENT", [.ident(fixed("frames ident"))]),
            ("PROOF", [.proof(fixed("frames proof"))]),
            ("COMMIT", [.commit(fixed("frames commit"))]),
            ("NONCE", [.nonce(fixed("frames nonce"))]),
            ("REVEAL", [.reveal(fixed("frames reveal"))]),
            (
                "BOND",
                [.bond(resolvingKey: fixed("frames resolving key"), share: fixed("frames bond share"))]
            ),
            (
                "a ranging round in ranging: facts, RECEIPT, then RANGING",
                [
                    .token(token), .inRange(true), .ident(fixed("frames ident")),
                    .proof(fixed("frames proof")),
                    .receipt([.token, .ident]), .ranging(RangingFrame(sequence: 9, pose: pose, token: token)),
                ]
            ),
            (
                "a CLOSE with its RECEIPT",
                [.cardAck(digest: digest), .close(CloseFrame(code: .exchanged)), .receipt(.all)]
            ),
        ]
        return .object([
            (
                "description",
                .string(
                    "SECURE plaintexts (PROTOCOL.md 3.1): frames with their fields, and the bytes they encode to."
                )
            ),
            (
                "vectors",
                .array(
                    cases.map { name, frames in
                        .object([
                            ("name", .string(name)), ("frames", .array(frames.map(VectorFormat.fields(of:)))),
                            ("bytes", hex(Frame.encode(frames))),
                        ])
                    })
            ),
        ])
    }

    // MARK: - Poses

    static func pose() throws -> JSONValue {
        let poses: [(String, Double, Double, Double)] = [
            ("origin, heading 0", 0, 0, 0),
            ("halves round away from zero", 2.25, -2.25, 90.005),
            ("a heading that rounds to 360.00 is 0", 1, 1, 359.995),
            ("the largest heading", -0.04, 0.04, 359.99),
            ("a negative heading is normalized first", 10, 20, -90),
            ("the room's limits (±1 km)", 100_000, -100_000, 180),
            ("the encodable limits", 838_860.7, -838_860.7, 45.5),
            ("sub-millimetre values", 0.04, -0.05, 0.004),
        ]
        var valid: [JSONValue] = []
        for (name, x, y, heading) in poses {
            let bytes = Pose(x: x, y: y, heading: heading).encoded()
            let decoded = try Pose(decoding: bytes)
            valid.append(
                .object([
                    ("name", .string(name)),
                    (
                        "pose",
                        .object([
                            ("x_cm", .number(x)), ("y_cm", .number(y)), ("heading_degrees", .number(heading)),
                        ])
                    ),
                    ("bytes", hex(bytes)), ("decoded", VectorFormat.fields(of: decoded)),
                ]))
        }
        let invalid: [(String, [UInt8])] = [
            ("x is 0x800000", [0x80, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00]),
            ("y is 0x800000", [0x00, 0x00, 0x01, 0x80, 0x00, 0x00, 0x00, 0x00]),
            ("heading 36000", [0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x8C, 0xA0]),
            ("heading 65535", [0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xFF, 0xFF]),
        ]
        return .object([
            (
                "description",
                .string(
                    "The 8-byte pose of RANGING (PROTOCOL.md 3.2). An invalid pose makes its RANGING frame malformed."
                )
            ),
            ("valid", .array(valid)),
            (
                "invalid",
                .array(
                    invalid.map { name, bytes in
                        .object([
                            ("name", .string(name)), ("bytes", hex(bytes)), ("error", .string("malformed")),
                            ("code", .integer(5)),
                        ])
                    })
            ),
        ])
    }

    // MARK: - Handshake and secure channel

    /// Both sides' handshakes of one session, as the vectors run them (the tests read the ids and
    /// keys back from the file).
    static func handshakes(
        sessionID: UInt64, initiatorID: DeviceID, responderID: DeviceID, initiatorStatic: X25519.PrivateKey,
        responderStatic: X25519.PrivateKey
    ) -> (initiator: HandshakeState, responder: HandshakeState) {
        (
            HandshakeRules.handshake(
                role: .initiator, sessionID: sessionID, initiator: initiatorID, responder: responderID,
                staticKey: initiatorStatic),
            HandshakeRules.handshake(
                role: .responder, sessionID: sessionID, initiator: initiatorID, responder: responderID,
                staticKey: responderStatic)
        )
    }

    static func handshake() throws -> JSONValue {
        let initiatorStatic = try X25519.PrivateKey(rawRepresentation: fixed("handshake initiator static"))
        let responderStatic = try X25519.PrivateKey(rawRepresentation: fixed("handshake responder static"))
        let initiatorEphemeral = fixed("handshake initiator ephemeral")
        let responderEphemeral = fixed("handshake responder ephemeral")
        var initiatorRandom = ScriptedRandom(initiatorEphemeral)
        var responderRandom = ScriptedRandom(responderEphemeral)
        var (initiator, responder) = handshakes(
            sessionID: sessionID, initiatorID: initiatorID, responderID: responderID,
            initiatorStatic: initiatorStatic, responderStatic: responderStatic)
        let parameters = HandshakeRules.parameters(Limits()).encoded()
        let message1 = try initiator.writeMessage(payload: [], random: &initiatorRandom)
        _ = try responder.readMessage(message1)
        let message2 = try responder.writeMessage(payload: parameters, random: &responderRandom)
        // Messages altered in flight: the reader's handshake fails and does not advance.
        var tampered2 = message2
        tampered2[40] ^= 0x01  // inside the responder's encrypted static key
        var initiatorCopy = initiator
        let tampered2Fails = (try? initiatorCopy.readMessage(tampered2)) == nil
        _ = try initiator.readMessage(message2)
        let message3 = try initiator.writeMessage(payload: parameters, random: &initiatorRandom)
        var tampered3 = message3
        tampered3[tampered3.count - 1] ^= 0x80  // the payload's tag
        var responderCopy = responder
        let tampered3Fails = (try? responderCopy.readMessage(tampered3)) == nil
        _ = try responder.readMessage(message3)
        guard tampered2Fails && tampered3Fails else {
            throw ProtocolError(.handshakeFailed, "an altered handshake message was read")
        }
        let handshakeInvalid: [JSONValue] = [
            ("ACCEPT's Noise message with a bit of the encrypted static key flipped", 1, tampered2),
            ("CONFIRM's Noise message with a bit of the payload's tag flipped", 2, tampered3),
        ].map { name, index, message in
            .object([
                ("name", .string(name)), ("message_index", .integer(index)), ("noise_message", hex(message)),
                ("error", .string(ProtocolError.Code.handshakeFailed.name)),
                ("code", .integer(Int(ProtocolError.Code.handshakeFailed.wireValue))),
            ])
        }
        let datagrams = [
            Packet.invite(fromInitiator(message1)),
            .accept(fromResponder(message2)),
            .confirm(fromInitiator(message3)),
        ].map { $0.encoded() }
        let initiatorTransport = initiator.split()
        let responderTransport = responder.split()
        guard let sendKey = initiatorTransport.sender.key, let receiveKey = initiatorTransport.receiver.key
        else {
            throw ProtocolError(.handshakeFailed, "split gave no keys")
        }

        // Sealed packets from the real channels: the initiator's first three, the responder's first.
        var initiatorChannel = SecureChannel(
            sessionID: sessionID, peerAddress: PeerAddress(192, 0, 2, 2, port: 50_002),
            transport: initiatorTransport)
        var responderChannel = SecureChannel(
            sessionID: sessionID, peerAddress: PeerAddress(192, 0, 2, 1, port: 50_001),
            transport: responderTransport)
        let pose = Pose(x: 3.5, y: 0, heading: 180)
        let initiatorFrames: [[Frame]] = [
            [
                .token(token), .ident(fixed("handshake ident")), .receipt([]),
                .ranging(RangingFrame(sequence: 1, pose: pose, token: token)),
            ],
            [.ranging(RangingFrame(sequence: 2, pose: pose, token: token))],
            [.close(CloseFrame(code: .declined)), .receipt([.token, .ident])],
        ]
        var secure: [JSONValue] = []
        for (index, frames) in initiatorFrames.enumerated() {
            let datagram = initiatorChannel.seal(frames).bytes
            secure.append(secureVector("initiator's packet \(index)", sender: "initiator", frames, datagram))
        }
        let responderFrames: [Frame] = [
            .token(DiscoveryToken(fixed("handshake responder token", 16))), .closeAck,
        ]
        let responderDatagram = responderChannel.seal(responderFrames).bytes
        secure.append(
            secureVector("responder's packet 0", sender: "responder", responderFrames, responderDatagram))

        // Packets a receiver drops after the header parsed: one whose tag fails, one that authenticates
        // but whose plaintext does not decode.
        var tampered = initiatorChannel.seal([.inRange(true)]).bytes
        tampered[tampered.count - 1] ^= 0x01
        let undecodable: [UInt8] = [0x03, 0x02]
        let header = SecurePacket.header(
            sessionID: sessionID, packetNumber: 4, ciphertextLength: undecodable.count + WireConstants.tagSize
        )
        let sealed = try initiatorTransport.sender.encrypt(nonce: 4, ad: header, plaintext: undecodable)
        let secureInvalid: [JSONValue] = [
            failingSecure("the last byte of the tag flipped", tampered, .authenticationFailed),
            failingSecure(
                "authenticates, but the plaintext is IN_RANGE(2)", header + sealed, .malformed,
                plaintext: undecodable),
        ]

        return .object([
            (
                "description",
                .string(
                    "The Noise_XX handshake of a session for fixed keys (PROTOCOL.md 3.3), the transport keys, "
                        + "sealed SECURE packets (3.1), packets that fail, the replay window, and the handshake "
                        + "parameters.")
            ),
            ("protocol_name", .string(WireConstants.noiseProtocolName)),
            ("session_id", VectorFormat.id(sessionID)),
            ("initiator_id", VectorFormat.id(initiatorID.rawValue)),
            ("responder_id", VectorFormat.id(responderID.rawValue)),
            (
                "prologue",
                hex(
                    HandshakeRules.prologue(
                        sessionID: sessionID, initiator: initiatorID, responder: responderID))
            ),
            ("initiator_static_private", hex(initiatorStatic.rawRepresentation)),
            ("initiator_static_public", hex(initiatorStatic.publicKey.rawRepresentation)),
            ("initiator_ephemeral_private", hex(initiatorEphemeral)),
            ("responder_static_private", hex(responderStatic.rawRepresentation)),
            ("responder_static_public", hex(responderStatic.publicKey.rawRepresentation)),
            ("responder_ephemeral_private", hex(responderEphemeral)),
            (
                "messages",
                .array(
                    (0..<3).map { index in
                        .object([
                            ("datagram_type", .string(["INVITE", "ACCEPT", "CONFIRM"][index])),
                            ("payload", hex(index == 0 ? [] : parameters)),
                            ("noise_message", hex([message1, message2, message3][index])),
                            ("datagram", hex(datagrams[index])),
                        ])
                    })
            ),
            ("handshake_hash", hex(initiator.handshakeHash)),
            ("initiator_to_responder_key", hex(sendKey.rawRepresentation)),
            ("responder_to_initiator_key", hex(receiveKey.rawRepresentation)),
            ("secure_packets", .array(secure)),
            ("messages_invalid", .array(handshakeInvalid)),
            ("secure_invalid", .array(secureInvalid)),
            ("replay_window", replayWindow()),
            ("parameters", handshakeParameters()),
        ])
    }

    private static func secureVector(_ name: String, sender: String, _ frames: [Frame], _ datagram: [UInt8])
        -> JSONValue
    {
        let packetNumber = datagram[12..<20].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        var nonce = [UInt8](repeating: 0, count: 4)
        for shift in stride(from: 0, to: 64, by: 8) {
            nonce.append(UInt8(truncatingIfNeeded: packetNumber >> shift))
        }
        return .object([
            ("name", .string(name)), ("sender", .string(sender)),
            ("packet_number", VectorFormat.id(packetNumber)), ("nonce", hex(nonce)),
            ("associated_data", hex(datagram.prefix(WireConstants.secureHeaderSize))),
            ("frames", .array(frames.map(VectorFormat.fields(of:)))),
            ("plaintext", hex(Frame.encode(frames))),
            ("datagram", hex(datagram)),
        ])
    }

    private static func failingSecure(
        _ name: String, _ datagram: [UInt8], _ code: ProtocolError.Code, plaintext: [UInt8]? = nil
    ) -> JSONValue {
        var members: [(key: String, value: JSONValue)] = [
            ("name", .string(name)), ("sender", .string("initiator")), ("datagram", hex(datagram)),
            ("error", .string(code.name)), ("code", .integer(Int(code.wireValue))),
        ]
        if let plaintext { members.append(("plaintext", hex(plaintext))) }
        return .object(members)
    }

    /// Authenticated packet numbers arriving in this order, each with what the window makes of it.
    private static func replayWindow() -> JSONValue {
        let arrivals: [UInt64] = [0, 2, 1, 2, 200, 72, 73, 72, 71, 199, 300, 172, 173, 0]
        var window = ReplayWindow()
        var results: [JSONValue] = []
        for number in arrivals {
            let outcome: String
            do throws(ProtocolError) {
                try window.check(number)
                window.record(number)
                outcome = "accepted"
            } catch {
                outcome = error.code.name
            }
            results.append(.object([("packet_number", .integer(Int(number))), ("result", .string(outcome))]))
        }
        return .object([
            ("size", .integer(Int(ReplayWindow.size))),
            ("arrivals", .array(results)),
        ])
    }

    private static func handshakeParameters() -> JSONValue {
        let valid = [
            HandshakeRules.parameters(Limits()), HandshakeParameters(maxCardBytes: 1, receiveWindow: 1),
            HandshakeParameters(maxCardBytes: 0xFFFF_FFFF, receiveWindow: 0xFFFF),
        ]
        let invalid: [(String, [UInt8])] = [
            ("6 bytes", [0x01, 0x00, 0x08, 0x00, 0x00, 0x00]),
            ("8 bytes", [0x01, 0x00, 0x08, 0x00, 0x00, 0x00, 0x40, 0x00]),
            ("format version 2", [0x02, 0x00, 0x08, 0x00, 0x00, 0x00, 0x40]),
            ("receive window 0", [0x01, 0x00, 0x08, 0x00, 0x00, 0x00, 0x00]),
            ("empty", []),
        ]
        return .object([
            (
                "valid",
                .array(
                    valid.map { parameters in
                        .object([
                            ("bytes", hex(parameters.encoded())),
                            ("version", .integer(Int(parameters.version))),
                            ("max_card_bytes", .integer(Int(parameters.maxCardBytes))),
                            ("receive_window", .integer(Int(parameters.receiveWindow))),
                        ])
                    })
            ),
            (
                "invalid",
                VectorFormat.failureVectors(invalid) { bytes throws(ProtocolError) in
                    _ = try HandshakeParameters(decoding: bytes)
                }
            ),
        ])
    }

    // MARK: - Recognition

    static func recognition() -> JSONValue {
        let secrets = [fixed("recognition identity A"), fixed("recognition identity B")]
        var identities: [JSONValue] = []
        var idents: [[UInt8]] = []
        for (index, secret) in secrets.enumerated() {
            let identity = DeviceIdentity(secret: secret)
            let nonce = fixed("recognition ident nonce \(index)", 16)
            var random = ScriptedRandom(nonce)
            let ident = Recognition.ident(for: identity, random: &random)
            idents.append(ident)
            identities.append(
                .object([
                    ("identity_secret", hex(secret)), ("resolving_key", hex(identity.resolvingKey)),
                    ("ident_nonce", hex(nonce)), ("ident", hex(ident)),
                ]))
        }
        let keys = secrets.map { DeviceIdentity(secret: $0).resolvingKey }
        let stranger = fixed("recognition stranger key")
        let resolutions: [([UInt8], [[UInt8]])] = [
            (idents[0], [stranger, keys[1], keys[0]]), (idents[1], [keys[0], keys[1]]),
            (idents[0], [stranger, keys[1]]), (fixed("recognition random ident"), keys),
        ]
        let resolution: [JSONValue] = resolutions.map { ident, known in
            let peers = known.map { KnownPeer(resolvingKey: $0, bondKey: fixed("unused bond"), name: "") }
            let match = Recognition.resolve(ident, among: peers).flatMap { peer in
                known.firstIndex(of: peer.resolvingKey)
            }
            return .object([
                ("ident", hex(ident)), ("known_resolving_keys", .array(known.map(hex))),
                ("match", match.map { .integer($0) } ?? .null),
            ])
        }
        let bonds: [JSONValue] = (0..<2).map { index in
            let h = fixed("recognition handshake hash \(index)", 64)
            let initiatorShare = fixed("recognition initiator share \(index)")
            let responderShare = fixed("recognition responder share \(index)")
            let bondKey = Recognition.bondKey(
                initiatorShare: initiatorShare, responderShare: responderShare, handshakeHash: h)
            return .object([
                ("handshake_hash", hex(h)), ("initiator_share", hex(initiatorShare)),
                ("responder_share", hex(responderShare)), ("bond_key", hex(bondKey)),
                (
                    "initiator_proof",
                    hex(
                        Recognition.expectedProof(bondKey: bondKey, handshakeHash: h, senderIsInitiator: true)
                    )
                ),
                (
                    "responder_proof",
                    hex(
                        Recognition.expectedProof(
                            bondKey: bondKey, handshakeHash: h, senderIsInitiator: false))
                ),
            ])
        }
        return .object([
            (
                "description",
                .string(
                    "Recognition of known peers (PROTOCOL.md 6.5): resolving keys and IDENTs, which known key "
                        + "an IDENT resolves to, and the bond key and PROOFs of a pair.")
            ),
            ("identities", .array(identities)), ("resolution", .array(resolution)), ("bonds", .array(bonds)),
        ])
    }

    // MARK: - Verification code

    static func verification() -> JSONValue {
        var cases: [(String, [UInt8], [UInt8], [UInt8])] = (0..<3).map { index in
            (
                "session \(index)", fixed("verification hash \(index)", 64),
                fixed("verification initiator nonce \(index)"), fixed("verification responder nonce \(index)")
            )
        }
        // The first fixed responder nonce that gives a code below 100000, to show the leading zero.
        let h = fixed("verification hash leading zero", 64)
        let initiatorNonce = fixed("verification initiator nonce leading zero")
        var attempt = 0
        while true {
            let nonce = fixed("verification responder nonce leading zero \(attempt)")
            let code = VerificationCode.code(
                handshakeHash: h, initiatorNonce: initiatorNonce, responderNonce: nonce)
            if code.hasPrefix("0") {
                cases.append(("a code with a leading zero", h, initiatorNonce, nonce))
                break
            }
            attempt += 1
        }
        return .object([
            (
                "description",
                .string("The verification code (PROTOCOL.md 6.5): COMMIT from h and Nr, and the six digits.")
            ),
            (
                "vectors",
                .array(
                    cases.map { name, h, initiatorNonce, responderNonce in
                        .object([
                            ("name", .string(name)), ("handshake_hash", hex(h)),
                            ("responder_nonce", hex(responderNonce)),
                            (
                                "commitment",
                                hex(
                                    VerificationCode.commitment(
                                        handshakeHash: h, responderNonce: responderNonce))
                            ),
                            ("initiator_nonce", hex(initiatorNonce)),
                            (
                                "frames",
                                hex(
                                    Frame.encode([
                                        .commit(
                                            VerificationCode.commitment(
                                                handshakeHash: h, responderNonce: responderNonce)),
                                        .nonce(initiatorNonce), .reveal(responderNonce),
                                    ]))
                            ),
                            (
                                "code",
                                .string(
                                    VerificationCode.code(
                                        handshakeHash: h, initiatorNonce: initiatorNonce,
                                        responderNonce: responderNonce))
                            ),
                        ])
                    })
            ),
        ])
    }

    // MARK: - Cookie

    static let bucketLength: UInt64 = 7_750_000_000

    static func cookie() -> JSONValue {
        let cases: [(UInt64, PeerAddress)] = [
            (0, PeerAddress(192, 0, 2, 1, port: 50_001)),
            (7_749_999_999, PeerAddress(192, 0, 2, 1, port: 50_001)),
            (7_750_000_000, PeerAddress(192, 0, 2, 1, port: 50_001)),
            (123_456_789_012, PeerAddress(10, 1, 2, 3, port: 65_535)),
        ]
        let secret = fixed("cookie secret")
        let vectors: [JSONValue] = cases.map { time, source in
            let bucket = time / bucketLength
            let cookie = HalfOpenHandshakes.cookie(
                secret: secret, bucket: bucket, source: source, sessionID: sessionID, sender: initiatorID,
                receiver: responderID)
            let busy = Packet.busy(
                Busy(
                    sessionID: sessionID, sender: responderID, receiver: initiatorID, reason: .retry,
                    cookie: cookie))
            let message = HalfOpenHandshakes.cookieMessage(
                bucket: bucket, source: source, sessionID: sessionID, sender: initiatorID,
                receiver: responderID)
            return .object([
                ("secret", hex(secret)), ("time_ns", .integer(Int(time))), ("bucket", .integer(Int(bucket))),
                ("source_ipv4", .string(String(source.description.split(separator: ":")[0]))),
                ("source_port", .integer(Int(source.port))), ("session_id", VectorFormat.id(sessionID)),
                ("sender_id", VectorFormat.id(initiatorID.rawValue)),
                ("receiver_id", VectorFormat.id(responderID.rawValue)), ("hmac_message", hex(message)),
                ("cookie", hex(cookie)), ("busy_retry_datagram", hex(busy.encoded())),
            ])
        }
        return .object([
            (
                "description",
                .string(
                    "This implementation's cookie (PROTOCOL.md 5, \"Cookies\"), for an INVITE of session_id from "
                        + "sender_id to receiver_id, and the BUSY(retry) that carries it.")
            ),
            ("bucket_length_ns", .integer(Int(bucketLength))),
            ("vectors", .array(vectors)),
        ])
    }

    // MARK: - Card

    static func card() throws -> JSONValue {
        let jpeg: [UInt8] = [0xFF, 0xD8, 0xFF, 0xE0] + fixed("card jpeg", 60)
        let png: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] + fixed("card png", 300)
        let cards: [(String, ProfileCard)] = [
            (
                "the shortest card (11 bytes)",
                try ProfileCard(name: "B", age: 0, sex: .male, neutered: false, size: .small, owner: "m")
            ),
            (
                "keywords, no photo",
                try ProfileCard(
                    name: "Bori", age: 3, sex: .female, neutered: true, size: .small,
                    keywords: ["calm", "loves fetch"], owner: "minji")
            ),
            (
                "a JPEG photo",
                try ProfileCard(
                    name: "Kong", age: 30, sex: .male, neutered: true, size: .large,
                    keywords: ["big", "old"],
                    owner: "jun", photo: try ProfileCard.Photo(data: jpeg))
            ),
            (
                "a PNG photo and five keywords",
                try ProfileCard(
                    name: "Dubu", age: 7, sex: .female, neutered: false, size: .medium,
                    keywords: ["a", "b", "c", "d", "duplicates allowed"], owner: "seo",
                    photo: try ProfileCard.Photo(data: png))
            ),
            (
                "text of several scripts: 40 characters of 3 bytes each, an emoji",
                try ProfileCard(
                    name: String(repeating: "e\u{301}", count: 40), age: 5, sex: .male, neutered: false,
                    size: .medium, keywords: ["🐶", "보리"], owner: "Zoë\u{2028}")
            ),
        ]
        let valid: [JSONValue] = cards.map { name, card in
            .object([
                ("name", .string(name)), ("card", VectorFormat.fields(of: card)),
                ("bytes", hex(card.encoded())),
                ("digest", hex(card.digest)),
            ])
        }
        let base = cards[1].1.encoded()  // 01 04 Bori 03 01 01 00 02 04 calm 0b "loves fetch" 05 minji 00
        func replacing(_ offset: Int, with byte: UInt8) -> [UInt8] {
            var bytes = base
            bytes[offset] = byte
            return bytes
        }
        func named(_ name: [UInt8], owner: [UInt8] = Array("m".utf8)) -> [UInt8] {
            [1, UInt8(name.count)] + name + [3, 1, 1, 0, 0, UInt8(owner.count)] + owner + [0]
        }
        let minimal = cards[0].1.encoded()
        let invalid: [(String, [UInt8])] = [
            ("empty", []),
            ("cut inside the owner", Array(base.dropLast(3))),
            ("a byte after the last field", base + [0]),
            ("version 2", replacing(0, with: 2)),
            ("age 31", replacing(6, with: 31)),
            ("sex 2", replacing(7, with: 2)),
            ("neutered 2", replacing(8, with: 2)),
            ("size 3", replacing(9, with: 3)),
            ("name of 0 bytes", named([])),
            ("name of 161 bytes", named(Array(repeating: 0x61, count: 161))),
            ("name of 41 characters", named(Array(repeating: 0x61, count: 41))),
            (
                "name of 41 characters of 3 bytes each",
                named(Array(String(repeating: "e\u{301}", count: 41).utf8))
            ),
            (
                "name of 1 character in 161 bytes",
                named(Array(("a" + String(repeating: "\u{301}", count: 80)).utf8))
            ),
            ("name that is not UTF-8 (a lone continuation byte)", named([0x42, 0x80])),
            ("name with an overlong encoding", named([0xC0, 0xAF])),
            ("name with a surrogate", named([0xED, 0xA0, 0x80])),
            ("name with a control character", named([0x42, 0x07])),
            ("name with a C1 control character", named([0x42, 0xC2, 0x85])),
            ("name with a zero-width space (format character)", named(Array("B\u{200B}ori".utf8))),
            ("name with a right-to-left override", named(Array("\u{202E}Bori".utf8))),
            ("name padded with the Hangul filler U+3164", named(Array("Max\u{3164}".utf8))),
            ("name with the variation selector U+FE0F", named(Array("B\u{FE0F}ori".utf8))),
            ("name with the braille blank U+2800", named(Array("Bori\u{2800}".utf8))),
            ("name with the halfwidth Hangul filler U+FFA0", named(Array("\u{FFA0}Bori".utf8))),
            ("owner of 41 characters", named([0x42], owner: Array(repeating: 0x62, count: 41))),
            (
                "six keywords",
                [1, 1, 0x42, 3, 1, 1, 0, 6] + Array(repeating: [UInt8]([1, 0x6B]), count: 6).flatMap { $0 }
                    + [1, 0x6D, 0]
            ),
            (
                "a keyword of 25 characters",
                [1, 1, 0x42, 3, 1, 1, 0, 1, 25] + Array(repeating: 0x6B, count: 25) + [1, 0x6D, 0]
            ),
            ("photo kind 3", Array(minimal.dropLast()) + [3]),
            ("photo length 0", Array(minimal.dropLast()) + [1, 0, 0, 0, 0]),
            ("photo length 262145", Array(minimal.dropLast()) + [1, 0, 4, 0, 1]),
            ("JPEG kind with PNG bytes", Array(minimal.dropLast()) + [1, 0, 0, 0, 8] + Array(png.prefix(8))),
            (
                "PNG kind with JPEG bytes",
                Array(minimal.dropLast()) + [2, 0, 0, 0, 8] + Array(jpeg.prefix(8))
            ),
            ("JPEG of 2 bytes", Array(minimal.dropLast()) + [1, 0, 0, 0, 2, 0xFF, 0xD8]),
            ("photo cut short", Array(minimal.dropLast()) + [1, 0, 0, 0, 9] + Array(jpeg.prefix(8))),
        ]
        for (name, bytes) in invalid where (try? ProfileCard(decoding: bytes)) != nil {
            throw CardError(.malformedEncoding, "the invalid card vector \"\(name)\" decodes")
        }
        return .object([
            (
                "description",
                .string(
                    "The card encoding and its BLAKE2b-256 digest (PROTOCOL.md 3.4), and encodings a receiver "
                        + "rejects as card-invalid.")
            ),
            ("valid", .array(valid)),
            (
                "invalid",
                .array(
                    invalid.map { name, bytes in
                        VectorFormat.failureVector(name, bytes, .cardInvalid)
                    })
            ),
        ])
    }

    // MARK: - Invalid datagrams and frames

    static func invalid() -> JSONValue {
        let beacon = Packet.beacon(Beacon(deviceID: initiatorID, port: 47_544, busy: false, sequence: 5))
            .encoded()
        let positioned = Packet.beacon(
            Beacon(
                deviceID: initiatorID, port: 47_544, busy: false, sequence: 5,
                position: PositionHint(x: 1, y: 2))
        ).encoded()
        let query = Packet.query(Query(deviceID: initiatorID, knownAnswers: [responderID])).encoded()
        let invite = Packet.invite(fromInitiator(fixed("invalid noise message 1"))).encoded()
        let accept = Packet.accept(fromResponder(fixed("invalid noise message 2", 48))).encoded()
        let confirm = Packet.confirm(fromInitiator(fixed("invalid noise message 3", 48))).encoded()
        let busy = Packet.busy(
            Busy(sessionID: sessionID, sender: responderID, receiver: initiatorID, reason: .inSession)
        )
        .encoded()
        let secure = Packet.secure(
            SecurePacket(sessionID: sessionID, packetNumber: 3, ciphertext: fixed("invalid ciphertext", 20))
        ).encoded()
        func set(_ bytes: [UInt8], _ offset: Int, _ values: [UInt8]) -> [UInt8] {
            var copy = bytes
            copy.replaceSubrange(offset..<(offset + values.count), with: values)
            return copy
        }
        func header(_ type: UInt8) -> [UInt8] { [0x50, 0x44, WireConstants.version, type] }
        let bareQuery = Packet.query(Query(deviceID: initiatorID, knownAnswers: [])).encoded()
        let probe = Packet.probe(Probe(challenge: 0x0123_4567_89AB_CDEF)).encoded()
        let ids: [UInt8] = Array(fixed("invalid ids", 24))
        let datagrams: [(String, [UInt8])] = [
            ("empty", []),
            ("one byte", [0x50]),
            ("1201 bytes", header(7) + [UInt8](repeating: 0, count: 1_197)),
            ("bad magic", set(beacon, 0, [0x50, 0x58])),
            ("version 1", set(beacon, 2, [0x01])),
            ("version 2 (protocol 2.0, before return routability)", set(beacon, 2, [0x02])),
            ("version 2 PROBE", set(probe, 2, [0x02])),
            ("version 4", set(beacon, 2, [0x04])),
            ("version 1 with a short body", [0x50, 0x44, 0x01, 0x01]),
            ("type 0", header(0) + Array(beacon.dropFirst(4))),
            ("type 10", header(10)),
            ("header only", header(1)),
            ("BEACON cut inside its device id", Array(beacon.prefix(9))),
            ("BEACON without its sequence", Array(beacon.prefix(15))),
            ("BEACON with a trailing byte", beacon + [0]),
            ("BEACON port 0", set(beacon, 12, [0, 0])),
            ("BEACON reserved flag bit 2", set(beacon, 14, [0x04])),
            ("BEACON reserved flag bit 7", set(beacon, 14, [0x80])),
            ("BEACON position flag without a position", set(beacon, 14, [0x02])),
            ("BEACON position cut short", Array(positioned.dropLast(1))),
            ("BEACON position without its flag", set(positioned, 14, [0x00])),
            ("BEACON x 100001 cm", set(positioned, 19, [0x00, 0x01, 0x86, 0xA1])),
            ("BEACON y -100001 cm", set(positioned, 23, [0xFF, 0xFE, 0x79, 0x5F])),
            ("QUERY reserved flag bit 1", set(query, 12, [0x02])),
            ("QUERY lists 2 but carries 1", set(query, 13, [0x02])),
            ("QUERY lists 0 but carries 1", set(query, 13, [0x00])),
            ("QUERY padding not zero", set(bareQuery, bareQuery.count - 1, [0x01])),
            ("QUERY without its padding", Array(bareQuery.prefix(14))),
            ("QUERY with a byte after its padding", bareQuery + [0]),
            ("PROBE cut inside its challenge", Array(probe.prefix(11))),
            ("PROBE with a trailing byte", probe + [0]),
            ("PROBE_ACK without its challenge", header(9)),
            (
                "QUERY with 148 known answers (1198 bytes)",
                header(2) + Array(ids.prefix(8)) + [0x00, 148] + [UInt8](repeating: 0x11, count: 148 * 8)
            ),
            (
                "QUERY x -100001 cm",
                header(2) + Array(ids.prefix(8)) + [0x01, 0xFF, 0xFE, 0x79, 0x5F, 0, 0, 0, 0, 0]
            ),
            ("INVITE padding not zero", set(invite, invite.count - 1, [0x01])),
            ("INVITE without its padding", Array(invite.prefix(invite.count - 66))),
            ("INVITE with a byte after its padding", invite + [0]),
            (
                "INVITE noise length 1155, with its 1155 bytes (1201 in all)",
                header(3) + ids + [UInt8](repeating: 0, count: 16) + [0x04, 0x83]
                    + fixed("invalid long", 1_155)
            ),
            (
                "INVITE noise length 65535, refused as it is read: its bytes could never fit",
                header(3) + ids + [UInt8](repeating: 0, count: 16) + [0xFF, 0xFF]
                    + [UInt8](repeating: 0, count: 98)
            ),
            ("INVITE cut inside its cookie", Array(invite.prefix(36))),
            (
                "ACCEPT noise length 1171, with its 1171 bytes (1201 in all)",
                header(4) + ids + [0x04, 0x93] + fixed("invalid long", 1_171)
            ),
            (
                "ACCEPT noise length 1170 (1200 in all) and one byte more",
                header(4) + ids + [0x04, 0x92] + fixed("invalid long", 1_171)
            ),
            ("ACCEPT noise message cut short", Array(accept.dropLast())),
            ("ACCEPT with a trailing byte", accept + [0]),
            (
                "CONFIRM noise length 1171, with its 1171 bytes (1201 in all)",
                header(5) + ids + [0x04, 0x93] + fixed("invalid long", 1_171)
            ),
            ("CONFIRM with a trailing byte", confirm + [0]),
            ("CONFIRM without its noise length", Array(confirm.prefix(28))),
            ("BUSY reason 0", set(busy, 28, [0])),
            ("BUSY reason 5", set(busy, 28, [5])),
            ("BUSY without its reason", Array(busy.dropLast())),
            ("BUSY(retry) without its cookie", set(busy, 28, [3])),
            ("BUSY(retry) with half a cookie", set(busy, 28, [3]) + [UInt8](repeating: 7, count: 8)),
            ("BUSY(1) with a cookie", busy + [UInt8](repeating: 7, count: 16)),
            (
                "SECURE ciphertext length 15",
                header(7) + Array(secure[4..<20]) + [0, 15] + [UInt8](repeating: 0, count: 15)
            ),
            ("SECURE ciphertext length 0", header(7) + Array(secure[4..<20]) + [0, 0]),
            (
                "SECURE ciphertext length 1179, with its 1179 bytes (1201 in all)",
                header(7) + Array(secure[4..<20]) + [0x04, 0x9B] + fixed("invalid long", 1_179)
            ),
            ("SECURE ciphertext cut short", Array(secure.dropLast())),
            ("SECURE with a trailing byte", secure + [0]),
            ("SECURE without its packet number", Array(secure.prefix(12))),
        ]
        let digest = fixed("invalid digest")
        let frames: [(String, [UInt8])] = [
            ("no frame at all", []),
            ("type 0", [0x00]),
            ("type 17", [0x11]),
            ("type 255 after a valid frame", [0x09, 0xFF]),
            ("TOKEN of 15 bytes", [0x01] + [UInt8](repeating: 1, count: 15)),
            (
                "RANGING cut inside its token",
                [0x02, 0, 0, 0, 1] + [UInt8](repeating: 0, count: 8) + [1, 2, 3]
            ),
            ("RANGING with x 0x800000", [0x02, 0, 0, 0, 1, 0x80, 0, 0, 0, 0, 0, 0, 0] + token.bytes),
            ("RANGING with heading 36000", [0x02, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0x8C, 0xA0] + token.bytes),
            ("IN_RANGE 2", [0x03, 0x02]),
            ("IN_RANGE without its flag", [0x03]),
            ("CONSENT decision 0", [0x04, 0x00]),
            ("CONSENT decision 4", [0x04, 0x04]),
            ("CONSENT(share) of length 0", [0x04, 0x01, 0, 0, 0, 0, 0x04, 0x60] + digest),
            ("CONSENT(share) with chunk size 0", [0x04, 0x01, 0, 0, 0, 1, 0, 0] + digest),
            ("CONSENT(share) with chunk size 1158", [0x04, 0x01, 0, 0, 0, 1, 0x04, 0x86] + digest),
            ("CONSENT(share) of 65536 chunks", [0x04, 0x01, 0, 1, 0, 0, 0, 1] + digest),
            (
                "CONSENT(share) cut inside its digest",
                [0x04, 0x01, 0, 0, 0, 1, 0x04, 0x60] + digest.prefix(31)
            ),
            ("CONSENT(share) without its offer", [0x04, 0x01]),
            ("CARD_CHUNK of length 0", [0x05, 0, 0, 0, 0]),
            ("CARD_CHUNK cut short", [0x05, 0, 1, 0, 4, 0xAA, 0xBB, 0xCC]),
            ("CARD_SACK bitmap length 33", [0x06, 0, 0, 33] + [UInt8](repeating: 0xFF, count: 33)),
            ("CARD_SACK bitmap cut short", [0x06, 0, 0, 2, 0x80]),
            ("CARD_ACK of 31 bytes", [0x07] + digest.prefix(31)),
            ("CLOSE code 5", [0x08, 0x05, 0, 0]),
            ("CLOSE without its error code", [0x08, 0x04, 0]),
            ("RECEIPT bit 7", [0x0A, 0x80]),
            ("RECEIPT 0xFF", [0x0A, 0xFF]),
            ("IDENT of 31 bytes", [0x0B] + digest.prefix(31)),
            ("PROOF of 31 bytes", [0x0C] + digest.prefix(31)),
            ("COMMIT of 31 bytes", [0x0D] + digest.prefix(31)),
            ("NONCE of 31 bytes", [0x0E] + digest.prefix(31)),
            ("REVEAL of 31 bytes", [0x0F] + digest.prefix(31)),
            ("BOND of 63 bytes", [0x10] + digest + digest.prefix(31)),
            ("CONSENT(decline) then a byte, read as an undefined frame", [0x04, 0x03, 0x63]),
        ]
        return .object([
            (
                "description",
                .string(
                    "Datagrams (PROTOCOL.md 3) and SECURE plaintexts (3.1) a receiver drops, each with the error "
                        + "code it counts (section 8).")
            ),
            (
                "datagrams",
                VectorFormat.failureVectors(datagrams) { bytes throws(ProtocolError) in
                    _ = try Packet(datagram: bytes)
                }
            ),
            (
                "frames",
                VectorFormat.failureVectors(frames) { bytes throws(ProtocolError) in
                    _ = try Frame.decodeAll(bytes)
                }
            ),
        ])
    }

    private static func hex(_ bytes: some Sequence<UInt8>) -> JSONValue { VectorFormat.hex(bytes) }
}

/// A random source that hands out fixed bytes in order: the inputs of a vector.
struct ScriptedRandom: RandomSource {
    private var tape: [UInt8]

    init(_ tape: [UInt8]) { self.tape = tape }

    /// Whether every scripted byte was drawn.
    var isExhausted: Bool { tape.isEmpty }

    mutating func fill(_ buffer: UnsafeMutableRawBufferPointer) {
        precondition(tape.count >= buffer.count, "the vector scripted fewer random bytes than were drawn")
        buffer.copyBytes(from: tape.prefix(buffer.count))
        tape.removeFirst(buffer.count)
    }
}
