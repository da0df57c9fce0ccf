#if canImport(Glibc)
    import Glibc
#endif

/// A non-blocking UDP socket. Closed when released.
public final class UDPSocket {
    /// The file descriptor, for `poll`.
    public let descriptor: Int32
    /// The address family: `AF_INET` or `AF_INET6`.
    public let family: Int32

    /// Opens a socket of `family` (`AF_INET` or `AF_INET6`).
    public init(family: Int32) throws {
        let descriptor = socket(
            family, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue),
            0)
        guard descriptor >= 0 else { throw Self.error("cannot open a UDP socket") }
        self.descriptor = descriptor
        self.family = family
        if family == AF_INET6 {
            // Keep the IPv6 socket to IPv6 so that it can share the port with the IPv4 one.
            try setOption(Int32(IPPROTO_IPV6), IPV6_V6ONLY, Int32(1), "IPV6_V6ONLY")
        }
    }

    deinit { close(descriptor) }

    /// Lets several processes on this machine bind the same discovery port (both terminals of a
    /// one-machine demo), as mDNS responders do.
    public func allowPortSharing() throws {
        try setOption(SOL_SOCKET, SO_REUSEADDR, Int32(1), "SO_REUSEADDR")
        try setOption(SOL_SOCKET, SO_REUSEPORT, Int32(1), "SO_REUSEPORT")
    }

    /// Binds to `address`. Maps EADDRINUSE and EACCES to their own error codes.
    public func bind(to address: SocketAddress) throws {
        let result = address.withSockAddr { Glibc.bind(descriptor, $0, $1) }
        guard result == 0 else {
            switch errno {
            case EADDRINUSE:
                throw TransportError(
                    .addressInUse, "port \(address.port) is already in use by another program (\(address))")
            case EACCES, EPERM:
                throw TransportError(.permissionDenied, "permission denied binding \(address)")
            case EADDRNOTAVAIL:
                throw TransportError(
                    .addressNotAvailable, "cannot bind \(address): not an address of this machine")
            default:
                throw Self.error("cannot bind \(address)")
            }
        }
    }

    /// The address the socket is bound to (to learn an ephemeral port).
    public func localAddress() throws -> SocketAddress {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let result = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) }
        }
        guard result == 0, let address = SocketAddress(storage) else {
            throw Self.error("getsockname failed")
        }
        return address
    }

    /// Joins the IPv4 `group` on the interface that owns `interfaceAddress`.
    public func joinIPv4Group(_ group: IPv4Address, interfaceAddress: IPv4Address, interfaceName: String)
        throws
    {
        var request = ip_mreq(imr_multiaddr: group.inAddr, imr_interface: interfaceAddress.inAddr)
        try setOption(Int32(IPPROTO_IP), IP_ADD_MEMBERSHIP, &request, "joining \(group) on \(interfaceName)")
    }

    /// Joins the IPv6 `group` on the interface with `index`.
    public func joinIPv6Group(_ group: IPv6Address, interfaceIndex: UInt32, interfaceName: String) throws {
        var request = ipv6_mreq(ipv6mr_multiaddr: group.in6Addr, ipv6mr_interface: interfaceIndex)
        try setOption(
            Int32(IPPROTO_IPV6), IPV6_ADD_MEMBERSHIP, &request, "joining \(group) on \(interfaceName)")
    }

    /// Sends IPv4 multicast out of the interface that owns `address`, with TTL 1 (never routed),
    /// looped back so that other processes on this machine hear it.
    public func configureIPv4MulticastSending(interfaceAddress address: IPv4Address) throws {
        var interface = address.inAddr
        try setOption(Int32(IPPROTO_IP), IP_MULTICAST_IF, &interface, "IP_MULTICAST_IF \(address)")
        try setOption(Int32(IPPROTO_IP), IP_MULTICAST_TTL, Int32(1), "IP_MULTICAST_TTL")
        try setOption(Int32(IPPROTO_IP), IP_MULTICAST_LOOP, Int32(1), "IP_MULTICAST_LOOP")
    }

    /// Sends IPv6 multicast out of interface `index`, hop limit 1, looped back.
    public func configureIPv6MulticastSending(interfaceIndex index: UInt32) throws {
        try setOption(Int32(IPPROTO_IPV6), IPV6_MULTICAST_IF, index, "IPV6_MULTICAST_IF")
        try setOption(Int32(IPPROTO_IPV6), IPV6_MULTICAST_HOPS, Int32(1), "IPV6_MULTICAST_HOPS")
        try setOption(Int32(IPPROTO_IPV6), IPV6_MULTICAST_LOOP, Int32(1), "IPV6_MULTICAST_LOOP")
    }

    /// Sends one datagram. Returns false when the kernel has no room right now (EAGAIN) or the
    /// destination is unreachable: UDP is lossy and the protocol retransmits.
    @discardableResult
    public func send(_ bytes: [UInt8], to address: SocketAddress) throws -> Bool {
        let sent = bytes.withUnsafeBytes { buffer in
            address.withSockAddr { sendto(descriptor, buffer.baseAddress, buffer.count, 0, $0, $1) }
        }
        if sent >= 0 { return true }
        switch errno {
        case EAGAIN, EWOULDBLOCK, ENOBUFS, ECONNREFUSED, EHOSTUNREACH, ENETUNREACH, EINTR, EADDRNOTAVAIL,
            ENETDOWN:
            // Transient: a full queue, an unreachable peer, or an address still being configured.
            return false
        case EACCES, EPERM:
            throw TransportError(
                .permissionDenied, "permission denied sending to \(address) (a firewall rule?)")
        default:
            throw Self.error("cannot send to \(address)")
        }
    }

    /// Receives one datagram of at most `limit` bytes, or nil when none is waiting. Longer datagrams
    /// come back truncated to `limit + 1` bytes so that the caller can reject them as oversized.
    public func receive(limit: Int) throws -> (bytes: [UInt8], from: SocketAddress)? {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        var buffer = [UInt8](repeating: 0, count: limit + 1)
        let received = buffer.withUnsafeMutableBytes { bytes in
            withUnsafeMutablePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    recvfrom(descriptor, bytes.baseAddress, bytes.count, 0, $0, &length)
                }
            }
        }
        if received < 0 {
            switch errno {
            case EAGAIN, EWOULDBLOCK, EINTR, ECONNREFUSED: return nil
            default: throw Self.error("receive failed")
            }
        }
        guard let source = SocketAddress(storage) else { return nil }
        return (Array(buffer[0..<received]), source)
    }

    private func setOption<Value>(_ level: Int32, _ name: Int32, _ value: Value, _ what: String) throws {
        var copy = value
        try setOption(level, name, &copy, what)
    }

    /// `Value` is a plain C struct or integer (the option's own type), passed as its bytes.
    private func setOption<Value>(_ level: Int32, _ name: Int32, _ value: inout Value, _ what: String) throws
    {
        let result = withUnsafeBytes(of: &value) { bytes in
            setsockopt(descriptor, level, name, bytes.baseAddress, socklen_t(bytes.count))
        }
        guard result == 0 else {
            if errno == EACCES || errno == EPERM {
                throw TransportError(.permissionDenied, "permission denied: \(what)")
            }
            throw Self.error(what)
        }
    }

    static func error(_ what: String) -> TransportError {
        TransportError(.socketFailure, "\(what): \(String(cString: strerror(errno)))")
    }
}
