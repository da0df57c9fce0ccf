#if canImport(Glibc)
    import Glibc
#endif

/// An IPv4 address, in host byte order.
public struct IPv4Address: Hashable, Comparable, Sendable, CustomStringConvertible {
    /// The 32-bit address, most significant byte first when written as a.b.c.d.
    public var value: UInt32

    /// Wraps a host-order value (`0x7F00_0001` is 127.0.0.1).
    public init(_ value: UInt32) { self.value = value }

    /// Parses dotted-quad text; nil for anything else.
    public init?(_ text: String) {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 4 else { return nil }
        var value: UInt32 = 0
        for part in parts {
            guard part.count <= 3, let octet = UInt8(part) else { return nil }
            value = value << 8 | UInt32(octet)
        }
        self.value = value
    }

    /// 127.0.0.1.
    public static let loopback = IPv4Address(0x7f00_0001)
    /// 0.0.0.0.
    public static let any = IPv4Address(0)

    /// Whether this is in 127.0.0.0/8.
    public var isLoopback: Bool { value >> 24 == 127 }
    /// Whether this is in 224.0.0.0/4.
    public var isMulticast: Bool { value >> 28 == 0xe }

    public static func < (lhs: IPv4Address, rhs: IPv4Address) -> Bool { lhs.value < rhs.value }

    public var description: String {
        "\(value >> 24).\(value >> 16 & 0xff).\(value >> 8 & 0xff).\(value & 0xff)"
    }

    var inAddr: in_addr { in_addr(s_addr: value.bigEndian) }

    init(_ address: in_addr) { value = UInt32(bigEndian: address.s_addr) }
}

/// An IPv6 address with its scope (interface index) for link-local use.
public struct IPv6Address: Hashable, Sendable, CustomStringConvertible {
    /// The 16 bytes in network order.
    public var bytes: [UInt8]
    /// The interface index for link-local addresses; 0 otherwise.
    public var scopeID: UInt32

    /// Wraps 16 network-order bytes; `scopeID` names the interface of a link-local address.
    public init(bytes: [UInt8], scopeID: UInt32 = 0) {
        precondition(bytes.count == 16, "an IPv6 address has 16 bytes")
        self.bytes = bytes
        self.scopeID = scopeID
    }

    /// Whether this is in fe80::/10.
    public var isLinkLocal: Bool { bytes[0] == 0xfe && bytes[1] & 0xc0 == 0x80 }

    public var description: String {
        var text = [UInt8](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        var address = in6_addr()
        withUnsafeMutableBytes(of: &address) { $0.copyBytes(from: bytes) }
        let printed = text.withUnsafeMutableBufferPointer { buffer in
            buffer.baseAddress!.withMemoryRebound(to: CChar.self, capacity: buffer.count) { pointer in
                inet_ntop(AF_INET6, &address, pointer, socklen_t(buffer.count)).map { String(cString: $0) }
            }
        }
        return (printed ?? "?") + (scopeID != 0 ? "%\(scopeID)" : "")
    }

    var in6Addr: in6_addr {
        var address = in6_addr()
        withUnsafeMutableBytes(of: &address) { $0.copyBytes(from: bytes) }
        return address
    }

    init(_ address: in6_addr, scopeID: UInt32) {
        var copy = address
        bytes = withUnsafeBytes(of: &copy) { Array($0) }
        self.scopeID = scopeID
    }
}

/// A UDP endpoint: an IPv4 or IPv6 address and a port.
public enum SocketAddress: Hashable, Sendable, CustomStringConvertible {
    /// An IPv4 address and port.
    case ipv4(IPv4Address, port: UInt16)
    /// An IPv6 address (with its scope) and port.
    case ipv6(IPv6Address, port: UInt16)

    /// The port.
    public var port: UInt16 {
        switch self {
        case .ipv4(_, let port), .ipv6(_, let port): return port
        }
    }

    public var description: String {
        switch self {
        case .ipv4(let address, let port): return "\(address):\(port)"
        case .ipv6(let address, let port): return "[\(address)]:\(port)"
        }
    }

    /// Calls `body` with this address as a `sockaddr` and its length.
    func withSockAddr<Result>(_ body: (UnsafePointer<sockaddr>, socklen_t) throws -> Result) rethrows
        -> Result
    {
        switch self {
        case .ipv4(let address, let port):
            var storage = sockaddr_in()
            storage.sin_family = sa_family_t(AF_INET)
            storage.sin_port = port.bigEndian
            storage.sin_addr = address.inAddr
            return try withUnsafePointer(to: &storage) {
                try $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    try body($0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
        case .ipv6(let address, let port):
            var storage = sockaddr_in6()
            storage.sin6_family = sa_family_t(AF_INET6)
            storage.sin6_port = port.bigEndian
            storage.sin6_addr = address.in6Addr
            storage.sin6_scope_id = address.scopeID
            return try withUnsafePointer(to: &storage) {
                try $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    try body($0, socklen_t(MemoryLayout<sockaddr_in6>.size))
                }
            }
        }
    }

    /// Decodes a `sockaddr_storage` filled in by the kernel; nil for families other than IPv4/IPv6.
    init?(_ storage: sockaddr_storage) {
        var copy = storage
        switch Int32(storage.ss_family) {
        case AF_INET:
            let address = withUnsafePointer(to: &copy) {
                $0.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { $0.pointee }
            }
            self = .ipv4(IPv4Address(address.sin_addr), port: UInt16(bigEndian: address.sin_port))
        case AF_INET6:
            let address = withUnsafePointer(to: &copy) {
                $0.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { $0.pointee }
            }
            self = .ipv6(
                IPv6Address(address.sin6_addr, scopeID: address.sin6_scope_id),
                port: UInt16(bigEndian: address.sin6_port))
        default:
            return nil
        }
    }
}
