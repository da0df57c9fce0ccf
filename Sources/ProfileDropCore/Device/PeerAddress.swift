/// A UDP endpoint as the transport reports it: an IPv4 address and a port.
///
/// The core never opens sockets; it only names endpoints. Ordering is by address, then port, so
/// tables keyed by address can be walked deterministically.
public struct PeerAddress: Hashable, Comparable, Sendable, CustomStringConvertible {
    /// The IPv4 address in host order (`0x7F000001` is 127.0.0.1).
    public var ipv4: UInt32
    /// The UDP port.
    public var port: UInt16

    /// Creates an address from an IPv4 value in host order and a port.
    public init(ipv4: UInt32, port: UInt16) {
        self.ipv4 = ipv4
        self.port = port
    }

    /// Creates an address from four octets and a port.
    public init(_ a: UInt8, _ b: UInt8, _ c: UInt8, _ d: UInt8, port: UInt16) {
        self.ipv4 = UInt32(a) << 24 | UInt32(b) << 16 | UInt32(c) << 8 | UInt32(d)
        self.port = port
    }

    public static func < (lhs: PeerAddress, rhs: PeerAddress) -> Bool {
        (lhs.ipv4, lhs.port) < (rhs.ipv4, rhs.port)
    }

    /// `a.b.c.d:port`.
    public var description: String {
        // Written digit by digit into the string's own storage: a refused datagram's diagnostic
        // names its source, and in a crowd most of what a device hears is refused.
        String(unsafeUninitializedCapacity: 21) { buffer in
            var count = 0
            func append(_ value: UInt32) {
                var divisor: UInt32 = 1
                while value / divisor >= 10 { divisor *= 10 }
                while divisor > 0 {
                    buffer[count] = UInt8(ascii: "0") + UInt8(value / divisor % 10)
                    count += 1
                    divisor /= 10
                }
            }
            for shift in stride(from: UInt32(24), through: 0, by: -8) {
                if shift != 24 {
                    buffer[count] = UInt8(ascii: ".")
                    count += 1
                }
                append((ipv4 >> shift) & 0xFF)
            }
            buffer[count] = UInt8(ascii: ":")
            count += 1
            append(UInt32(port))
            return count
        }
    }
}

/// Where an outgoing datagram goes.
public enum Destination: Hashable, Sendable, CustomStringConvertible {
    /// The ProfileDrop multicast group (the transport knows its address and port).
    case multicast
    /// One peer.
    case unicast(PeerAddress)

    public var description: String {
        switch self {
        case .multicast: "multicast"
        case .unicast(let address): address.description
        }
    }
}

/// A datagram the driver must send. Never longer than ``WireConstants/maxDatagramSize``.
public struct OutgoingDatagram: Sendable, Equatable {
    /// Where to send it.
    public var destination: Destination
    /// The UDP payload.
    public var bytes: [UInt8]

    /// Creates a datagram.
    public init(destination: Destination, bytes: [UInt8]) {
        self.destination = destination
        self.bytes = bytes
    }
}

/// A random identifier a device picks for one run and announces in its beacons. It is not linked to
/// the device's static key, so beacons do not track the user across runs.
public struct DeviceID: Hashable, Comparable, Sendable, CustomStringConvertible {
    /// The 64-bit value as it travels on the wire.
    public var rawValue: UInt64

    /// Wraps a wire value.
    public init(rawValue: UInt64) { self.rawValue = rawValue }

    public static func < (lhs: DeviceID, rhs: DeviceID) -> Bool { lhs.rawValue < rhs.rawValue }

    /// Sixteen lowercase hex digits.
    public var description: String {
        let hex = String(rawValue, radix: 16)
        return String(repeating: "0", count: 16 - hex.count) + hex
    }
}
