/// The card a sender offers: enough for the receiver to size its reassembly buffer and verify the
/// result.
public struct CardOffer: Equatable, Sendable {
    /// Encoded card length in bytes (at least 1).
    public var length: UInt32
    /// Card bytes per chunk (every chunk but the last is exactly this long).
    public var chunkSize: UInt16
    /// BLAKE2b-256 of the encoded card.
    public var digest: [UInt8]

    /// Creates an offer.
    public init(length: UInt32, chunkSize: UInt16, digest: [UInt8]) {
        self.length = length
        self.chunkSize = chunkSize
        self.digest = digest
    }

    /// How many chunks the card is cut into.
    public var chunkCount: Int {
        let size = Int(chunkSize)
        return size == 0 ? 0 : (Int(length) + size - 1) / size
    }
}

/// A ranging frame: the sender's simulated pose and its discovery token.
public struct RangingFrame: Equatable, Sendable {
    /// Increments per ranging frame, so a receiver can ignore stale reorderings.
    public var sequence: UInt32
    /// Where the sender is and which way it faces.
    public var pose: Pose
    /// The sender's discovery token, which must match its TOKEN frame.
    public var token: DiscoveryToken

    /// Creates a ranging frame.
    public init(sequence: UInt32, pose: Pose, token: DiscoveryToken) {
        self.sequence = sequence
        self.pose = pose
        self.token = token
    }
}

/// A selective acknowledgement of card chunks.
public struct CardSack: Equatable, Sendable {
    /// Every chunk below this index is held.
    public var cumulative: UInt16
    /// Bit `i` (most significant bit of byte `i / 8` first) says chunk `cumulative + i` is held.
    public var bitmap: [UInt8]

    /// Creates an acknowledgement.
    public init(cumulative: UInt16, bitmap: [UInt8]) {
        self.cumulative = cumulative
        self.bitmap = bitmap
    }

    /// The acknowledgement of a receiver holding the chunks for which `holds` is true, among
    /// `count`, every one below `cumulative` among them: a bitmap from `cumulative` on, at most
    /// ``WireConstants/maxSackBitmap`` bytes, without trailing zero bytes.
    public init(count: Int, cumulative: Int, holds: (Int) -> Bool) {
        precondition((0...count).contains(cumulative), "the cumulative point lies within the chunks")
        var bitmap: [UInt8] = []
        bitmap.reserveCapacity(min(WireConstants.maxSackBitmap, (count - cumulative + 7) / 8))
        var index = cumulative
        while index < count && bitmap.count < WireConstants.maxSackBitmap {
            var byte: UInt8 = 0
            for bit in 0..<8 where index + bit < count && holds(index + bit) { byte |= 0x80 >> UInt8(bit) }
            bitmap.append(byte)
            index += 8
        }
        while bitmap.last == 0 { bitmap.removeLast() }
        self.init(cumulative: UInt16(clamping: cumulative), bitmap: bitmap)
    }

    /// Whether the acknowledgement covers chunk `index`.
    public func covers(_ index: Int) -> Bool {
        if index < Int(cumulative) { return true }
        let offset = index - Int(cumulative)
        guard offset / 8 < bitmap.count else { return false }
        return bitmap[offset / 8] & (0x80 >> UInt8(offset % 8)) != 0
    }
}

/// Why a CLOSE frame closes the session (its first byte).
public enum CloseCode: UInt8, CaseIterable, Sendable, Equatable {
    /// Each side holds the other's acknowledgement.
    case exchanged = 0
    /// The sender declined.
    case declined = 1
    /// The sender's ranging window ran out, or its gate saw the peer leave before the exchange
    /// completed.
    case outOfRange = 2
    /// A wait of the sender's ran out.
    case timeout = 3
    /// The sender saw a protocol error; the error code follows.
    case error = 4
}

/// A CLOSE frame.
public struct CloseFrame: Equatable, Sendable {
    /// Why.
    public var code: CloseCode
    /// A ``ProtocolError/Code`` raw value with `.error`, else 0.
    public var errorCode: UInt16

