/// The pcapng blocks this module writes and reads (draft-ietf-opsawg-pcapng): Section Header,
/// Interface Description, Enhanced Packet, Custom and Decryption Secrets blocks. Other block types
/// are kept as ``PcapngBlock/other(type:body:)`` so that reading never fails on a block it does not
/// need. Every block read is written back by ``PcapngWriter`` to the bytes it came from: what the
/// model does not hold (nonzero padding, a nonzero reserved field, bytes after `opt_endofopt`) is
/// malformed (Captures/FORMAT.md 1.2).
public enum PcapngBlock: Equatable, Sendable {
    /// A Section Header Block.
    case section(PcapngSection)
    /// An Interface Description Block.
    case interface(PcapngInterface)
    /// An Enhanced Packet Block.
    case packet(PcapngPacket)
    /// A Custom Block (type 0x00000BAD, copyable, or 0x40000BAD, not copyable).
    case custom(PcapngCustomBlock)
    /// A Decryption Secrets Block.
    case secrets(PcapngSecrets)
    /// Any other block: its type and its body (between the length fields).
    case other(type: UInt32, body: [UInt8])
}

/// Block type numbers and option codes from the pcapng specification.
public enum PcapngConstants {
    /// Section Header Block type; also the first four bytes of every pcapng file.
    public static let sectionHeaderType: UInt32 = 0x0A0D_0D0A
    /// Interface Description Block type.
    public static let interfaceType: UInt32 = 0x0000_0001
    /// Enhanced Packet Block type.
    public static let enhancedPacketType: UInt32 = 0x0000_0006
    /// Decryption Secrets Block type.
    public static let decryptionSecretsType: UInt32 = 0x0000_000A
    /// Custom Block type whose content may be copied to a new file by tools that do not understand it.
    public static let customCopyableType: UInt32 = 0x0000_0BAD
    /// Custom Block type that tools must not copy.
    public static let customNonCopyableType: UInt32 = 0x4000_0BAD
    /// The byte-order magic as written by a little-endian writer.
    public static let byteOrderMagic: UInt32 = 0x1A2B_3C4D
    /// LINKTYPE_RAW: the packet starts with an IPv4 or IPv6 header.
    public static let linkTypeRaw: UInt16 = 101
    /// The smallest block: type, two lengths.
    static let minimumBlockLength = 12
    /// No block we accept is longer than this (the largest datagram and records are far smaller).
    public static let maximumBlockLength = 16 * 1024 * 1024
}

/// One option of a block: its code and its value without padding.
///
/// Blocks keep every option they were read with, in file order and duplicates included, so that a
/// block read is written back to the same bytes; the typed properties (``PcapngInterface/name`` and
/// the like) read and edit this list. `opt_endofopt` appears as the last option when the file has
/// it (the writer writes the list as given and adds none). Values are in the byte order of the
/// section they were read from, except `epb_flags`, which is held little-endian whatever the
/// section's order so that ``PcapngPacket/direction`` can read it; the writer puts it back in the
/// order of the section it writes.
public struct PcapngOption: Equatable, Sendable {
    /// The option code; 0 is `opt_endofopt`.
    public var code: UInt16
    /// The value, without the padding that follows it in the file.
    public var value: [UInt8]

    /// Creates an option.
    public init(code: UInt16, value: [UInt8]) {
        self.code = code
        self.value = value
    }

    /// A UTF-8 option, cut at a character boundary to the longest value an option holds (a name
    /// read from a file may have grown when invalid bytes became replacement characters).
    public init(code: UInt16, text: String) {
        var bytes: [UInt8] = []
        for scalar in text.unicodeScalars {
            let encoded = Array(String(scalar).utf8)
            guard bytes.count + encoded.count <= Int(UInt16.max) else { break }
            bytes += encoded
        }
        self.init(code: code, value: bytes)
    }

    /// `opt_endofopt`, which ends an option list.
    public static let endOfOptions = PcapngOption(code: 0, value: [])

    /// The `epb_flags` option code of Enhanced Packet Blocks.
    static let packetFlags: UInt16 = 2
}

extension [PcapngOption] {
    /// The value of the first option with `code`.
    func value(_ code: UInt16) -> [UInt8]? { first { $0.code == code }?.value }

