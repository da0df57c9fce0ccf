import ProfileDropTestSupport
import Testing

@testable import ProfileDropNoise

/// The pattern table, psk modifiers and protocol-name parsing.
struct HandshakePatternTests {
    static let oneWay = ["N", "K", "X"]
    static let interactive = ["NN", "NK", "NX", "KN", "KK", "KX", "XN", "XK", "XX", "IN", "IK", "IX"]
    static let deferred = [
        "NK1", "NX1", "X1N", "X1K", "XK1", "X1K1", "X1X", "XX1", "X1X1", "K1N", "K1K", "KK1", "K1K1", "K1X",
        "KX1", "K1X1", "I1N", "I1K", "IK1", "I1K1", "I1X", "IX1", "I1X1",
    ]

    static func code(_ body: () throws -> Void) -> NoiseError.Code? { caught(NoiseError.self, body)?.code }

    @Test func tableHoldsExactlyTheSpecPatterns() {
        let names = HandshakePattern.fundamental.map(\.name)
        #expect(names == Self.oneWay + Self.interactive + Self.deferred)
        #expect(HandshakePattern.fundamental.filter(\.isOneWay).map(\.name) == Self.oneWay)
        #expect(HandshakePattern.fundamental.allSatisfy { !$0.usesPresharedKeys })
    }

