import ProfileDropCrypto
import ProfileDropNoise

/// The handshake's fixed inputs (PROTOCOL.md 3.3): what an exchange session feeds Noise, and what
/// capture replay's decryptor must feed it to run the same handshake beside a recorded device.
///
/// SPI rather than `package`: the capture module is also compiled inside the Fuzz package, which
/// `package` access would not reach.
package enum HandshakeRules {
    /// The Noise prologue: label, version, session id, initiator id, responder id, so a handshake
    /// cannot be replayed into another session or another protocol version.
    package static func prologue(sessionID: UInt64, initiator: DeviceID, responder: DeviceID) -> [UInt8] {
        let count = WireConstants.prologueLabel.count + 1 + 3 * 8
        return [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
            var writer = FixedSizeByteWriter(UnsafeMutableRawBufferPointer(buffer))
            writer.writeBytes(WireConstants.prologueLabel)
            writer.writeInteger(WireConstants.version)
            writer.writeInteger(sessionID)
            writer.writeInteger(initiator.rawValue)
            writer.writeInteger(responder.rawValue)
            precondition(writer.isFull, "the prologue's fields fill it")
            initialized = writer.count
        }
    }

    /// The parameters a device with `limits` sends in ACCEPT and CONFIRM.
    package static func parameters(_ limits: Limits) -> HandshakeParameters {
        HandshakeParameters(
            maxCardBytes: UInt32(clamping: limits.maxCardBytes),
            receiveWindow: UInt16(clamping: max(limits.sendWindow, 1) * 2))
    }

    /// A fresh handshake of session `sessionID` for our `role`. `ephemeralKey` fixes the ephemeral
    /// key (replay recovers it from recorded draws); nil draws it when the first message is written.
    package static func handshake(
        role: NoiseRole, sessionID: UInt64, initiator: DeviceID, responder: DeviceID,
        staticKey: X25519.PrivateKey, ephemeralKey: X25519.PrivateKey? = nil
    ) -> HandshakeState {
        do {
            return try HandshakeState(
                protocolName: WireConstants.noiseProtocolName, role: role,
                prologue: prologue(sessionID: sessionID, initiator: initiator, responder: responder),
                staticKey: staticKey, remoteStaticKey: nil, ephemeralKey: ephemeralKey)
        } catch {
            preconditionFailure("the fixed Noise protocol name and our static key are valid: \(error)")
        }
    }
}
