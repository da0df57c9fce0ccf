import ProfileDropCrypto

/// A discovery token: the 16 random bytes a session sends in TOKEN and repeats in every RANGING
/// frame, so that the peer measures only the device it shares the channel with (PROTOCOL.md 3.1,
/// 6.4).
///
/// Kept as two integers rather than an array: one arrives in almost every packet of a session,
/// and is compared with the one held.
public struct DiscoveryToken: Hashable, Sendable, CustomStringConvertible {
    /// The first eight bytes, big-endian.
    private let high: UInt64
    /// The last eight bytes, big-endian.
    private let low: UInt64

    /// The encoded length in bytes.
    public static let length = WireConstants.tokenLength

    /// The token made of exactly ``length`` bytes.
    public init(_ bytes: some Collection<UInt8>) {
        precondition(bytes.count == Self.length, "a discovery token is \(Self.length) bytes")
        // Two loads when the bytes lie together (a slice of a parsed packet, in every RANGING frame):
        // sixteen byte reads, each bounds-checked, cost several times more.
        if let words = bytes.withContiguousStorageIfAvailable({ buffer in
            let raw = UnsafeRawBufferPointer(buffer)
            return (
                UInt64(bigEndian: raw.loadUnaligned(fromByteOffset: 0, as: UInt64.self)),
                UInt64(bigEndian: raw.loadUnaligned(fromByteOffset: 8, as: UInt64.self))
            )
        }) {
            self.high = words.0
            self.low = words.1
            return
        }
        var high: UInt64 = 0
        var low: UInt64 = 0
        for (index, byte) in bytes.enumerated() {
            if index < 8 { high = high << 8 | UInt64(byte) } else { low = low << 8 | UInt64(byte) }
        }
        self.high = high
        self.low = low
    }

    /// The 16 bytes.
    public var bytes: [UInt8] {
        var writer = ByteWriter(capacity: Self.length)
        encode(into: &writer)
        return writer.bytes
    }

    /// Lowercase hex.
    public var description: String { Hex.encode(bytes) }

    /// Appends the 16 bytes to `writer`.
    func encode(into writer: inout some ByteSink) {
        // One append of 16 bytes, not sixteen of one.
        withUnsafeBytes(of: (high.bigEndian, low.bigEndian)) { writer.writeBytes($0) }
    }
}

extension ByteReader {
    /// Reads a discovery token or throws ``ProtocolError/Code/truncated`` naming `field`.
    mutating func requireToken(_ field: @autoclosure () -> String) throws(ProtocolError) -> DiscoveryToken {
        DiscoveryToken(try requireSlice(field(), count: DiscoveryToken.length))
    }
}
