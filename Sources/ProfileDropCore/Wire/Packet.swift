import ProfileDropCrypto

/// A multicast announcement: who we are and where to reach us. Cleartext, so it carries no card
/// data and no static key.
public struct Beacon: Equatable, Sendable {
    /// The sender's random per-run id.
    public var deviceID: DeviceID
    /// The sender's unicast UDP port (the address is the datagram's source address).
    public var port: UInt16
    /// Whether the sender is in an exchange session now (bit 0 of the flags byte).
    public var busy: Bool
    /// The sender's beacon sequence number: drawn at random below 2^31 at start and increased by
    /// one for every beacon it sends, so a receiver can tell a replayed beacon from a fresh one
    /// (PROTOCOL.md section 4).
    public var sequence: UInt32
    /// Where the sender says it is (bit 1 of the flags byte says one follows): the simulated stand-in
    /// for the signal strength a radio measures from an advertisement, used to invite near peers
    /// first and far ones not at all (PROTOCOL.md section 5). Nil when the sender gives none.
    public var position: PositionHint?

    /// Creates a beacon.
    public init(deviceID: DeviceID, port: UInt16, busy: Bool, sequence: UInt32, position: PositionHint? = nil)
    {
        self.deviceID = deviceID
        self.port = port
        self.busy = busy
        self.sequence = sequence
        self.position = position
    }
}

/// A position in the room frame, whole centimetres, as BEACON and QUERY carry it (PROTOCOL.md 3).
public struct PositionHint: Equatable, Hashable, Sendable, CustomStringConvertible {
    /// Centimetres along the room's x axis.
    public var x: Int32
    /// Centimetres along the room's y axis.
    public var y: Int32

    /// Creates a hint from whole centimetres.
    public init(x: Int32, y: Int32) {
        self.x = x
        self.y = y
    }

    /// The position of `pose`, rounded to the centimetre (a pose's coordinates are within
    /// ``Pose/roomLimit``, far inside 32 bits).
    public init(_ pose: Pose) {
        let limit = Pose.roomLimit
        x = Int32(min(max(pose.x, -limit), limit).rounded())
        y = Int32(min(max(pose.y, -limit), limit).rounded())
    }

    /// Straight-line distance to `pose`, in centimetres.
    public func distance(to pose: Pose) -> Double {
        let dx = pose.x - Double(x)
        let dy = pose.y - Double(y)
        return (dx * dx + dy * dy).squareRoot()
    }

    /// `(x, y) cm`.
    public var description: String { "(\(x), \(y)) cm" }
}

/// A multicast browse query listing devices the asker already knows, which therefore do not answer.
public struct Query: Equatable, Sendable {
    /// The asker's id.
    public var deviceID: DeviceID
    /// Where the asker says it is (bit 0 of the flags byte says one follows): only devices near it
    /// answer (PROTOCOL.md section 4). Nil when it gives none: every device that is not a known
    /// answer may answer.
    public var position: PositionHint?
    /// Devices that must not answer (known-answer suppression).
    public var knownAnswers: [DeviceID]

    /// The most known answers a QUERY datagram can carry within the datagram size limit (with a
    /// position). A streaming reader refuses more, so that everything it accepts encodes again.
    public static let maxKnownAnswers = (WireConstants.maxDatagramSize - WireConstants.headerSize - 18) / 8

    /// Creates a query.
    public init(deviceID: DeviceID, position: PositionHint? = nil, knownAnswers: [DeviceID]) {
        self.deviceID = deviceID
        self.position = position
        self.knownAnswers = knownAnswers
    }
}

/// A cleartext unicast handshake message (INVITE, ACCEPT or CONFIRM).
public struct HandshakePacket: Equatable, Sendable {
    /// Chosen by the initiator; names the session in every later datagram.
    public var sessionID: UInt64
    /// The sender's device id.
    public var sender: DeviceID
    /// The intended receiver's device id.
    public var receiver: DeviceID
    /// The Noise message.
    public var noiseMessage: [UInt8]
    /// INVITE only: the cookie the invitee's BUSY(retry) handed us, echoed to prove that we receive
    /// at our address (PROTOCOL.md 5); empty for none (sixteen zero bytes on the wire). ACCEPT and
    /// CONFIRM carry no cookie, so it is empty for them.
    public var cookie: [UInt8]

