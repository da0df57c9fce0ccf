import Foundation
import ProfileDropCapture
import ProfileDropCore
import ProfileDropJSON
import ProfileDropTestSupport
import Testing

/// `profiledrop replay` as a user runs it: exit codes and the last line. Uses the executable built
/// beside the tests; skips, saying why, when it was not built.
struct ReplayCommandTests {
    static var executable: String? {
        let beside = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
            .deletingLastPathComponent().appendingPathComponent("profiledrop").path
        for path in [
            beside, GoldenCaptures.packageRoot.appendingPathComponent(".build/debug/profiledrop").path,
        ]
        where FileManager.default.isExecutableFile(atPath: path) {
            return path
        }
        return nil
    }

    static func run(_ arguments: [String]) throws -> (status: Int32, output: [String], errors: [String]) {
        let result = try runProgram(try #require(executable), ["replay"] + arguments)
        func lines(_ text: String) -> [String] { text.split(separator: "\n").map(String.init) }
        return (result.status, lines(result.output), lines(result.errors))
    }

    @Test(
        .enabled(
            if: ReplayCommandTests.executable != nil, "the profiledrop executable is not built (swift build)")
    )
    func exitCodesAndLastLine() throws {
        let golden = GoldenCaptures.all[0].capturePath
        let capture = try CaptureFile.read(path: golden)
        let total = capture.devices.map(\.outbound.count).reduce(0, +)

        let identical = try Self.run([golden])
        #expect(identical.status == 0)
        #expect(identical.output.last == "replay: \(total) datagrams, identical")
        #expect(identical.output.contains { $0.contains("card-received") && $0.contains("name=Kong") })

        let one = try Self.run([golden, "--device", "bob", "--json"])
        #expect(one.status == 0)
        let bobCount = capture.devices[1].outbound.count
        #expect(one.output.last == "{\"event\":\"replay\",\"datagrams\":\(bobCount),\"identical\":true}")

        let directory = FileManager.default.temporaryDirectory
        let cut = directory.appendingPathComponent("profiledrop-cut-\(UUID().uuidString).pcapng")
        defer { try? FileManager.default.removeItem(at: cut) }
        let bytes = try Data(contentsOf: URL(fileURLWithPath: golden))
        try bytes.prefix(bytes.count - 5).write(to: cut)
        let truncated = try Self.run([cut.path])
        #expect(truncated.status == 2)
        // One line that names the file, then says what is wrong in it.
        #expect(truncated.errors.count == 1)
        #expect(
            truncated.errors.first?.hasPrefix("profiledrop replay: \(cut.path): block at offset ") == true)

        // The last byte of alice's last datagram changed, its UDP checksum with it (a packet that is
        // not framed as a capture frames it makes the file malformed, not divergent).
        var flipped = [UInt8](bytes)
        let datagram = try #require(capture.devices[0].outbound.last)
        let frame = IPv4UDP.frame(datagram.payload, from: datagram.source, to: datagram.destination)
        let offset = try #require(
            (0...(flipped.count - frame.count)).first {
                flipped[$0..<($0 + frame.count)].elementsEqual(frame)
            })
        var changed = datagram.payload
        changed[changed.count - 1] ^= 0xFF
        flipped.replaceSubrange(
            offset..<(offset + frame.count),
            with: IPv4UDP.frame(changed, from: datagram.source, to: datagram.destination))
        try Data(flipped).write(to: cut)
        let diverged = try Self.run([cut.path])
        #expect(diverged.status == 1)
        #expect(diverged.output.contains { $0.hasPrefix("recorded hex: ") })
        #expect(diverged.output.contains { $0.hasPrefix("replayed hex: ") })
    }

    /// `--json` writes counts, measurements and flags as JSON numbers and booleans, and text
    /// (device ids, addresses, names) as strings.
    @Test(
        .enabled(
            if: ReplayCommandTests.executable != nil, "the profiledrop executable is not built (swift build)")
    )
    func jsonWritesNumbersAndBooleansAsThemselves() throws {
        let replay = try Self.run([GoldenCaptures.all[0].capturePath, "--json"])
        #expect(replay.status == 0)
        let lines = try replay.output.map { line in try JSONValue.parse(line) }
        func members(_ value: JSONValue) -> [(key: String, value: JSONValue)] {
            if case .object(let members) = value { members } else { [] }
        }
        func field(_ value: JSONValue, _ key: String) -> JSONValue? {
            members(value).first { $0.key == key }?.value
        }
        func matching(_ key: String, _ text: String) -> [JSONValue] {
            lines.filter { field($0, key) == .string(text) }
        }

        let start = try #require(matching("event", "start").first)
        let card = try #require(field(start, "card"))
        #expect(field(card, "age") == .number(3))
        #expect(field(card, "neutered") == .bool(true))
        #expect(field(card, "name") == .string("Bori"))
        #expect(field(start, "device_id").map { if case .string = $0 { true } else { false } } == true)

        let beacon = try #require(matching("type", "BEACON").first)
        #expect(field(beacon, "busy") == .bool(false))
        #expect(field(beacon, "port") == .number(47_474))
        guard case .number = field(beacon, "sequence") else {
            Issue.record("sequence is not a number: \(beacon.serialized)")
            return
        }
        let ranging = try #require(matching("name", "ranging").first)
        guard case .number(let distance) = field(ranging, "distance_cm"),
            case .number(let bearing) = field(ranging, "bearing_deg")
        else {
            Issue.record("ranging without numbers: \(ranging.serialized)")
            return
        }
        #expect(distance > 0 && distance < 20 && bearing >= 0 && bearing < 180)
        let pose = try #require(matching("input", "pose").first)
        // Input kinds are named as Captures/FORMAT.md names them.
        #expect(!matching("input", "timeout").isEmpty && !matching("input", "decision").isEmpty)
        #expect(field(pose, "heading").map { if case .number = $0 { true } else { false } } == true)
        let exchanging = try #require(matching("name", "exchanging").last)
        #expect(field(exchanging, "sent") == field(exchanging, "total"))
        #expect(field(exchanging, "total").map { if case .number = $0 { true } else { false } } == true)
        let connecting = try #require(matching("name", "connecting").first)
        #expect(field(connecting, "initiator").map { if case .bool = $0 { true } else { false } } == true)
        // Times are seconds, to the nanosecond.
        #expect(field(beacon, "t").map { if case .number = $0 { true } else { false } } == true)
        let input = try #require(matching("input", "recv").first)
        let recorded = try #require(
            CaptureFile.read(path: GoldenCaptures.all[0].capturePath).devices[0].inputs.first {
                if case .datagram = $0.input { true } else { false }
            })
        guard case .number(let t) = field(input, "t") else {
            Issue.record("no time: \(input.serialized)")
            return
        }
        #expect(UInt64((t * 1e9).rounded()) == recorded.time.nanoseconds)
        // No value anywhere is a number or boolean spelled as a string (the six-digit verification
        // code keeps its leading zeros).
        for line in lines {
            for (key, value) in members(line) where key != "code" {
                if case .string(let text) = value {
                    #expect(Double(text) == nil && text != "true" && text != "false", "\(key): \(text)")
                }
            }
        }
    }

    /// `--timeline OUT.svg` draws the replayed session; a path that cannot be written is refused
    /// in one line with exit code 2, before the replay prints anything.
    @Test(
        .enabled(
            if: ReplayCommandTests.executable != nil, "the profiledrop executable is not built (swift build)")
    )
    func timelineDrawsTheSessionAndRefusesPathsItCannotWrite() throws {
        let golden = GoldenCaptures.all[0].capturePath
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "profiledrop-replay-timeline-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let picture = directory.appendingPathComponent("session.svg").path

        let drawn = try Self.run([golden, "--timeline", picture])
        #expect(drawn.status == 0)
        #expect(drawn.output.last?.hasSuffix(" datagrams, identical") == true)
        let svg = try String(contentsOfFile: picture, encoding: .utf8)
        let capture = try CaptureFile.read(path: golden)
        #expect(svg.hasPrefix("<?xml"))
        #expect(svg.contains(">ProfileDrop session: happy-path.pcapng</text>"))
        #expect(
            svg.components(separatedBy: "<g class=\"datagram ").count - 1
                == capture.devices.map(\.outbound.count).reduce(0, +))

        let readOnly = directory.appendingPathComponent("read-only")
        try FileManager.default.createDirectory(at: readOnly, withIntermediateDirectories: true)
        try FileManager.default.setAttributes([.posixPermissions: 0o555], ofItemAtPath: readOnly.path)
        defer {
            try? FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: readOnly.path)
        }
        var refused = [directory.path, directory.appendingPathComponent("missing/session.svg").path, ""]
        // Root writes into a read-only directory anyway; only other users see it refused.
        if getuid() != 0 { refused.append(readOnly.appendingPathComponent("session.svg").path) }
        for path in refused {
            let result = try Self.run([golden, "--timeline", path])
            #expect(result.status == 2, "\(path)")
            #expect(result.errors.count == 1, "\(path): \(result.errors)")
            #expect(
                result.errors.first?.hasPrefix("profiledrop replay: --timeline") == true, "\(result.errors)")
            #expect(result.output.isEmpty, "\(path): the replay ran")
        }
    }

    /// A capture may hold any configuration the core accepts: here a distance band up to 1e300 cm,
    /// ranging noise of 1e300 cm, no outlier rejection and no far abort. Replay describes and draws it without trapping on numbers an
    /// integer cannot hold.
    @Test(
        .enabled(
            if: ReplayCommandTests.executable != nil, "the profiledrop executable is not built (swift build)")
    )
    func extremeConfigurationsAreDescribedAndDrawn() throws {
        var run = try TwoDeviceRun(
            options: CaptureOptions(keylog: true),
            staticKeys: (0..<2).map { .embedded(TwoDeviceRun.staticKey($0).rawRepresentation) }
        ) { configuration in
            configuration.gate.distanceBand = 5...1e300
            configuration.gate.outlierDistance = 1e300
            configuration.limits.farAbortDistance = 1e300
            configuration.measurement.distanceNoise = 1e300
        }
        run.run(until: Instant.zero + .seconds(20))
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "profiledrop-replay-extreme-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let capture = directory.appendingPathComponent("extreme.pcapng").path
        try Data(run.recorder.fileBytes()).write(to: URL(fileURLWithPath: capture))
        let picture = directory.appendingPathComponent("extreme.svg").path

        let result = try Self.run([capture, "--timeline", picture])
        #expect(result.status == 0, "\(result.output.suffix(3)) \(result.errors)")
        #expect(result.output.last?.hasSuffix(" datagrams, identical") == true)
        #expect(
            result.output.contains { $0.contains("** ranging distance_cm=") && $0.contains("e+") },
            "a huge distance is written in full")
        let svg = try String(contentsOfFile: picture, encoding: .utf8)
        #expect(svg.contains("1e+300"), "the band's far edge is labelled")
    }
}
