#if canImport(Glibc)
    import Glibc
#endif

/// A network interface as the transport sees it: its flags and the addresses it can use.
public struct NetworkInterface: Hashable, Sendable {
    /// The kernel's name, such as `eth0` or `lo`.
    public var name: String
    /// The kernel's interface index, used for IPv6 scopes and multicast membership.
    public var index: UInt32
    /// Whether the interface is administratively up.
    public var isUp: Bool
    /// Whether this is the loopback interface.
    public var isLoopback: Bool
    /// Whether the interface advertises multicast support (IFF_MULTICAST).
    public var supportsMulticast: Bool
    /// Its IPv4 addresses, in ascending order.
    public var ipv4Addresses: [IPv4Address]
    /// Its IPv6 link-local addresses, in ascending order.
    public var ipv6LinkLocalAddresses: [IPv6Address]

    /// Whether discovery can run here: up, and multicast-capable or loopback (Linux delivers IPv4
    /// multicast on `lo` once `IP_MULTICAST_IF` names 127.0.0.1, though `lo` lacks IFF_MULTICAST).
    public var canDiscover: Bool {
        isUp && (supportsMulticast || isLoopback)
            && !(ipv4Addresses.isEmpty && ipv6LinkLocalAddresses.isEmpty)
    }

    /// Every interface on this machine, sorted by index.
    public static func all() throws -> [NetworkInterface] {
        var list: UnsafeMutablePointer<ifaddrs>?
        guard getifaddrs(&list) == 0, let first = list else {
            throw TransportError(
                .socketFailure, "cannot list network interfaces: \(String(cString: strerror(errno)))")
        }
        defer { freeifaddrs(list) }
        // Collected by name in first-seen order, never by iterating a dictionary.
        var order: [String] = []
        var byName: [String: NetworkInterface] = [:]
        var cursor: UnsafeMutablePointer<ifaddrs>? = first
        while let entry = cursor {
            cursor = entry.pointee.ifa_next
            let name = String(cString: entry.pointee.ifa_name)
            let flags = Int32(bitPattern: entry.pointee.ifa_flags)
            if byName[name] == nil {
                order.append(name)
                byName[name] = NetworkInterface(
                    name: name, index: if_nametoindex(name), isUp: flags & Int32(IFF_UP) != 0,
                    isLoopback: flags & Int32(IFF_LOOPBACK) != 0,
                    supportsMulticast: flags & Int32(IFF_MULTICAST) != 0, ipv4Addresses: [],
                    ipv6LinkLocalAddresses: [])
            }
            guard let address = entry.pointee.ifa_addr else { continue }
            switch Int32(address.pointee.sa_family) {
            case AF_INET:
                let ipv4 = address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) {
                    IPv4Address($0.pointee.sin_addr)
                }
                byName[name]?.ipv4Addresses.append(ipv4)
            case AF_INET6:
                let ipv6 = address.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) {
                    IPv6Address($0.pointee.sin6_addr, scopeID: $0.pointee.sin6_scope_id)
                }
                if ipv6.isLinkLocal { byName[name]?.ipv6LinkLocalAddresses.append(ipv6) }
            default:
                continue
            }
        }
        return order.compactMap { byName[$0] }.map { interface in
            var sorted = interface
            sorted.ipv4Addresses.sort()
            sorted.ipv6LinkLocalAddresses.sort { $0.bytes.lexicographicallyPrecedes($1.bytes) }
            return sorted
        }.sorted { $0.index < $1.index }
    }

    /// The interfaces to use: those named (in the order given), or by default every interface that
    /// is up, multicast-capable and not loopback.
    public static func select(names: [String], from available: [NetworkInterface]) throws
        -> [NetworkInterface]
    {
        if names.isEmpty {
            let chosen = available.filter { $0.canDiscover && !$0.isLoopback }
            guard !chosen.isEmpty else {
                throw TransportError(
                    .noInterface,
                    "no interface is up with multicast and an address; name one with --interface")
            }
            return chosen
        }
        var chosen: [NetworkInterface] = []
        for name in names where !chosen.contains(where: { $0.name == name }) {
            guard let interface = available.first(where: { $0.name == name }) else {
                let known = available.map(\.name).joined(separator: ", ")
                throw TransportError(
                    .interfaceNotFound, "no interface named '\(name)' (this machine has: \(known))")
            }
            guard interface.isUp else {
                throw TransportError(.interfaceUnusable, "interface '\(name)' is down")
            }
            guard interface.supportsMulticast || interface.isLoopback else {
                throw TransportError(.interfaceUnusable, "interface '\(name)' does not support multicast")
            }
            guard !interface.ipv4Addresses.isEmpty || !interface.ipv6LinkLocalAddresses.isEmpty else {
                throw TransportError(
                    .interfaceUnusable, "interface '\(name)' has no IPv4 or IPv6 link-local address")
            }
            chosen.append(interface)
        }
        return chosen
    }
}