    /// Creates a handshake packet; `cookie` must be empty or ``WireConstants/cookieLength`` bytes,
    /// and empty except in an INVITE.
    public init(
        sessionID: UInt64, sender: DeviceID, receiver: DeviceID, noiseMessage: [UInt8], cookie: [UInt8] = []
    ) {
        self.sessionID = sessionID
        self.sender = sender
        self.receiver = receiver
        self.noiseMessage = noiseMessage
        self.cookie = cookie
    }
}

/// Why an invitation is refused.
public enum BusyReason: UInt8, Sendable, Equatable {
    /// The receiver is in another exchange session.
    case inSession = 1
    /// The receiver has finished or is backing off from the sender.
    case unavailable = 2
    /// The receiver is under load: it keeps no state for the invitation, and asks for the INVITE
    /// again carrying the cookie of this BUSY (PROTOCOL.md 5). Not a refusal.
    case retry = 3
    /// The receiver holds another device id than the invited one: the id the inviter holds for this
    /// address is stale (a departed device, or a replayed BEACON). BUSY then carries the invited id
    /// as its sender, so the inviter can match it; the inviter forgets that id.
    case staleID = 4
}

/// A refusal of an invitation.
public struct Busy: Equatable, Sendable {
    /// The refused session.
    public var sessionID: UInt64
    /// The refusing device.
    public var sender: DeviceID
    /// The device whose invitation is refused.
    public var receiver: DeviceID
    /// Why.
    public var reason: BusyReason
    /// With ``BusyReason/retry`` only: the cookie to echo in the INVITE
    /// (``WireConstants/cookieLength`` bytes); empty with the other reasons.
    public var cookie: [UInt8]

    /// Creates a refusal; `cookie` must be ``WireConstants/cookieLength`` bytes with
    /// ``BusyReason/retry`` and empty otherwise.
    public init(
        sessionID: UInt64, sender: DeviceID, receiver: DeviceID, reason: BusyReason, cookie: [UInt8] = []
    ) {
        self.sessionID = sessionID
        self.sender = sender
        self.receiver = receiver
        self.reason = reason
        self.cookie = cookie
    }
}

/// A return-routability probe (PROBE) or its echo (PROBE_ACK): a challenge drawn by the prober,
/// which only a device receiving at the probed address can echo (PROTOCOL.md 5).
public struct Probe: Equatable, Sendable {
    /// Eight random bytes of the prober's, as a big-endian integer.
    public var challenge: UInt64

    /// Creates a probe or an echo of `challenge`.
    public init(challenge: UInt64) { self.challenge = challenge }
}

/// An encrypted packet: the cleartext header (the AEAD associated data) and the ciphertext.
public struct SecurePacket: Equatable, Sendable {
    /// The session.
    public var sessionID: UInt64
    /// The sender's packet number, also the AEAD nonce.
    public var packetNumber: UInt64
    /// Frames sealed with the sender's transport key, tag included. A parsed packet's ciphertext is
    /// the tail of the datagram it came in, not a copy.
    public var ciphertext: ArraySlice<UInt8>

    /// Creates a packet.
    public init(sessionID: UInt64, packetNumber: UInt64, ciphertext: ArraySlice<UInt8>) {
        self.sessionID = sessionID
        self.packetNumber = packetNumber
        self.ciphertext = ciphertext
    }

    /// Creates a packet with a ciphertext of its own.
    public init(sessionID: UInt64, packetNumber: UInt64, ciphertext: [UInt8]) {
        self.init(sessionID: sessionID, packetNumber: packetNumber, ciphertext: ciphertext[...])
    }

    /// The 22-byte header, authenticated as associated data.
    public var header: [UInt8] {
        SecurePacket.header(
            sessionID: sessionID, packetNumber: packetNumber, ciphertextLength: ciphertext.count)
    }