    /// The spec's validity rules (section 7.3) that a table typo would break: a DH uses only keys the
    /// parties hold by then, no key is sent twice, no DH is repeated, and the tokens match the name
    /// (a first letter N/K/X/I says how the initiator's static key travels, the second the responder's).
    @Test(arguments: HandshakePattern.fundamental)
    func everyPatternIsValid(pattern: HandshakePattern) {
        var initiatorKeys = Set(pattern.initiatorPreMessage.map(\.rawValue))
        var responderKeys = Set(pattern.responderPreMessage.map(\.rawValue))
        var dhSeen: Set<NoiseToken> = []
        for (index, tokens) in pattern.messages.enumerated() {
            let byInitiator = index % 2 == 0
            for token in tokens {
                switch token {
                case .e, .s:
                    let inserted =
                        byInitiator
                        ? initiatorKeys.insert(token.rawValue).inserted
                        : responderKeys.insert(token.rawValue).inserted
                    #expect(inserted, "\(pattern.name) sends \(token) twice")
                case .ee, .es, .se, .ss:
                    let (initiatorKey, responderKey) = (
                        String(token.rawValue.first!), String(token.rawValue.last!)
                    )
                    #expect(
                        initiatorKeys.contains(initiatorKey),
                        "\(pattern.name): \(token) before initiator's key")
                    #expect(
                        responderKeys.contains(responderKey),
                        "\(pattern.name): \(token) before responder's key")
                    #expect(dhSeen.insert(token).inserted, "\(pattern.name) repeats \(token)")
                case .psk:
                    Issue.record("\(pattern.name) has a psk token in the base table")
                }
            }
        }
        #expect(initiatorKeys.contains("e") && (pattern.isOneWay || responderKeys.contains("e")))
        #expect(pattern.isOneWay || dhSeen.contains(.ee))

        let letters = Array(pattern.name.filter(\.isLetter))
        let initiatorSendsStatic = pattern.messages.enumerated().contains {
            $0.offset % 2 == 0 && $0.element.contains(.s)
        }
        let responderSendsStatic = pattern.messages.enumerated().contains {
            $0.offset % 2 == 1 && $0.element.contains(.s)
        }
        if pattern.isOneWay {
            // One letter, for the sender's static key; the recipient's key is always known in advance.
            #expect(pattern.responderPreMessage == [.s])
            #expect(pattern.initiatorPreMessage == (letters[0] == "K" ? [.s] : []))
            #expect(initiatorSendsStatic == (letters[0] == "X"))
        } else {
            // K: known in advance; X: sent in the handshake (I: in its first message); N: none.
            let (initiatorLetter, responderLetter) = (letters[0], letters[1])
            #expect(pattern.initiatorPreMessage == (initiatorLetter == "K" ? [.s] : []))
            #expect(initiatorSendsStatic == (initiatorLetter == "X" || initiatorLetter == "I"))
            #expect(pattern.messages[0].contains(.s) == (initiatorLetter == "I"))
            #expect(pattern.responderPreMessage == (responderLetter == "K" ? [.s] : []))
            #expect(responderSendsStatic == (responderLetter == "X"))
        }
    }

    @Test func pskModifiersInsertTokensWhereTheSpecSays() throws {
        let xxPsk3 = try HandshakePattern.named("XXpsk3")
        #expect(xxPsk3.messages == [[.e], [.e, .ee, .s, .es], [.s, .se, .psk]])
        #expect(xxPsk3.presharedKeyCount == 1)
        #expect(xxPsk3.name == "XXpsk3")

        let nnPsk0 = try HandshakePattern.named("NNpsk0")
        #expect(nnPsk0.messages == [[.psk, .e], [.e, .ee]])

        let both = try HandshakePattern.named("NNpsk0+psk2")
        #expect(both.messages == [[.psk, .e], [.e, .ee, .psk]])
        #expect(both.presharedKeyCount == 2)
        #expect(both.usesPresharedKeys)

        let oneWay = try HandshakePattern.named("Xpsk1")
        #expect(oneWay.messages == [[.e, .es, .s, .ss, .psk]])
        #expect(oneWay.isOneWay)
    }

    @Test func badPatternNamesAreRejected() {
        #expect(Self.code { _ = try HandshakePattern.named("ZZ") } == .unsupportedPattern)
        #expect(Self.code { _ = try HandshakePattern.named("XXfallback") } == .unsupportedPattern)
        #expect(Self.code { _ = try HandshakePattern.named("XXpsk") } == .unsupportedPattern)
        #expect(Self.code { _ = try HandshakePattern.named("XXpsk+1") } == .unsupportedPattern)
        #expect(Self.code { _ = try HandshakePattern.named("NNpsk3") } == .invalidProtocolName)
        #expect(Self.code { _ = try HandshakePattern.named("NNpsk0+psk0") } == .invalidProtocolName)
        #expect(Self.code { _ = try HandshakePattern.named("") } == .unsupportedPattern)
    }

    @Test func protocolNamesParseOrSayWhatIsUnsupported() throws {
        let parsed = try NoiseProtocolName(parsing: "Noise_XXpsk3_25519_ChaChaPoly_BLAKE2b")
        #expect(parsed.pattern == (try HandshakePattern.named("XXpsk3")))
        #expect(parsed.name == "Noise_XXpsk3_25519_ChaChaPoly_BLAKE2b")

        let cases: [(String, NoiseError.Code)] = [
            ("Noise_XX_448_ChaChaPoly_BLAKE2b", .unsupportedDH),
            ("Noise_XX_25519_AESGCM_BLAKE2b", .unsupportedCipher),
            ("Noise_XX_25519_ChaChaPoly_SHA256", .unsupportedHash),
            ("Noise_XX_25519_ChaChaPoly_BLAKE2s", .unsupportedHash),
            ("Noise_XXfallback_25519_ChaChaPoly_BLAKE2b", .unsupportedPattern),
            ("Noise_XX_25519_ChaChaPoly", .invalidProtocolName),
            ("Noise_XX_25519_ChaChaPoly_BLAKE2b_", .invalidProtocolName),
            ("Noise__25519_ChaChaPoly_BLAKE2b", .invalidProtocolName),
            ("NoiseXX_25519_ChaChaPoly_BLAKE2b", .invalidProtocolName),
            ("Snow_XX_25519_ChaChaPoly_BLAKE2b", .invalidProtocolName),
        ]
        for (name, expected) in cases {
            #expect(Self.code { _ = try NoiseProtocolName(parsing: name) } == expected, "\(name)")
        }
        let unsupported = NoiseError(.unsupportedHash, "x")
        #expect(unsupported.isUnsupported)
        #expect(!NoiseError(.invalidProtocolName, "x").isUnsupported)
    }

    @Test func errorDescriptionIsOneLine() {
        let error = NoiseError(.decryptFailed, "tag\nmismatch")
        #expect(error.description == "noise error decryptFailed: tag mismatch")
    }
}

extension HandshakePattern: CustomTestStringConvertible {
    public var testDescription: String { name }
}