    /// Creates a close frame.
    public init(code: CloseCode, errorCode: UInt16 = 0) {
        self.code = code
        self.errorCode = errorCode
    }
}

/// Which of the peer's one-shot frames the sender holds (RECEIPT flags).
public struct Receipts: OptionSet, Equatable, Sendable {
    /// The flags byte.
    public let rawValue: UInt8
    /// Wraps a flags byte.
    public init(rawValue: UInt8) { self.rawValue = rawValue }
    /// The peer's TOKEN.
    public static let token = Receipts(rawValue: 1)
    /// The peer's CONSENT.
    public static let consent = Receipts(rawValue: 2)
    /// The peer's CARD_ACK.
    public static let cardAck = Receipts(rawValue: 4)
    /// The peer's verification frame we wait for: the initiator holds the responder's REVEAL, the
    /// responder the initiator's NONCE.
    public static let verification = Receipts(rawValue: 8)
    /// The peer's IDENT.
    public static let ident = Receipts(rawValue: 16)
    /// The peer's PROOF.
    public static let proof = Receipts(rawValue: 32)
    /// The peer's BOND.
    public static let bond = Receipts(rawValue: 64)
    /// Every defined bit.
    public static let all: Receipts = [.token, .consent, .cardAck, .verification, .ident, .proof, .bond]
}

/// A frame inside a SECURE packet.
public enum Frame: Equatable, Sendable {
    /// TOKEN: the sender's 16-byte discovery token.
    case token(DiscoveryToken)
    /// RANGING: the sender's pose and token.
    case ranging(RangingFrame)
    /// IN_RANGE: whether the sender's proximity gate has opened (latched once true).
    case inRange(Bool)
    /// CONSENT: the sender's decision; with `.share` the offer of its card.
    case consent(ConsentDecision, CardOffer?)
    /// CARD_CHUNK: bytes `index * chunkSize ..< +data.count` of the sender's card. A slice, of the
    /// card being sent or of the packet it arrived in: a chunk is never copied on its own.
    case cardChunk(index: UInt16, data: ArraySlice<UInt8>)
    /// CARD_SACK: which chunks of the peer's card the sender holds.
    case cardSack(CardSack)
    /// CARD_ACK: the sender verified the peer's card with this digest.
    case cardAck(digest: [UInt8])
    /// CLOSE: the sender is closing the session.
    case close(CloseFrame)
    /// CLOSE_ACK: the sender saw the peer's CLOSE.
    case closeAck
    /// RECEIPT: which of the peer's facts the sender holds.
    case receipt(Receipts)
    /// IDENT: 16 random bytes and their tag under the sender's resolving key.
    case ident([UInt8])
    /// PROOF: the handshake hash's tag under the bond key, or random bytes.
    case proof([UInt8])
    /// COMMIT: the responder's commitment to its verification nonce.
    case commit([UInt8])
    /// NONCE: the initiator's verification nonce.
    case nonce([UInt8])
    /// REVEAL: the responder's verification nonce.
    case reveal([UInt8])
    /// BOND: the sender's resolving key and its share of the new pair's bond key.
    case bond(resolvingKey: [UInt8], share: [UInt8])

    /// The frame type.
    public var type: FrameType {
        switch self {
        case .token: .token
        case .ranging: .ranging
        case .inRange: .inRange
        case .consent: .consent
        case .cardChunk: .cardChunk
        case .cardSack: .cardSack
        case .cardAck: .cardAck
        case .close: .close
        case .closeAck: .closeAck
        case .receipt: .receipt
        case .ident: .ident
        case .proof: .proof
        case .commit: .commit
        case .nonce: .nonce
        case .reveal: .reveal
        case .bond: .bond
        }
    }

    /// Appends the frame to `writer`.
    public func encode(into writer: inout ByteWriter) {
        write(to: &writer)
    }