    /// Writes this packet's 22-byte header into `buffer`, which holds exactly that many bytes.
    func writeHeader(into buffer: UnsafeMutableRawBufferPointer) {
        Self.writeHeader(
            into: buffer, sessionID: sessionID, packetNumber: packetNumber, ciphertextLength: ciphertext.count
        )
    }

    /// The 22-byte header for `sessionID`, `packetNumber` and a ciphertext of `ciphertextLength`.
    public static func header(sessionID: UInt64, packetNumber: UInt64, ciphertextLength: Int) -> [UInt8] {
        [UInt8](byteCount: WireConstants.secureHeaderSize) {
            writeHeader(
                into: $0, sessionID: sessionID, packetNumber: packetNumber, ciphertextLength: ciphertextLength
            )
        }
    }

    /// Writes the 22-byte header into `buffer`, which holds exactly that many bytes: the one encoding
    /// of the header, for a datagram being sealed, a packet being opened and ``header(sessionID:packetNumber:ciphertextLength:)``.
    static func writeHeader(
        into buffer: UnsafeMutableRawBufferPointer, sessionID: UInt64, packetNumber: UInt64,
        ciphertextLength: Int
    ) {
        precondition(buffer.count == WireConstants.secureHeaderSize, "a buffer for the header alone")
        precondition(ciphertextLength <= maxCiphertext, "ciphertext too long")
        buffer[0] = WireConstants.magic.0
        buffer[1] = WireConstants.magic.1
        buffer[2] = WireConstants.version
        buffer[3] = PacketType.secure.rawValue
        buffer.storeBytes(of: sessionID.bigEndian, toByteOffset: 4, as: UInt64.self)
        buffer.storeBytes(of: packetNumber.bigEndian, toByteOffset: 12, as: UInt64.self)
        buffer.storeBytes(of: UInt16(ciphertextLength).bigEndian, toByteOffset: 20, as: UInt16.self)
    }

    /// The longest ciphertext (frames and tag) a SECURE datagram holds.
    public static let maxCiphertext = WireConstants.maxDatagramSize - WireConstants.secureHeaderSize
}

/// Any ProfileDrop datagram.
public enum Packet: Equatable, Sendable {
    /// BEACON (multicast).
    case beacon(Beacon)
    /// QUERY (multicast).
    case query(Query)
    /// INVITE: Noise XX message 1.
    case invite(HandshakePacket)
    /// ACCEPT: Noise XX message 2.
    case accept(HandshakePacket)
    /// CONFIRM: Noise XX message 3.
    case confirm(HandshakePacket)
    /// BUSY: an invitation refused.
    case busy(Busy)
    /// SECURE: encrypted frames.
    case secure(SecurePacket)
    /// PROBE: does the source receive at its address?
    case probe(Probe)
    /// PROBE_ACK: the echo of a PROBE's challenge.
    case probeAck(Probe)

    /// The datagram type.
    public var type: PacketType {
        switch self {
        case .beacon: .beacon
        case .query: .query
        case .invite: .invite
        case .accept: .accept
        case .confirm: .confirm
        case .busy: .busy
        case .secure: .secure
        case .probe: .probe
        case .probeAck: .probeAck
        }
    }

