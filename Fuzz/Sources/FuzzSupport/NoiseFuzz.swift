import ProfileDropCore
import ProfileDropCrypto
import ProfileDropNoise

/// The Noise fuzz target: one honest party and one party under test run XX, and the input replaces
/// or corrupts the message the party under test reads (as initiator or as responder), then forges
/// transport packets.
///
/// Beyond "no trap": every failure is a ``NoiseError``; a failed read leaves the state exactly as it
/// was (the genuine message is still accepted afterwards); a changed message 2 or 3 is never
/// accepted; and the two sides agree on the handshake hash and each other's static keys.
public enum NoiseFuzz {
    private struct Keys {
        let initiator: X25519.PrivateKey
        let responder: X25519.PrivateKey
    }

    private static let keys: Keys = {
        var random = DeterministicRandom(seed: 0x4E01_5E)
        return Keys(
            initiator: X25519.PrivateKey(using: &random), responder: X25519.PrivateKey(using: &random))
    }()

    private static let prologue = Array("ProfileDrop fuzz".utf8)

    private static func party(_ role: NoiseRole) -> HandshakeState {
        do {
            return try HandshakeState(
                protocolName: HandshakeState.xx, role: role, prologue: prologue,
                staticKey: role == .initiator ? keys.initiator : keys.responder, remoteStaticKey: nil)
        } catch {
            preconditionFailure("XX with a static key is valid: \(error)")
        }
    }

    /// The message the party under test reads: arbitrary bytes, or the genuine one corrupted.
    private static func substitute(for genuine: [UInt8], input: inout FuzzBytes) -> [UInt8] {
        var message = genuine
        switch input.byte() % 6 {
        case 0:
            let length = Int(input.uint16() % 1400)
            message = input.take(length)
        case 1:
            for _ in 0..<(1 + Int(input.byte() % 4)) where !message.isEmpty {
                let position = Int(input.uint16()) % message.count
                message[position] ^= 1 << (input.byte() % 8)
            }
        case 2:
            message = Array(message.prefix(Int(input.uint16()) % (message.count + 1)))
        case 3:
            message += input.take(Int(input.byte()))
        case 4:
            let cut = Int(input.uint16()) % (message.count + 1)
            message = Array(message.prefix(cut)) + input.take(Int(input.byte()))
        default:
            break
        }
        return message
    }

    /// Reads `message` into `party`, recording what the outcome says about the implementation.
    /// Returns the payload, or nil when it was rejected.
    private static func read(
        _ message: [UInt8], into party: inout HandshakeState, genuine: [UInt8], mustAuthenticate: Bool,
        _ findings: inout FuzzFindings
    ) -> [UInt8]? {
        precondition(!party.isComplete && !party.isMyTurnToWrite, "harness reads out of turn")
        let hashBefore = party.handshakeHash
        do {
            let payload = try party.readMessage(message)
            if mustAuthenticate {
                findings.check(message == genuine, "a changed authenticated handshake message was accepted")
            }
            return payload
        } catch let error as NoiseError {
            findings.check(
                party.handshakeHash == hashBefore, "a rejected message changed the state (\(error))")
            return nil
        } catch {
            findings.fail("untyped handshake error: \(error)")
            return nil
        }
    }

    /// Runs one input.
    public static func run(_ bytes: [UInt8]) -> FuzzFindings {
        var findings = FuzzFindings()
        var input = FuzzBytes(bytes)
        var random = DeterministicRandom(seed: UInt64(input.byte()))
        let testResponder = input.byte() & 1 == 0
        var initiator = party(.initiator)
        var responder = party(.responder)
        let parameters: [UInt8] = [1, 0, 8, 0, 0, 0, 64]

        guard let message1 = try? initiator.writeMessage(payload: [], random: &random) else {
            findings.fail("message 1 could not be written")
            return findings
        }
        if testResponder {
            let forged = substitute(for: message1, input: &input)
            if forged != message1 {
                let payload = read(
                    forged, into: &responder, genuine: message1, mustAuthenticate: false, &findings)
                // Message 1 is unauthenticated: an accepted forgery simply starts another handshake.
                if payload != nil { return finishDiverged(responder, initiator, &random, &findings) }
            }
        }
        guard read(message1, into: &responder, genuine: message1, mustAuthenticate: false, &findings) != nil
        else {
            findings.fail("the genuine message 1 was rejected")
            return findings
        }
        guard
            deliver(
                2, from: &responder, to: &initiator, payload: parameters, forging: !testResponder,
                random: &random, input: &input, &findings),
            deliver(
                3, from: &initiator, to: &responder, payload: parameters, forging: testResponder,
                random: &random, input: &input, &findings)
        else { return findings }
        checkTransport(initiator, responder, input: &input, &findings)
        return findings
    }

