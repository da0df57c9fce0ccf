import Foundation
import ProfileDropCrypto
import ProfileDropJSON

/// The result of running one test vector.
public struct NoiseVectorResult: Sendable, Equatable {
    /// How a vector fared.
    public enum Outcome: Sendable, Equatable {
        /// Every ciphertext, payload and the handshake hash matched.
        case passed
        /// Something differed or an operation threw; `reason` is one line saying what.
        case failed(reason: String)
        /// The protocol uses a primitive or pattern this module does not implement.
        case skipped(reason: String)
    }

    /// The vector's protocol name.
    public let protocolName: String
    /// What happened.
    public let outcome: Outcome
}

/// A vector file that could not be read or parsed at all.
public struct NoiseVectorFileError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The file that was asked for.
    public let path: String
    /// Why it could not be used.
    public let reason: String

    /// `cannot use Noise vector file <path>: <reason>` on one line.
    public var description: String {
        let line = reason.split(whereSeparator: \.isNewline).joined(separator: " ")
        return "cannot use Noise vector file \(path): \(line)"
    }
}

/// Runs cacophony-format Noise test vectors against ``HandshakeState`` and ``CipherState``.
///
/// Each vector is played with both parties' fixed keys: handshake messages alternate initiator,
/// responder, … (one-way patterns: all from the initiator), then transport messages continue the
/// alternation with the split cipher states. Every ciphertext must equal the vector's, every
/// receiver must recover the payload, and both handshake hashes must match.
public enum NoiseVectorRunner {
    /// Reads `{"vectors": [...]}` from `path` and runs every vector, in file order.
    /// - Throws: ``NoiseVectorFileError`` when the file cannot be read or is not such JSON.
    public static func run(contentsOf path: String) throws -> [NoiseVectorResult] {
        let data: Data
        do {
            data = Data(try InputFile.read(atPath: path, limit: JSONValue.maximumBytes))
        } catch {
            throw NoiseVectorFileError(path: path, reason: error.reasonText)
        }
        let vectors: [Vector]
        do {
            vectors = try JSONDecoder().decode(VectorFile.self, from: data).vectors
        } catch {
            throw NoiseVectorFileError(path: path, reason: "not a Noise vector file (\(describe(error)))")
        }
        return vectors.map { vector in
            NoiseVectorResult(protocolName: vector.protocolName, outcome: outcome(of: vector))
        }
    }

    private static func outcome(of vector: Vector) -> NoiseVectorResult.Outcome {
        do {
            return try play(vector)
        } catch let error as NoiseError where error.isUnsupported {
            return .skipped(reason: error.diagnostic)
        } catch let error as NoiseError {
            return .failed(reason: error.description)
        } catch let error as VectorFieldError {
            return .failed(reason: error.reason)
        } catch {
            return .failed(reason: "\(error)")
        }
    }

    private static func play(_ vector: Vector) throws -> NoiseVectorResult.Outcome {
        // Parse first, so that unsupported protocols are skipped before any key is examined.
        let pattern = try NoiseProtocolName(parsing: vector.protocolName).pattern
        var initiator = try party(vector.initiator, role: .initiator, protocolName: vector.protocolName)
        var responder = try party(vector.responder, role: .responder, protocolName: vector.protocolName)
        // Ephemeral keys are fixed by the vector, so this source is never drawn from in a good vector.
        var random = DeterministicRandom(seed: 0)
        var transports: (initiator: NoiseTransport, responder: NoiseTransport)?

        for (index, message) in vector.messages.enumerated() {
            let payload = try hex(message.payload, "messages[\(index)].payload")
            let expected = try hex(message.ciphertext, "messages[\(index)].ciphertext")
            let fromInitiator = pattern.isOneWay || index % 2 == 0
            let ciphertext: [UInt8]
            let received: [UInt8]
            if var current = transports {
                if fromInitiator {
                    ciphertext = try current.initiator.sender.encryptWithAd([UInt8](), plaintext: payload)
                    received = try current.responder.receiver.decryptWithAd([UInt8](), ciphertext: expected)
                } else {
                    ciphertext = try current.responder.sender.encryptWithAd([UInt8](), plaintext: payload)
                    received = try current.initiator.receiver.decryptWithAd([UInt8](), ciphertext: expected)
                }
                transports = current
            } else {
                guard initiator.isMyTurnToWrite == fromInitiator, responder.isMyTurnToWrite == !fromInitiator
                else {
                    return .failed(reason: "message \(index): pattern turn order disagrees with the vector")
                }
                if fromInitiator {
                    ciphertext = try initiator.writeMessage(payload: payload, random: &random)
                    received = try responder.readMessage(expected)
                } else {
                    ciphertext = try responder.writeMessage(payload: payload, random: &random)
                    received = try initiator.readMessage(expected)
                }
            }
            guard ciphertext == expected else {
                return .failed(reason: "message \(index): ciphertext differs from the vector")
            }
            guard received == payload else {
                return .failed(reason: "message \(index): receiver decrypted a different payload")
            }
            if transports == nil && initiator.isComplete != responder.isComplete {
                return .failed(reason: "message \(index): only one side completed the handshake")
            }
            if transports == nil && initiator.isComplete {
                transports = (initiator.split(), responder.split())
                if let expectedHash = vector.handshakeHash {
                    let hash = try hex(expectedHash, "handshake_hash")
                    guard initiator.handshakeHash == hash, responder.handshakeHash == hash else {
                        return .failed(reason: "handshake hash differs from the vector")
                    }
                }
            }
        }
        guard transports != nil else {
            return .failed(reason: "the vector ends before the handshake completes")
        }
        return .passed
    }