    /// The datagram bytes.
    public func encoded() -> [UInt8] {
        var writer = ByteWriter(capacity: 64)
        writer.writePacketHeader(type)
        switch self {
        case .beacon(let beacon):
            writer.writeInteger(beacon.deviceID.rawValue)
            writer.writeInteger(beacon.port)
            writer.writeInteger(UInt8(beacon.busy ? 1 : 0) | UInt8(beacon.position == nil ? 0 : 2))
            writer.writeInteger(beacon.sequence)
            if let position = beacon.position {
                writer.writeInteger(UInt32(bitPattern: position.x))
                writer.writeInteger(UInt32(bitPattern: position.y))
            }
        case .query(let query):
            precondition(query.knownAnswers.count <= Query.maxKnownAnswers, "too many known answers")
            writer.writeInteger(query.deviceID.rawValue)
            writer.writeInteger(UInt8(query.position == nil ? 0 : 1))
            if let position = query.position {
                writer.writeInteger(UInt32(bitPattern: position.x))
                writer.writeInteger(UInt32(bitPattern: position.y))
            }
            writer.writeInteger(UInt8(query.knownAnswers.count))
            for known in query.knownAnswers { writer.writeInteger(known.rawValue) }
            writer.writeBytes(
                repeatElement(
                    0,
                    count: Packet.queryPadding(
                        position: query.position != nil, known: query.knownAnswers.count)))
        case .invite(let message):
            precondition(message.noiseMessage.count <= Packet.maxInviteNoiseMessage, "Noise message too long")
            precondition(
                message.cookie.isEmpty || message.cookie.count == WireConstants.cookieLength,
                "a cookie is \(WireConstants.cookieLength) bytes")
            writer.writeInteger(message.sessionID)
            writer.writeInteger(message.sender.rawValue)
            writer.writeInteger(message.receiver.rawValue)
            writer.writeBytes(
                message.cookie.isEmpty
                    ? Array(filling: 0, count: WireConstants.cookieLength) : message.cookie)
            writer.writeInteger(UInt16(message.noiseMessage.count))
            writer.writeBytes(message.noiseMessage)
            writer.writeBytes(
                repeatElement(0, count: Packet.invitePadding(noiseLength: message.noiseMessage.count)))
        case .accept(let message), .confirm(let message):
            precondition(message.noiseMessage.count <= Packet.maxNoiseMessage, "Noise message too long")
            precondition(message.cookie.isEmpty, "only INVITE carries a cookie")
            writer.writeInteger(message.sessionID)
            writer.writeInteger(message.sender.rawValue)
            writer.writeInteger(message.receiver.rawValue)
            writer.writeInteger(UInt16(message.noiseMessage.count))
            writer.writeBytes(message.noiseMessage)
        case .busy(let busy):
            precondition(
                busy.cookie.count == (busy.reason == .retry ? WireConstants.cookieLength : 0),
                "BUSY(retry), and only it, carries a cookie")
            writer.writeInteger(busy.sessionID)
            writer.writeInteger(busy.sender.rawValue)
            writer.writeInteger(busy.receiver.rawValue)
            writer.writeInteger(busy.reason.rawValue)
            writer.writeBytes(busy.cookie)
        case .secure(let packet):
            writer.writeBytes(packet.header.dropFirst(WireConstants.headerSize))
            writer.writeBytes(packet.ciphertext)
        case .probe(let probe), .probeAck(let probe):
            writer.writeInteger(probe.challenge)
        }
        precondition(writer.bytes.count <= WireConstants.maxDatagramSize, "datagram over the size limit")
        return writer.bytes
    }

    /// Longest Noise message that fits an ACCEPT or CONFIRM datagram.
    public static let maxNoiseMessage = WireConstants.maxDatagramSize - WireConstants.headerSize - 26

    /// Longest Noise message that fits an INVITE, whose cookie takes room.
    public static let maxInviteNoiseMessage = maxNoiseMessage - WireConstants.cookieLength

    /// INVITE fields before the Noise message: header, session id, sender and receiver ids, cookie
    /// and Noise length.
    static let inviteFixedSize = WireConstants.headerSize + 26 + WireConstants.cookieLength

    /// Zero bytes after an INVITE's Noise message of `noiseLength` bytes, which bring the datagram
    /// up to ``WireConstants/inviteMinimumSize`` (none when it is already that long).
    public static func invitePadding(noiseLength: Int) -> Int {
        max(0, WireConstants.inviteMinimumSize - inviteFixedSize - noiseLength)
    }

    /// Zero bytes after a QUERY's known answers, which bring the datagram up to
    /// ``WireConstants/queryMinimumSize`` (none when it is already that long).
    public static func queryPadding(position: Bool, known: Int) -> Int {
        max(
            0,
            WireConstants.queryMinimumSize - (WireConstants.headerSize + 10 + (position ? 8 : 0) + 8 * known))
    }

