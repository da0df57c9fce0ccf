import ProfileDropCrypto

/// Which side of a handshake this party plays.
public enum NoiseRole: Sendable, Equatable {
    /// Sends the first handshake message.
    case initiator
    /// Receives the first handshake message.
    case responder
}

/// The transport phase after a completed handshake: one cipher per direction, chosen by role.
public struct NoiseTransport: Sendable {
    /// Encrypts what this party sends.
    public var sender: CipherState
    /// Decrypts what this party receives. After a one-way pattern only the initiator's sender and the
    /// responder's receiver carry messages.
    public var receiver: CipherState
    /// The final handshake hash, for channel binding.
    public let handshakeHash: [UInt8]
}

/// Noise's HandshakeState (spec section 5.3), driven by a ``HandshakePattern`` table.
///
/// Sans-IO: it turns payloads into handshake messages and back, and draws ephemeral keys from the
/// `RandomSource` passed to ``writeMessage(payload:random:)``. Calling ``writeMessage(payload:random:)``
/// or ``readMessage(_:)`` out of turn or after completion is a precondition failure; check
/// ``isMyTurnToWrite`` and ``isComplete`` before handing a peer's message over. A message that fails
/// to read leaves the state exactly as it was, so a forged or corrupted datagram can be dropped
/// while the genuine one is still awaited.
public struct HandshakeState: Sendable {
    /// The protocol this project speaks.
    public static let xx = "Noise_XX_25519_ChaChaPoly_BLAKE2b"

    private static let parsedXX: NoiseProtocolName = {
        guard let parsed = try? NoiseProtocolName(parsing: xx) else {
            preconditionFailure("XX is in the table")
        }
        return parsed
    }()

    /// The parsed protocol name.
    public let protocolName: NoiseProtocolName
    /// This party's role.
    public let role: NoiseRole

    private var symmetric: SymmetricState
    private let localStatic: X25519.PrivateKey?
    private var localEphemeral: X25519.PrivateKey?
    private var fixedEphemeral: X25519.PrivateKey?
    private let presharedKeys: [[UInt8]]
    private var presharedKeysUsed = 0
    private var messageIndex = 0

    /// The peer's static key: given up front when a pre-message carries it, otherwise learnt from an
    /// `s` token. Callers must authenticate it themselves once the handshake completes.
    public private(set) var remoteStaticKey: X25519.PublicKey?
    /// The peer's ephemeral key, once received.
    public private(set) var remoteEphemeralKey: X25519.PublicKey?

    /// Initialize (spec section 5.3): parses the protocol name, mixes in the prologue and the
    /// pre-message keys.
    ///
    /// - Parameters:
    ///   - staticKey: required when the pattern sends or pre-shares this party's static key.
    ///   - remoteStaticKey: required when the pattern pre-shares the peer's static key; otherwise
    ///     ignored, since the handshake will carry it.
    ///   - presharedKeys: one 32-byte key per `psk` token, in order.
    ///   - ephemeralKey: a fixed ephemeral key for test vectors; generated when nil.
    /// - Throws: protocol-name errors from ``NoiseProtocolName``, `.missingKey` or `.invalidKey`.
    public init(
        protocolName: String, role: NoiseRole, prologue: [UInt8], staticKey: X25519.PrivateKey?,
        remoteStaticKey: X25519.PublicKey?, presharedKeys: [[UInt8]] = [],
        ephemeralKey: X25519.PrivateKey? = nil
    ) throws {
        // The project's own protocol is parsed once; string splitting is a visible cost per handshake.
        let parsed = protocolName == Self.xx ? Self.parsedXX : try NoiseProtocolName(parsing: protocolName)
        let pattern = parsed.pattern
        let ownPreMessage = role == .initiator ? pattern.initiatorPreMessage : pattern.responderPreMessage
        let peerPreMessage = role == .initiator ? pattern.responderPreMessage : pattern.initiatorPreMessage
        let sendsStatic = pattern.messages.indices.contains { index in
            (index % 2 == 0) == (role == .initiator) && pattern.messages[index].contains(.s)
        }
        if staticKey == nil && (ownPreMessage.contains(.s) || sendsStatic) {
            throw NoiseError(.missingKey, "\(pattern.name) needs this party's static key")
        }
        if remoteStaticKey == nil && peerPreMessage.contains(.s) {
            throw NoiseError(.missingKey, "\(pattern.name) needs the peer's static key in advance")
        }
        let needed = pattern.presharedKeyCount
        guard presharedKeys.count == needed else {
            throw NoiseError(
                presharedKeys.count < needed ? .missingKey : .invalidKey,
                "\(pattern.name) uses \(needed) pre-shared keys but \(presharedKeys.count) were given")
        }
        if let bad = presharedKeys.firstIndex(where: { $0.count != 32 }) {
            throw NoiseError(
                .invalidKey, "pre-shared key \(bad) has \(presharedKeys[bad].count) bytes instead of 32")
        }

        self.protocolName = parsed
        self.role = role
        self.localStatic = staticKey
        self.fixedEphemeral = ephemeralKey
        self.presharedKeys = presharedKeys
        self.remoteStaticKey = peerPreMessage.contains(.s) ? remoteStaticKey : nil
        symmetric = SymmetricState(protocolName: protocolName)
        symmetric.mixHash(prologue)
        // The initiator's pre-message is hashed first, whichever side we are.
        let initiatorStatic = role == .initiator ? staticKey?.publicKey : self.remoteStaticKey
        let responderStatic = role == .initiator ? self.remoteStaticKey : staticKey?.publicKey
        if pattern.initiatorPreMessage.contains(.s), let key = initiatorStatic {
            symmetric.mixHash(key.rawRepresentation)
        }
        if pattern.responderPreMessage.contains(.s), let key = responderStatic {
            symmetric.mixHash(key.rawRepresentation)
        }
    }

