import ProfileDropCore
import Testing

@testable import ProfileDropTransport

@Suite struct IPv6AliasTableTests {
    func address(_ last: UInt8, port: UInt16 = 5000) -> SocketAddress {
        .ipv6(
            IPv6Address(bytes: [0xfe, 0x80] + [UInt8](repeating: 0, count: 13) + [last], scopeID: 3),
            port: port)
    }

    @Test func aliasesAreStableAndMapBack() throws {
        var table = IPv6AliasTable()
        let firstAlias = table.alias(for: address(1), at: .zero)
        let againAlias = table.alias(for: address(1), at: .zero)
        let secondAlias = table.alias(for: address(2), at: .zero)
        let first = try #require(firstAlias)
        let again = try #require(againAlias)
        let second = try #require(secondAlias)
        #expect(first == again)
        #expect(first != second)
        #expect(IPv6AliasTable.isAlias(first))
        #expect(!IPv6AliasTable.isAlias(PeerAddress(127, 0, 0, 1, port: 1)))
        #expect(table.address(for: first) == address(1))
        #expect(table.address(for: PeerAddress(ipv4: 0x00_00_99_99, port: 5000)) == nil)
    }

    /// The core limits unsolicited datagrams per source address: every port of one IPv6 address
    /// must come to it as one address, with the port kept.
    @Test func everyPortOfOneAddressSharesItsAlias() throws {
        var table = IPv6AliasTable()
        let aliases = (1...300).compactMap { table.alias(for: address(1, port: UInt16($0)), at: .zero) }
        #expect(aliases.count == 300)
        #expect(Set(aliases.map(\.ipv4)).count == 1)
        #expect(aliases.map(\.port) == (1...300).map { UInt16($0) })
        #expect(table.address(for: aliases[41]) == address(1, port: 42))
        #expect(table.alias(for: .ipv4(IPv4Address(0x7F00_0001), port: 1), at: .zero) == nil)
    }

    @Test func aFloodOfNewSourcesCannotEvictARecentPeer() throws {
        var table = IPv6AliasTable()
        let liveAlias = table.alias(for: address(0), at: .zero)
        let live = try #require(liveAlias)
        var accepted = 0
        for index in 1..<400 {
            let source = SocketAddress.ipv6(
                IPv6Address(
                    bytes: [0xfe, 0x80] + [UInt8](repeating: 0, count: 12) + [
                        UInt8(index >> 8), UInt8(index & 0xff),
                    ]),
                port: 1)
            if table.alias(for: source, at: .zero + .seconds(1)) != nil { accepted += 1 }
        }
        #expect(accepted == IPv6AliasTable.capacity - 1)
        #expect(table.address(for: live) == address(0))
        // Once the flood's entries are old, a new peer takes the least recently heard one's place.
        let later = Instant.zero + .seconds(30)
        _ = table.alias(for: address(0), at: later)
        let newcomer = table.alias(for: address(9, port: 7), at: later)
        #expect(newcomer != nil)
        #expect(table.address(for: live) == address(0))
    }
}
