import ProfileDropCore
import ProfileDropCrypto

/// A simulated device's long-term secrets: its static key and its identity, both drawn from its
/// seed material. A phone makes these once, when it is set up, and keeps them (the CLI's key store),
/// so a caller that times exchanges alone (`bench simulate`) makes them before its clock starts.
public struct DeviceKeys: Sendable {
    /// The static key: the first key drawn from the static-key seed material.
    public let staticKey: X25519.PrivateKey
    /// The identity derived from the identity secret.
    public let identity: DeviceIdentity

    /// The keys of the device whose own seed material is `seedMaterial`.
    public init(seedMaterial: [UInt8]) {
        staticKey = Self.staticKey(seedMaterial)
        identity = DeviceIdentity(secret: Self.identitySecret(seedMaterial))
    }

    /// The device's seed material and a fixed suffix, so the key stream is independent of its
    /// protocol draws.
    static func staticKeySeedMaterial(_ seedMaterial: [UInt8]) -> [UInt8] {
        seedMaterial + Array("/static-key".utf8)
    }

    /// The first key drawn from the static-key seed material.
    static func staticKey(_ seedMaterial: [UInt8]) -> X25519.PrivateKey {
        var random = DeterministicRandom(seedMaterial: staticKeySeedMaterial(seedMaterial))
        return X25519.PrivateKey(using: &random)
    }

    /// Drawn from the device's seed material with a fixed suffix, like the static key.
    static func identitySecret(_ seedMaterial: [UInt8]) -> [UInt8] {
        BLAKE2b.hash(seedMaterial + Array("/identity".utf8), outputLength: 32)
    }
}

extension DeviceContext {
    /// The seed material a simulated device's static key is drawn from: its own seed material and a
    /// fixed suffix, so the key stream is independent of its protocol draws. Capture keylogs record
    /// this material, and replay checks the key it gives against the recorded public key.
    public var staticKeySeedMaterial: [UInt8] { DeviceKeys.staticKeySeedMaterial(seedMaterial) }

    /// The device's static key: the first key drawn from ``staticKeySeedMaterial``.
    public var staticKey: X25519.PrivateKey { DeviceKeys.staticKey(seedMaterial) }

    /// The device's long-term identity secret: drawn from its own seed material with a fixed suffix,
    /// like the static key. A device that should be the same across runs (an attack run's victims)
    /// gets its identity from elsewhere.
    public var identitySecret: [UInt8] { DeviceKeys.identitySecret(seedMaterial) }

    /// The identity derived from ``identitySecret``.
    public var identity: DeviceIdentity { DeviceIdentity(secret: identitySecret) }

    /// The device's static key and identity together.
    public var keys: DeviceKeys { DeviceKeys(seedMaterial: seedMaterial) }
}