    /// Appends the frame to `writer`, whichever kind it is (``encode(into:)`` for any sink).
    /// Inlined: called on a frame lent from a span or an array, it would otherwise be copied first
    /// (a retain of its payload), since the writer's memory could alias it.
    @inline(__always)
    func write(to writer: inout some ByteSink) {
        writer.writeInteger(type.rawValue)
        switch self {
        case .token(let token):
            token.encode(into: &writer)
        case .ranging(let ranging):
            writer.writeInteger(ranging.sequence)
            ranging.pose.write(to: &writer)
            ranging.token.encode(into: &writer)
        case .inRange(let inRange):
            writer.writeInteger(UInt8(inRange ? 1 : 0))
        case .consent(let decision, let offer):
            precondition((decision == .share) == (offer != nil), "an offer goes with share only")
            writer.writeInteger(decision.rawValue)
            if let offer {
                precondition(offer.digest.count == WireConstants.digestLength, "digest length")
                writer.writeInteger(offer.length)
                writer.writeInteger(offer.chunkSize)
                writer.writeBytes(offer.digest)
            }
        case .cardChunk(let index, let data):
            precondition(data.count <= Int(UInt16.max), "chunk length")
            writer.writeInteger(index)
            writer.writeInteger(UInt16(data.count))
            writer.writeBytes(data)
        case .cardSack(let sack):
            precondition(sack.bitmap.count <= WireConstants.maxSackBitmap, "bitmap length")
            writer.writeInteger(sack.cumulative)
            writer.writeInteger(UInt8(sack.bitmap.count))
            writer.writeBytes(sack.bitmap)
        case .cardAck(let digest):
            precondition(digest.count == WireConstants.digestLength, "digest length")
            writer.writeBytes(digest)
        case .close(let close):
            writer.writeInteger(close.code.rawValue)
            writer.writeInteger(close.errorCode)
        case .closeAck:
            break
        case .receipt(let receipts):
            writer.writeInteger(receipts.rawValue)
        case .ident(let field), .proof(let field), .commit(let field), .nonce(let field), .reveal(let field):
            precondition(field.count == WireConstants.identityFieldLength, "\(type) length")
            writer.writeBytes(field)
        case .bond(let resolvingKey, let share):
            precondition(
                resolvingKey.count == WireConstants.identityFieldLength
                    && share.count == WireConstants.identityFieldLength, "bond length")
            writer.writeBytes(resolvingKey)
            writer.writeBytes(share)
        }
    }

    /// The encoded size in bytes, without encoding: what ``encode(into:)`` appends.
    public var encodedSize: Int {
        let body: Int
        switch self {
        case .token: body = DiscoveryToken.length
        case .ranging: body = 4 + Pose.encodedLength + DiscoveryToken.length
        case .inRange, .receipt: body = 1
        case .consent(_, let offer): body = 1 + (offer.map { 4 + 2 + $0.digest.count } ?? 0)
        case .cardChunk(_, let data): body = 2 + 2 + data.count
        case .cardSack(let sack): body = 2 + 1 + sack.bitmap.count
        case .cardAck(let digest): body = digest.count
        case .close: body = 1 + 2
        case .closeAck: body = 0
        case .ident(let field), .proof(let field), .commit(let field), .nonce(let field), .reveal(let field):
            body = field.count
        case .bond(let resolvingKey, let share): body = resolvingKey.count + share.count
        }
        return 1 + body
    }

    /// Encodes a packet payload of frames.
    public static func encode(_ frames: [Frame]) -> [UInt8] {
        // Room for a whole packet's frames at once: a chunk frame otherwise grew the buffer three times.
        var writer = ByteWriter(capacity: WireConstants.maxFramePayload)
        for frame in frames { frame.encode(into: &writer) }
        return writer.bytes
    }

    /// Decodes a whole packet payload. An empty payload is malformed (every packet carries a frame).
    /// - Throws: ``ProtocolError`` for any malformed or truncated frame.
    public static func decodeAll(_ payload: [UInt8]) throws(ProtocolError) -> [Frame] {
        var frames: [Frame] = []
        // A packet carries a handful of frames: room for them at once rather than grown one by one.
        frames.reserveCapacity(8)
        try decodeAll(payload, appendingTo: &frames)
        return frames
    }

