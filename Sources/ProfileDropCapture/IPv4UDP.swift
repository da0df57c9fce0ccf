import ProfileDropCore

/// IPv4 + UDP framing of a datagram, for LINKTYPE_RAW packets that Wireshark dissects as UDP.
public enum IPv4UDP {
    /// IPv4 header without options, then the UDP header.
    public static let headerLength = 28

    /// Wraps `payload` in an IPv4 header (with its checksum) and a UDP header (with its checksum).
    public static func frame(_ payload: [UInt8], from source: PeerAddress, to destination: PeerAddress)
        -> [UInt8]
    {
        let udpLength = 8 + payload.count
        let totalLength = 20 + udpLength
        precondition(totalLength <= Int(UInt16.max), "datagram too long for IPv4")
        var ip = ByteWriter(capacity: totalLength)
        ip.writeInteger(UInt8(0x45))  // version 4, 5-word header
        ip.writeInteger(UInt8(0))
        ip.writeInteger(UInt16(totalLength))
        ip.writeInteger(UInt16(0))  // identification
        ip.writeInteger(UInt16(0x4000))  // don't fragment
        // Multicast stays on the link.
        ip.writeInteger(UInt8(isMulticast(destination.ipv4) ? 1 : 64))
        ip.writeInteger(UInt8(17))  // UDP
        ip.writeInteger(UInt16(0))  // checksum, filled below
        ip.writeInteger(source.ipv4)
        ip.writeInteger(destination.ipv4)
        var header = ip.bytes
        let headerChecksum = checksum(header)
        header[10] = UInt8(truncatingIfNeeded: headerChecksum >> 8)
        header[11] = UInt8(truncatingIfNeeded: headerChecksum)

        var udp = ByteWriter(capacity: udpLength)
        udp.writeInteger(source.port)
        udp.writeInteger(destination.port)
        udp.writeInteger(UInt16(udpLength))
        udp.writeInteger(UInt16(0))
        udp.writeBytes(payload)
        var segment = udp.bytes
        var pseudo = ByteWriter(capacity: 12 + udpLength)
        pseudo.writeInteger(source.ipv4)
        pseudo.writeInteger(destination.ipv4)
        pseudo.writeInteger(UInt8(0))
        pseudo.writeInteger(UInt8(17))
        pseudo.writeInteger(UInt16(udpLength))
        pseudo.writeBytes(segment)
        var udpChecksum = checksum(pseudo.bytes)
        if udpChecksum == 0 { udpChecksum = 0xFFFF }  // 0 means "no checksum" in UDP over IPv4
        segment[6] = UInt8(truncatingIfNeeded: udpChecksum >> 8)
        segment[7] = UInt8(truncatingIfNeeded: udpChecksum)
        return header + segment
    }

    /// The addresses and payload of a packet exactly as ``frame(_:from:to:)`` writes it; nil for
    /// anything else, including valid IPv4/UDP with other header fields (options, identification,
    /// flags, TTL), a wrong or absent checksum, or inconsistent lengths. Accepting only the
    /// canonical framing means every packet read frames again to the same bytes.
    public static func unframe(_ packet: [UInt8]) -> (
        source: PeerAddress, destination: PeerAddress, payload: [UInt8]
    )? {
        guard packet.count >= headerLength, packet.count <= Int(UInt16.max) else { return nil }
        var reader = ByteReader(packet, start: 12)
        guard let sourceIP = reader.readInteger(as: UInt32.self),
            let destinationIP = reader.readInteger(as: UInt32.self),
            let sourcePort = reader.readInteger(as: UInt16.self),
            let destinationPort = reader.readInteger(as: UInt16.self)
        else { return nil }
        let source = PeerAddress(ipv4: sourceIP, port: sourcePort)
        let destination = PeerAddress(ipv4: destinationIP, port: destinationPort)
        let payload = Array(packet[headerLength...])
        // Every other header byte is a function of these three, so comparing with the framing
        // checks them all at once.
        guard frame(payload, from: source, to: destination) == packet else { return nil }
        return (source, destination, payload)
    }

    /// Whether `ipv4` is in 224.0.0.0/4.
    public static func isMulticast(_ ipv4: UInt32) -> Bool { ipv4 >> 28 == 0xE }

    /// The Internet checksum (RFC 1071) of `bytes`.
    static func checksum(_ bytes: [UInt8]) -> UInt16 {
        var sum: UInt32 = 0
        var index = 0
        while index + 1 < bytes.count {
            sum += UInt32(bytes[index]) << 8 | UInt32(bytes[index + 1])
            index += 2
        }
        if index < bytes.count { sum += UInt32(bytes[index]) << 8 }
        while sum >> 16 != 0 { sum = (sum & 0xFFFF) + (sum >> 16) }
        return ~UInt16(truncatingIfNeeded: sum)
    }
}