    /// The first option with `code` as text; invalid UTF-8 shows as replacement characters.
    func text(_ code: UInt16) -> String? { value(code).map { String(decoding: $0, as: UTF8.self) } }

    /// Replaces the value of the first option with `code`, or adds the option before
    /// `opt_endofopt` (starting a terminated list when there is none); nil removes every option
    /// with `code`, and the list with it when only `opt_endofopt` is left.
    mutating func set(_ code: UInt16, _ value: [UInt8]?) {
        guard let value else {
            removeAll { $0.code == code }
            if self == [.endOfOptions] { removeAll() }
            return
        }
        if let index = firstIndex(where: { $0.code == code }) {
            self[index].value = value
        } else if isEmpty {
            self = [PcapngOption(code: code, value: value), .endOfOptions]
        } else if last?.code == 0 {
            insert(PcapngOption(code: code, value: value), at: count - 1)
        } else {
            append(PcapngOption(code: code, value: value))
        }
    }
}

/// A Section Header Block.
public struct PcapngSection: Equatable, Sendable {
    /// Whether the section's multi-byte fields are big-endian.
    public var bigEndian: Bool
    /// Format version, 1.0 for every writer in use.
    public var majorVersion: UInt16
    /// Minor format version.
    public var minorVersion: UInt16
    /// The section length field: `UInt64.max` (−1, not given), as every writer in use writes it.
    public var sectionLength: UInt64
    /// The options, in file order.
    public var options: [PcapngOption]

    /// The `shb_userappl` option, if any.
    public var userApplication: String? {
        get { options.text(4) }
        set { options.set(4, newValue.map { PcapngOption(code: 4, text: $0).value }) }
    }

    /// Creates a section header.
    public init(
        bigEndian: Bool = false, majorVersion: UInt16 = 1, minorVersion: UInt16 = 0,
        userApplication: String? = nil
    ) {
        self.bigEndian = bigEndian
        self.majorVersion = majorVersion
        self.minorVersion = minorVersion
        self.sectionLength = .max
        self.options = []
        self.userApplication = userApplication
    }
}

/// An Interface Description Block. Interfaces are numbered from 0 in the order they appear.
public struct PcapngInterface: Equatable, Sendable {
    /// The link type; ``PcapngConstants/linkTypeRaw`` for our captures.
    public var linkType: UInt16
    /// Longest captured packet; 0 means no limit.
    public var snapLength: UInt32
    /// The options, in file order.
    public var options: [PcapngOption]

    /// The `if_name` option.
    public var name: String? {
        get { options.text(2) }
        set { options.set(2, newValue.map { PcapngOption(code: 2, text: $0).value }) }
    }

    /// The `if_description` option.
    public var description: String? {
        get { options.text(3) }
        set { options.set(3, newValue.map { PcapngOption(code: 3, text: $0).value }) }
    }

    /// Timestamps count units of 10^-`timestampExponent` seconds (`if_tsresol`); 6 when absent.
    /// Setting 6 removes the option, which is then implied.
    public var timestampExponent: UInt8 {
        get { options.value(9).flatMap { $0.count == 1 ? $0[0] : nil } ?? 6 }
        set { options.set(9, newValue == 6 ? nil : [newValue]) }
    }

    /// Creates an interface; nanosecond timestamps by default.
    public init(
        linkType: UInt16 = PcapngConstants.linkTypeRaw, snapLength: UInt32 = 0, name: String? = nil,
        description: String? = nil, timestampExponent: UInt8 = 9
    ) {
        self.linkType = linkType
        self.snapLength = snapLength
        self.options = []
        self.name = name
        self.description = description
        self.timestampExponent = timestampExponent
    }
}

/// Which way a packet went, from the `epb_flags` option.
public enum PacketDirection: UInt32, Equatable, Sendable {
    /// Not recorded.
    case unknown = 0
    /// Received by the capturing interface.
    case inbound = 1
    /// Sent by the capturing interface.
    case outbound = 2
}

/// An Enhanced Packet Block.
public struct PcapngPacket: Equatable, Sendable {
    /// Index of the interface in the section.
    public var interfaceID: UInt32
    /// Time in units of the interface's timestamp resolution since 1970-01-01 00:00:00 UTC.
    public var timestamp: UInt64
    /// The captured bytes.
    public var data: [UInt8]
    /// The length of the packet on the wire.
    public var originalLength: UInt32
    /// The options, in file order (`epb_flags` little-endian, see ``PcapngOption``).
    public var options: [PcapngOption]

