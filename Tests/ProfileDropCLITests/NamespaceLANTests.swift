import Foundation
import Testing

@testable import ProfileDropCLI

/// A real two-host LAN: two network namespaces joined by a veth pair, one `share` process in each.
/// Traffic stays on the veth link inside namespaces this test creates and deletes.
@Suite struct NamespaceLANTests {
    /// Why the test cannot run here, or nil when it can.
    static var skipReason: String? {
        if getuid() != 0 { return "not root" }
        if !FileManager.default.isExecutableFile(atPath: "/usr/sbin/ip")
            && !FileManager.default.isExecutableFile(atPath: "/sbin/ip")
            && !FileManager.default.isExecutableFile(atPath: "/usr/bin/ip")
        {
            return "the 'ip' command (iproute2) is missing"
        }
        return nil
    }

    struct Namespaces {
        let names: (String, String)
        let interfaces: (String, String)

        /// - Parameter ipv4: give the link IPv4 addresses; without, only IPv6 link-local ones exist.
        init(ipv4: Bool) throws {
            // Short unique names: interface names are limited to 15 characters.
            let tag = String(UInt32.random(in: 0...0xFFFFF), radix: 16)
            names = ("pdns-a-\(tag)", "pdns-b-\(tag)")
            interfaces = ("pdva\(tag)", "pdvb\(tag)")
            let subnet = "10.\(77 + Int.random(in: 0...100)).\(Int.random(in: 0...250))"
            var steps = [
                ["netns", "add", names.0], ["netns", "add", names.1],
                ["link", "add", interfaces.0, "type", "veth", "peer", "name", interfaces.1],
                ["link", "set", interfaces.0, "netns", names.0],
                ["link", "set", interfaces.1, "netns", names.1],
                // Link-local addresses are usable at once, without duplicate address detection.
                ["netns", "exec", names.0, "sysctl", "-qw", "net.ipv6.conf.\(interfaces.0).accept_dad=0"],
                ["netns", "exec", names.1, "sysctl", "-qw", "net.ipv6.conf.\(interfaces.1).accept_dad=0"],
            ]
            if ipv4 {
                steps += [
                    ["-n", names.0, "addr", "add", "\(subnet).1/24", "dev", interfaces.0],
                    ["-n", names.1, "addr", "add", "\(subnet).2/24", "dev", interfaces.1],
                ]
            }
            steps += [
                ["-n", names.0, "link", "set", interfaces.0, "up"],
                ["-n", names.1, "link", "set", interfaces.1, "up"],
            ]
            for step in steps {
                guard Self.ip(step) == 0 else {
                    delete()
                    throw SetupError(step: step.joined(separator: " "))
                }
            }
            // The kernel adds the IPv6 link-local addresses when the link comes up; wait for both.
            for _ in 0..<50
            where !(hasLinkLocal(names.0, interfaces.0) && hasLinkLocal(names.1, interfaces.1)) {
                usleep(100_000)
            }
        }

        private func hasLinkLocal(_ namespace: String, _ interface: String) -> Bool {
            let process = Process()
            let pipe = Pipe()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            process.arguments = [
                "ip", "-n", namespace, "-6", "addr", "show", "dev", interface, "scope", "link",
            ]
            process.standardOutput = pipe
            process.standardError = FileHandle.nullDevice
            guard (try? process.run()) != nil else { return false }
            let output = pipe.fileHandleForReading.readDataToEndOfFile()
            process.waitUntilExit()
            let text = String(decoding: output, as: UTF8.self)
            return text.contains("fe80") && !text.contains("tentative")
        }

        struct SetupError: Error, CustomStringConvertible {
            var step: String
            var description: String { "ip \(step) failed" }
        }

        func delete() {
            // Deleting a namespace removes its end of the veth pair, and with it the peer.
            _ = Self.ip(["netns", "del", names.0])
            _ = Self.ip(["netns", "del", names.1])
        }

        @discardableResult
        static func ip(_ arguments: [String]) -> Int32 {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            process.arguments = ["ip"] + arguments
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            guard (try? process.run()) != nil else { return -1 }
            process.waitUntilExit()
            return process.terminationStatus
        }
    }

    /// Dual-stack (IPv4 and IPv6 link-local side by side), and IPv6 link-local alone.
    @Test(
        .enabled(
            if: NamespaceLANTests.skipReason == nil, Comment(rawValue: NamespaceLANTests.skipReason ?? "")),
        arguments: [true, false])
    func twoHostsOnAVethLinkPairAndExchange(ipv4: Bool) throws {
        let namespaces = try Namespaces(ipv4: ipv4)
        defer { namespaces.delete() }
        let directory = try TestPaths.temporaryDirectory()
        let cards = [ShareCommandTests.bori, ShareCommandTests.max].enumerated().map { index, text in
            let path = directory.appendingPathComponent("card\(index).json").path
            try? text.write(toFile: path, atomically: true, encoding: .utf8)
            return path
        }
        func arguments(_ index: Int, _ interface: String) -> [String] {
            [
                "share", "--profile", cards[index], "--interface", interface, "--json", "--timeout", "20",
                "--yes", "--key-file", directory.appendingPathComponent("key\(index)").path,
                "--known-peers", directory.appendingPathComponent("peers\(index)").path,
            ]
        }
        let a = try ToolProcess(
            arguments(0, namespaces.interfaces.0),
            prefix: ["/usr/bin/env", "ip", "netns", "exec", namespaces.names.0])
        let b = try ToolProcess(
            arguments(1, namespaces.interfaces.1),
            prefix: ["/usr/bin/env", "ip", "netns", "exec", namespaces.names.1])
        let first = a.finish()
        let second = b.finish()
        #expect(first.code == 0, "ipv4=\(ipv4): \(first.errors)")
        #expect(second.code == 0, "\(second.errors)")
        #expect(first.output.last?.contains("\"reason\":\"exchanged\"") == true)
        #expect(first.output.last?.contains("\"name\":\"Max\"") == true)
        #expect(second.output.last?.contains("\"name\":\"Bori\"") == true)
    }
}
