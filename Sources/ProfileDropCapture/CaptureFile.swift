import Foundation
import ProfileDropCore
import ProfileDropJSON

/// A datagram a captured device sent, as recorded.
public struct CapturedDatagram: Equatable, Sendable {
    /// When it was polled, from the packet timestamp.
    public var time: Instant
    /// The IPv4/UDP source.
    public var source: PeerAddress
    /// The IPv4/UDP destination (the multicast group for multicast datagrams).
    public var destination: PeerAddress
    /// The UDP payload.
    public var payload: [UInt8]
    /// Index of its Enhanced Packet Block among all packet blocks of the file, from 0.
    public var packetIndex: Int
}

/// Everything a capture holds about one device.
public struct CapturedDevice: Equatable, Sendable {
    /// The header record.
    public var record: DeviceRecord
    /// Its inputs, in order.
    public var inputs: [InputRecord]
    /// Its outbound datagrams, in order.
    public var outbound: [CapturedDatagram]
    /// Its secrets, when the capture was written with a keylog.
    public var secrets: DeviceSecrets?
    /// The end record, absent when the capture was cut short.
    public var end: EndRecord?
}

/// A parsed capture: the devices that have replay records, in interface order.
public struct CaptureFile: Equatable, Sendable {
    /// The captured devices.
    public var devices: [CapturedDevice]
    /// How many Enhanced Packet Blocks the file holds, inbound and outbound, of every interface.
    public var packetCount: Int

    /// Parses a capture written by ``CaptureRecorder``.
    /// - Throws: ``CaptureError``: pcapng errors, records of another format version, records that
    ///   contradict each other, or no replay records at all.
    public init(bytes: [UInt8]) throws(CaptureError) {
        let blocks = try PcapngReader.read(bytes)
        var interfaces: [PcapngInterface] = []
        var devices: [CapturedDevice] = []
        var indexByInterface: [UInt32: Int] = [:]
        var secrets: [DeviceSecrets] = []
        var ends: [EndRecord] = []
        var pendingOutbound: [(interface: UInt32, index: Int, datagram: CapturedDatagram?)] = []
        var packetIndex = 0
        var sections = 0
        for block in blocks {
            switch block {
            case .section:
                sections += 1
                guard sections == 1 else {
                    throw CaptureError(.malformed, "the capture has more than one section; replay reads one")
                }
            case .interface(let interface):
                interfaces.append(interface)
            case .packet(let packet):
                defer { packetIndex += 1 }
                guard Int(packet.interfaceID) < interfaces.count else {
                    throw CaptureError(
                        .malformed,
                        "packet \(packetIndex) names interface \(packet.interfaceID), which is not defined")
                }
                guard packet.direction == .outbound else { continue }
                let interface = interfaces[Int(packet.interfaceID)]
                guard interface.linkType == PcapngConstants.linkTypeRaw,
                    let (source, destination, payload) = IPv4UDP.unframe(packet.data)
                else {
                    // Fine for an interface without replay records; checked below.
                    pendingOutbound.append((packet.interfaceID, packetIndex, nil))
                    continue
                }
                let time = Self.instant(packet.timestamp, exponent: interface.timestampExponent)
                pendingOutbound.append(
                    (
                        packet.interfaceID, packetIndex,
                        CapturedDatagram(
                            time: time, source: source, destination: destination, payload: payload,
                            packetIndex: packetIndex)
                    ))
            case .custom(let custom):
                guard custom.enterpriseNumber == CaptureFormat.enterpriseNumber else { continue }
                switch try CaptureRecord(customData: custom.data) {
                case .device(let record):
                    guard Int(record.interfaceID) < interfaces.count else {
                        throw CaptureError(
                            .malformed,
                            "device record for interface \(record.interfaceID), which is not defined")
                    }
                    guard indexByInterface[record.interfaceID] == nil else {
                        throw CaptureError(
                            .malformed, "two device records for interface \(record.interfaceID)")
                    }
                    indexByInterface[record.interfaceID] = devices.count
                    devices.append(
                        CapturedDevice(record: record, inputs: [], outbound: [], secrets: nil, end: nil))
                case .input(let input):
                    guard let index = indexByInterface[input.interfaceID] else {
                        throw CaptureError(
                            .malformed,
                            "input \(input.sequence) for interface \(input.interfaceID) before its device")
                    }
                    guard input.sequence == UInt64(devices[index].inputs.count) else {
                        throw CaptureError(
                            .malformed,
                            "input \(input.sequence) of \(devices[index].record.name) out of order "
                                + "(expected \(devices[index].inputs.count))")
                    }
                    // Times run forward from the device's start and stay within a day of it: the core's
                    // longest wait is minutes, and replay must not feed it times it was never given.
                    let previous = devices[index].inputs.last?.time ?? devices[index].record.startTime
                    guard input.time >= previous,
                        input.time <= devices[index].record.startTime + Self.longestSession
                    else {
                        throw CaptureError(
                            .malformed,
                            "input \(input.sequence) of \(devices[index].record.name) at \(input.time) is out of time "
                                + "order or more than a day after the device started")
                    }
                    devices[index].inputs.append(input)
                case .end(let end):
                    ends.append(end)
                }
            case .secrets(let block):
                guard block.secretsType == CaptureFormat.secretsType else { continue }
                secrets.append(try DeviceSecrets(decoding: block.data))
            case .other:
                continue
            }
        }
        guard !devices.isEmpty else {
            throw CaptureError(.noDevice, "the capture holds no ProfileDrop replay records")
        }
        for (interface, packet, datagram) in pendingOutbound {
            guard let index = indexByInterface[interface] else { continue }
            guard var datagram else {
                throw CaptureError(
                    .malformed,
                    "packet \(packet) of \(devices[index].record.name) is not IPv4/UDP as a capture frames it"
                )
            }
            // Packet timestamps are wall-clock; the device's instants start at the recorded epoch.
            let epoch = devices[index].record.epochNanoseconds
            let raw = datagram.time.nanoseconds
            datagram.time = Instant(nanoseconds: raw >= epoch ? raw - epoch : 0)
            devices[index].outbound.append(datagram)
        }
        for secret in secrets {
            guard let index = indexByInterface[secret.interfaceID] else {
                throw CaptureError(
                    .malformed, "keylog for interface \(secret.interfaceID), which has no device")
            }
            // One per device: a second would silently replace the first, and replay the other.
            guard devices[index].secrets == nil else {
                throw CaptureError(.malformed, "a second keylog for interface \(secret.interfaceID)")
            }
            devices[index].secrets = secret
        }
        for end in ends {
            guard let index = indexByInterface[end.interfaceID] else {
                throw CaptureError(
                    .malformed, "end record for interface \(end.interfaceID), which has no device")
            }
            guard devices[index].end == nil else {
                throw CaptureError(.malformed, "a second end record for interface \(end.interfaceID)")
            }
            devices[index].end = end
        }
        self.devices = devices
        self.packetCount = packetIndex
    }