    /// The direction bits of `epb_flags`; setting it keeps the flags' other bits.
    public var direction: PacketDirection {
        get { options.value(PcapngOption.packetFlags).flatMap(Self.direction) ?? .unknown }
        set {
            if let flags = options.value(PcapngOption.packetFlags), flags.count == 4 {
                options.set(
                    PcapngOption.packetFlags, [flags[0] & ~3 | UInt8(newValue.rawValue)] + flags[1...])
            } else if newValue != .unknown {
                options.set(PcapngOption.packetFlags, [UInt8(newValue.rawValue), 0, 0, 0])
            }
        }
    }

    /// Creates a packet whose captured bytes are the whole packet.
    public init(interfaceID: UInt32, timestamp: UInt64, data: [UInt8], direction: PacketDirection) {
        self.interfaceID = interfaceID
        self.timestamp = timestamp
        self.data = data
        self.originalLength = UInt32(clamping: data.count)
        self.options = []
        self.direction = direction
    }

    /// The direction in little-endian `epb_flags`; nil for a wrong length or the reserved value 3.
    static func direction(_ flags: [UInt8]) -> PacketDirection? {
        flags.count == 4 ? PacketDirection(rawValue: UInt32(flags[0] & 3)) : nil
    }
}

/// A Custom Block. Readers cannot tell custom data from options, so our own records carry their
/// length inside `data` and we write no options.
public struct PcapngCustomBlock: Equatable, Sendable {
    /// The IANA Private Enterprise Number that owns the format of `data`.
    public var enterpriseNumber: UInt32
    /// Everything after the enterprise number, padding included when read.
    public var data: [UInt8]
    /// Whether tools may copy the block into a file they write.
    public var copyable: Bool

    /// Creates a custom block.
    public init(enterpriseNumber: UInt32, data: [UInt8], copyable: Bool = true) {
        self.enterpriseNumber = enterpriseNumber
        self.data = data
        self.copyable = copyable
    }
}

/// A Decryption Secrets Block.
public struct PcapngSecrets: Equatable, Sendable {
    /// What kind of secrets `data` holds.
    public var secretsType: UInt32
    /// The secrets.
    public var data: [UInt8]
    /// The options, in file order; ours have none.
    public var options: [PcapngOption]

    /// Creates a secrets block.
    public init(secretsType: UInt32, data: [UInt8], options: [PcapngOption] = []) {
        self.secretsType = secretsType
        self.data = data
        self.options = options
    }
}

/// Builds a pcapng file in memory, one block at a time, each in the byte order of its section.
public struct PcapngWriter: Sendable {
    /// The file so far.
    public private(set) var bytes: [UInt8] = []
    /// The byte order of the section being written.
    private var bigEndian = false

    /// Starts a little-endian file with a Section Header Block.
    public init(userApplication: String? = nil) {
        self.init(section: PcapngSection(userApplication: userApplication))
    }

    /// Starts a file with `section`, in its byte order.
    public init(section: PcapngSection) {
        append(.section(section))
    }

