/// One token of a handshake pattern (spec section 7.1).
public enum NoiseToken: String, Sendable, Equatable, CaseIterable {
    /// Send or receive an ephemeral public key.
    case e
    /// Send or receive a static public key, encrypted once a key exists.
    case s
    /// DH between the two ephemeral keys.
    case ee
    /// DH between the initiator's ephemeral and the responder's static key.
    case es
    /// DH between the initiator's static and the responder's ephemeral key.
    case se
    /// DH between the two static keys.
    case ss
    /// Mix in the next pre-shared key.
    case psk
}

/// A handshake pattern: pre-messages and message token lists, with psk modifiers already applied.
///
/// Message `i` is sent by the initiator when `i` is even and by the responder when it is odd.
public struct HandshakePattern: Sendable, Equatable {
    /// The name as it appears in a protocol name, modifiers included, e.g. `XXpsk3`.
    public let name: String
    /// Keys the responder knows about the initiator before the handshake (only `s` is used).
    public let initiatorPreMessage: [NoiseToken]
    /// Keys the initiator knows about the responder before the handshake (only `s` is used).
    public let responderPreMessage: [NoiseToken]
    /// The token lists of the handshake messages, in order.
    public let messages: [[NoiseToken]]

    /// Creates a pattern from its parts.
    public init(
        name: String, initiatorPreMessage: [NoiseToken], responderPreMessage: [NoiseToken],
        messages: [[NoiseToken]]
    ) {
        precondition(!messages.isEmpty, "a handshake pattern has at least one message")
        precondition(
            (initiatorPreMessage + responderPreMessage).allSatisfy { $0 == .s },
            "pre-messages carry static keys only in the supported patterns")
        self.name = name
        self.initiatorPreMessage = initiatorPreMessage
        self.responderPreMessage = responderPreMessage
        self.messages = messages
    }

    /// Whether this is one of the one-way patterns N, K, X (possibly with psk modifiers), in which the
    /// initiator sends a single message and transport runs from initiator to responder only.
    public var isOneWay: Bool { messages.count == 1 }

    /// Whether any message carries a `psk` token, which makes `e` tokens also call MixKey.
    public var usesPresharedKeys: Bool { presharedKeyCount > 0 }

    /// How many PSKs the pattern consumes.
    public var presharedKeyCount: Int {
        messages.reduce(0) { total, tokens in total + tokens.count(where: { $0 == .psk }) }
    }

    /// Looks up a pattern name such as `XX`, `X1K1` or `NNpsk0+psk2` and applies its modifiers:
    /// `psk0` puts a `psk` token at the start of the first message, `pskN` at the end of message N.
    /// - Throws: `.unsupportedPattern` for an unknown base pattern or modifier, `.invalidProtocolName`
    ///   for a psk modifier naming a message the pattern does not have, or a repeated modifier.
    public static func named(_ fullName: String) throws -> HandshakePattern {
        let baseName = String(fullName.prefix { $0.isASCII && ($0.isUppercase || $0.isNumber) })
        guard let base = fundamental.first(where: { $0.name == baseName }) else {
            throw NoiseError(
                .unsupportedPattern, "unknown handshake pattern \"\(baseName)\" in \"\(fullName)\"")
        }
        let modifierText = fullName.dropFirst(baseName.count)
        if modifierText.isEmpty { return base }

        var messages = base.messages
        var seen: [Int] = []
        for modifier in modifierText.split(separator: "+", omittingEmptySubsequences: false) {
            guard modifier.hasPrefix("psk"), let index = Int(modifier.dropFirst(3)),
                modifier.dropFirst(3).allSatisfy({ $0.isASCII && $0.isNumber })
            else {
                throw NoiseError(
                    .unsupportedPattern, "unsupported pattern modifier \"\(modifier)\" in \"\(fullName)\"")
            }
            guard index <= messages.count else {
                throw NoiseError(
                    .invalidProtocolName,
                    "\(modifier) names message \(index) but \(baseName) has \(messages.count) messages")
            }
            guard !seen.contains(index) else {
                throw NoiseError(.invalidProtocolName, "modifier \(modifier) repeated in \"\(fullName)\"")
            }
            seen.append(index)
            if index == 0 {
                messages[0].insert(.psk, at: 0)
            } else {
                messages[index - 1].append(.psk)
            }
        }
        return HandshakePattern(
            name: fullName, initiatorPreMessage: base.initiatorPreMessage,
            responderPreMessage: base.responderPreMessage, messages: messages)
    }