    /// Parses one whole datagram.
    /// - Throws: ``ProtocolError`` for anything but exactly one well-formed packet.
    public init(datagram: [UInt8]) throws(ProtocolError) {
        guard datagram.count <= WireConstants.maxDatagramSize else {
            throw ProtocolError(
                .oversized, "datagram of \(datagram.count) bytes exceeds \(WireConstants.maxDatagramSize)")
        }
        var reader = ByteReader(datagram)
        self = try reader.parsePacket()
        try reader.requireEnd("\(self.type) datagram")
    }
}

extension ByteWriter {
    /// Magic, version and `type`.
    mutating func writePacketHeader(_ type: PacketType) {
        writeInteger(WireConstants.magic.0)
        writeInteger(WireConstants.magic.1)
        writeInteger(WireConstants.version)
        writeInteger(type.rawValue)
    }
}

extension ByteReader {
    /// Reads one packet; nil when the bytes end before it does (the reader is then unchanged).
    /// - Throws: ``ProtocolError`` when the bytes cannot be the start of a valid packet.
    public mutating func readPacket() throws(ProtocolError) -> Packet? {
        var copy = self
        do {
            let packet = try copy.parsePacket()
            self = copy
            return packet
        } catch  where error.code == .truncated {
            return nil
        }
    }

    private mutating func parseHandshake(invite: Bool) throws(ProtocolError) -> HandshakePacket {
        let sessionID = try require("session id", as: UInt64.self)
        let sender = try require("sender id", as: UInt64.self)
        let receiver = try require("receiver id", as: UInt64.self)
        var cookie: [UInt8] = []
        if invite {
            cookie = try requireBytes("cookie", count: WireConstants.cookieLength)
            // Sixteen zero bytes: no cookie.
            if cookie.allSatisfy({ $0 == 0 }) { cookie = [] }
        }
        let length = Int(try require("noise length", as: UInt16.self))
        let limit = invite ? Packet.maxInviteNoiseMessage : Packet.maxNoiseMessage
        guard length <= limit else {
            throw ProtocolError(.oversized, "noise message length \(length) exceeds \(limit)")
        }
        let message = try requireBytes("noise message", count: length)
        if invite {
            let padding = try requireBytes("INVITE padding", count: Packet.invitePadding(noiseLength: length))
            guard padding.allSatisfy({ $0 == 0 }) else {
                throw ProtocolError(.malformed, "INVITE padding is not zero")
            }
        }
        return HandshakePacket(
            sessionID: sessionID, sender: DeviceID(rawValue: sender), receiver: DeviceID(rawValue: receiver),
            noiseMessage: message, cookie: cookie)
    }

    /// A position hint: x and y, signed centimetres, each within ``Pose/roomLimit``.
    private mutating func parsePosition(_ what: String) throws(ProtocolError) -> PositionHint {
        let x = Int32(bitPattern: try require("\(what) position x", as: UInt32.self))
        let y = Int32(bitPattern: try require("\(what) position y", as: UInt32.self))
        let limit = Int32(Pose.roomLimit)
        guard (-limit...limit).contains(x), (-limit...limit).contains(y) else {
            throw ProtocolError(
                .malformed, "\(what) position (\(x), \(y)) cm is outside the room (±\(limit))")
        }
        return PositionHint(x: x, y: y)
    }

