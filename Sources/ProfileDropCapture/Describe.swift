import ProfileDropCore

/// Human-readable fields of datagrams, inputs, events and cards, for replay timelines.
public enum Describe {
    /// The message type and cleartext fields of a datagram, in wire order.
    public static func datagram(_ bytes: [UInt8]) -> (type: String, fields: [(String, String)]) {
        let packet: Packet
        do {
            packet = try Packet(datagram: bytes)
        } catch {
            return ("INVALID", [("error", error.diagnostic), ("length", String(bytes.count))])
        }
        switch packet {
        case .beacon(let beacon):
            return (
                "BEACON",
                [
                    ("device", beacon.deviceID.description), ("port", String(beacon.port)),
                    ("busy", String(beacon.busy)), ("sequence", String(beacon.sequence)),
                ]
            )
        case .query(let query):
            return (
                "QUERY",
                [
                    ("device", query.deviceID.description),
                    ("known", query.knownAnswers.map(\.description).joined(separator: ",")),
                ]
            )
        case .invite(let message):
            var fields = handshake(message)
            fields.insert(("cookie", message.cookie.isEmpty ? "none" : hex(message.cookie)), at: 3)
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
            var fields = [
                ("session", hex16(busy.sessionID)), ("sender", busy.sender.description),
                ("receiver", busy.receiver.description), ("reason", reason),
            ]
            if busy.reason == .retry { fields.append(("cookie", hex(busy.cookie))) }
            return ("BUSY", fields)
        case .secure(let secure):
            return (
                "SECURE",
                [
                    ("session", hex16(secure.sessionID)), ("pn", String(secure.packetNumber)),
                    ("ciphertext", "\(secure.ciphertext.count)B"),
                ]
            )
        }
    }

    private static func handshake(_ message: HandshakePacket) -> [(String, String)] {
        [
            ("session", hex16(message.sessionID)), ("sender", message.sender.description),
            ("receiver", message.receiver.description), ("noise", "\(message.noiseMessage.count)B"),
        ]
    }

    /// An input's kind and fields.
    public static func input(_ input: CapturedInput) -> (kind: String, fields: [(String, String)]) {
        switch input {
        case .timeout:
            return ("timer", [])
        case .pose(let pose):
            return (
                "pose", [("x", number(pose.x)), ("y", number(pose.y)), ("heading", number(pose.heading))]
            )
        case .decision(let decision):
            return ("decide", [("decision", self.decision(decision))])
        case .datagram(let bytes, let source):
            let (type, fields) = datagram(bytes)
            return ("recv", [("type", type), ("from", source.description)] + fields)
        }
    }

    /// An event's name and fields (the card fields of a received card, decrypted).
    public static func event(_ event: DeviceEvent) -> (name: String, fields: [(String, String)]) {
        switch event {
        case .advertising: return ("advertising", [])
        case .peerFound(let peer): return ("peer-found", [("peer", peer.description)])
        case .peerBusy(let peer): return ("peer-busy", [("peer", peer.description)])
        case .connecting(let peer, let initiator):
            return ("connecting", [("peer", peer.description), ("initiator", String(initiator))])
        case .secured(let peer): return ("secured", [("peer", peer.description)])
        case .verified(let verification):
            return (
                "verified",
                [
                    ("peer", verification.peer.description), ("code", verification.code),
                    ("known", verification.knownPeer?.name ?? "no"),
                    ("interrupted_before", String(verification.interruptedBefore)),
                ]
            )
        case .pairingInterrupted(let peer, let code, let reason):
            return (
                "pairing-interrupted",
                [("peer", peer.description), ("code", code ?? "none"), ("reason", reason.description)]
            )
        case .knownPeerMismatch(let name): return ("known-peer-mismatch", [("name", name)])
        case .peerRemembered(let peer): return ("peer-remembered", [("name", peer.name)])
        case .incompatiblePeer(let peer, let version):
            return ("incompatible-peer", [("peer", peer.description), ("version", String(version))])
        case .ranging(let distance, let bearing):
            return ("ranging", [("distance_cm", number(distance)), ("bearing_deg", number(bearing))])
        case .inRange: return ("in-range", [])
        case .consentRequested(let peer): return ("consent-requested", [("peer", peer.description)])
        case .exchanging(let sent, let total):
            return ("exchanging", [("sent", String(sent)), ("total", String(total))])
        case .cardVerified(let card): return ("card-verified", self.card(card))
        case .cardReceived(let card): return ("card-received", self.card(card))
        case .acknowledged: return ("acknowledged", [])
        case .sessionEnded(let peer, let reason):
            return ("session-ended", [("peer", peer.description), ("reason", reason.description)])
        case .closed(let reason): return ("closed", [("reason", reason.description)])
        case .datagramRejected(let reason):
            return ("rejected", [("code", reason.code.name), ("reason", reason.diagnostic)])
        }
    }

    /// Every field of a card (photo as its format and size).
    public static func card(_ card: ProfileCard) -> [(String, String)] {
        var fields = [
            ("name", card.name), ("age", String(card.age)), ("sex", card.sex.rawValue),
            ("neutered", String(card.neutered)), ("size", card.size.rawValue),
            ("keywords", card.keywords.joined(separator: ",")), ("owner", card.owner),
        ]
        if let photo = card.photo {
            fields.append(("photo", "\(photo.format.rawValue) \(photo.data.count)B"))
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

    /// `share`, `receive-only`, `decline` or `ask-user`.
    public static func policy(_ policy: ConsentPolicy) -> String {
        switch policy {
        case .share: "share"
        case .receiveOnly: "receive-only"
        case .decline: "decline"
        case .askUser: "ask-user"
        }
    }

    /// `key=value` pairs separated by spaces; values with spaces are quoted.
    public static func text(_ fields: [(String, String)]) -> String {
        fields.map { key, value in
            value.contains(" ") || value.isEmpty ? "\(key)=\"\(value)\"" : "\(key)=\(value)"
        }.joined(separator: " ")
    }

    /// One line of text for a timeline entry: `t=1.234567890s alice <what> fields`.
    public static func line(_ entry: ReplayEntry) -> String {
        let prefix = "t=\(seconds(entry.time)) \(entry.device)"
        switch entry.kind {
        case .start(let record, let card):
            var fields: [(String, String)] = [
                ("device", record.deviceID.description), ("address", record.localAddress.description),
                ("consent", policy(record.consent)), ("static_public_key", hexString(record.staticPublicKey)),
            ]
            if let card { fields += self.card(card).map { ("card.\($0.0)", $0.1) } }
            return "\(prefix) start \(text(fields))"
        case .input(let input):
            let (kind, fields) = self.input(input)
            return "\(prefix) <- \(kind) \(text(fields))".trimmedTrailingSpace + framesText(entry.frames)
        case .sent(let datagram):
            let (type, fields) = self.datagram(datagram.bytes)
            return "\(prefix) -> \(type) \(text([("to", datagram.destination.description)] + fields))"
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
            return "TOKEN(\(short(token)))"
        case .ranging(let ranging):
            let pose = ranging.pose
            return "RANGING(seq=\(ranging.sequence) x=\(number(pose.x)) y=\(number(pose.y)) "
                + "heading=\(number(pose.heading)) token=\(short(ranging.token)))"
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

    private static func number(_ value: Double) -> String {
        let rounded = (value * 10).rounded() / 10
        return rounded == rounded.rounded() ? String(Int(rounded)) : String(rounded)
    }
}

extension String {
    fileprivate var trimmedTrailingSpace: String {
        hasSuffix(" ") ? String(dropLast()) : self
    }
}