    /// Decodes a whole packet payload, appending its frames to `frames`.
    /// - Throws: ``ProtocolError`` for any malformed or truncated frame; `frames` may then hold
    ///   the frames before it.
    public static func decodeAll(_ payload: [UInt8], appendingTo frames: inout [Frame]) throws(ProtocolError)
    {
        try decodeAll(payload, prefix: payload.count, appendingTo: &frames)
    }

    /// Decodes the payload held in the first `count` bytes of `buffer`, appending its frames to
    /// `frames`, as ``decodeAll(_:appendingTo:)`` decodes a whole array.
    static func decodeAll(_ buffer: [UInt8], prefix count: Int, appendingTo frames: inout [Frame])
        throws(ProtocolError)
    {
        guard count > 0 else { throw ProtocolError(.malformed, "secure packet without frames") }
        var reader = ByteReader(buffer, prefix: count)
        while reader.readableBytes > 0 {
            frames.append(try reader.parseFrame())
        }
    }
}

extension ByteReader {
    /// Reads one frame; nil when the bytes end before it does (the reader is then unchanged).
    /// - Throws: ``ProtocolError`` when the bytes cannot be a valid frame.
    public mutating func readFrame() throws(ProtocolError) -> Frame? {
        var copy = self
        do {
            let frame = try copy.parseFrame()
            self = copy
            return frame
        } catch  where error.code == .truncated {
            return nil
        }
    }

