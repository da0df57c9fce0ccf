#if FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
    /// Fuzz builds only (`scripts/fuzz.sh` defines `FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION`, the
    /// name libFuzzer projects use for such switches): remembered X25519 results.
    ///
    /// Every fuzz input starts from the same seeded states, so the same scalars and public keys
    /// come back input after input, and the scalar multiplications were a third of the device
    /// target's instructions. X25519 is a pure function, so answering from memory changes no
    /// result and no code path above this module. It keeps private scalars in memory unwiped, so
    /// it is never compiled into any other build.
    enum X25519FuzzingMemo {
        /// Entries kept per table before it starts again; bounds the fuzzer's memory.
        static let capacity = 1 << 16

        // libFuzzer runs inputs on one thread; fork mode uses processes, not threads.
        nonisolated(unsafe) private static var publicKeys: [[UInt8]: [UInt8]] = [:]
        // nil: libsodium reported a weak public key.
        nonisolated(unsafe) private static var sharedSecrets: [[UInt8]: [UInt8]?] = [:]

        static func publicKey(of secret: SecureBytes) -> [UInt8]? {
            publicKeys[secret.exportBytes()]
        }

        static func remember(publicKey: [UInt8], of secret: SecureBytes) {
            if publicKeys.count >= capacity { publicKeys.removeAll() }
            publicKeys[secret.exportBytes()] = publicKey
        }

        /// The remembered result for `secret` with `peer`: nil when not known, `.some(nil)` for a
        /// weak public key.
        static func sharedSecret(of secret: SecureBytes, with peer: X25519.PublicKey) -> [UInt8]?? {
            sharedSecrets[secret.exportBytes() + peer.rawRepresentation]
        }

        static func remember(sharedSecret: [UInt8]?, of secret: SecureBytes, with peer: X25519.PublicKey) {
            if sharedSecrets.count >= capacity { sharedSecrets.removeAll() }
            sharedSecrets[secret.exportBytes() + peer.rawRepresentation] = .some(sharedSecret)
        }
    }
#endif
