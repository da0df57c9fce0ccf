import Foundation
import Glibc
import ProfileDropCore
import Testing

/// The BEACON reflection against a real `share` process on loopback (PROTOCOL.md 5, "Return
/// routability"; 11.6 item 8): a socket on 127.0.0.1 stands for the victim of a spoofed BEACON.
/// It announces fresh device ids naming its own port, as a spoofer would name the victim's, and
/// counts every byte the device sends it. Under wire version 2 the device sent each id up to nine
/// 144-byte INVITEs (about 48 times the BEACON's bytes); now an unproven address gets only PROBEs,
/// paid by the bytes that came from it.
@Suite struct ReflectionOnLoopbackTests {
    /// BEACONs sent: two a second for 6 s.
    static let beacons = 12

    @Test func aBeaconCostsItsSourceNoMoreThanItsOwnBytes() throws {
        let port = freeUDPPort()
        let pair = try SharingPair(port: port, timeout: 12)
        let device = try ToolProcess(pair.arguments(0))
        defer { _ = device.finish() }

        let victim = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        defer { close(victim) }
        let victimPort = try #require(bind(victim, to: socketAddress(ipv4: 0x7F00_0001)))
        var interface = in_addr(s_addr: UInt32(0x7F00_0001).bigEndian)
        setsockopt(
            victim, Int32(IPPROTO_IP), IP_MULTICAST_IF, &interface, socklen_t(MemoryLayout<in_addr>.size))
        var timeout = timeval(tv_sec: 0, tv_usec: 20_000)
        setsockopt(victim, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        let group = socketAddress(ipv4: 0xEFFF_5044, port: port)

        // Let the device open its sockets and join the group first.
        usleep(500_000)
        var generator = SystemRandomNumberGenerator()
        var sent = 0
        var received = 0
        var types: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 1500)
        func drain(for duration: Duration) {
            let end = ContinuousClock.now + duration
            while ContinuousClock.now < end {
                let count = recv(victim, &buffer, buffer.count, 0)
                guard count > 0 else { continue }
                received += count
                if count > 3 { types.append(buffer[3]) }
            }
        }
        for _ in 0..<Self.beacons {
            let beacon = Packet.beacon(
                Beacon(
                    deviceID: DeviceID(rawValue: generator.next()), port: victimPort, busy: false,
                    sequence: UInt32.random(in: 0..<(1 << 31), using: &generator))
            ).encoded()
            send(beacon, from: victim, to: group)
            sent += beacon.count
            drain(for: .milliseconds(500))
        }
        // The retransmissions of the last invitations, had there been any.
        drain(for: .seconds(3))

        #expect(
            received <= sent,
            "the device sent the BEACONs' source \(received) bytes for its \(sent) (types \(Set(types).sorted()))"
        )
        // The device did hear the BEACONs and wanted to invite their ids: it asked the address to
        // prove it receives, and sent nothing else there.
        #expect(types.contains(PacketType.probe.rawValue), "no PROBE reached the source: \(types)")
        #expect(types.allSatisfy { $0 == PacketType.probe.rawValue }, "types sent: \(Set(types).sorted())")
    }
}