    /// The handshake pattern being run.
    public var pattern: HandshakePattern { protocolName.pattern }

    /// Whether every handshake message has been written or read.
    public var isComplete: Bool { messageIndex == pattern.messages.count }

    /// Whether the next handshake message is the initiator's to send.
    public var isInitiatorTurn: Bool { messageIndex % 2 == 0 }

    /// Whether this party sends the next handshake message (false once complete).
    public var isMyTurnToWrite: Bool { !isComplete && isInitiatorTurn == (role == .initiator) }

    /// The handshake hash `h` so far; after completion, the channel-binding value.
    public var handshakeHash: [UInt8] { symmetric.handshakeHash }

    /// WriteMessage: processes the next message's tokens and appends the encrypted `payload`.
    /// - Throws: `.weakPublicKey` for a small-order peer key, `.messageTooLong` past 65535 bytes.
    ///   The state is unchanged when it throws.
    public mutating func writeMessage<Random: RandomSource>(
        payload: [UInt8], random: inout Random
    ) throws -> [UInt8] {
        precondition(!isComplete, "writeMessage after the handshake completed")
        precondition(isMyTurnToWrite, "writeMessage when the peer is due to send")
        var next = self
        let message = try next.write(payload: payload, random: &random)
        self = next
        return message
    }

    /// ReadMessage: processes the peer's next message and returns its decrypted payload.
    /// - Throws: ``NoiseError`` for a malformed, forged or oversized message; the state is unchanged.
    public mutating func readMessage(_ message: [UInt8]) throws -> [UInt8] {
        precondition(!isComplete, "readMessage after the handshake completed")
        precondition(!isMyTurnToWrite, "readMessage when this party is due to send")
        var next = self
        let payload = try next.read(message)
        self = next
        return payload
    }

    /// Split: the transport cipher states, the initiator sending with the first.
    public func split() -> NoiseTransport {
        precondition(isComplete, "split before the handshake completed")
        let (initiatorToResponder, responderToInitiator) = symmetric.split()
        switch role {
        case .initiator:
            return NoiseTransport(
                sender: initiatorToResponder, receiver: responderToInitiator, handshakeHash: handshakeHash)
        case .responder:
            return NoiseTransport(
                sender: responderToInitiator, receiver: initiatorToResponder, handshakeHash: handshakeHash)
        }
    }