    private static func party(
        _ keys: Vector.Party, role: NoiseRole, protocolName: String
    ) throws -> HandshakeState {
        let side = role == .initiator ? "init" : "resp"
        let staticKey = try keys.staticKey.map {
            try X25519.PrivateKey(rawRepresentation: try hex($0, "\(side)_static"))
        }
        let ephemeralKey = try keys.ephemeral.map {
            try X25519.PrivateKey(rawRepresentation: try hex($0, "\(side)_ephemeral"))
        }
        let remoteStaticKey = try keys.remoteStatic.map {
            try X25519.PublicKey(rawRepresentation: try hex($0, "\(side)_remote_static"))
        }
        let psks = try (keys.psks ?? []).enumerated().map { try hex($1, "\(side)_psks[\($0)]") }
        return try HandshakeState(
            protocolName: protocolName, role: role,
            prologue: try hex(keys.prologue ?? "", "\(side)_prologue"),
            staticKey: staticKey, remoteStaticKey: remoteStaticKey, presharedKeys: psks,
            ephemeralKey: ephemeralKey)
    }

    private static func hex(_ text: String, _ field: String) throws -> [UInt8] {
        guard let bytes = Hex.decode(text) else {
            throw VectorFieldError(reason: "field \(field) is not valid hex")
        }
        return bytes
    }

    private static func describe(_ error: Error) -> String {
        switch error {
        case DecodingError.dataCorrupted(let context):
            return "invalid JSON: \(context.debugDescription)"
        case DecodingError.keyNotFound(let key, let context):
            return "missing field \(key.stringValue) at \(path(context))"
        case DecodingError.typeMismatch(_, let context), DecodingError.valueNotFound(_, let context):
            return "wrong type at \(path(context)): \(context.debugDescription)"
        default:
            return "\(error)"
        }
    }

    private static func path(_ context: DecodingError.Context) -> String {
        let components = context.codingPath.map { $0.intValue.map { "[\($0)]" } ?? ".\($0.stringValue)" }
        return components.isEmpty ? "top level" : components.joined()
    }
}

/// A vector whose field cannot be used; reported as that vector's failure.
private struct VectorFieldError: Error {
    let reason: String
}

private struct VectorFile: Decodable {
    let vectors: [Vector]
}

private struct Vector: Decodable {
    struct Party {
        let prologue: String?
        let psks: [String]?
        let staticKey: String?
        let ephemeral: String?
        let remoteStatic: String?
    }

    struct Message: Decodable {
        let payload: String
        let ciphertext: String
    }

    let protocolName: String
    let initiator: Party
    let responder: Party
    let handshakeHash: String?
    let messages: [Message]

    private enum CodingKeys: String, CodingKey {
        case protocolName = "protocol_name"
        case handshakeHash = "handshake_hash"
        case messages
        case initPrologue = "init_prologue"
        case initPsks = "init_psks"
        case initStatic = "init_static"
        case initEphemeral = "init_ephemeral"
        case initRemoteStatic = "init_remote_static"
        case respPrologue = "resp_prologue"
        case respPsks = "resp_psks"
        case respStatic = "resp_static"
        case respEphemeral = "resp_ephemeral"
        case respRemoteStatic = "resp_remote_static"
    }

    init(from decoder: Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        protocolName = try container.decode(String.self, forKey: .protocolName)
        handshakeHash = try container.decodeIfPresent(String.self, forKey: .handshakeHash)
        messages = try container.decode([Message].self, forKey: .messages)
        initiator = Party(
            prologue: try container.decodeIfPresent(String.self, forKey: .initPrologue),
            psks: try container.decodeIfPresent([String].self, forKey: .initPsks),
            staticKey: try container.decodeIfPresent(String.self, forKey: .initStatic),
            ephemeral: try container.decodeIfPresent(String.self, forKey: .initEphemeral),
            remoteStatic: try container.decodeIfPresent(String.self, forKey: .initRemoteStatic))
        responder = Party(
            prologue: try container.decodeIfPresent(String.self, forKey: .respPrologue),
            psks: try container.decodeIfPresent([String].self, forKey: .respPsks),
            staticKey: try container.decodeIfPresent(String.self, forKey: .respStatic),
            ephemeral: try container.decodeIfPresent(String.self, forKey: .respEphemeral),
            remoteStatic: try container.decodeIfPresent(String.self, forKey: .respRemoteStatic))
    }
}
