import ProfileDropCore

#if canImport(Glibc)
    import Glibc
#endif

/// Where discovery listens and how it sends.
public struct DiscoveryEndpoint: Sendable, Equatable {
    /// The IPv4 multicast group. Default 239.255.80.68: administratively scoped (RFC 2365), so
    /// routers at the site edge drop it; the last two octets spell "PD".
    public var ipv4Group: IPv4Address = IPv4Address(0xEFFF_5044)
    /// The IPv6 link-local group, ff02::5044.
    public var ipv6Group: IPv6Address = IPv6Address(
        bytes: [0xff, 0x02] + [UInt8](repeating: 0, count: 12) + [0x50, 0x44])
    /// The UDP port of the group. Default 47_544, unassigned by IANA.
    public var port: UInt16 = 47_544

    /// The defaults above.
    public init() {}
}

/// The UDP socket layer under a device: per address family, one socket bound to the discovery
/// group's port and joined on every selected interface, and one unicast socket for the exchange.
/// It opens, receives, sends and waits for readability; it holds no device. ``DeviceDriver`` runs a
/// device on it.
///
/// IPv6 runs beside IPv4 on every selected interface that has a link-local address and multicast:
/// beacons also go to ff02::5044, and peers heard over IPv6 are named to the core by an alias
/// address in 0.0.0.0/8 (a range no real peer sends from), which the host maps back when the core
/// replies. The core treats addresses as opaque, so it needs no IPv6 type of its own.
public final class UDPHost {
    /// Counts of what the host did, beside the device's own counters.
    public struct Statistics: Sendable, Equatable {
        /// Datagrams handed to the kernel.
        public var datagramsSent = 0
        /// Datagrams read from the sockets.
        public var datagramsReceived = 0
        /// Sends the kernel refused for a transient reason (full queue, unreachable peer).
        public var sendFailures = 0
        /// Datagrams from an address family or alias the host cannot map.
        public var unmappedDropped = 0
    }

    /// The address our unicast socket is bound to, as the core names it.
    public let localAddress: PeerAddress
    /// The interfaces in use.
    public let interfaces: [NetworkInterface]
    /// The interfaces on which IPv6 link-local discovery runs.
    public let ipv6Interfaces: [NetworkInterface]
    /// The selected interfaces that have an IPv4 address, in selection order.
    private let ipv4Interfaces: [NetworkInterface]
    /// What the host did so far.
    public private(set) var statistics = Statistics()

    private let endpoint: DiscoveryEndpoint
    private let discoverySocket: UDPSocket
    private let unicastSocket: UDPSocket
    private let discoverySocket6: UDPSocket?
    private let unicastSocket6: UDPSocket?
    private var aliases = IPv6AliasTable()
    /// The clock deadlines given to ``wait(until:alsoWatching:)`` are measured on.
    public let clock: MonotonicClock

    /// The largest datagram the protocol sends; anything longer is passed on truncated to one byte
    /// more, so that the core rejects it as oversized.
    public static let receiveLimit = 1200

