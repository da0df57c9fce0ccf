import Foundation
import ProfileDropCapture
import ProfileDropCore
import Testing

/// Runs tshark with Tools/wireshark/profiledrop.lua over the golden captures. Skips, saying why,
/// when tshark is not installed.
struct DissectorTests {
    static let script = GoldenCaptures.packageRoot.appendingPathComponent("Tools/wireshark/profiledrop.lua")
        .path

    static var tshark: String? {
        for directory in ["/usr/bin", "/usr/local/bin", "/opt/homebrew/bin"] {
            let path = directory + "/tshark"
            if FileManager.default.isExecutableFile(atPath: path) { return path }
        }
        return nil
    }

    /// tshark's standard output, one line per packet, for `arguments` after the script option.
    /// Writes `frames` (IPv4/UDP) as outbound packets of one interface to a temporary pcapng file.
    /// - Returns: its path; the caller removes it.
    static func writeCapture(interface: String, frames: [[UInt8]]) throws -> String {
        var writer = PcapngWriter(userApplication: "profiledrop tests")
        writer.append(.interface(PcapngInterface(name: interface)))
        for (index, data) in frames.enumerated() {
            writer.append(
                .packet(
                    PcapngPacket(interfaceID: 0, timestamp: UInt64(index), data: data, direction: .outbound)))
        }
        let path = FileManager.default.temporaryDirectory.appendingPathComponent(
            "profiledrop-\(UUID().uuidString).pcapng"
        ).path
        try Data(writer.bytes).write(to: URL(fileURLWithPath: path))
        return path
    }

