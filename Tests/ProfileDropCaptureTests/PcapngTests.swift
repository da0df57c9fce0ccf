import ProfileDropCapture
import ProfileDropCore
import ProfileDropTestSupport
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

    // MARK: Read, then write: the same bytes

    /// Blocks at the edges of their fields, with options in each form a file may hold them:
    /// unknown codes, duplicates, invalid UTF-8, no `opt_endofopt`, a lone one, other flag bits.
    static func edgeBlocks() -> [PcapngBlock] {
        var commented = PcapngInterface(linkType: .max, snapLength: .max, name: "é", timestampExponent: 0)
        commented.options.insert(PcapngOption(code: 1, value: Array("comment".utf8)), at: 0)
        var unterminated = PcapngInterface()
        unterminated.options = [
            PcapngOption(code: 9, value: [6]), PcapngOption(code: 2, value: [0xFF, 0xFE]),
            PcapngOption(code: 2, value: Array("dup".utf8)), PcapngOption(code: 0x8000, value: []),
        ]
        var loneEnd = PcapngInterface(timestampExponent: 6)
        loneEnd.options = [.endOfOptions]
        var flagged = PcapngPacket(
            interfaceID: .max, timestamp: .max, data: [1, 2, 3, 4, 5], direction: .outbound)
        flagged.options[0].value = [0xF2, 0x00, 0x01, 0x80]  // direction bits and others
        flagged.options.insert(PcapngOption(code: 1, value: [0x41]), at: 0)
        var unmeasured = PcapngPacket(interfaceID: 0, timestamp: 0, data: [], direction: .unknown)
        unmeasured.originalLength = .max
        var explicitUnknown = PcapngPacket(interfaceID: 1, timestamp: 1, data: [9], direction: .inbound)
        explicitUnknown.direction = .unknown  // the flags stay, holding 0
        return [
            .interface(commented), .interface(PcapngInterface(linkType: 1, timestampExponent: 6)),
            .interface(unterminated), .interface(loneEnd), .packet(flagged), .packet(unmeasured),
            .packet(explicitUnknown),
            .packet(PcapngPacket(interfaceID: 2, timestamp: 1 << 32, data: [1, 2], direction: .inbound)),
            .packet(PcapngPacket(interfaceID: 3, timestamp: 7, data: [1, 2, 3], direction: .outbound)),
            .packet(PcapngPacket(interfaceID: 4, timestamp: 8, data: [1, 2, 3, 4], direction: .unknown)),
            .custom(PcapngCustomBlock(enterpriseNumber: 0, data: [])),
            .custom(PcapngCustomBlock(enterpriseNumber: .max, data: Array(1...8), copyable: false)),
            .secrets(PcapngSecrets(secretsType: 0, data: [])),
            .secrets(
                PcapngSecrets(
                    secretsType: .max, data: [7],
                    options: [PcapngOption(code: 1, value: Array("keys".utf8)), .endOfOptions])),
            .other(type: 0x0000_0005, body: []), .other(type: 0x8000_0001, body: Array(0..<12)),
        ]
    }

    /// A file of two sections, little-endian then big-endian, each holding every edge block.
    static func edgeSections() -> (sections: [PcapngSection], bytes: [UInt8]) {
        var little = PcapngSection(minorVersion: .max, userApplication: "tests")
        little.sectionLength = 1234
        little.options.insert(PcapngOption(code: 2, value: Array("hardware".utf8)), at: 0)
        let big = PcapngSection(bigEndian: true)
        var writer = PcapngWriter(section: little)
        for block in edgeBlocks() { writer.append(block) }
        writer.append(.section(big))
        for block in edgeBlocks() { writer.append(block) }
        return ([little, big], writer.bytes)
    }

    @Test func edgeBlocksReadAndWriteBackExactly() throws {
        let (sections, bytes) = Self.edgeSections()
        let blocks = try PcapngReader.read(bytes)
        let expected = sections.flatMap { [PcapngBlock.section($0)] + Self.edgeBlocks() }
        #expect(blocks == expected)
        #expect(try CaptureRecordsTests.rewritten(bytes) == bytes)
        // Big-endian fields really are big-endian: the second section's first interface.
        let second = try #require(blocks.firstIndex(of: .section(sections[1])))
        #expect(blocks[second + 1] == Self.edgeBlocks()[0])
        // The typed views read the option lists.
        guard case .interface(let unterminated) = blocks[3], case .packet(let flagged) = blocks[5] else {
            Issue.record("unexpected block order")
            return
        }
        #expect(unterminated.timestampExponent == 6 && unterminated.name == "\u{FFFD}\u{FFFD}")
        #expect(flagged.direction == .outbound)
    }

    /// Mutations of whole files: each one the reader accepts is written back to exactly its bytes.
    @Test func mutatedFilesThatReadWriteBackToTheirBytes() throws {
        let seeds = [Self.sampleFile(), Self.edgeSections().bytes]
        var mutations = ByteMutations(seed: 0x9CA9)
        var accepted = 0
        for round in 0..<6_000 {
            let bytes = mutations.mutate(seeds[round % seeds.count])
            guard (try? PcapngReader.read(bytes)) != nil else { continue }
            accepted += 1
            #expect(try CaptureRecordsTests.rewritten(bytes) == bytes, "round \(round)")
        }
        #expect(accepted > 500)
    }

    static func readError(_ bytes: [UInt8]) -> CaptureError? {
        do {
            _ = try PcapngReader.read(bytes)
            return nil
        } catch {
            return error
        }
    }

    /// A file of a bare section header (28 bytes) and `block`, with `patch` applied to the bytes.
    static func file(with block: PcapngBlock, patch: (inout [UInt8]) -> Void = { _ in }) -> [UInt8] {
        var writer = PcapngWriter()
        writer.append(block)
        var bytes = writer.bytes
        patch(&bytes)
        return bytes
    }

    /// The forms the writer never produces, each refused with its own one-line error.
    @Test func nonCanonicalEncodingsAreMalformed() {
        let cases: [([UInt8], String)] = [
            // Packet data [1, 2, 3] at 56...58, its padding byte at 59.
            (
                Self.file(
                    with: .packet(
                        PcapngPacket(interfaceID: 0, timestamp: 0, data: [1, 2, 3], direction: .unknown))
                ) {
                    $0[59] = 1
                }, "packet data: padding bytes are not zero"
            ),
            // if_name "ab" at 48...49, padded to 51.
            (
                Self.file(with: .interface(PcapngInterface(name: "ab"))) { $0[51] = 7 },
                "option 2: padding bytes are not zero"
            ),
            (
                Self.file(with: .interface(PcapngInterface())) { $0[38] = 1 },
                "interface reserved field is 1, not 0"
            ),
            (
                Self.file(with: .secrets(PcapngSecrets(secretsType: 1, data: [1]))) { $0[47] = 9 },
                "secrets data: padding bytes are not zero"
            ),
            (
                Self.file(
                    with: .section(PcapngSection(userApplication: nil)).withOptions([
                        PcapngOption(code: 4, value: [0x41]), PcapngOption(code: 0, value: [0, 0, 0, 0]),
                    ])), "opt_endofopt with a 4-byte value"
            ),
            (
                Self.file(
                    with: .section(PcapngSection()).withOptions([
                        .endOfOptions, PcapngOption(code: 4, value: Array("ab".utf8)),
                    ])), "8 bytes after opt_endofopt"
            ),
            (
                Self.file(
                    with: .packet(PcapngPacket(interfaceID: 0, timestamp: 0, data: [], direction: .unknown))
                        .withOptions([PcapngOption(code: 2, value: [1, 0, 0, 0, 0, 0, 0, 0])])),
                "epb_flags must be 4 bytes"
            ),
            (
                Self.file(
                    with: .packet(PcapngPacket(interfaceID: 0, timestamp: 0, data: [], direction: .unknown))
                        .withOptions([PcapngOption(code: 2, value: [3, 0, 0, 0])])),
                "epb_flags direction 3 is reserved"
            ),
        ]
        for (bytes, diagnostic) in cases {
            #expect(Self.readError(bytes) == CaptureError(.malformed, "block at offset 28: \(diagnostic)"))
        }
    }

    // MARK: IPv4/UDP framing

    /// Frames at the edges: empty and longest payloads, zero and all-ones addresses and ports,
    /// multicast (TTL 1), and a payload whose UDP checksum computes to 0 and is sent as 0xFFFF.
    @Test func framesAtTheEdgesUnframeToTheirBytes() throws {
        let group = PeerAddress(239, 255, 80, 68, port: 47_544)
        var zeroSum: [UInt8] = []
        for value in 0...UInt16.max {
            let payload = [UInt8(value >> 8), UInt8(truncatingIfNeeded: value)]
            let frame = IPv4UDP.frame(payload, from: PeerAddress(10, 0, 0, 1, port: 1), to: group)
            if frame[26] == 0xFF && frame[27] == 0xFF {
                zeroSum = payload
                break
            }
        }
        #expect(zeroSum.count == 2)
        let cases: [([UInt8], PeerAddress, PeerAddress)] = [
            ([], PeerAddress(ipv4: 0, port: 0), PeerAddress(ipv4: .max, port: .max)),
            ([UInt8](repeating: 0xEE, count: 65_507), PeerAddress(10, 0, 0, 1, port: 5000), group),
            ([1], PeerAddress(ipv4: .max, port: .max), PeerAddress(224, 0, 0, 0, port: 0)),
            (zeroSum, PeerAddress(10, 0, 0, 1, port: 1), group),
        ]
        for (payload, source, destination) in cases {
            let frame = IPv4UDP.frame(payload, from: source, to: destination)
            let read = try #require(IPv4UDP.unframe(frame))
            #expect(read.source == source && read.destination == destination && read.payload == payload)
            #expect(IPv4UDP.frame(read.payload, from: read.source, to: read.destination) == frame)
        }
        // The same datagram without a UDP checksum (0) is valid IPv4, but not how a capture frames it.
        var unchecked = IPv4UDP.frame(zeroSum, from: PeerAddress(10, 0, 0, 1, port: 1), to: group)
        unchecked[26] = 0
        unchecked[27] = 0
        #expect(IPv4UDP.unframe(unchecked) == nil)
    }

    /// The RFC 1071 checksum, for repairing edited headers in tests.
    static func internetChecksum(_ bytes: ArraySlice<UInt8>) -> UInt16 {
        var sum: UInt32 = 0
        var index = bytes.startIndex
        while index < bytes.endIndex {
            let high = UInt32(bytes[index]) << 8
            let low = index + 1 < bytes.endIndex ? UInt32(bytes[index + 1]) : 0
            sum += high | low
            index += 2
        }
        while sum >> 16 != 0 { sum = (sum & 0xFFFF) + (sum >> 16) }
        return ~UInt16(truncatingIfNeeded: sum)
    }

    /// `packet` with both checksums recomputed over whatever it now holds, so that only the
    /// other header fields can make it differ from the canonical framing.
    static func withRepairedChecksums(_ packet: [UInt8]) -> [UInt8] {
        var packet = packet
        guard packet.count >= IPv4UDP.headerLength else { return packet }
        packet[10] = 0
        packet[11] = 0
        let header = internetChecksum(packet[0..<20])
        packet[10] = UInt8(header >> 8)
        packet[11] = UInt8(truncatingIfNeeded: header)
        packet[26] = 0
        packet[27] = 0
        let udpLength = packet.count - 20
        let pseudo =
            Array(packet[12..<20]) + [
                0, 17, UInt8(truncatingIfNeeded: udpLength >> 8), UInt8(truncatingIfNeeded: udpLength),
            ]
            + packet[20...]
        var udp = internetChecksum(pseudo[...])
        if udp == 0 { udp = 0xFFFF }
        packet[26] = UInt8(udp >> 8)
        packet[27] = UInt8(truncatingIfNeeded: udp)
        return packet
    }

    /// Mutated frames with their checksums repaired (valid-looking IPv4/UDP with other TTLs, flags,
    /// identifications, lengths or payloads): each one that unframes frames again to its bytes.
    @Test func mutatedFramesThatUnframeFrameToTheirBytes() throws {
        let seeds = [
            IPv4UDP.frame(
                Array("PD payload".utf8), from: PeerAddress(10, 0, 0, 1, port: 47_474),
                to: PeerAddress(10, 0, 0, 2, port: 5000)),
            IPv4UDP.frame(
                [0x50, 0x44, 1, 1], from: PeerAddress(10, 0, 0, 1, port: 5000),
                to: PeerAddress(239, 255, 80, 68, port: 47_544)),
        ]
        var mutations = ByteMutations(seed: 0x1F04)
        var accepted = 0
        var refused = 0
        for round in 0..<8_000 {
            let bytes = Self.withRepairedChecksums(mutations.mutate(seeds[round % seeds.count]))
            guard let read = IPv4UDP.unframe(bytes) else {
                refused += 1
                continue
            }
            accepted += 1
            #expect(
                IPv4UDP.frame(read.payload, from: read.source, to: read.destination) == bytes,
                "round \(round)")
        }
        // Payload and address edits keep a canonical frame; most header edits do not.
        #expect(accepted > 300 && refused > 1_000)
    }

    /// Valid IPv4/UDP that a capture never holds: refused, where it used to be read.
    @Test func otherIPv4HeadersAreRefused() {
        let frame = IPv4UDP.frame(
            [1, 2, 3], from: PeerAddress(10, 0, 0, 1, port: 1), to: PeerAddress(10, 0, 0, 2, port: 2))
        let edits: [(inout [UInt8]) -> Void] = [
            { $0[1] = 0x10 },  // TOS
            { $0[5] = 1 },  // identification
            { $0[6] = 0 },  // DF clear
            { $0[8] = 63 },  // TTL
        ]
        var variants = edits.map { edit in
            var bytes = frame
            edit(&bytes)
            return Self.withRepairedChecksums(bytes)
        }
        var unchecked = frame  // no UDP checksum
        unchecked[26] = 0
        unchecked[27] = 0
        // IHL 6: four NOP options in the header, whose checksum is then over 24 bytes.
        var options = frame
        options.insert(contentsOf: [1, 1, 1, 1], at: 20)
        options[0] = 0x46
        options[3] += 4
        options[10] = 0
        options[11] = 0
        let sum = Self.internetChecksum(options[0..<24])
        options[10] = UInt8(sum >> 8)
        options[11] = UInt8(truncatingIfNeeded: sum)
        variants += [unchecked, options]
        for (index, bytes) in variants.enumerated() {
            #expect(IPv4UDP.unframe(bytes) == nil, "variant \(index)")
        }
    }
}

extension PcapngBlock {
    /// The block with `options` as its option list (section, interface, packet and secrets).
    func withOptions(_ options: [PcapngOption]) -> PcapngBlock {
        switch self {
        case .section(var section):
            section.options = options
            return .section(section)
        case .interface(var interface):
            interface.options = options
            return .interface(interface)
        case .packet(var packet):
            packet.options = options
            return .packet(packet)
        case .secrets(var secrets):
            secrets.options = options
            return .secrets(secrets)
        case .custom, .other:
            return self
        }
    }
}