    /// Opens and configures the sockets.
    /// - Parameters:
    ///   - unicastAddress: the local IPv4 address the exchange's socket binds to, the source of
    ///     everything the device sends over IPv4; nil takes the first interface's address (with one
    ///     interface) or any. Several devices on one host each take an address of their own (on
    ///     loopback 127.0.0.2, 127.0.0.3, …), as devices on a LAN each have one.
    ///   - clock: the clock of the deadlines given to ``wait(until:alsoWatching:)``.
    /// - Throws: ``TransportError`` with a specific code: port in use, permission denied, or a
    ///   socket call that failed.
    public init(
        interfaces: [NetworkInterface], endpoint: DiscoveryEndpoint = DiscoveryEndpoint(),
        unicastAddress: IPv4Address? = nil, clock: MonotonicClock = MonotonicClock()
    ) throws {
        precondition(!interfaces.isEmpty, "the caller selects at least one interface")
        self.clock = clock
        self.interfaces = interfaces
        self.endpoint = endpoint
        ipv4Interfaces = interfaces.filter { !$0.ipv4Addresses.isEmpty }

        let discovery = try UDPSocket(family: AF_INET)
        try discovery.allowPortSharing()
        try discovery.bind(to: .ipv4(.any, port: endpoint.port))
        for interface in ipv4Interfaces {
            guard let address = interface.ipv4Addresses.first else { continue }
            try discovery.joinIPv4Group(
                endpoint.ipv4Group, interfaceAddress: address, interfaceName: interface.name)
        }
        discoverySocket = discovery

        // With one interface the unicast socket is bound to its address, so that nothing of the
        // exchange can leave through another interface.
        let unicast = try UDPSocket(family: AF_INET)
        let firstIPv4 = ipv4Interfaces.first?.ipv4Addresses.first
        let bindAddress = unicastAddress ?? (interfaces.count == 1 ? firstIPv4 ?? .any : .any)
        try unicast.bind(to: .ipv4(bindAddress, port: 0))
        if let firstIPv4 { try unicast.configureIPv4MulticastSending(interfaceAddress: firstIPv4) }
        unicastSocket = unicast
        let port = try unicast.localAddress().port
        localAddress = PeerAddress(
            ipv4: (bindAddress == .any ? firstIPv4 ?? .any : bindAddress).value, port: port)

        // IPv6 shares the unicast port number, so that the port a beacon announces is right for
        // both families.
        let ipv6Candidates = interfaces.filter { $0.supportsMulticast && !$0.ipv6LinkLocalAddresses.isEmpty }
        var discovery6: UDPSocket?
        var unicast6: UDPSocket?
        if !ipv6Candidates.isEmpty {
            let listener = try UDPSocket(family: AF_INET6)
            try listener.allowPortSharing()
            try listener.bind(
                to: .ipv6(IPv6Address(bytes: [UInt8](repeating: 0, count: 16)), port: endpoint.port))
            for interface in ipv6Candidates {
                try listener.joinIPv6Group(
                    endpoint.ipv6Group, interfaceIndex: interface.index, interfaceName: interface.name)
            }
            let sender = try UDPSocket(family: AF_INET6)
            try sender.bind(to: .ipv6(IPv6Address(bytes: [UInt8](repeating: 0, count: 16)), port: port))
            discovery6 = listener
            unicast6 = sender
        }
        discoverySocket6 = discovery6
        unicastSocket6 = unicast6
        ipv6Interfaces = unicast6 == nil ? [] : ipv6Candidates
    }

    /// Where the unicast sockets listen, for people: the IPv4 address and port, and the IPv6
    /// link-local addresses that share the port.
    public var listeningDescription: String {
        var parts: [String] = []
        if localAddress.ipv4 != 0 || ipv6Interfaces.isEmpty { parts.append(localAddress.description) }
        for interface in ipv6Interfaces {
            for address in interface.ipv6LinkLocalAddresses {
                parts.append("[\(address)]:\(localAddress.port)")
            }
        }
        return parts.joined(separator: ", ")
    }

    /// The current time on ``clock``.
    public var now: Instant { clock.now }

    /// Sends one datagram: multicast through every selected interface in each family, unicast to
    /// its peer. A send the kernel refuses for a transient reason is counted, not thrown.
    public func send(_ datagram: OutgoingDatagram) throws {
        switch datagram.destination {
        case .multicast:
            // Multicast leaves through each selected interface in turn, in each family.
            for interface in ipv4Interfaces {
                guard let address = interface.ipv4Addresses.first else { continue }
                if ipv4Interfaces.count > 1 {
                    try unicastSocket.configureIPv4MulticastSending(interfaceAddress: address)
                }
                record(
                    try unicastSocket.send(datagram.bytes, to: .ipv4(endpoint.ipv4Group, port: endpoint.port))
                )
            }
            if let unicastSocket6 {
                for interface in ipv6Interfaces {
                    try unicastSocket6.configureIPv6MulticastSending(interfaceIndex: interface.index)
                    var group = endpoint.ipv6Group
                    group.scopeID = interface.index
                    record(try unicastSocket6.send(datagram.bytes, to: .ipv6(group, port: endpoint.port)))
                }
            }
        case .unicast(let peer):
            if IPv6AliasTable.isAlias(peer) {
                guard let unicastSocket6, let address = aliases.address(for: peer) else {
                    statistics.unmappedDropped += 1
                    return
                }
                record(try unicastSocket6.send(datagram.bytes, to: address))
            } else {
                record(
                    try unicastSocket.send(datagram.bytes, to: .ipv4(IPv4Address(peer.ipv4), port: peer.port))
                )
            }
        }
    }

    private func record(_ sent: Bool) {
        if sent { statistics.datagramsSent += 1 } else { statistics.sendFailures += 1 }
    }