    /// The longest session a capture may record.
    static let longestSession: Duration = .seconds(86_400)

    /// The largest capture file read, in bytes: a day-long session of a crowded room fits, and a
    /// larger file is refused before it is read.
    public static let maximumFileBytes = 1 << 30

    /// Reads and parses the file at `path`.
    public static func read(path: String) throws(CaptureError) -> CaptureFile {
        let bytes: [UInt8]
        do {
            bytes = try InputFile.read(atPath: path, limit: maximumFileBytes)
        } catch {
            throw CaptureError(.io, "cannot read \(path): \(error.reasonText)")
        }
        // The file's name leads, as for a file that cannot be read: a user replaying several
        // captures sees which one is malformed.
        do {
            return try CaptureFile(bytes: bytes)
        } catch {
            throw CaptureError(error.code, "\(path): \(error.diagnostic)")
        }
    }

    /// Whether the capture carries secrets for every device.
    public var hasKeylog: Bool { devices.allSatisfy { $0.secrets != nil } }

    /// The device whose name, device id (16 hex digits) or interface number is `selector`.
    public func device(_ selector: String) -> CapturedDevice? {
        devices.first {
            $0.record.name == selector || $0.record.deviceID.description == selector.lowercased()
                || String($0.record.interfaceID) == selector
        }
    }

    static func instant(_ timestamp: UInt64, exponent: UInt8) -> Instant {
        var nanoseconds = timestamp
        for _ in 0..<(9 - Int(min(exponent, 9))) {
            nanoseconds = nanoseconds.multipliedReportingOverflow(by: 10).partialValue
        }
        return Instant(nanoseconds: nanoseconds)
    }
}
