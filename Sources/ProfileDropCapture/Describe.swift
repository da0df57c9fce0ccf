import ProfileDropCore

/// Human-readable fields of datagrams, inputs, events and cards, for replay timelines.
public enum Describe {
    /// One field's value: what the text timeline prints, with its type kept for JSON.
    public enum Value: Equatable, Sendable, CustomStringConvertible {
        /// Text, printed as it is.
        case text(String)
        /// A whole number.
        case integer(Int)
        /// A measured or positional quantity; the text shows it to one decimal.
        case number(Double)
        /// A yes/no fact, printed `true` or `false`.
        case flag(Bool)

        /// A whole number; one that does not fit `Int` stays text.
        public static func whole<T: BinaryInteger>(_ value: T) -> Value {
            Int(exactly: value).map(Value.integer) ?? .text(String(value))
        }

        public var description: String {
            switch self {
            case .text(let text): text
            case .integer(let value): String(value)
            case .number(let value): Describe.number(value)
            case .flag(let value): String(value)
            }
        }
    }

    /// A field: its key and value.
    public typealias Field = (key: String, value: Value)

    /// The message type and cleartext fields of a datagram, in wire order.
    public static func datagram(_ bytes: [UInt8]) -> (type: String, fields: [Field]) {
        let packet: Packet
        do {
            packet = try Packet(datagram: bytes)
        } catch {
            return ("INVALID", [("error", .text(error.diagnostic)), ("length", .integer(bytes.count))])
        }
        switch packet {
        case .beacon(let beacon):
            return (
                "BEACON",
                [
                    ("device", .text(beacon.deviceID.description)), ("port", .whole(beacon.port)),
                    ("busy", .flag(beacon.busy)), ("sequence", .whole(beacon.sequence)),
                ]
            )
        case .query(let query):
            return (
                "QUERY",
                [
                    ("device", .text(query.deviceID.description)),
                    ("known", .text(query.knownAnswers.map(\.description).joined(separator: ","))),
                ]
            )
        case .invite(let message):
            var fields = handshake(message)
            fields.insert(("cookie", .text(message.cookie.isEmpty ? "none" : hex(message.cookie))), at: 3)
            return ("INVITE", fields)
        case .accept(let message): return ("ACCEPT", handshake(message))
        case .confirm(let message): return ("CONFIRM", handshake(message))
        case .busy(let busy):
            let reason: String
            switch busy.reason {
            case .inSession: reason = "in-session"
            case .unavailable: reason = "unavailable"
            case .retry: reason = "retry"
            case .staleID: reason = "stale-id"
            }
            var fields: [Field] = [
                ("session", .text(hex16(busy.sessionID))), ("sender", .text(busy.sender.description)),
                ("receiver", .text(busy.receiver.description)), ("reason", .text(reason)),
            ]
            if busy.reason == .retry { fields.append(("cookie", .text(hex(busy.cookie)))) }
            return ("BUSY", fields)
        case .secure(let secure):
            return (
                "SECURE",
                [
                    ("session", .text(hex16(secure.sessionID))), ("pn", .whole(secure.packetNumber)),
                    ("ciphertext", .text("\(secure.ciphertext.count)B")),
                ]
            )
        case .probe(let probe): return ("PROBE", [("challenge", .text(hex16(probe.challenge)))])
        case .probeAck(let probe): return ("PROBE_ACK", [("challenge", .text(hex16(probe.challenge)))])
        }
    }

    private static func handshake(_ message: HandshakePacket) -> [Field] {
        [
            ("session", .text(hex16(message.sessionID))), ("sender", .text(message.sender.description)),
            ("receiver", .text(message.receiver.description)),
            ("noise", .text("\(message.noiseMessage.count)B")),
        ]
    }

    /// An input's kind and fields.
    public static func input(_ input: CapturedInput) -> (kind: String, fields: [Field]) {
        switch input {
        case .timeout:
            return ("timeout", [])
        case .pose(let pose):
            return (
                "pose", [("x", .number(pose.x)), ("y", .number(pose.y)), ("heading", .number(pose.heading))]
            )
        case .decision(let decision):
            return ("decision", [("decision", .text(self.decision(decision)))])
        case .candidateDecision(let decision, let peer):
            return (
                "decision",
                [("decision", .text(self.decision(decision))), ("candidate", .text(peer.description))]
            )
        case .cancel:
            return ("cancel", [])
        case .datagram(let bytes, let source):
            let (type, fields) = datagram(bytes)
            return ("recv", [("type", .text(type)), ("from", .text(source.description))] + fields)
        }
    }