    /// Handshake message `number`, authenticated and carrying `payload`, from `writer` to `reader`:
    /// when `forging`, first the forgery the input makes of it, then the genuine message, which
    /// `reader` must accept unchanged. Returns whether the handshake goes on: not when the message
    /// could not be written or was rejected, nor once `reader` went past it on a forgery.
    private static func deliver(
        _ number: Int, from writer: inout HandshakeState, to reader: inout HandshakeState,
        payload: [UInt8], forging: Bool, random: inout DeterministicRandom, input: inout FuzzBytes,
        _ findings: inout FuzzFindings
    ) -> Bool {
        guard let message = try? writer.writeMessage(payload: payload, random: &random) else {
            findings.fail("message \(number) could not be written")
            return false
        }
        if forging {
            let forged = substitute(for: message, input: &input)
            if forged != message {
                _ = read(forged, into: &reader, genuine: message, mustAuthenticate: true, &findings)
                if reader.isComplete || reader.isMyTurnToWrite { return false }
            }
        }
        guard read(message, into: &reader, genuine: message, mustAuthenticate: true, &findings) == payload
        else {
            findings.fail("the genuine message \(number) was rejected or changed")
            return false
        }
        return true
    }

    /// After an accepted forged message 1 the honest initiator must refuse the responder's reply.
    private static func finishDiverged(
        _ responder: HandshakeState, _ initiator: HandshakeState, _ random: inout DeterministicRandom,
        _ findings: inout FuzzFindings
    ) -> FuzzFindings {
        var responder = responder
        var initiator = initiator
        do {
            let message2 = try responder.writeMessage(payload: [], random: &random)
            _ = read(message2, into: &initiator, genuine: [], mustAuthenticate: true, &findings)
        } catch is NoiseError {
            // A small-order ephemeral key in the forged message 1: refused while writing.
        } catch {
            findings.fail("untyped handshake error: \(error)")
        }
        return findings
    }

    private static func checkTransport(
        _ initiator: HandshakeState, _ responder: HandshakeState, input: inout FuzzBytes,
        _ findings: inout FuzzFindings
    ) {
        findings.check(initiator.isComplete && responder.isComplete, "handshake incomplete after 3 messages")
        findings.check(initiator.handshakeHash == responder.handshakeHash, "handshake hashes differ")
        findings.check(
            initiator.remoteStaticKey?.rawRepresentation == keys.responder.publicKey.rawRepresentation
                && responder.remoteStaticKey?.rawRepresentation
                    == keys.initiator.publicKey.rawRepresentation,
            "a party learnt the wrong static key")
        var sender = initiator.split().sender
        var receiver = responder.split().receiver
        let plaintext = input.take(Int(input.byte()))
        let ad = input.take(Int(input.byte() % 32))
        guard let sealed = try? sender.encryptWithAd(ad, plaintext: plaintext) else {
            findings.fail("transport encryption failed")
            return
        }
        let forged = substitute(for: sealed, input: &input)
        if forged != sealed {
            do {
                _ = try receiver.decrypt(nonce: 0, ad: ad, ciphertext: forged)
                findings.fail("a forged transport message was accepted")
            } catch is NoiseError {
            } catch {
                findings.fail("untyped transport error: \(error)")
            }
        }
        let opened = try? receiver.decryptWithAd(ad, ciphertext: sealed)
        findings.check(opened == plaintext, "transport round trip failed")
    }
}