    private mutating func write<Random: RandomSource>(payload: [UInt8], random: inout Random) throws
        -> [UInt8]
    {
        let pattern = self.pattern
        var message: [UInt8] = []
        message.reserveCapacity(payload.count + 2 * X25519.keyLength + 3 * ChaChaPoly.tagLength)
        for token in pattern.messages[messageIndex] {
            switch token {
            case .e:
                let ephemeral = fixedEphemeral ?? X25519.PrivateKey(using: &random)
                fixedEphemeral = nil
                localEphemeral = ephemeral
                message += ephemeral.publicKey.rawRepresentation
                mixEphemeral(ephemeral.publicKey)
            case .s:
                guard let localStatic else {
                    preconditionFailure("init checked that a sending party has its static key")
                }
                message += try symmetric.encryptAndHash(localStatic.publicKey.rawRepresentation)
            case .ee, .es, .se, .ss:
                try mixDiffieHellman(token)
            case .psk:
                mixNextPresharedKey()
            }
        }
        message += try symmetric.encryptAndHash(payload)
        guard message.count <= noiseMaxMessageLength else {
            throw NoiseError(
                .messageTooLong, "handshake message of \(message.count) bytes exceeds the 65535-byte limit")
        }
        messageIndex += 1
        return message
    }

    private mutating func read(_ message: [UInt8]) throws -> [UInt8] {
        guard message.count <= noiseMaxMessageLength else {
            throw NoiseError(
                .messageTooLong, "handshake message of \(message.count) bytes exceeds the 65535-byte limit")
        }
        let pattern = self.pattern
        var offset = 0
        for token in pattern.messages[messageIndex] {
            switch token {
            case .e:
                let field = try take(X25519.keyLength, from: message, at: &offset, what: "ephemeral key")
                let ephemeral = try publicKey(Array(field))
                remoteEphemeralKey = ephemeral
                mixEphemeral(ephemeral)
            case .s:
                let length = X25519.keyLength + (symmetric.hasKey ? ChaChaPoly.tagLength : 0)
                let field = try take(length, from: message, at: &offset, what: "static key")
                remoteStaticKey = try publicKey(try symmetric.decryptAndHash(field))
            case .ee, .es, .se, .ss:
                try mixDiffieHellman(token)
            case .psk:
                mixNextPresharedKey()
            }
        }
        let payload = try symmetric.decryptAndHash(message[offset...])
        messageIndex += 1
        return payload
    }

    /// The `e` token: MixHash, and in psk mode also MixKey (spec section 9.2).
    private mutating func mixEphemeral(_ key: X25519.PublicKey) {
        symmetric.mixHash(key.rawRepresentation)
        if pattern.usesPresharedKeys {
            symmetric.mixKey(key.rawRepresentation)
        }
    }

    private mutating func mixNextPresharedKey() {
        // init checked that there is one key per psk token.
        symmetric.mixKeyAndHash(presharedKeys[presharedKeysUsed])
        presharedKeysUsed += 1
    }

    /// The DH tokens. `es` pairs the initiator's ephemeral with the responder's static key and `se`
    /// the other way round, so which local key is used depends on the role.
    private mutating func mixDiffieHellman(_ token: NoiseToken) throws {
        let isInitiator = role == .initiator
        let local: X25519.PrivateKey?
        let remote: X25519.PublicKey?
        switch token {
        case .ee:
            (local, remote) = (localEphemeral, remoteEphemeralKey)
        case .es:
            (local, remote) =
                isInitiator ? (localEphemeral, remoteStaticKey) : (localStatic, remoteEphemeralKey)
        case .se:
            (local, remote) =
                isInitiator ? (localStatic, remoteEphemeralKey) : (localEphemeral, remoteStaticKey)
        case .ss:
            (local, remote) = (localStatic, remoteStaticKey)
        case .e, .s, .psk:
            preconditionFailure("\(token) is not a DH token")
        }
        guard let local, let remote else {
            // Patterns send every key before a DH uses it; a missing one is a table error.
            preconditionFailure("\(pattern.name): key for \(token) not available")
        }
        let shared: SecureBytes
        do {
            shared = try local.sharedSecret(with: remote)
        } catch {
            throw NoiseError(.weakPublicKey, "\(token): the peer's public key has small order")
        }
        symmetric.mixKey(shared)
    }

    private func take(
        _ count: Int, from message: [UInt8], at offset: inout Int, what: String
    ) throws -> ArraySlice<UInt8> {
        guard message.count - offset >= count else {
            throw NoiseError(
                .messageTooShort,
                "handshake message of \(message.count) bytes ends before its \(what) "
                    + "(\(count) bytes at offset \(offset))")
        }
        defer { offset += count }
        return message[offset..<(offset + count)]
    }

    private func publicKey(_ bytes: [UInt8]) throws -> X25519.PublicKey {
        do {
            return try X25519.PublicKey(rawRepresentation: bytes)
        } catch {
            throw NoiseError(.invalidKey, "public key of \(bytes.count) bytes instead of 32")
        }
    }
}
