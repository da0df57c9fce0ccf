import ProfileDropCore
import ProfileDropCrypto

extension DeviceContext {
    /// The seed material a simulated device's static key is drawn from: its own seed material and a
    /// fixed suffix, so the key stream is independent of its protocol draws. Capture keylogs record
    /// this material, and replay checks the key it gives against the recorded public key.
    public var staticKeySeedMaterial: [UInt8] { seedMaterial + staticKeySuffix }

    /// The device's static key: the first key drawn from ``staticKeySeedMaterial``.
    public var staticKey: X25519.PrivateKey {
        var random = DeterministicRandom(seedMaterial: staticKeySeedMaterial)
        return X25519.PrivateKey(using: &random)
    }
}

extension DeviceContext {
    /// The device's long-term identity secret: drawn from its own seed material with a fixed suffix,
    /// like the static key. A device that should be the same across runs (an attack run's victims)
    /// gets its identity from elsewhere.
    public var identitySecret: [UInt8] {
        BLAKE2b.hash(seedMaterial + identitySuffix, outputLength: 32)
    }

    /// The identity derived from ``identitySecret``.
    public var identity: DeviceIdentity { DeviceIdentity(secret: identitySecret) }
}

// The suffixes as bytes once, not converted from a string per device.
private let staticKeySuffix = Array("/static-key".utf8)
private let identitySuffix = Array("/identity".utf8)
