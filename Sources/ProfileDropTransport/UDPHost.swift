#if canImport(Glibc)
    import Glibc
#endif
import ProfileDropCore
import ProfileDropCrypto

/// Where discovery listens and how it sends.
public struct DiscoveryEndpoint: Sendable, Equatable {
    /// The IPv4 multicast group. Default 239.255.80.68: administratively scoped (RFC 2365), so
    /// routers at the site edge drop it; the last two octets spell "PD".
    public var ipv4Group: IPv4Address = IPv4Address(0xEFFF_5044)
    /// The IPv6 link-local group, ff02::5044.
    public var ipv6Group: IPv6Address = IPv6Address(bytes: [0xff, 0x02] + [UInt8](repeating: 0, count: 12) + [0x50, 0x44])
    /// The UDP port of the group. Default 47_544, unassigned by IANA.
    public var port: UInt16 = 47_544

    public init() {}
}

/// Drops, duplicates and delays datagrams on purpose, for tests on loopback where netem is not
/// available. Decisions come from a seeded generator so that a failing run can be repeated.
public struct Impairment: Sendable, Equatable {
    /// Probability that an outgoing datagram is not sent.
    public var loss: Double = 0
    /// Probability that an outgoing datagram is sent twice.
    public var duplication: Double = 0
    /// Seed of the generator behind the decisions.
    public var seed: UInt64 = 1

    public init(loss: Double = 0, duplication: Double = 0, seed: UInt64 = 1) {
        self.loss = loss
        self.duplication = duplication
        self.seed = seed
    }

    /// Whether any impairment is configured.
    public var isActive: Bool { loss > 0 || duplication > 0 }
}

/// Puts a sans-IO ``Device`` on real UDP sockets: one socket per address family bound to the
/// discovery group's port and joined on every selected interface, one unicast socket for the
/// exchange, and a single-threaded `poll` loop that feeds the device datagrams and timer expiries
/// from the monotonic clock.
public final class UDPHost {
    /// Counts of what the host did, beside the device's own counters.
    public struct Statistics: Sendable, Equatable {
        public var datagramsSent = 0
        public var datagramsReceived = 0
        public var sendFailures = 0
        public var impairedDrops = 0
        public var nonIPv4Dropped = 0
    }

    /// The address our unicast socket is bound to, as the core names it.
    public let localAddress: PeerAddress
    /// The interfaces in use.
    public let interfaces: [NetworkInterface]
    public private(set) var statistics = Statistics()

    private let endpoint: DiscoveryEndpoint
    private let discoverySocket: UDPSocket
    private let unicastSocket: UDPSocket
    private let impairment: Impairment
    private var impairmentRandom: DeterministicRandom

    /// The largest datagram the protocol sends; anything longer is passed on truncated to one byte
    /// more, so that the core rejects it as oversized.
    public static let receiveLimit = 1200

    /// Opens and configures the sockets.
    /// - Throws: ``TransportError`` with a specific code: port in use, permission denied, or a
    ///   socket call that failed.
    public init(interfaces: [NetworkInterface], endpoint: DiscoveryEndpoint = DiscoveryEndpoint(), impairment: Impairment = Impairment()) throws {
        precondition(!interfaces.isEmpty, "the caller selects at least one interface")
        self.interfaces = interfaces
        self.endpoint = endpoint
        self.impairment = impairment
        // Its own stream, so that impairing a run does not change what the device draws.
        self.impairmentRandom = DeterministicRandom(seed: impairment.seed)

        let discovery = try UDPSocket(family: AF_INET)
        try discovery.allowPortSharing()
        try discovery.bind(to: .ipv4(.any, port: endpoint.port))
        for interface in interfaces {
            guard let address = interface.ipv4Addresses.first else { continue }
            try discovery.joinIPv4Group(endpoint.ipv4Group, interfaceAddress: address, interfaceName: interface.name)
        }
        discoverySocket = discovery

        // With one interface the unicast socket is bound to its address, so that nothing of the
        // exchange can leave through another interface.
        let unicast = try UDPSocket(family: AF_INET)
        let bindAddress = interfaces.count == 1 ? interfaces[0].ipv4Addresses.first ?? .any : .any
        try unicast.bind(to: .ipv4(bindAddress, port: 0))
        try unicast.configureIPv4MulticastSending(interfaceAddress: interfaces[0].ipv4Addresses.first ?? .loopback)
        unicastSocket = unicast
        let bound = try unicast.localAddress()
        let announced = bindAddress == .any ? interfaces[0].ipv4Addresses.first ?? .loopback : bindAddress
        localAddress = PeerAddress(ipv4: announced.value, port: bound.port)
    }

