import ProfileDropCore
import ProfileDropCrypto

/// Follows one replayed device's Noise handshakes from the outside and decrypts its SECURE
/// datagrams for the timeline.
///
/// The device's ephemeral private key is among the random bytes it drew while writing INVITE or
/// ACCEPT: the 32-byte window whose public key opens that message. With it and the static key the
/// ``HandshakeFollower`` runs the same handshake beside the device and splits the same transport
/// keys. Anything it cannot follow is simply left undecrypted; it never affects the replay's
/// verdict.
struct SessionDecryptor {
    private var follower: HandshakeFollower

    init(configuration: DeviceConfiguration) {
        follower = HandshakeFollower(configuration: configuration)
    }

    /// Notes a datagram the device received; returns its frames when it is a decryptable SECURE.
    mutating func received(_ bytes: [UInt8]) -> [Frame]? {
        guard let packet = try? Packet(datagram: bytes) else { return nil }
        if case .secure(let secure) = packet { return follower.frames(of: secure, outbound: false) }
        _ = follower.received(packet)
        return nil
    }

    /// Notes a datagram the device sent; `draws` are the random bytes it drew for the input that
    /// produced it. Returns its frames when it is a decryptable SECURE.
    mutating func sent(_ bytes: [UInt8], draws: ArraySlice<UInt8>) -> [Frame]? {
        guard let packet = try? Packet(datagram: bytes) else { return nil }
        if case .secure(let secure) = packet { return follower.frames(of: secure, outbound: true) }
        _ = follower.sent(packet, drawnKeys: Self.windows(of: draws))
        return nil
    }

    /// Every 32-byte window of `draws`, from each byte on: the recording does not say where one
    /// draw ends and the next begins. Lazy, so that the search stops at the key that matches.
    private static func windows(of draws: ArraySlice<UInt8>) -> some Sequence<ArraySlice<UInt8>> {
        let length = X25519.keyLength
        return stride(from: draws.startIndex, through: draws.endIndex - length, by: 1).lazy.map {
            draws[$0..<($0 + length)]
        }
    }
}
