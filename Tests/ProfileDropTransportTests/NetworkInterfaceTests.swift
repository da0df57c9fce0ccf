import Testing

@testable import ProfileDropTransport

@Suite struct NetworkInterfaceTests {
    @Test func loopbackIsListedAndSelectableByName() throws {
        let all = try NetworkInterface.all()
        let loopback = try #require(all.first { $0.isLoopback })
        #expect(loopback.ipv4Addresses.contains(.loopback))
        #expect(loopback.canDiscover)
        let chosen = try NetworkInterface.select(names: [loopback.name, loopback.name], from: all)
        #expect(chosen.map(\.name) == [loopback.name])
    }

    @Test func theDefaultSelectionNeverIncludesLoopback() throws {
        let all = try NetworkInterface.all()
        if let chosen = try? NetworkInterface.select(names: [], from: all) {
            #expect(chosen.allSatisfy { !$0.isLoopback && $0.isUp && $0.supportsMulticast })
        }
    }

    @Test func unknownDownAndNonMulticastInterfacesAreRefusedWithTheirReason() {
        let fake = [
            NetworkInterface(
                name: "down0", index: 7, isUp: false, isLoopback: false, supportsMulticast: true,
                ipv4Addresses: [IPv4Address("192.0.2.1")!], ipv6LinkLocalAddresses: []),
            NetworkInterface(
                name: "p2p0", index: 8, isUp: true, isLoopback: false, supportsMulticast: false,
                ipv4Addresses: [IPv4Address("192.0.2.2")!], ipv6LinkLocalAddresses: []),
        ]
        let cases: [(String, TransportError.Code, String)] = [
            ("nope0", .interfaceNotFound, "no interface named 'nope0' (this machine has: down0, p2p0)"),
            ("down0", .interfaceUnusable, "interface 'down0' is down"),
            ("p2p0", .interfaceUnusable, "interface 'p2p0' does not support multicast"),
        ]
        for (name, code, message) in cases {
            #expect(throws: TransportError(code, message)) {
                try NetworkInterface.select(names: [name], from: fake)
            }
        }
        #expect(throws: TransportError.self) { try NetworkInterface.select(names: [], from: fake) }
    }

    @Test func addressesParseAndPrint() {
        #expect(IPv4Address("239.255.80.68")?.description == "239.255.80.68")
        #expect(IPv4Address("239.255.80.68")?.isMulticast == true)
        #expect(IPv4Address("256.1.1.1") == nil)
        #expect(IPv4Address("1.2.3") == nil)
        #expect(IPv4Address.loopback.isLoopback)
    }
}