    /// Appends one block. A ``PcapngBlock/section(_:)`` starts a new section in its byte order.
    /// Every block the reader returns is written back to the bytes it was read from, given the
    /// section it was read in; ``PcapngBlock/other(type:body:)`` bodies and option values other
    /// than `epb_flags` are written as they are, in whatever byte order they hold.
    public mutating func append(_ block: PcapngBlock) {
        if case .section(let section) = block { bigEndian = section.bigEndian }
        var body = SectionWriter(bigEndian: bigEndian)
        let type: UInt32
        switch block {
        case .section(let section):
            type = PcapngConstants.sectionHeaderType
            body.u32(PcapngConstants.byteOrderMagic)
            body.u16(section.majorVersion)
            body.u16(section.minorVersion)
            body.u64(section.sectionLength)
            body.options(section.options)
        case .interface(let interface):
            type = PcapngConstants.interfaceType
            body.u16(interface.linkType)
            body.u16(0)
            body.u32(interface.snapLength)
            body.options(interface.options)
        case .packet(let packet):
            type = PcapngConstants.enhancedPacketType
            body.u32(packet.interfaceID)
            body.u32(UInt32(truncatingIfNeeded: packet.timestamp >> 32))
            body.u32(UInt32(truncatingIfNeeded: packet.timestamp))
            body.u32(UInt32(clamping: packet.data.count))
            body.u32(packet.originalLength)
            body.padded(packet.data)
            body.options(packet.options, flagsCode: PcapngOption.packetFlags)
        case .custom(let custom):
            type =
                custom.copyable ? PcapngConstants.customCopyableType : PcapngConstants.customNonCopyableType
            body.u32(custom.enterpriseNumber)
            body.padded(custom.data)
        case .secrets(let secrets):
            type = PcapngConstants.decryptionSecretsType
            body.u32(secrets.secretsType)
            body.u32(UInt32(clamping: secrets.data.count))
            body.padded(secrets.data)
            body.options(secrets.options)
        case .other(let otherType, let otherBody):
            precondition(otherBody.count % 4 == 0, "a block body is a whole number of 32-bit words")
            type = otherType
            body.bytes(otherBody)
        }
        let total = UInt32(body.bytes.count + PcapngConstants.minimumBlockLength)
        var framed = SectionWriter(bigEndian: bigEndian)
        framed.u32(type)
        framed.u32(total)
        framed.bytes(body.bytes)
        framed.u32(total)
        bytes += framed.bytes
    }
}

/// Reads a whole pcapng file with checked reads: malformed or truncated input throws a
/// ``CaptureError`` naming the block and offset, and never traps.
public enum PcapngReader {
    /// Parses every block of `bytes`.
    /// - Throws: ``CaptureError`` (`notPcapng`, `truncated`, `malformed`, `unsupportedVersion`).
    public static func read(_ bytes: [UInt8]) throws(CaptureError) -> [PcapngBlock] {
        guard bytes.count >= 4, bytes[0] == 0x0A, bytes[1] == 0x0D, bytes[2] == 0x0D, bytes[3] == 0x0A else {
            throw CaptureError(.notPcapng, "not a pcapng file: it does not start with a Section Header Block")
        }
        var blocks: [PcapngBlock] = []
        var offset = 0
        var bigEndian = false
        while offset < bytes.count {
            let remaining = bytes.count - offset
            guard remaining >= PcapngConstants.minimumBlockLength else {
                throw CaptureError(
                    .truncated, "block at offset \(offset): \(remaining) bytes, a block needs 12")
            }
            var header = CheckedReader(bytes, start: offset, end: bytes.count, bigEndian: bigEndian)
            let type = try header.u32("block type")
            if type == PcapngConstants.sectionHeaderType {
                // The byte order is known only after reading the magic that follows the length.
                var probe = CheckedReader(bytes, start: offset + 8, end: bytes.count, bigEndian: false)
                let magic = try probe.u32("byte-order magic")
                if magic == PcapngConstants.byteOrderMagic {
                    bigEndian = false
                } else if magic == PcapngConstants.byteOrderMagic.byteSwapped {
                    bigEndian = true
                } else {
                    throw CaptureError(.malformed, "section at offset \(offset): bad byte-order magic")
                }
                header = CheckedReader(bytes, start: offset + 4, end: bytes.count, bigEndian: bigEndian)
            }
            let length = Int(try header.u32("block length"))
            guard length >= PcapngConstants.minimumBlockLength, length % 4 == 0 else {
                throw CaptureError(.malformed, "block at offset \(offset): length \(length) is invalid")
            }
            guard length <= PcapngConstants.maximumBlockLength else {
                throw CaptureError(.malformed, "block at offset \(offset): length \(length) is too large")
            }
            guard length <= remaining else {
                throw CaptureError(
                    .truncated, "block at offset \(offset): declares \(length) bytes, \(remaining) left")
            }
            var trailer = CheckedReader(
                bytes, start: offset + length - 4, end: offset + length, bigEndian: bigEndian)
            guard try trailer.u32("trailing block length") == UInt32(length) else {
                throw CaptureError(.malformed, "block at offset \(offset): trailing length differs")
            }
            var body = CheckedReader(bytes, start: offset + 8, end: offset + length - 4, bigEndian: bigEndian)
            do throws(CaptureError) {
                blocks.append(try parseBlock(type: type, body: &body, bigEndian: bigEndian))
            } catch {
                throw CaptureError(error.code, "block at offset \(offset): \(error.diagnostic)")
            }
            offset += length
        }
        return blocks
    }

