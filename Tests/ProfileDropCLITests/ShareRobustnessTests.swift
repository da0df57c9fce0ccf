import Foundation
import Glibc
import ProfileDropCore
import Testing

@testable import ProfileDropCLI

/// Hostile traffic at two pairing processes on loopback: garbage, truncated, oversized and forged
/// datagrams are dropped and counted, and the honest pair still exchanges.
@Suite struct ShareRobustnessTests {
    /// Sends a bounded burst of bad datagrams to the discovery group on loopback: 300 datagrams
    /// spread over about 1.5 s.
    func flood(port: UInt16) {
        let descriptor = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        defer { close(descriptor) }
        var interface = in_addr(s_addr: UInt32(0x7f00_0001).bigEndian)
        setsockopt(
            descriptor, Int32(IPPROTO_IP), IP_MULTICAST_IF, &interface, socklen_t(MemoryLayout<in_addr>.size))
        var destination = sockaddr_in()
        destination.sin_family = sa_family_t(AF_INET)
        destination.sin_port = port.bigEndian
        destination.sin_addr.s_addr = UInt32(0xEFFF_5044).bigEndian
        var generator = SystemRandomNumberGenerator()
        for index in 0..<300 {
            let payload: [UInt8]
            switch index % 4 {
            case 0:
                payload = (0..<Int.random(in: 1...200, using: &generator)).map { _ in
                    UInt8.random(in: 0...255, using: &generator)
                }
            case 1: payload = [0x50, 0x44]  // the magic, then nothing
            case 2: payload = [UInt8](repeating: 0x41, count: 1400)  // oversized
            default:
                payload =
                    [0x50, 0x44, 0x01] + (0..<60).map { _ in UInt8.random(in: 0...255, using: &generator) }
            }
            _ = payload.withUnsafeBytes { bytes in
                withUnsafePointer(to: &destination) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                        sendto(
                            descriptor, bytes.baseAddress, bytes.count, 0, $0,
                            socklen_t(MemoryLayout<sockaddr_in>.size))
                    }
                }
            }
            usleep(5_000)
        }
    }

    @Test func garbageIsDroppedAndCountedWhileThePairExchanges() throws {
        let directory = try TestPaths.temporaryDirectory()
        let cards = [ShareCommandTests.bori, ShareCommandTests.max].enumerated().map { index, text in
            let path = directory.appendingPathComponent("card\(index).json").path
            try? text.write(toFile: path, atomically: true, encoding: .utf8)
            return path
        }
        let port = freeUDPPort()
        func arguments(_ index: Int) -> [String] {
            [
                "share", "--profile", cards[index], "--interface", "lo", "--port", String(port), "--verbose",
                "--timeout", "20", "--yes", "--key-file",
                directory.appendingPathComponent("key\(index)").path,
                "--known-peers", directory.appendingPathComponent("peers\(index)").path,
            ]
        }
        let a = try ToolProcess(arguments(0))
        flood(port: port)
        let b = try ToolProcess(arguments(1))
        let first = a.finish()
        let second = b.finish()
        #expect(first.code == 0, "\(first.output.suffix(3)) \(first.errors)")
        #expect(second.code == 0, "\(second.output.suffix(3)) \(second.errors)")
        let counters = try #require(first.errors.last { $0.hasPrefix("datagrams: ") })
        // Most of the flood reached the first device before its peer even started.
        let afterDropped = try #require(counters.range(of: "dropped ")).upperBound
        let count = Int(counters[afterDropped...].prefix { $0.isNumber }) ?? 0
        #expect(count >= 200, "\(counters)")
        #expect(counters.contains("oversized"))
    }

    /// A free port in the range kept for these tests, 47900–47999, so that the discovery group of
    /// one test never mixes with another's.
    static func privatePort() -> UInt16 {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<100 {
            let candidate = UInt16.random(in: 47900...47999, using: &generator)
            let descriptor = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
            defer { close(descriptor) }
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = candidate.bigEndian
            let bound = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
            if bound == 0 { return candidate }
        }
        return freeUDPPort()
    }

    /// The hijack of PROTOCOL.md 11.6 item 6: while two processes pair, a forger announces each of
    /// their ids, as soon as it has heard it, for a dead port, ten times a second (version 2 before
    /// this rule let a BEACON for a known id move its address, and 9 a second stopped all pairing).
    /// The address first heard for an id stays, so they still exchange; the forgeries are counted as
    /// conflicts. The forger sends at most 200 datagrams over at most 20 s.
    @Test func forgedBeaconsForTheirIdsDoNotStopAPairing() throws {
        let directory = try TestPaths.temporaryDirectory()
        let cards = [ShareCommandTests.bori, ShareCommandTests.max].enumerated().map { index, text in
            let path = directory.appendingPathComponent("card\(index).json").path
            try? text.write(toFile: path, atomically: true, encoding: .utf8)
            return path
        }
        let port = Self.privatePort()
        let forger = try Forger(port: port)
        func arguments(_ index: Int) -> [String] {
            [
                "share", "--profile", cards[index], "--interface", "lo", "--port", String(port), "--verbose",
                "--timeout", "40", "--yes", "--key-file",
                directory.appendingPathComponent("key\(index)").path,
                "--known-peers", directory.appendingPathComponent("peers\(index)").path,
            ]
        }
        let a = try ToolProcess(arguments(0))
        // The forger learns the first device's id from its first beacon, and starts at once: the
        // second device, started now, may hear a forgery for it before the real thing.
        for _ in 0..<50 where forger.ids.isEmpty {
            forger.learn()
            usleep(20_000)
        }
        #expect(forger.ids.count == 1)
        let b = try ToolProcess(arguments(1))
        let started = Date()
        while forger.sent < 200, Date().timeIntervalSince(started) < 20,
            a.process.isRunning || b.process.isRunning
        {
            forger.learn()
            forger.forge()
            usleep(100_000)
        }
        let first = a.finish()
        let second = b.finish()
        #expect(forger.ids.count == 2, "the forger heard both devices")
        #expect(first.code == 0, "\(first.output.suffix(3)) \(first.errors.suffix(3))")
        #expect(second.code == 0, "\(second.output.suffix(3)) \(second.errors.suffix(3))")
        let counters = [first, second].compactMap { $0.errors.last { $0.hasPrefix("datagrams: ") } }
        #expect(counters.count == 2)
        #expect(counters.contains { $0.contains("conflict") }, "\(counters)")
    }
}

