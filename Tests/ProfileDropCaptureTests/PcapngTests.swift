import ProfileDropCapture
import ProfileDropCore
import Testing

struct PcapngTests {
    static func sampleBlocks() -> [PcapngBlock] {
        let frame = IPv4UDP.frame(
            [0x50, 0x44, 1, 1, 9, 9, 9], from: PeerAddress(10, 0, 0, 1, port: 5000),
            to: PeerAddress(239, 255, 80, 68, port: 47_544))
        return [
            .interface(PcapngInterface(name: "profiledrop:a", description: "first")),
            .interface(PcapngInterface(name: "b", timestampExponent: 6)),
            .packet(
                PcapngPacket(
                    interfaceID: 0, timestamp: 1_767_225_600_123_456_789, data: frame, direction: .outbound)),
            .packet(PcapngPacket(interfaceID: 1, timestamp: 42, data: [1, 2, 3], direction: .inbound)),
            .packet(PcapngPacket(interfaceID: 1, timestamp: 43, data: [], direction: .unknown)),
            .custom(PcapngCustomBlock(enterpriseNumber: 32473, data: [0, 0, 0, 1, 7, 0, 0, 0])),
            .custom(PcapngCustomBlock(enterpriseNumber: 9, data: [1, 2, 3, 4], copyable: false)),
            .secrets(PcapngSecrets(secretsType: 0x5044_4B4C, data: [9, 8, 7, 6, 5])),
            .other(type: 0x0000_0005, body: [1, 2, 3, 4, 5, 6, 7, 8]),
        ]
    }

    static func sampleFile() -> [UInt8] {
        var writer = PcapngWriter(userApplication: "tests")
        for block in sampleBlocks() { writer.append(block) }
        return writer.bytes
    }

    @Test func writerAndReaderRoundTrip() throws {
        let blocks = try PcapngReader.read(Self.sampleFile())
        #expect(blocks.first == .section(PcapngSection(userApplication: "tests")))
        // Secrets lose their padding on the way back; everything else is returned as written.
        var expected = [PcapngBlock.section(PcapngSection(userApplication: "tests"))] + Self.sampleBlocks()
        expected[8] = .secrets(PcapngSecrets(secretsType: 0x5044_4B4C, data: [9, 8, 7, 6, 5]))
        #expect(blocks == expected)
    }

    @Test func blocksAreWordAligned() throws {
        let bytes = Self.sampleFile()
        #expect(bytes.count % 4 == 0)
        #expect(Array(bytes[0..<4]) == [0x0A, 0x0D, 0x0D, 0x0A])
        #expect(Array(bytes[8..<12]) == [0x4D, 0x3C, 0x2B, 0x1A])  // little-endian byte-order magic
    }

    @Test func readsBigEndianSections() throws {
        // A big-endian section header with one interface, written by hand.
        var bytes: [UInt8] = [0x0A, 0x0D, 0x0D, 0x0A, 0, 0, 0, 28, 0x1A, 0x2B, 0x3C, 0x4D, 0, 1, 0, 0]
        bytes += [UInt8](repeating: 0xFF, count: 8) + [0, 0, 0, 28]
        bytes += [0, 0, 0, 1, 0, 0, 0, 20, 0, 101, 0, 0, 0, 0, 0, 0, 0, 0, 0, 20]
        let blocks = try PcapngReader.read(bytes)
        #expect(
            blocks == [
                .section(PcapngSection(bigEndian: true)),
                .interface(PcapngInterface(linkType: 101, timestampExponent: 6)),
            ])
    }

    @Test func everyTruncationIsAnErrorOrAShorterFile() throws {
        let bytes = Self.sampleFile()
        let full = try PcapngReader.read(bytes)
        var boundaries = 0
        for length in 0..<bytes.count {
            do {
                let blocks = try PcapngReader.read(Array(bytes[0..<length]))
                // Only a cut exactly between blocks reads, as a prefix of the blocks.
                #expect(blocks.count < full.count && Array(full.prefix(blocks.count)) == blocks)
                boundaries += 1
            } catch {
                #expect(!error.diagnostic.isEmpty && !error.diagnostic.contains("\n"))
                #expect([.truncated, .notPcapng].contains(error.code), "\(length): \(error)")
            }
        }
        #expect(boundaries == full.count - 1)
    }

    @Test func malformedBlocksAreTypedErrors() {
        var bytes = Self.sampleFile()
        let trailer = bytes.count - 4
        bytes[trailer] ^= 0x04  // the trailing length of the last block no longer matches
        #expect(
            throws: CaptureError(.malformed, "block at offset \(bytes.count - 20): trailing length differs")
        ) {
            try PcapngReader.read(bytes)
        }
        #expect(throws: CaptureError.self) { try PcapngReader.read(Array("not a capture at all".utf8)) }
        var badMagic = Self.sampleFile()
        badMagic[8] = 0
        #expect(throws: CaptureError.self) { try PcapngReader.read(badMagic) }
        var badLength = Self.sampleFile()
        badLength[4] = 13  // not a multiple of 4
        #expect(throws: CaptureError.self) { try PcapngReader.read(badLength) }
    }

    @Test func overlongNamesAreCutToWhatAnOptionHolds() throws {
        // 30000 invalid bytes read as 30000 replacement characters: 90000 bytes of UTF-8.
        let name = String(decoding: [UInt8](repeating: 0xFF, count: 30_000), as: UTF8.self)
        var writer = PcapngWriter()
        writer.append(.interface(PcapngInterface(name: name)))
        let blocks = try PcapngReader.read(writer.bytes)
        guard case .interface(let interface) = blocks.last, let written = interface.name else {
            Issue.record("no interface read back")
            return
        }
        #expect(written.utf8.count <= 65_535 && written.utf8.count > 65_000)
        #expect(name.hasPrefix(written))
    }

    @Test func ipv4FramingHasValidChecksumsAndLengths() throws {
        let payload: [UInt8] = Array("PD payload of odd length".utf8)
        let source = PeerAddress(10, 0, 0, 1, port: 47_474)
        let destination = PeerAddress(10, 0, 0, 2, port: 5000)
        let packet = IPv4UDP.frame(payload, from: source, to: destination)
        #expect(packet.count == IPv4UDP.headerLength + payload.count)
        #expect(Int(packet[2]) << 8 | Int(packet[3]) == packet.count)
        #expect(Int(packet[24]) << 8 | Int(packet[25]) == payload.count + 8)
        let unframed = try #require(IPv4UDP.unframe(packet))
        #expect(
            unframed.source == source && unframed.destination == destination && unframed.payload == payload)
        var corrupted = packet
        corrupted[8] ^= 1  // TTL: the header checksum no longer holds
        #expect(IPv4UDP.unframe(corrupted) == nil)
        for length in 0..<packet.count { _ = IPv4UDP.unframe(Array(packet[0..<length])) }
    }
}