    private static func parseBlock(type: UInt32, body: inout CheckedReader, bigEndian: Bool)
        throws(CaptureError) -> PcapngBlock
    {
        switch type {
        case PcapngConstants.sectionHeaderType:
            _ = try body.u32("byte-order magic")
            let major = try body.u16("major version")
            let minor = try body.u16("minor version")
            guard major == 1 else {
                throw CaptureError(.unsupportedVersion, "pcapng version \(major).\(minor), expected 1.x")
            }
            var section = PcapngSection(bigEndian: bigEndian, majorVersion: major, minorVersion: minor)
            section.sectionLength = try body.u64("section length")
            section.options = try body.options()
            return .section(section)
        case PcapngConstants.interfaceType:
            let linkType = try body.u16("link type")
            let reserved = try body.u16("reserved")
            // Writers must write 0; anything else would be written back as 0.
            guard reserved == 0 else {
                throw CaptureError(.malformed, "interface reserved field is \(reserved), not 0")
            }
            var interface = PcapngInterface(linkType: linkType, snapLength: try body.u32("snap length"))
            interface.options = try body.options()
            for option in interface.options where option.code == 9 {
                guard option.value.count == 1, let resolution = option.value.first else {
                    throw CaptureError(.malformed, "if_tsresol must be 1 byte")
                }
                guard resolution & 0x80 == 0, resolution <= 9 else {
                    throw CaptureError(
                        .malformed, "if_tsresol \(resolution) is not a power of ten up to 10^-9")
                }
            }
            return .interface(interface)
        case PcapngConstants.enhancedPacketType:
            let interfaceID = try body.u32("interface id")
            let high = UInt64(try body.u32("timestamp (high)"))
            let low = UInt64(try body.u32("timestamp (low)"))
            let captured = Int(try body.u32("captured length"))
            let original = try body.u32("original length")
            let data = try body.paddedBytes("packet data", count: captured)
            var packet = PcapngPacket(
                interfaceID: interfaceID, timestamp: high << 32 | low, data: data, direction: .unknown)
            packet.originalLength = original
            packet.options = try body.options()
            for index in packet.options.indices where packet.options[index].code == PcapngOption.packetFlags {
                guard packet.options[index].value.count == 4 else {
                    throw CaptureError(.malformed, "epb_flags must be 4 bytes")
                }
                // Held little-endian, see PcapngOption.
                if bigEndian { packet.options[index].value.reverse() }
                guard PcapngPacket.direction(packet.options[index].value) != nil else {
                    throw CaptureError(.malformed, "epb_flags direction 3 is reserved")
                }
            }
            return .packet(packet)
        case PcapngConstants.customCopyableType, PcapngConstants.customNonCopyableType:
            let enterprise = try body.u32("private enterprise number")
            return .custom(
                PcapngCustomBlock(
                    enterpriseNumber: enterprise, data: body.remaining(),
                    copyable: type == PcapngConstants.customCopyableType))
        case PcapngConstants.decryptionSecretsType:
            let secretsType = try body.u32("secrets type")
            let length = Int(try body.u32("secrets length"))
            let data = try body.paddedBytes("secrets data", count: length)
            return .secrets(PcapngSecrets(secretsType: secretsType, data: data, options: try body.options()))
        default:
            return .other(type: type, body: body.remaining())
        }
    }
}

/// Field writer for block bodies, in a section's byte order.
struct SectionWriter {
    let bigEndian: Bool
    var bytes: [UInt8] = []

    init(bigEndian: Bool) { self.bigEndian = bigEndian }

    private mutating func integer(_ value: UInt64, size: Int) {
        for index in 0..<size {
            let shift = 8 * (bigEndian ? size - 1 - index : index)
            bytes.append(UInt8(truncatingIfNeeded: value >> UInt64(shift)))
        }
    }

