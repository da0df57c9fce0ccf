internal import CSodium

/// Curve25519 Diffie–Hellman (RFC 7748) through libsodium's `crypto_scalarmult`.
public enum X25519 {
    /// Length in bytes of keys and shared secrets.
    public static let keyLength = 32

    /// A public key. Not secret, so it is a plain value.
    public struct PublicKey: Hashable, Sendable {
        /// The 32 raw bytes.
        public let rawRepresentation: [UInt8]

        /// Wraps 32 bytes received from a peer or read from storage.
        /// - Throws: ``CryptoError/invalidKeyLength(expected:actual:)`` for any other length.
        public init<Bytes: Collection>(rawRepresentation bytes: Bytes) throws where Bytes.Element == UInt8 {
            guard bytes.count == X25519.keyLength else {
                throw CryptoError.invalidKeyLength(expected: X25519.keyLength, actual: bytes.count)
            }
            rawRepresentation = Array(bytes)
        }

        /// Wraps 32 bytes held in an array. Non-generic, so that a key read from a handshake message
        /// in another module is taken over without a byte-by-byte generic copy.
        /// - Throws: ``CryptoError/invalidKeyLength(expected:actual:)`` for any other length.
        public init(rawRepresentation bytes: [UInt8]) throws {
            guard bytes.count == X25519.keyLength else {
                throw CryptoError.invalidKeyLength(expected: X25519.keyLength, actual: bytes.count)
            }
            rawRepresentation = bytes
        }

        fileprivate init(checkedBytes: [UInt8]) {
            precondition(checkedBytes.count == X25519.keyLength)
            rawRepresentation = checkedBytes
        }
    }

    /// A private key together with its public key, computed once at creation.
    public struct PrivateKey: Sendable {
        private let secret: SecureBytes
        /// The matching public key.
        public let publicKey: PublicKey

        /// Generates a fresh key from `random`.
        public init<Random: RandomSource>(using random: inout Random) {
            let secret = SecureBytes(count: X25519.keyLength) { random.fill($0) }
            // A 32-byte scalar always has a public key: scalarmult_base cannot fail here.
            self.init(validatedSecret: secret)
        }

        /// Restores a private key from its 32 raw bytes.
        /// - Throws: ``CryptoError/invalidKeyLength(expected:actual:)`` for any other length.
        public init<Bytes: Collection>(rawRepresentation bytes: Bytes) throws where Bytes.Element == UInt8 {
            guard bytes.count == X25519.keyLength else {
                throw CryptoError.invalidKeyLength(expected: X25519.keyLength, actual: bytes.count)
            }
            self.init(validatedSecret: SecureBytes(bytes))
        }

        private init(validatedSecret secret: SecureBytes) {
            self.secret = secret
            #if FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
                if let known = X25519FuzzingMemo.publicKey(of: secret) {
                    publicKey = PublicKey(checkedBytes: known)
                    return
                }
            #endif
            var publicBytes = [UInt8](filling: 0, count: X25519.keyLength)
            let result = secret.withUnsafeBytes { scalar in
                crypto_scalarmult_base(&publicBytes, scalar.sodiumPointer)
            }
            precondition(result == 0, "crypto_scalarmult_base failed on a 32-byte scalar")
            publicKey = PublicKey(checkedBytes: publicBytes)
            #if FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
                X25519FuzzingMemo.remember(publicKey: publicBytes, of: secret)
            #endif
        }

        /// The raw private scalar. Copies the secret into an unwiped array: only for explicit
        /// exports (key storage, test vectors).
        public var rawRepresentation: [UInt8] { secret.exportBytes() }

        /// Computes the shared secret with `peer`.
        /// - Throws: ``CryptoError/weakPublicKey`` when libsodium reports an all-zero result, which
        ///   happens exactly when the peer's key has small order.
        public func sharedSecret(with peer: PublicKey) throws -> SecureBytes {
            #if FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
                if let known = X25519FuzzingMemo.sharedSecret(of: secret, with: peer) {
                    guard let bytes = known else { throw CryptoError.weakPublicKey }
                    return SecureBytes(bytes)
                }
            #endif
            var failed = false
            let shared = SecureBytes(count: X25519.keyLength) { output in
                let result = secret.withUnsafeBytes { scalar in
                    crypto_scalarmult(
                        output.sodiumPointer, scalar.sodiumPointer,
                        peer.rawRepresentation)
                }
                failed = result != 0
            }
            #if FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
                X25519FuzzingMemo.remember(
                    sharedSecret: failed ? nil : shared.exportBytes(), of: secret, with: peer)
            #endif
            if failed { throw CryptoError.weakPublicKey }
            return shared
        }
    }
}