    static func run(_ tshark: String, _ arguments: [String]) throws -> (status: Int32, lines: [String]) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: tshark)
        process.arguments = ["-X", "lua_script:\(script)"] + arguments
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        let lines = String(decoding: data, as: UTF8.self).split(separator: "\n").map(String.init)
        return (process.terminationStatus, lines)
    }

    @Test(
        .enabled(if: DissectorTests.tshark != nil, "tshark is not installed (apt-get install tshark)"),
        arguments: GoldenCaptures.all)
    func dissectsEveryMessageTypeOfTheGoldenCaptures(_ golden: GoldenCaptures.Golden) throws {
        let tshark = try #require(Self.tshark)
        let (status, lines) = try Self.run(
            tshark,
            ["-r", golden.capturePath, "-Y", "profiledrop", "-T", "fields", "-e", "profiledrop.type_name"])
        #expect(status == 0)
        let types = Set(lines)
        for expected in golden.expectedTypes {
            #expect(types.contains(expected), "\(golden.name): no \(expected) in \(types.sorted())")
        }
        // Every datagram in the file is decoded: the packet count equals the dissected count.
        let capture = try CaptureFile.read(path: golden.capturePath)
        #expect(lines.count == capture.packetCount)
        let (_, problems) = try Self.run(
            tshark, ["-r", golden.capturePath, "-Y", "_ws.expert || _ws.malformed"])
        #expect(problems.isEmpty, "\(golden.name): \(problems.prefix(3))")
    }

    /// Wireshark's Time column counts from the first frame it lists: the first datagram, at 0, so
    /// that a session reads in seconds (a replay record first, which has no timestamp, made every
    /// packet read about 1.8 × 10⁹ s).
    @Test(
        .enabled(if: DissectorTests.tshark != nil, "tshark is not installed (apt-get install tshark)"),
        arguments: GoldenCaptures.all)
    func timeColumnStartsAtTheFirstDatagram(_ golden: GoldenCaptures.Golden) throws {
        let tshark = try #require(Self.tshark)
        let (status, lines) = try Self.run(
            tshark,
            [
                "-r", golden.capturePath, "-T", "fields", "-E", "separator=,", "-e", "frame.number", "-e",
                "frame.time_relative",
            ])
        #expect(status == 0)
        let capture = try CaptureFile.read(path: golden.capturePath)
        // Frame number, then the time: empty for a replay record, which has none.
        let times = lines.map { line in line.split(separator: ",", omittingEmptySubsequences: false).last }
            .map { $0.flatMap { Double($0) } }
        #expect(times.count > capture.packetCount)
        // The packets come first, each with its time; the records after them have none.
        #expect(times.first == 0, "\(golden.name): first frame at \(lines.first ?? "nothing")")
        let seconds = times.prefix(capture.packetCount).compactMap { $0 }
        #expect(seconds.count == capture.packetCount, "\(golden.name): a packet without a time")
        #expect(seconds.allSatisfy { $0 >= 0 && $0 < 60 }, "\(golden.name): \(seconds.max() ?? 0) s")
        #expect(times.dropFirst(capture.packetCount).allSatisfy { $0 == nil })
    }

    @Test(.enabled(if: DissectorTests.tshark != nil, "tshark is not installed (apt-get install tshark)"))
    func decodesHeaderAndCleartextFields() throws {
        let tshark = try #require(Self.tshark)
        let path = GoldenCaptures.all[0].capturePath
        let capture = try CaptureFile.read(path: path)
        let invite = try #require(capture.devices.flatMap(\.outbound).first { $0.payload[3] == 3 })
        guard case .invite(let message) = try Packet(datagram: invite.payload) else {
            Issue.record("not an INVITE")
            return
        }
        let (_, lines) = try Self.run(
            tshark,
            [
                "-r", path, "-Y", "profiledrop.type == 3", "-T", "fields", "-E", "separator=,",
                "-e", "profiledrop.session_id", "-e", "profiledrop.sender", "-e", "profiledrop.receiver",
                "-e", "profiledrop.noise_length",
            ])
        let expected =
            [message.sessionID, message.sender.rawValue, message.receiver.rawValue]
            .map {
                "0x" + String(repeating: "0", count: 16 - String($0, radix: 16).count) + String($0, radix: 16)
            }
            .joined(separator: ",") + ",\(message.noiseMessage.count)"
        #expect(lines.contains(expected), "\(lines.prefix(2)) vs \(expected)")
    }

    /// BEACON's fields, the sequence number and then the position hint last (PROTOCOL.md 3), as the
    /// core reads them.
    @Test(.enabled(if: DissectorTests.tshark != nil, "tshark is not installed (apt-get install tshark)"))
    func decodesTheBeaconFields() throws {
        let tshark = try #require(Self.tshark)
        let path = GoldenCaptures.all[0].capturePath
        let capture = try CaptureFile.read(path: path)
        let beacons: [Beacon] = capture.devices.flatMap(\.outbound).compactMap {
            if case .beacon(let beacon) = try? Packet(datagram: $0.payload) { beacon } else { nil }
        }
        #expect(beacons.count >= 2)
        let (_, lines) = try Self.run(
            tshark,
            [
                "-r", path, "-Y", "profiledrop.type == 1", "-T", "fields", "-E", "separator=,",
                "-e", "profiledrop.device_id", "-e", "profiledrop.port", "-e", "profiledrop.flags.busy",
                "-e", "profiledrop.beacon_sequence", "-e", "profiledrop.position_x", "-e",
                "profiledrop.position_y",
            ])
        #expect(beacons.allSatisfy { $0.position != nil })
        let expected = beacons.map { beacon in
            let hex = String(beacon.deviceID.rawValue, radix: 16)
            return "0x" + String(repeating: "0", count: 16 - hex.count) + hex
                + ",\(beacon.port),\(beacon.busy ? 1 : 0),\(beacon.sequence)"
                + ",\(beacon.position?.x ?? 0),\(beacon.position?.y ?? 0)"
        }
        #expect(Set(lines) == Set(expected), "\(lines.prefix(2)) vs \(expected.prefix(2))")
    }

    @Test(.enabled(if: DissectorTests.tshark != nil, "tshark is not installed (apt-get install tshark)"))
    func labelsTheReplayRecords() throws {
        let tshark = try #require(Self.tshark)
        let path = GoldenCaptures.all[3].capturePath
        let capture = try CaptureFile.read(path: path)
        let (_, lines) = try Self.run(
            tshark,
            [
                "-r", path, "-Y", "profiledrop_record", "-T", "fields", "-E", "separator=,",
                "-e", "profiledrop_record.kind", "-e", "profiledrop_record.input", "-e",
                "profiledrop_record.decision",
            ])
        let inputs = capture.devices.map(\.inputs.count).reduce(0, +)
        #expect(lines.filter { $0.hasPrefix("1,") }.count == capture.devices.count)
        #expect(lines.filter { $0.hasPrefix("2,") }.count == inputs)
        #expect(lines.filter { $0.hasPrefix("3,") }.count == capture.devices.count)
        // The declined run has one decision per device: alice shares, bob declines.
        #expect(lines.filter { $0.hasPrefix("2,3,") }.sorted() == ["2,3,1", "2,3,3"])
    }

    /// Datagrams of versions 1 and 2 (and of any other version) on the registered ports, and version
    /// 1 on another port through the heuristic, are shown by their header as not spoken; wire
    /// version 3 is read.
    @Test(.enabled(if: DissectorTests.tshark != nil, "tshark is not installed (apt-get install tshark)"))
    func otherVersionsAreShownAsNotSpoken() throws {
        let tshark = try #require(Self.tshark)
        let capture = try CaptureFile.read(path: GoldenCaptures.all[0].capturePath)
        let outbound = capture.devices[0].outbound
        let beacon = try #require(outbound.first { $0.payload[3] == PacketType.beacon.rawValue })
        let invite = try #require(
            capture.devices.flatMap(\.outbound).first { $0.payload[3] == PacketType.invite.rawValue })
        func version(_ version: UInt8, _ datagram: CapturedDatagram, port: UInt16? = nil) -> [UInt8] {
            var payload = datagram.payload
            payload[2] = version
            var destination = datagram.destination
            if let port { destination.port = port }
            return IPv4UDP.frame(payload, from: datagram.source, to: destination)
        }
        let path = try Self.writeCapture(
            interface: "versions",
            frames: [
                version(1, beacon), version(2, beacon), version(1, invite), version(1, invite, port: 5000),
                version(3, invite, port: 5000),
            ])
        defer { try? FileManager.default.removeItem(atPath: path) }
        let (status, versions) = try Self.run(
            tshark, ["-r", path, "-Y", "profiledrop", "-T", "fields", "-e", "profiledrop.version"])
        #expect(status == 0)
        #expect(versions == ["1", "2", "1", "1", "3"])
        // The summary lines end with the Info column.
        let (_, lines) = try Self.run(tshark, ["-r", path, "-Y", "profiledrop"])
        #expect(lines.count == 5)
        for (line, version) in zip(lines, [1, 2, 1, 1]) {
            #expect(line.hasSuffix(" version \(version) (not spoken)"), "\(line)")
        }
        #expect(lines.last?.contains("INVITE session=") == true, "\(lines)")
    }

    /// The cookie of BUSY(retry) and of the INVITE that echoes it, and INVITE's zero padding, are
    /// decoded without an expert note; padding that is not zero gets one.
    @Test(.enabled(if: DissectorTests.tshark != nil, "tshark is not installed (apt-get install tshark)"))
    func decodesCookiesAndInvitePadding() throws {
        let tshark = try #require(Self.tshark)
        let cookie = Array(UInt8(0xC0)...UInt8(0xCF))
        let invite = Packet.invite(
            HandshakePacket(
                sessionID: 7, sender: DeviceID(rawValue: 1), receiver: DeviceID(rawValue: 2),
                noiseMessage: Array(repeating: 9, count: 32), cookie: cookie)
        ).encoded()
        let retry = Packet.busy(
            Busy(
                sessionID: 7, sender: DeviceID(rawValue: 2), receiver: DeviceID(rawValue: 1), reason: .retry,
                cookie: cookie)
        ).encoded()
        var badPadding = invite
        badPadding[badPadding.count - 1] = 1
        let a = PeerAddress(10, 0, 0, 1, port: 5000)
        let b = PeerAddress(10, 0, 0, 2, port: 5000)
        let path = try Self.writeCapture(
            interface: "cookies",
            frames: [
                IPv4UDP.frame(retry, from: b, to: a), IPv4UDP.frame(invite, from: a, to: b),
                IPv4UDP.frame(badPadding, from: a, to: b),
            ])
        defer { try? FileManager.default.removeItem(atPath: path) }
        let (status, lines) = try Self.run(
            tshark,
            [
                "-r", path, "-Y", "profiledrop", "-T", "fields", "-E", "separator=,", "-e",
                "profiledrop.type_name",
                "-e", "profiledrop.busy_reason", "-e", "profiledrop.cookie", "-e", "profiledrop.padding",
            ])
        #expect(status == 0)
        let hex = cookie.map { String(format: "%02x", $0) }.joined()
        let zeros = String(repeating: "00", count: Packet.invitePadding(noiseLength: 32))
        #expect(lines.count == 3)
        #expect(lines.first == "BUSY,3,\(hex),", "\(lines)")
        #expect(lines.dropFirst().first == "INVITE,,\(hex),\(zeros)", "\(lines)")
        let (_, problems) = try Self.run(tshark, ["-r", path, "-Y", "_ws.expert"])
        #expect(problems.count == 1, "only the bad padding: \(problems)")
    }

    @Test(.enabled(if: DissectorTests.tshark != nil, "tshark is not installed (apt-get install tshark)"))
    func heuristicFindsUnicastOnOtherPorts() throws {
        let tshark = try #require(Self.tshark)
        // Port 5000 is not registered: only the heuristic can claim the unicast exchange.
        var run = try TwoDeviceRun(options: CaptureOptions())
        run.run(until: Instant.zero + .seconds(30))
        let path = FileManager.default.temporaryDirectory.appendingPathComponent(
            "profiledrop-\(UUID().uuidString).pcapng"
        ).path
        try Data(run.recorder.fileBytes()).write(to: URL(fileURLWithPath: path))
        defer { try? FileManager.default.removeItem(atPath: path) }
        let (_, lines) = try Self.run(
            tshark,
            [
                "-r", path, "-Y", "profiledrop && udp.dstport == 5000", "-T", "fields", "-e",
                "profiledrop.type_name",
            ])
        #expect(Set(lines).isSuperset(of: ["INVITE", "ACCEPT", "CONFIRM", "SECURE"]))
    }
}