    /// An event's name and fields (the card fields of a received card, decrypted).
    public static func event(_ event: DeviceEvent) -> (name: String, fields: [Field]) {
        switch event {
        case .advertising: return ("advertising", [])
        case .peerFound(let peer): return ("peer-found", [("peer", .text(peer.description))])
        case .peerBusy(let peer): return ("peer-busy", [("peer", .text(peer.description))])
        case .connecting(let peer, let initiator):
            return ("connecting", [("peer", .text(peer.description)), ("initiator", .flag(initiator))])
        case .secured(let peer): return ("secured", [("peer", .text(peer.description))])
        case .verified(let verification):
            return (
                "verified",
                [
                    ("peer", .text(verification.peer.description)), ("code", .text(verification.code)),
                    ("known", .text(verification.knownPeer?.name ?? "no")),
                    ("interrupted_before", .integer(verification.interruptedBefore)),
                ]
            )
        case .pairingInterrupted(let peer, let code, let reason):
            return (
                "pairing-interrupted",
                [
                    ("peer", .text(peer.description)), ("code", .text(code ?? "none")),
                    ("reason", .text(reason.description)),
                ]
            )
        case .knownPeerMismatch(let name): return ("known-peer-mismatch", [("name", .text(name))])
        case .peerRemembered(let peer): return ("peer-remembered", [("name", .text(peer.name))])
        case .incompatiblePeer(let peer, let version):
            return ("incompatible-peer", [("peer", .text(peer.description)), ("version", .whole(version))])
        case .ranging(let distance, let bearing):
            return ("ranging", [("distance_cm", .number(distance)), ("bearing_deg", .number(bearing))])
        case .inRange: return ("in-range", [])
        case .consentRequested(let peer): return ("consent-requested", [("peer", .text(peer.description))])
        case .exchanging(let sent, let total):
            return ("exchanging", [("sent", .integer(sent)), ("total", .integer(total))])
        case .cardVerified(let card, _): return ("card-verified", self.card(card))
        case .cardReceived(let card, _): return ("card-received", self.card(card))
        case .acknowledged: return ("acknowledged", [])
        case .sessionEnded(let peer, let reason):
            return (
                "session-ended", [("peer", .text(peer.description)), ("reason", .text(reason.description))]
            )
        case .closed(let reason): return ("closed", [("reason", .text(reason.description))])
        case .datagramRejected(let reason):
            return ("rejected", [("code", .text(reason.code.name)), ("reason", .text(reason.diagnostic))])
        }
    }

    /// Every field of a card (photo as its format and size).
    public static func card(_ card: ProfileCard) -> [Field] {
        var fields: [Field] = [
            ("name", .text(card.name)), ("age", .whole(card.age)), ("sex", .text(card.sex.rawValue)),
            ("neutered", .flag(card.neutered)), ("size", .text(card.size.rawValue)),
            ("keywords", .text(card.keywords.joined(separator: ","))), ("owner", .text(card.owner)),
        ]
        if let photo = card.photo {
            fields.append(("photo", .text("\(photo.format.rawValue) \(photo.data.count)B")))
        }
        return fields
    }

    /// `share`, `receive-only` or `decline`.
    public static func decision(_ decision: ConsentDecision) -> String {
        switch decision {
        case .share: "share"
        case .receiveOnly: "receive-only"
        case .decline: "decline"
        }
    }

    /// `share`, `receive-only`, `decline`, `ask-user` or `share-with-known-peers`.
    public static func policy(_ policy: ConsentPolicy) -> String {
        switch policy {
        case .share: "share"
        case .receiveOnly: "receive-only"
        case .decline: "decline"
        case .askUser: "ask-user"
        case .shareWithKnownPeers: "share-with-known-peers"
        }
    }

    /// `key=value` pairs separated by spaces; values with spaces are quoted.
    public static func text(_ fields: [Field]) -> String {
        fields.map { key, value in
            let value = value.description
            return value.contains(" ") || value.isEmpty ? "\(key)=\"\(value)\"" : "\(key)=\(value)"
        }.joined(separator: " ")
    }

    /// One line of text for a timeline entry: `t=1.234567890s alice <what> fields`.
    public static func line(_ entry: ReplayEntry) -> String {
        let prefix = "t=\(seconds(entry.time)) \(entry.device)"
        switch entry.kind {
        case .start(let record, let card):
            var fields: [Field] = [
                ("device", .text(record.deviceID.description)),
                ("address", .text(record.localAddress.description)),
                ("consent", .text(policy(record.consent))),
                ("static_public_key", .text(hexString(record.staticPublicKey))),
            ]
            if let card { fields += self.card(card).map { (key: "card.\($0.key)", value: $0.value) } }
            return "\(prefix) start \(text(fields))"
        case .input(let input):
            let (kind, fields) = self.input(input)
            return "\(prefix) <- \(kind) \(text(fields))".trimmedTrailingSpace + framesText(entry.frames)
        case .sent(let datagram):
            let (type, fields) = self.datagram(datagram.bytes)
            return "\(prefix) -> \(type) \(text([("to", .text(datagram.destination.description))] + fields))"
                + framesText(entry.frames)
        case .event(let event):
            let (name, fields) = self.event(event)
            return "\(prefix) ** \(name) \(text(fields))".trimmedTrailingSpace
        }
    }

