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

    /// One word into the hasher rather than two: the device's tables look addresses up on every
    /// input.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(UInt64(ipv4) << 16 | UInt64(port))
    }

    public static func < (lhs: PeerAddress, rhs: PeerAddress) -> Bool {
        (lhs.ipv4, lhs.port) < (rhs.ipv4, rhs.port)
    }

    /// `a.b.c.d:port`.
    public var description: String {
        // Written digit by digit into the string's own storage: a refused datagram's diagnostic
        // names its source, and in a crowd most of what a device hears is refused.
        String(unsafeUninitializedCapacity: 21) { buffer in
            var count = Self.writeHost(ipv4, into: buffer)
            buffer[count] = UInt8(ascii: ":")
            count += 1
            Self.writeDecimal(UInt32(port), into: buffer, at: &count)
            return count
        }
    }

    /// Writes the dotted host (at most 15 bytes) into `buffer`; returns its length.
    fileprivate static func writeHost(_ ipv4: UInt32, into buffer: UnsafeMutableBufferPointer<UInt8>) -> Int {
        var count = 0
        for shift in stride(from: UInt32(24), through: 0, by: -8) {
            if shift != 24 {
                buffer[count] = UInt8(ascii: ".")
                count += 1
            }
            writeDecimal((ipv4 >> shift) & 0xFF, into: buffer, at: &count)
        }
        return count
    }

    /// Writes `value` in decimal into `buffer` from `count` on, and advances `count`.
    fileprivate static func writeDecimal(
        _ value: UInt32, into buffer: UnsafeMutableBufferPointer<UInt8>, at count: inout Int
    ) {
        var divisor: UInt32 = 1
        while value / divisor >= 10 { divisor *= 10 }
        while divisor > 0 {
            buffer[count] = UInt8(ascii: "0") + UInt8(value / divisor % 10)
            count += 1
            divisor /= 10
        }
    }
}

extension PeerAddress: TextOutputStreamable {
    /// Writes ``description`` as two strings short enough to need no storage of their own (the
    /// host, then `:port`): an address interpolated into a diagnostic costs no allocation.
    public func write<Target: TextOutputStream>(to target: inout Target) {
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 16) { buffer in
            let hostLength = Self.writeHost(ipv4, into: buffer)
            target.write(
                String(decoding: UnsafeBufferPointer(rebasing: buffer[..<hostLength]), as: UTF8.self))
            buffer[0] = UInt8(ascii: ":")
            var count = 1
            Self.writeDecimal(UInt32(port), into: buffer, at: &count)
            target.write(String(decoding: UnsafeBufferPointer(rebasing: buffer[..<count]), as: UTF8.self))
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