    /// Parses one frame; a shortage of bytes throws ``ProtocolError/Code/truncated``.
    mutating func parseFrame() throws(ProtocolError) -> Frame {
        let rawType = try require("frame type", as: UInt8.self)
        guard let type = FrameType(rawValue: rawType) else {
            throw ProtocolError(.unknownType, "frame type \(rawType) is not defined")
        }
        switch type {
        case .token:
            return .token(try requireToken("token"))
        case .ranging:
            let sequence = try require("ranging sequence", as: UInt32.self)
            let poseBytes = try requireSlice("ranging pose", count: Pose.encodedLength)
            let pose: Pose
            do {
                pose = try Pose(decoding: poseBytes)
            } catch {
                throw ProtocolError(.malformed, error.diagnostic)
            }
            let token = try requireToken("ranging token")
            return .ranging(RangingFrame(sequence: sequence, pose: pose, token: token))
        case .inRange:
            let flag = try require("in-range flag", as: UInt8.self)
            guard flag <= 1 else { throw ProtocolError(.malformed, "in-range flag \(flag) is not 0 or 1") }
            return .inRange(flag == 1)
        case .consent:
            let raw = try require("consent decision", as: UInt8.self)
            guard let decision = ConsentDecision(rawValue: raw) else {
                throw ProtocolError(.malformed, "consent decision \(raw) is not defined")
            }
            switch decision {
            case .share:
                let length = try require("offer length", as: UInt32.self)
                let chunkSize = try require("offer chunk size", as: UInt16.self)
                let digest = try requireBytes("offer digest", count: WireConstants.digestLength)
                guard length > 0 else { throw ProtocolError(.malformed, "offer of an empty card") }
                guard chunkSize > 0,
                    Int(chunkSize) <= WireConstants.maxFramePayload - WireConstants.chunkFrameOverhead
                else { throw ProtocolError(.malformed, "offer chunk size \(chunkSize) out of range") }
                let offer = CardOffer(length: length, chunkSize: chunkSize, digest: digest)
                guard offer.chunkCount <= Int(UInt16.max) else {
                    throw ProtocolError(.oversized, "offer needs \(offer.chunkCount) chunks, more than 65535")
                }
                return .consent(.share, offer)
            case .receiveOnly, .decline:
                return .consent(decision, nil)
            }
        case .cardChunk:
            let index = try require("chunk index", as: UInt16.self)
            let length = Int(try require("chunk length", as: UInt16.self))
            guard length > 0 else { throw ProtocolError(.malformed, "empty chunk \(index)") }
            return .cardChunk(index: index, data: try requireSlice("chunk data", count: length))
        case .cardSack:
            let cumulative = try require("sack cumulative", as: UInt16.self)
            let length = Int(try require("sack bitmap length", as: UInt8.self))
            guard length <= WireConstants.maxSackBitmap else {
                throw ProtocolError(
                    .oversized, "sack bitmap of \(length) bytes exceeds \(WireConstants.maxSackBitmap)")
            }
            return .cardSack(
                CardSack(cumulative: cumulative, bitmap: try requireBytes("sack bitmap", count: length)))
        case .cardAck:
            return .cardAck(digest: try requireBytes("card-ack digest", count: WireConstants.digestLength))
        case .close:
            let raw = try require("close code", as: UInt8.self)
            guard let code = CloseCode(rawValue: raw) else {
                throw ProtocolError(.malformed, "close code \(raw) is not defined")
            }
            return .close(CloseFrame(code: code, errorCode: try require("close error code", as: UInt16.self)))
        case .closeAck:
            return .closeAck
        case .receipt:
            let raw = try require("receipt flags", as: UInt8.self)
            let receipts = Receipts(rawValue: raw)
            guard Receipts.all.isSuperset(of: receipts) else {
                throw ProtocolError(.malformed, "receipt flags \(raw) has reserved bits")
            }
            return .receipt(receipts)
        case .ident:
            return .ident(try requireBytes("ident", count: WireConstants.identityFieldLength))
        case .proof:
            return .proof(try requireBytes("proof", count: WireConstants.identityFieldLength))
        case .commit:
            return .commit(try requireBytes("commitment", count: WireConstants.identityFieldLength))
        case .nonce:
            return .nonce(try requireBytes("nonce", count: WireConstants.identityFieldLength))
        case .reveal:
            return .reveal(try requireBytes("revealed nonce", count: WireConstants.identityFieldLength))
        case .bond:
            let resolvingKey = try requireBytes(
                "bond resolving key", count: WireConstants.identityFieldLength)
            return .bond(
                resolvingKey: resolvingKey,
                share: try requireBytes("bond share", count: WireConstants.identityFieldLength))
        }
    }
}

/// The payload of INVITE is empty; ACCEPT and CONFIRM carry the sender's parameters inside the
/// Noise payload (encrypted and authenticated by the handshake).
public struct HandshakeParameters: Equatable, Sendable {
    /// Parameter format version.
    public var version: UInt8 = 1
    /// Largest card the sender accepts.
    public var maxCardBytes: UInt32
    /// Card chunks the sender is prepared to receive ahead of its acknowledgements.
    public var receiveWindow: UInt16

    /// Creates parameters.
    public init(maxCardBytes: UInt32, receiveWindow: UInt16) {
        self.maxCardBytes = maxCardBytes
        self.receiveWindow = receiveWindow
    }

    /// The 7-byte encoding.
    public func encoded() -> [UInt8] {
        var writer = ByteWriter(capacity: 7)
        writer.writeInteger(version)
        writer.writeInteger(maxCardBytes)
        writer.writeInteger(receiveWindow)
        return writer.bytes
    }

    /// Decodes parameters from a handshake payload.
    public init(decoding bytes: [UInt8]) throws(ProtocolError) {
        var reader = ByteReader(bytes)
        let version = try reader.require("parameters version", as: UInt8.self)
        guard version == 1 else { throw ProtocolError(.unsupportedVersion, "parameters version \(version)") }
        maxCardBytes = try reader.require("max card bytes", as: UInt32.self)
        receiveWindow = try reader.require("receive window", as: UInt16.self)
        guard receiveWindow > 0 else { throw ProtocolError(.malformed, "receive window 0") }
        try reader.requireEnd("handshake parameters")
    }
}