    /// Waits until a socket or `descriptor` is readable or `deadline` (on ``clock``) passes,
    /// whichever is first. Receives nothing: ``receiveReady()`` reads what arrived.
    /// - Returns: whether `descriptor` is readable.
    public func wait(until deadline: Instant, alsoWatching descriptor: Int32?) throws -> Bool {
        let now = clock.now
        let remaining = deadline > now ? (deadline - now).nanosecondsClamped : 0
        // Round up so that we never wake a hair before the deadline and spin.
        let milliseconds = Int32(clamping: (remaining + 999_999) / 1_000_000)
        var descriptors = sockets.map { pollfd(fd: $0.descriptor, events: Int16(POLLIN), revents: 0) }
        if let descriptor {
            descriptors.append(pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0))
        }
        let ready = poll(&descriptors, nfds_t(descriptors.count), milliseconds)
        if ready < 0 {
            if errno == EINTR { return false }
            throw UDPSocket.error("poll failed")
        }
        return descriptor != nil && (descriptors.last?.revents ?? 0) & Int16(POLLIN) != 0
    }

    /// Reads every datagram waiting on the sockets, at most 64 per socket so that a flood on one
    /// cannot starve timers or the other sockets. Sources are named as the core names them.
    public func receiveReady() throws -> [ReceivedDatagram] {
        var received: [ReceivedDatagram] = []
        for socket in sockets {
            for _ in 0..<64 {
                guard let (bytes, source) = try socket.receive(limit: Self.receiveLimit) else { break }
                statistics.datagramsReceived += 1
                let peer: PeerAddress
                switch source {
                case .ipv4(let address, let port):
                    peer = PeerAddress(ipv4: address.value, port: port)
                case .ipv6:
                    guard let alias = aliases.alias(for: source, at: clock.now) else {
                        statistics.unmappedDropped += 1
                        continue
                    }
                    peer = alias
                }
                received.append(ReceivedDatagram(bytes: bytes, source: peer))
            }
        }
        return received
    }

    private var sockets: [UDPSocket] {
        [discoverySocket, unicastSocket] + [discoverySocket6, unicastSocket6].compactMap { $0 }
    }
}

extension UDPHost: DatagramSocketLayer {}

/// Stand-in IPv4 addresses for IPv6 peers, so that the core can name them. Aliases live in
/// 0.0.0.0/8, which never appears as a real source. One alias stands for one IPv6 address (with its
/// scope) whatever the port, which the core address keeps: the core limits unsolicited traffic per
/// source address, so a sender must not get a fresh address from each of its ports.
///
/// The table is bounded so that a flood of spoofed sources cannot grow it, and it never evicts a
/// peer heard within ``protectedFor``: a flood cannot push out a live session's peer. A new source
/// that finds the table full of recent peers is dropped instead.
struct IPv6AliasTable {
    static let capacity = 256
    /// As long as the core remembers a silent peer (its peer lifetime).
    static let protectedFor: Duration = .seconds(15)

    private struct Entry {
        var alias: UInt32
        var address: IPv6Address
        var lastHeard: Instant
    }

    private var entries: [Entry] = []
    private var nextAlias: UInt32 = 1

    static func isAlias(_ peer: PeerAddress) -> Bool { peer.ipv4 >> 24 == 0 && peer.ipv4 != 0 }

    /// The alias of `address` heard at `now`, creating one when it is new; nil when the table is
    /// full of peers heard recently.
    mutating func alias(for source: SocketAddress, at now: Instant) -> PeerAddress? {
        guard case .ipv6(let address, let port) = source else { return nil }
        if let index = entries.firstIndex(where: { $0.address == address }) {
            entries[index].lastHeard = now
            return PeerAddress(ipv4: entries[index].alias, port: port)
        }
        if entries.count >= Self.capacity {
            guard let oldest = entries.indices.min(by: { entries[$0].lastHeard < entries[$1].lastHeard }),
                entries[oldest].lastHeard + Self.protectedFor <= now
            else { return nil }
            entries.remove(at: oldest)
        }
        // Skip aliases still in use after the 2^24 - 1 values wrap.
        var alias = nextAlias
        while entries.contains(where: { $0.alias == alias }) { alias = alias >= 0x00FF_FFFF ? 1 : alias + 1 }
        nextAlias = alias >= 0x00FF_FFFF ? 1 : alias + 1
        entries.append(Entry(alias: alias, address: address, lastHeard: now))
        return PeerAddress(ipv4: alias, port: port)
    }

    /// The IPv6 address behind `peer`, if it is a known alias.
    func address(for peer: PeerAddress) -> SocketAddress? {
        guard let entry = entries.first(where: { $0.alias == peer.ipv4 }) else { return nil }
        return .ipv6(entry.address, port: peer.port)
    }
}
