@_spi(Storage) import ProfileDrop
import ProfileDropCapture
import ProfileDropCore
import ProfileDropCrypto
import ProfileDropJSON

/// `profiledrop replay FILE`: rebuilds each captured device from a pcapng capture written with
/// `--keylog`, feeds it the recorded inputs and checks that it sends the recorded datagrams byte for
/// byte, printing the timeline.
enum ReplayCommand: Subcommand {
    static let name = "replay"
    static let summary = "replay a capture deterministically and check every datagram is identical"
    static let parser = ArgumentParser(
        command: name, options: [Options.device, Options.json, Options.keyFile, Options.timeline])

    /// Every option of `replay`, declared once.
    enum Options {
        static let device = Option.text(
            "device", valueName: "ID",
            help: "replay only this device (name, 16-hex-digit device id or interface number)")
        static let json = Flag("json", help: "one JSON object per line instead of text")
        static let keyFile = Option.path(
            "key-file", valueName: "PATH", help: "the device's static key file, for captures of 'share'")
        static let timeline = Option.path(
            "timeline", valueName: "OUT.svg",
            help: "also draw the session as an SVG picture: datagrams, distance and bearing, gate, transfer")
    }
    static func run(_ arguments: ParsedArguments, console: Console) throws -> ExitCode {
        guard arguments.positionals.count == 1, let path = arguments.positionals.first else {
            throw UsageError("takes one capture file: profiledrop replay \(synopsis[0])")
        }
        let json = arguments.has(Options.json)
        let timelinePath = arguments.value(Options.timeline)
        if let timelinePath {
            try OutputFile.checkWritable(timelinePath, option: "--timeline")
            try OutputFile.checkDistinct([("--timeline", timelinePath)], from: [("the capture", path)])
        }
        let capture = try CaptureFile.read(path: path)
        var devices = capture.devices
        if let selector = arguments.value(Options.device) {
            guard let device = capture.device(selector) else {
                let names = capture.devices.map(\.record.name).joined(separator: ", ")
                throw UsageError("\(path) has no device '\(selector)' (devices: \(names))")
            }
            devices = [device]
        }
        let givenKey = try arguments.value(Options.keyFile).map(loadKey)
        var total = 0
        var timeline = SessionTimeline.Builder(title: "ProfileDrop session: \(TimelineOutput.fileName(path))")
        for device in devices {
            // A given key is for the device it belongs to; simulated devices derive theirs.
            let key = givenKey.flatMap { key in
                key.publicKey.rawRepresentation == device.record.staticPublicKey
                    || device.secrets?.staticKey == .external ? key : nil
            }
            let result = try Replay.run(device, staticKey: key) { entry in
                console.output(json ? jsonLine(entry) : Describe.line(entry))
                timeline.add(entry)
            }
            switch result {
            case .identical(let datagrams):
                total += datagrams
            case .diverged(let divergence):
                report(divergence, json: json, console: console)
                if let timelinePath { try TimelineOutput.write(timeline.timeline(), to: timelinePath) }
                return .failure
            }
        }
        if let timelinePath { try TimelineOutput.write(timeline.timeline(), to: timelinePath) }
        if json {
            console.output(
                JSONValue.object([
                    ("event", .string("replay")), ("datagrams", .integer(total)), ("identical", .bool(true)),
                ]).serialized)
        } else {
            console.output("replay: \(total) datagrams, identical")
        }
        return .success
    }

    private static func loadKey(_ path: String) throws -> X25519.PrivateKey {
        guard let key = try StaticKeyStore.load(at: path) else {
            throw UsageError("no static key file at \(path)")
        }
        return key
    }

    private static func report(_ divergence: ReplayDivergence, json: Bool, console: Console) {
        let recorded = divergence.recorded.map(hex) ?? "(none)"
        let replayed = divergence.replayed.map(hex) ?? "(none)"
        if json {
            console.output(
                JSONValue.object([
                    ("event", .string("divergence")), ("device", .string(divergence.device)),
                    ("t", seconds(divergence.time)), ("reason", .string(divergence.reason)),
                    ("recorded", .string(recorded)), ("replayed", .string(replayed)),
                ]).serialized)
        } else {
            console.output("divergence: \(divergence)")
            for (label, bytes) in [("recorded", divergence.recorded), ("replayed", divergence.replayed)] {
                guard let bytes else { continue }
                let (type, fields) = Describe.datagram(bytes)
                console.output("\(label): \(type) \(Describe.text(fields))")
            }
            console.output("recorded hex: \(recorded)")
            console.output("replayed hex: \(replayed)")
        }
        console.error("profiledrop replay: diverged: \(divergence)")
    }

    private static func jsonLine(_ entry: ReplayEntry) -> String {
        var members: [(key: String, value: JSONValue)] = []
        // A field named like a member already there (a BEACON's `device`, a peer's `name`) gets a
        // distinct key: JSON objects have no duplicate keys.
        func add(_ fields: [Describe.Field]) {
            for field in fields {
                var key = field.key
                if members.contains(where: { $0.key == key }) {
                    key = key == "device" ? "device_id" : key == "name" ? "peer_name" : "\(key)_field"
                }
                members.append((key: key, value: json(field.value)))
            }
        }
        let common: [(key: String, value: JSONValue)] = [
            ("t", seconds(entry.time)), ("device", .string(entry.device)),
        ]
        switch entry.kind {
        case .start(let record, let card):
            members = [("event", .string("start"))] + common
            add([
                ("device_id", .text(record.deviceID.description)),
                ("address", .text(record.localAddress.description)),
                ("consent", .text(Describe.policy(record.consent))),
                ("static_public_key", .text(Describe.hexString(record.staticPublicKey))),
            ])
            if let card {
                members.append(("card", cardObject(card)))
            }
        case .input(let input):
            let (kind, fields) = Describe.input(input)
            members = [("event", .string("input"))] + common + [("input", .string(kind))]
            add(fields)
        case .sent(let datagram):
            let (type, fields) = Describe.datagram(datagram.bytes)
            members = [("event", .string("sent"))] + common + [("type", .string(type))]
            add([("to", .text(datagram.destination.description))] + fields)
        case .event(let event):
            let (name, fields) = Describe.event(event)
            members = [("event", .string("device-event"))] + common + [("name", .string(name))]
            if case .cardVerified(let card, _) = event {
                members.append(("card", cardObject(card)))
            } else if case .cardReceived(let card, _) = event {
                members.append(("card", cardObject(card)))
            } else {
                add(fields)
            }
        }
        if let frames = entry.frames {
            members.append(("frames", .array(frames.map { .string(Describe.frame($0)) })))
        }
        return JSONValue.object(members).serialized
    }

    /// A time as a JSON number of seconds (exact to the nanosecond for the day a capture may span).
    static func seconds(_ time: Instant) -> JSONValue {
        .number(Double(time.nanoseconds) / 1e9)
    }

    /// A card's fields as one object.
    static func cardObject(_ card: ProfileCard) -> JSONValue {
        .object(Describe.card(card).map { (key: $0.key, value: json($0.value)) })
    }

    /// A described value as JSON: numbers and booleans as themselves, not as strings.
    static func json(_ value: Describe.Value) -> JSONValue {
        switch value {
        case .text(let text): .string(text)
        case .integer(let integer):
            integer.magnitude <= 1 << 53 ? .integer(integer) : .string(String(integer))
        case .number(let number): number.isFinite ? .number(number) : .null
        case .flag(let flag): .bool(flag)
        }
    }
}

extension CaptureError: InputError {}