    /// Sends everything the device has queued.
    public func flush(_ device: inout some HostedDevice) throws {
        while let datagram = device.pollTransmit() {
            try send(datagram)
        }
    }

    private func send(_ datagram: OutgoingDatagram) throws {
        var copies = 1
        if impairment.isActive {
            if impairmentRandom.unitDouble() < impairment.loss {
                statistics.impairedDrops += 1
                return
            }
            if impairmentRandom.unitDouble() < impairment.duplication { copies = 2 }
        }
        for _ in 0..<copies {
            switch datagram.destination {
            case .multicast:
                // Multicast leaves through each selected interface in turn.
                for interface in interfaces {
                    guard let address = interface.ipv4Addresses.first else { continue }
                    if interfaces.count > 1 { try unicastSocket.configureIPv4MulticastSending(interfaceAddress: address) }
                    record(try unicastSocket.send(datagram.bytes, to: .ipv4(endpoint.ipv4Group, port: endpoint.port)))
                }
            case .unicast(let peer):
                record(try unicastSocket.send(datagram.bytes, to: .ipv4(IPv4Address(peer.ipv4), port: peer.port)))
            }
        }
    }

    private func record(_ sent: Bool) {
        if sent { statistics.datagramsSent += 1 } else { statistics.sendFailures += 1 }
    }

    /// Waits until a datagram arrives, `extraDescriptor` becomes readable, or `deadline` passes,
    /// whichever is first, and hands every waiting datagram to the device.
    /// - Returns: whether `extraDescriptor` is readable.
    @discardableResult
    public func wait(
        for device: inout some HostedDevice, until deadline: Instant, clock: MonotonicClock, extraDescriptor: Int32? = nil
    ) throws -> Bool {
        let now = clock.now
        let remaining = deadline > now ? (deadline - now).nanosecondsClamped : 0
        // Round up so that we never wake a hair before the deadline and spin.
        let milliseconds = Int32(clamping: (remaining + 999_999) / 1_000_000)
        var descriptors = [
            pollfd(fd: discoverySocket.descriptor, events: Int16(POLLIN), revents: 0),
            pollfd(fd: unicastSocket.descriptor, events: Int16(POLLIN), revents: 0),
        ]
        if let extraDescriptor { descriptors.append(pollfd(fd: extraDescriptor, events: Int16(POLLIN), revents: 0)) }
        let ready = poll(&descriptors, nfds_t(descriptors.count), milliseconds)
        if ready < 0 {
            if errno == EINTR { return false }
            throw UDPSocket.error("poll failed")
        }
        for socket in [discoverySocket, unicastSocket] {
            // Bounded per wake-up, so that a flood on one socket cannot starve timers or the other socket.
            for _ in 0..<64 {
                guard let (bytes, source) = try socket.receive(limit: Self.receiveLimit) else { break }
                statistics.datagramsReceived += 1
                guard case .ipv4(let address, let port) = source else {
                    statistics.nonIPv4Dropped += 1
                    continue
                }
                device.handleDatagram(bytes, from: PeerAddress(ipv4: address.value, port: port), at: clock.now)
            }
        }
        return descriptors.count > 2 && descriptors[2].revents & Int16(POLLIN) != 0
    }
}

/// What ``UDPHost`` needs of a device: somewhere to put received datagrams and a queue to drain.
/// `Device` has both; wrappers such as a capturing device forward them.
public protocol HostedDevice {
    /// Hands the device one received datagram.
    mutating func handleDatagram(_ bytes: [UInt8], from source: PeerAddress, at time: Instant)
    /// The next datagram the device wants sent, if any.
    mutating func pollTransmit() -> OutgoingDatagram?
}

extension Device: HostedDevice {}
