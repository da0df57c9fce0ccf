import Glibc
import Testing

@testable import ProfileDropTransport

/// Real sockets, loopback only: every datagram here is sent to 127.0.0.1 or to a multicast group
/// with IP_MULTICAST_IF set to 127.0.0.1.
@Suite struct UDPSocketTests {
    static let group = IPv4Address("239.255.80.68")!

    /// A port unlikely to collide with a concurrent run: the kernel picks a free one, which we then reuse.
    func freePort() throws -> UInt16 {
        let probe = try UDPSocket(family: AF_INET)
        try probe.bind(to: .ipv4(.loopback, port: 0))
        return try probe.localAddress().port
    }

    func receive(_ socket: UDPSocket, within milliseconds: Int32 = 2000) throws -> (
        bytes: [UInt8], from: SocketAddress
    )? {
        var descriptor = pollfd(fd: socket.descriptor, events: Int16(POLLIN), revents: 0)
        guard poll(&descriptor, 1, milliseconds) == 1 else { return nil }
        return try socket.receive(limit: 1200)
    }

    @Test func unicastOnLoopbackCarriesTheBytesAndTheSource() throws {
        let receiver = try UDPSocket(family: AF_INET)
        try receiver.bind(to: .ipv4(.loopback, port: 0))
        let sender = try UDPSocket(family: AF_INET)
        try sender.bind(to: .ipv4(.loopback, port: 0))
        #expect(try sender.send([1, 2, 3], to: receiver.localAddress()))
        let got = try #require(try receive(receiver))
        #expect(got.bytes == [1, 2, 3])
        #expect(got.from == (try sender.localAddress()))
    }

    @Test func multicastOnLoopbackReachesEverySocketSharingThePort() throws {
        let port = try freePort()
        var members: [UDPSocket] = []
        for _ in 0..<2 {
            let member = try UDPSocket(family: AF_INET)
            try member.allowPortSharing()
            try member.bind(to: .ipv4(.any, port: port))
            try member.joinIPv4Group(Self.group, interfaceAddress: .loopback, interfaceName: "lo")
            try member.configureIPv4MulticastSending(interfaceAddress: .loopback)
            members.append(member)
        }
        #expect(try members[0].send(Array("beacon".utf8), to: .ipv4(Self.group, port: port)))
        for member in members {
            let got = try #require(try receive(member))
            #expect(got.bytes == Array("beacon".utf8))
        }
    }

    @Test func aTakenPortIsReportedAsSuch() throws {
        let first = try UDPSocket(family: AF_INET)
        try first.bind(to: .ipv4(.loopback, port: 0))
        let taken = try first.localAddress()
        let second = try UDPSocket(family: AF_INET)
        #expect(throws: TransportError.self) { try second.bind(to: taken) }
        do {
            try second.bind(to: taken)
        } catch let error as TransportError {
            #expect(error.code == .addressInUse)
            #expect(error.diagnostic.contains("port \(taken.port) is already in use"))
        }
    }

    @Test func oversizedDatagramsComeBackLongerThanTheLimit() throws {
        let receiver = try UDPSocket(family: AF_INET)
        try receiver.bind(to: .ipv4(.loopback, port: 0))
        let sender = try UDPSocket(family: AF_INET)
        try sender.send([UInt8](repeating: 7, count: 1500), to: receiver.localAddress())
        let got = try #require(try receive(receiver))
        #expect(got.bytes.count == 1201)
    }
}