    /// One decrypted frame, e.g. `RANGING(seq=3 x=0 y=0 heading=0 token=1a2b3c4d…)`.
    public static func frame(_ frame: Frame) -> String {
        switch frame {
        case .token(let token):
            return "TOKEN(\(short(token.bytes)))"
        case .ranging(let ranging):
            let pose = ranging.pose
            return "RANGING(seq=\(ranging.sequence) x=\(number(pose.x)) y=\(number(pose.y)) "
                + "heading=\(number(pose.heading)) token=\(short(ranging.token.bytes)))"
        case .inRange(let inRange):
            return "IN_RANGE(\(inRange ? 1 : 0))"
        case .consent(let decision, let offer):
            guard let offer else { return "CONSENT(\(self.decision(decision)))" }
            return "CONSENT(\(self.decision(decision)) length=\(offer.length) chunk=\(offer.chunkSize) "
                + "digest=\(short(offer.digest)))"
        case .cardChunk(let index, let data):
            return "CARD_CHUNK(index=\(index) length=\(data.count))"
        case .ident(let ident):
            return "IDENT(\(short(ident)))"
        case .proof(let proof):
            return "PROOF(\(short(proof)))"
        case .commit(let commitment):
            return "COMMIT(\(short(commitment)))"
        case .nonce(let nonce):
            return "NONCE(\(short(nonce)))"
        case .reveal(let nonce):
            return "REVEAL(\(short(nonce)))"
        case .bond(let resolvingKey, _):
            return "BOND(resolving=\(short(resolvingKey)) share=…)"
        case .cardSack(let sack):
            return "CARD_SACK(cumulative=\(sack.cumulative) bitmap=\(hex(sack.bitmap)))"
        case .cardAck(let digest):
            return "CARD_ACK(\(short(digest)))"
        case .close(let close):
            let code: String
            switch close.code {
            case .exchanged: code = "exchanged"
            case .declined: code = "declined"
            case .outOfRange: code = "out-of-range"
            case .timeout: code = "timeout"
            case .error: code = "error"
            }
            guard close.code == .error else { return "CLOSE(\(code))" }
            let name = ProtocolError.Code(rawValue: close.errorCode)?.name ?? String(close.errorCode)
            return "CLOSE(error \(name))"
        case .closeAck:
            return "CLOSE_ACK"
        case .receipt(let receipts):
            var held: [String] = []
            if receipts.contains(.token) { held.append("token") }
            if receipts.contains(.consent) { held.append("consent") }
            if receipts.contains(.cardAck) { held.append("card-ack") }
            return "RECEIPT(\(held.joined(separator: ",")))"
        }
    }

    private static func framesText(_ frames: [Frame]?) -> String {
        guard let frames else { return "" }
        return " frames: " + frames.map(frame).joined(separator: " ")
    }

    /// The first 8 bytes in hex and an ellipsis.
    private static func short(_ bytes: [UInt8]) -> String {
        bytes.count <= 8 ? hex(bytes) : hex(Array(bytes.prefix(8))) + "…"
    }

    /// Seconds with nanosecond precision, e.g. `1.250000000s`.
    public static func seconds(_ time: Instant) -> String {
        let fraction = String(time.nanoseconds % 1_000_000_000)
        return
            "\(time.nanoseconds / 1_000_000_000)." + String(repeating: "0", count: 9 - fraction.count)
            + "\(fraction)s"
    }

    /// Lowercase hex.
    public static func hexString(_ bytes: [UInt8]) -> String { hex(bytes) }

    private static func hex16(_ value: UInt64) -> String { DeviceID(rawValue: value).description }

    /// A quantity to one decimal, without a trailing `.0`. A capture's configuration may hold any
    /// finite value, and what a device computes from it may not be finite: those are written as
    /// Swift writes them, never converted to an integer.
    static func number(_ value: Double) -> String {
        guard value.magnitude < 1e15 else { return String(value) }
        let rounded = (value * 10).rounded() / 10
        return rounded == rounded.rounded() ? String(Int(rounded)) : String(rounded)
    }
}

extension String {
    fileprivate var trimmedTrailingSpace: String {
        hasSuffix(" ") ? String(dropLast()) : self
    }
}