/// The forger of the hijack test: it listens to the discovery group on loopback, learns each
/// device id from its first BEACON, and announces that id for its own port, where nobody will
/// ever answer an INVITE. The sending socket's port is the one the forged BEACONs name, so they
/// pass the port check and only the conflict rule stands in their way.
private final class Forger {
    let listener: Int32
    let sender: Int32
    let port: UInt16
    let deadPort: UInt16
    private(set) var ids: [UInt64] = []
    private(set) var sent = 0

    init(port: UInt16) throws {
        self.port = port
        let listener = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        let sender = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        self.listener = listener
        self.sender = sender
        var one: Int32 = 1
        setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        setsockopt(listener, SOL_SOCKET, SO_REUSEPORT, &one, socklen_t(MemoryLayout<Int32>.size))
        var any = sockaddr_in()
        any.sin_family = sa_family_t(AF_INET)
        any.sin_port = port.bigEndian
        let bound = withUnsafePointer(to: &any) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(listener, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        var membership = ip_mreq(
            imr_multiaddr: in_addr(s_addr: UInt32(0xEFFF_5044).bigEndian),
            imr_interface: in_addr(s_addr: UInt32(0x7F00_0001).bigEndian))
        let joined = setsockopt(
            listener, Int32(IPPROTO_IP), IP_ADD_MEMBERSHIP, &membership,
            socklen_t(MemoryLayout<ip_mreq>.size))
        _ = fcntl(listener, F_SETFL, fcntl(listener, F_GETFL) | O_NONBLOCK)
        var interface = in_addr(s_addr: UInt32(0x7F00_0001).bigEndian)
        setsockopt(
            sender, Int32(IPPROTO_IP), IP_MULTICAST_IF, &interface, socklen_t(MemoryLayout<in_addr>.size))
        var local = sockaddr_in()
        local.sin_family = sa_family_t(AF_INET)
        local.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafePointer(to: &local) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(sender, $0, length) }
        }
        _ = withUnsafeMutablePointer(to: &local) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(sender, $0, &length) }
        }
        deadPort = UInt16(bigEndian: local.sin_port)
        guard bound == 0, joined == 0, deadPort != 0 else {
            throw ProtocolError(.unexpectedMessage, "forger sockets: bind \(bound), join \(joined)")
        }
    }

    deinit {
        close(listener)
        close(sender)
    }

    /// Reads every BEACON waiting on the group and remembers ids not seen before.
    func learn() {
        var buffer = [UInt8](repeating: 0, count: 1500)
        while true {
            let count = recv(listener, &buffer, buffer.count, 0)
            guard count > 0 else { return }
            let bytes = Array(buffer.prefix(count))
            // Our own forgeries loop back too: they name the dead port.
            if case .beacon(let beacon) = try? Packet(datagram: bytes), beacon.port != deadPort,
                !ids.contains(beacon.deviceID.rawValue)
            {
                ids.append(beacon.deviceID.rawValue)
            }
        }
    }

    /// Announces the next learnt id (in turn) at the dead port, with a sequence number far ahead.
    func forge() {
        guard !ids.isEmpty else { return }
        let id = ids[sent % ids.count]
        let beacon = Packet.beacon(
            Beacon(
                deviceID: DeviceID(rawValue: id), port: deadPort, busy: false,
                sequence: 0xF000_0000 + UInt32(sent))
        ).encoded()
        var destination = sockaddr_in()
        destination.sin_family = sa_family_t(AF_INET)
        destination.sin_port = port.bigEndian
        destination.sin_addr.s_addr = UInt32(0xEFFF_5044).bigEndian
        _ = beacon.withUnsafeBytes { bytes in
            withUnsafePointer(to: &destination) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    sendto(
                        sender, bytes.baseAddress, bytes.count, 0, $0,
                        socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
        }
        sent += 1
    }
}