    /// Every base pattern of spec sections 7.4, 7.5 and 7.6 (revision 34):
    ///
    /// | kind                      | patterns                                                      |
    /// |---------------------------|---------------------------------------------------------------|
    /// | one-way (7.4)             | N, K, X                                                       |
    /// | interactive (7.5)         | NN, NK, NX, KN, KK, KX, XN, XK, XX, IN, IK, IX                |
    /// | deferred (7.6)            | NK1, NX1, X1N, X1K, XK1, X1K1, X1X, XX1, X1X1, K1N, K1K, KK1, |
    /// |                           | K1K1, K1X, KX1, K1X1, I1N, I1K, IK1, I1K1, I1X, IX1, I1X1     |
    public static let fundamental: [HandshakePattern] = [
        // One-way.
        pattern("N", responder: [.s], [[.e, .es]]),
        pattern("K", initiator: [.s], responder: [.s], [[.e, .es, .ss]]),
        pattern("X", responder: [.s], [[.e, .es, .s, .ss]]),
        // Interactive.
        pattern("NN", [[.e], [.e, .ee]]),
        pattern("NK", responder: [.s], [[.e, .es], [.e, .ee]]),
        pattern("NX", [[.e], [.e, .ee, .s, .es]]),
        pattern("KN", initiator: [.s], [[.e], [.e, .ee, .se]]),
        pattern("KK", initiator: [.s], responder: [.s], [[.e, .es, .ss], [.e, .ee, .se]]),
        pattern("KX", initiator: [.s], [[.e], [.e, .ee, .se, .s, .es]]),
        pattern("XN", [[.e], [.e, .ee], [.s, .se]]),
        pattern("XK", responder: [.s], [[.e, .es], [.e, .ee], [.s, .se]]),
        pattern("XX", [[.e], [.e, .ee, .s, .es], [.s, .se]]),
        pattern("IN", [[.e, .s], [.e, .ee, .se]]),
        pattern("IK", responder: [.s], [[.e, .es, .s, .ss], [.e, .ee, .se]]),
        pattern("IX", [[.e, .s], [.e, .ee, .se, .s, .es]]),
        // Deferred.
        pattern("NK1", responder: [.s], [[.e], [.e, .ee, .es]]),
        pattern("NX1", [[.e], [.e, .ee, .s], [.es]]),
        pattern("X1N", [[.e], [.e, .ee], [.s], [.se]]),
        pattern("X1K", responder: [.s], [[.e, .es], [.e, .ee], [.s], [.se]]),
        pattern("XK1", responder: [.s], [[.e], [.e, .ee, .es], [.s, .se]]),
        pattern("X1K1", responder: [.s], [[.e], [.e, .ee, .es], [.s], [.se]]),
        pattern("X1X", [[.e], [.e, .ee, .s, .es], [.s], [.se]]),
        pattern("XX1", [[.e], [.e, .ee, .s], [.es, .s, .se]]),
        pattern("X1X1", [[.e], [.e, .ee, .s], [.es, .s], [.se]]),
        pattern("K1N", initiator: [.s], [[.e], [.e, .ee], [.se]]),
        pattern("K1K", initiator: [.s], responder: [.s], [[.e, .es], [.e, .ee], [.se]]),
        pattern("KK1", initiator: [.s], responder: [.s], [[.e], [.e, .ee, .se, .es]]),
        pattern("K1K1", initiator: [.s], responder: [.s], [[.e], [.e, .ee, .es], [.se]]),
        pattern("K1X", initiator: [.s], [[.e], [.e, .ee, .s, .es], [.se]]),
        pattern("KX1", initiator: [.s], [[.e], [.e, .ee, .se, .s], [.es]]),
        pattern("K1X1", initiator: [.s], [[.e], [.e, .ee, .s], [.se, .es]]),
        pattern("I1N", [[.e, .s], [.e, .ee], [.se]]),
        pattern("I1K", responder: [.s], [[.e, .es, .s], [.e, .ee], [.se]]),
        pattern("IK1", responder: [.s], [[.e, .s], [.e, .ee, .se, .es]]),
        pattern("I1K1", responder: [.s], [[.e, .s], [.e, .ee, .es], [.se]]),
        pattern("I1X", [[.e, .s], [.e, .ee, .s, .es], [.se]]),
        pattern("IX1", [[.e, .s], [.e, .ee, .se, .s], [.es]]),
        pattern("I1X1", [[.e, .s], [.e, .ee, .s], [.se, .es]]),
    ]

    private static func pattern(
        _ name: String, initiator: [NoiseToken] = [], responder: [NoiseToken] = [], _ messages: [[NoiseToken]]
    ) -> HandshakePattern {
        HandshakePattern(
            name: name, initiatorPreMessage: initiator, responderPreMessage: responder, messages: messages)
    }
}

/// A parsed protocol name, `Noise_<pattern>_<dh>_<cipher>_<hash>`, restricted to the one suite this
/// module implements: `25519`, `ChaChaPoly`, `BLAKE2b`.
public struct NoiseProtocolName: Sendable, Equatable {
    /// The full name, which InitializeSymmetric hashes.
    public let name: String
    /// The handshake pattern with its modifiers applied.
    public let pattern: HandshakePattern

    /// Parses `name`.
    /// - Throws: `.invalidProtocolName` when the structure is wrong; `.unsupportedDH`,
    ///   `.unsupportedCipher`, `.unsupportedHash` or `.unsupportedPattern` for well-formed names this
    ///   module does not implement.
    public init(parsing name: String) throws {
        let parts = name.split(separator: "_", omittingEmptySubsequences: false)
        guard parts.count == 5, parts[0] == "Noise", parts.dropFirst().allSatisfy({ !$0.isEmpty }) else {
            throw NoiseError(
                .invalidProtocolName, "\"\(name)\" is not of the form Noise_<pattern>_<dh>_<cipher>_<hash>")
        }
        guard parts[2] == "25519" else {
            throw NoiseError(.unsupportedDH, "DH function \"\(parts[2])\" is not supported (only 25519)")
        }
        guard parts[3] == "ChaChaPoly" else {
            throw NoiseError(.unsupportedCipher, "cipher \"\(parts[3])\" is not supported (only ChaChaPoly)")
        }
        guard parts[4] == "BLAKE2b" else {
            throw NoiseError(.unsupportedHash, "hash \"\(parts[4])\" is not supported (only BLAKE2b)")
        }
        self.name = name
        self.pattern = try HandshakePattern.named(String(parts[1]))
    }
}