    /// Parses one packet; a shortage of bytes throws ``ProtocolError/Code/truncated``.
    mutating func parsePacket() throws(ProtocolError) -> Packet {
        let magic0 = try require("magic", as: UInt8.self)
        let magic1 = try require("magic", as: UInt8.self)
        guard magic0 == WireConstants.magic.0, magic1 == WireConstants.magic.1 else {
            throw ProtocolError(.badMagic, "datagram does not start with \"PD\"")
        }
        let version = try require("version", as: UInt8.self)
        guard version == WireConstants.version else {
            throw ProtocolError(
                .unsupportedVersion, "version \(version), this device speaks \(WireConstants.version)")
        }
        let rawType = try require("type", as: UInt8.self)
        guard let type = PacketType(rawValue: rawType) else {
            throw ProtocolError(.unknownType, "datagram type \(rawType) is not defined")
        }
        switch type {
        case .beacon:
            let id = try require("beacon device id", as: UInt64.self)
            let port = try require("beacon port", as: UInt16.self)
            let flags = try require("beacon flags", as: UInt8.self)
            guard flags & 0xFC == 0 else {
                throw ProtocolError(.malformed, "beacon flags \(flags) has reserved bits")
            }
            guard port != 0 else { throw ProtocolError(.malformed, "beacon port 0") }
            let sequence = try require("beacon sequence", as: UInt32.self)
            let position = flags & 2 == 0 ? nil : try parsePosition("beacon")
            return .beacon(
                Beacon(
                    deviceID: DeviceID(rawValue: id), port: port, busy: flags & 1 == 1, sequence: sequence,
                    position: position))
        case .query:
            let id = try require("query device id", as: UInt64.self)
            let flags = try require("query flags", as: UInt8.self)
            guard flags & 0xFE == 0 else {
                throw ProtocolError(.malformed, "query flags \(flags) has reserved bits")
            }
            let position = flags & 1 == 0 ? nil : try parsePosition("query")
            let count = try require("query known-answer count", as: UInt8.self)
            guard count <= Query.maxKnownAnswers else {
                throw ProtocolError(
                    .oversized,
                    "query lists \(count) known answers; a datagram holds at most \(Query.maxKnownAnswers)")
            }
            var known: [DeviceID] = []
            known.reserveCapacity(Int(count))
            for _ in 0..<count {
                known.append(DeviceID(rawValue: try require("query known answer", as: UInt64.self)))
            }
            // Read in place: every device in a room reads every QUERY.
            let padding = try requireSlice(
                "QUERY padding", count: Packet.queryPadding(position: position != nil, known: Int(count)))
            guard padding.allSatisfy({ $0 == 0 }) else {
                throw ProtocolError(.malformed, "QUERY padding is not zero")
            }
            return .query(Query(deviceID: DeviceID(rawValue: id), position: position, knownAnswers: known))
        case .invite: return .invite(try parseHandshake(invite: true))
        case .accept: return .accept(try parseHandshake(invite: false))
        case .confirm: return .confirm(try parseHandshake(invite: false))
        case .busy:
            let sessionID = try require("session id", as: UInt64.self)
            let sender = try require("sender id", as: UInt64.self)
            let receiver = try require("receiver id", as: UInt64.self)
            let rawReason = try require("busy reason", as: UInt8.self)
            guard let reason = BusyReason(rawValue: rawReason) else {
                throw ProtocolError(.malformed, "busy reason \(rawReason) is not defined")
            }
            let cookie = reason == .retry ? try requireBytes("cookie", count: WireConstants.cookieLength) : []
            return .busy(
                Busy(
                    sessionID: sessionID, sender: DeviceID(rawValue: sender),
                    receiver: DeviceID(rawValue: receiver),
                    reason: reason, cookie: cookie))
        case .secure:
            let sessionID = try require("session id", as: UInt64.self)
            let packetNumber = try require("packet number", as: UInt64.self)
            let length = Int(try require("ciphertext length", as: UInt16.self))
            guard length <= SecurePacket.maxCiphertext else {
                throw ProtocolError(
                    .oversized, "ciphertext length \(length) exceeds \(SecurePacket.maxCiphertext)")
            }
            guard length >= WireConstants.tagSize else {
                throw ProtocolError(.malformed, "ciphertext length \(length) cannot hold a 16-byte tag")
            }
            let ciphertext = try requireSlice("ciphertext", count: length)
            return .secure(
                SecurePacket(sessionID: sessionID, packetNumber: packetNumber, ciphertext: ciphertext))
        case .probe: return .probe(Probe(challenge: try require("probe challenge", as: UInt64.self)))
        case .probeAck: return .probeAck(Probe(challenge: try require("probe challenge", as: UInt64.self)))
        }
    }
}
