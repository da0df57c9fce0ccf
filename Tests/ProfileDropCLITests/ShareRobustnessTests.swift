import Foundation
import Glibc
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
}
