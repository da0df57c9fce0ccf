import ProfileDropCore
import ProfileDropCrypto

extension DeviceContext {
    /// The seed material a simulated device's static key is drawn from: its own seed material and a
    /// fixed suffix, so the key stream is independent of its protocol draws. Capture keylogs record
    /// this material, and replay checks the key it gives against the recorded public key.
    public var staticKeySeedMaterial: [UInt8] { seedMaterial + Array("/static-key".utf8) }

    /// The device's static key: the first key drawn from ``staticKeySeedMaterial``.
    public var staticKey: X25519.PrivateKey {
        var random = DeterministicRandom(seedMaterial: staticKeySeedMaterial)
        return X25519.PrivateKey(using: &random)
    }
}