    mutating func u16(_ value: UInt16) { integer(UInt64(value), size: 2) }
    mutating func u32(_ value: UInt32) { integer(UInt64(value), size: 4) }
    mutating func u64(_ value: UInt64) { integer(value, size: 8) }

    mutating func bytes(_ data: [UInt8]) { bytes += data }

    /// Appends `data` and zeros up to the next multiple of 4 bytes.
    mutating func padded(_ data: [UInt8]) {
        bytes += data
        bytes += [UInt8](repeating: 0, count: (4 - data.count % 4) % 4)
    }

    /// Appends `options` as given (an `opt_endofopt` only if the list has one); the value of
    /// option `flagsCode`, held little-endian, goes in the section's order.
    mutating func options(_ options: [PcapngOption], flagsCode: UInt16? = nil) {
        for option in options {
            precondition(option.value.count <= Int(UInt16.max), "option value too long")
            u16(option.code)
            u16(UInt16(option.value.count))
            padded(option.code == flagsCode && bigEndian ? option.value.reversed() : option.value)
        }
    }
}

/// Bounds-checked reads within `start..<end` of a buffer, in a section's byte order.
struct CheckedReader {
    private let buffer: [UInt8]
    private(set) var position: Int
    private let end: Int
    private let bigEndian: Bool

    init(_ buffer: [UInt8], start: Int, end: Int, bigEndian: Bool) {
        self.buffer = buffer
        self.end = Swift.max(Swift.min(end, buffer.count), 0)
        self.position = Swift.min(Swift.max(start, 0), self.end)
        self.bigEndian = bigEndian
    }

    var remainingCount: Int { end - position }

    private mutating func integer(_ field: String, size: Int) throws(CaptureError) -> UInt64 {
        guard remainingCount >= size else {
            throw CaptureError(.truncated, "\(field) needs \(size) bytes, \(remainingCount) left")
        }
        var value: UInt64 = 0
        for index in 0..<size {
            let byte = UInt64(buffer[position + (bigEndian ? index : size - 1 - index)])
            value = value << 8 | byte
        }
        position += size
        return value
    }

    mutating func u16(_ field: String) throws(CaptureError) -> UInt16 {
        UInt16(truncatingIfNeeded: try integer(field, size: 2))
    }

    mutating func u32(_ field: String) throws(CaptureError) -> UInt32 {
        UInt32(truncatingIfNeeded: try integer(field, size: 4))
    }

    mutating func u64(_ field: String) throws(CaptureError) -> UInt64 {
        let first = try integer(field, size: 4)
        let second = try integer(field, size: 4)
        // A 64-bit field is two 32-bit words in section order.
        return bigEndian ? first << 32 | second : second << 32 | first
    }

    /// `count` bytes followed by zero padding to a multiple of 4 (the writer pads with zeros, so
    /// other padding would not be written back).
    mutating func paddedBytes(_ field: String, count: Int) throws(CaptureError) -> [UInt8] {
        let padded = count + (4 - count % 4) % 4
        guard count >= 0, remainingCount >= padded else {
            throw CaptureError(
                .truncated, "\(field) of \(count) bytes (padded) exceeds the \(remainingCount) left")
        }
        let data = Array(buffer[position..<(position + count)])
        guard buffer[(position + count)..<(position + padded)].allSatisfy({ $0 == 0 }) else {
            throw CaptureError(.malformed, "\(field): padding bytes are not zero")
        }
        position += padded
        return data
    }

    mutating func remaining() -> [UInt8] {
        let data = Array(buffer[position..<end])
        position = end
        return data
    }

    /// The options up to the end of the body, `opt_endofopt` included when present. It must be
    /// empty and last: bytes after it would be lost on writing.
    mutating func options() throws(CaptureError) -> [PcapngOption] {
        var options: [PcapngOption] = []
        while remainingCount > 0 {
            let code = try u16("option code")
            let length = Int(try u16("option length"))
            if code == 0 {
                guard length == 0 else {
                    throw CaptureError(.malformed, "opt_endofopt with a \(length)-byte value")
                }
                guard remainingCount == 0 else {
                    throw CaptureError(.malformed, "\(remainingCount) bytes after opt_endofopt")
                }
                options.append(.endOfOptions)
                break
            }
            options.append(PcapngOption(code: code, value: try paddedBytes("option \(code)", count: length)))
        }
        return options
    }
}
