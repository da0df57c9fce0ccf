import Foundation
import ProfileDropCardFile
import ProfileDropCore
import ProfileDropCrypto
import ProfileDropJSON

/// A room of devices, their movements, their owners' choices and the network they share: what one
/// simulation runs. Read from a JSON scenario file (see ``Scenario/load(contentsOf:)``) or built in code.
///
/// File format (times in seconds, distances in centimetres, headings in degrees):
/// ```json
/// {"seed": 7, "timeLimit": 30,
///  "faults": {"delayMs": 2, "jitterMs": 1, "loss": 0.3, "duplicate": 0.05, "reorder": 0.1,
///             "reorderDelayMs": 30, "corrupt": 0.01,
///             "partitions": [{"devices": ["bori"], "start": 1, "end": 3}]},
///  "devices": [{"name": "bori", "pose": {"x": 0, "y": 0, "heading": 0},
///               "motion": [{"hold": 1}, {"moveTo": {"x": 3, "y": 0, "heading": 0}, "over": 2}],
///               "consent": "accept", "card": {"name": "Bori", ...}, "photoBytes": 262144,
///               "start": 0}]}
/// ```
/// `"timeouts": {"overall": 20, "consent": 10, "rangingWindow": 3, "transfer": 30, "idle": 5}`
/// (seconds) overrides the devices' timers. `seed`, `timeLimit` (default: until every device must
/// have closed, from the timeouts), `faults`, `timeouts`, `motion`, `consent` (default `accept`) and
/// `photoBytes` are optional.
/// `card` is an inline card object in the card file format or a path to a card file, relative to
/// the scenario file. `photoBytes` replaces the card's photo with a synthetic JPEG of that size.
/// `end` may be omitted or null for a partition that never heals.
public struct Scenario: Equatable, Sendable {
    /// The seed used when neither the file nor the caller gives one.
    public static let defaultSeed: UInt64 = 1
    /// The virtual-time limit used when the file gives none.
    public static let defaultTimeLimit: Duration = .seconds(30)

    /// The seed the file asks for, if any; a seed given on the command line wins.
    public var seed: UInt64?
    /// How long the simulation may run in virtual time.
    public var timeLimit: Duration
    /// The network's faults.
    public var faults: NetworkFaults
    /// The devices' timers.
    public var timeouts: Timeouts
    /// The devices, in file order; a device's index is its network node.
    public var devices: [DeviceSpec]

    /// Creates a scenario in code.
    public init(
        seed: UInt64? = nil, timeLimit: Duration = Scenario.defaultTimeLimit, faults: NetworkFaults = .none,
        timeouts: Timeouts = Timeouts(), devices: [DeviceSpec]
    ) {
        self.seed = seed
        self.timeLimit = timeLimit
        self.faults = faults
        self.timeouts = timeouts
        self.devices = devices
    }

    /// One device in the room.
    public struct DeviceSpec: Equatable, Sendable {
        /// A short unique name used in transcripts.
        public var name: String
        /// Where the device starts.
        public var pose: Pose
        /// How the device moves from there, step by step.
        public var motion: [MotionScript.Step]
        /// What its owner answers when asked to share.
        public var consent: Consent
        /// The card it offers.
        public var card: ProfileCard
        /// When the device is switched on, from the start of the run: before that it hears and
        /// sends nothing, and its timers (its overall limit among them) count from then.
        public var start: Duration

        /// The device's whole movement as a script starting at time zero.
        public var motionScript: MotionScript { MotionScript(from: pose, steps: motion) }

        /// Creates a device description.
        public init(
            name: String, pose: Pose, motion: [MotionScript.Step] = [],
            consent: Consent = .accept(after: Consent.defaultReaction), card: ProfileCard,
            start: Duration = .zero
        ) {
            self.name = name
            self.pose = pose
            self.motion = motion
            self.consent = consent
            self.card = card
            self.start = start
        }
    }

    /// The owner's answer to a share prompt.
    public enum Consent: Equatable, Sendable {
        /// The usual reaction time of a person tapping a prompt.
        public static let defaultReaction: Duration = .milliseconds(400)
        /// Accept this long after the prompt appears.
        case accept(after: Duration)
        /// Decline this long after the prompt appears.
        case decline(after: Duration)
        /// Never answer.
        case ignore

        /// A short word for logs.
        public var summary: String {
            switch self {
            case .accept(let after): return "accept+\(NetworkFaults.millis(after))"
            case .decline(let after): return "decline+\(NetworkFaults.millis(after))"
            case .ignore: return "ignore"
            }
        }
    }
}

/// Why a scenario file was rejected: one line naming the file, the JSON location and the problem.
public struct ScenarioError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The file concerned, or nil for text given directly.
    public let file: String?
    /// Where in the document, e.g. `devices[1].pose.x`; empty for the whole document.
    public let location: String
    /// What is wrong.
    public let reason: String

    /// Creates an error.
    public init(file: String?, location: String, reason: String) {
        self.file = file
        self.location = location
        self.reason = reason.split(whereSeparator: \.isNewline).joined(separator: " ")
    }

    public var description: String {
        var prefix = file.map { "\($0): " } ?? ""
        if !location.isEmpty { prefix += "\(location): " }
        return prefix + reason
    }
}

extension Scenario {
    static let topKeys = ["seed", "timeLimit", "faults", "timeouts", "devices"]
    static let timeoutKeys = ["overall", "consent", "rangingWindow", "transfer", "idle"]
    static let faultKeys = [
        "delayMs", "jitterMs", "loss", "duplicate", "reorder", "reorderDelayMs", "corrupt", "partitions",
    ]
    static let partitionKeys = ["devices", "start", "end"]
    static let deviceKeys = ["name", "pose", "motion", "consent", "card", "photoBytes", "start"]
    static let poseKeys = ["x", "y", "heading"]
    static let consentKeys = ["decision", "after"]
    /// The most devices a scenario holds: the largest room `bench room` measures. Rooms grow
    /// costlier faster than their size (every device hears every beacon), and 2,000 devices did not
    /// finish in a minute.
    public static let maximumDevices = 500

    /// Longest virtual time any scenario value may name: a day.
    static let maximumSeconds = 86_400.0

    /// Reads and validates a scenario file.
    /// - Throws: ``ScenarioError`` with a one-line reason.
    public static func load(contentsOf path: String) throws(ScenarioError) -> Scenario {
        let bytes: [UInt8]
        do {
            bytes = try InputFile.read(atPath: path, limit: JSONValue.maximumBytes)
        } catch {
            throw ScenarioError(
                file: path, location: "", reason: "cannot read the scenario file: \(error.reasonText)")
        }
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw ScenarioError(file: path, location: "", reason: "the scenario file is not UTF-8")
        }
        let directory = (path as NSString).deletingLastPathComponent
        do {
            return try Scenario(json: text, baseDirectory: directory.isEmpty ? "." : directory)
        } catch {
            throw ScenarioError(file: path, location: error.location, reason: error.reason)
        }
    }

    /// Parses and validates scenario JSON; card paths resolve against `baseDirectory`.
    /// - Throws: ``ScenarioError`` (with `file` nil) with a one-line reason.
    public init(json text: String, baseDirectory: String) throws(ScenarioError) {
        let root: JSONValue
        do {
            root = try JSONValue.parse(text)
        } catch {
            throw ScenarioError(file: nil, location: "", reason: "invalid JSON at \(error)")
        }
        let top = try Fields(root, at: "", allowed: Self.topKeys)
        let seed = try top.optional("seed").map { value throws(ScenarioError) in
            try Self.seedValue(value, at: "seed")
        }
        var timeouts = Timeouts()
        if let value = try top.optional("timeouts") {
            let fields = try Fields(value, at: "timeouts", allowed: Self.timeoutKeys)
            func read(_ key: String) throws(ScenarioError) -> Duration? {
                try fields.optional(key).map { value throws(ScenarioError) in
                    try Self.duration(value, at: "timeouts.\(key)", positive: true)
                }
            }
            if let overall = try read("overall") { timeouts.overall = overall }
            if let consent = try read("consent") { timeouts.consent = consent }
            if let window = try read("rangingWindow") { timeouts.rangingWindow = window }
            if let transfer = try read("transfer") { timeouts.transfer = transfer }
            if let idle = try read("idle") { timeouts.idle = idle }
        }
        let givenLimit = try top.optional("timeLimit").map { value throws(ScenarioError) in
            try Self.duration(value, at: "timeLimit", positive: true)
        }
        let devicesValue = try top.required("devices")
        guard case .array(let deviceValues) = devicesValue else {
            throw ScenarioError(
                file: nil, location: "devices", reason: "expected an array, found \(devicesValue.typeName)")
        }
        guard !deviceValues.isEmpty else {
            throw ScenarioError(
                file: nil, location: "devices", reason: "a scenario needs at least one device")
        }
        guard deviceValues.count <= Self.maximumDevices else {
            throw ScenarioError(
                file: nil, location: "devices",
                reason: "a scenario has at most \(Self.maximumDevices) devices, found \(deviceValues.count)")
        }
        var devices: [DeviceSpec] = []
        for (index, value) in deviceValues.enumerated() {
            let device = try Self.device(value, at: "devices[\(index)]", baseDirectory: baseDirectory)
            if devices.contains(where: { $0.name == device.name }) {
                throw ScenarioError(
                    file: nil, location: "devices[\(index)].name",
                    reason: "duplicate device name \"\(device.name)\"")
            }
            devices.append(device)
        }
        // Without a limit, run until every device must have closed, counting from the last one
        // switched on, and a second more.
        let lastStart = devices.map(\.start).max() ?? .zero
        let timeLimit = givenLimit ?? lastStart + timeouts.closeBound + .seconds(1)
        let names = devices.map(\.name)
        let faults =
            try top.optional("faults").map { value throws(ScenarioError) in
                try Self.faults(value, at: "faults", deviceNames: names)
            } ?? .none
        self.init(seed: seed, timeLimit: timeLimit, faults: faults, timeouts: timeouts, devices: devices)
    }

    private static func faults(_ value: JSONValue, at location: String, deviceNames: [String])
        throws(ScenarioError) -> NetworkFaults
    {
        let fields = try Fields(value, at: location, allowed: faultKeys)
        var faults = NetworkFaults()
        if let delay = try fields.optional("delayMs") {
            faults.delay = try milliseconds(delay, at: "\(location).delayMs")
        }
        if let jitter = try fields.optional("jitterMs") {
            faults.jitter = try milliseconds(jitter, at: "\(location).jitterMs")
        }
        if let loss = try fields.optional("loss") { faults.lossRate = try rate(loss, at: "\(location).loss") }
        if let dup = try fields.optional("duplicate") {
            faults.duplicationRate = try rate(dup, at: "\(location).duplicate")
        }
        if let reorder = try fields.optional("reorder") {
            faults.reorderRate = try rate(reorder, at: "\(location).reorder")
        }
        if let extra = try fields.optional("reorderDelayMs") {
            faults.reorderDelay = try milliseconds(extra, at: "\(location).reorderDelayMs")
        }
        if let corrupt = try fields.optional("corrupt") {
            faults.corruptionRate = try rate(corrupt, at: "\(location).corrupt")
        }
        if let partitions = try fields.optional("partitions") {
            guard case .array(let items) = partitions else {
                throw ScenarioError(
                    file: nil, location: "\(location).partitions",
                    reason: "expected an array, found \(partitions.typeName)")
            }
            for (index, item) in items.enumerated() {
                faults.partitions.append(
                    try partition(item, at: "\(location).partitions[\(index)]", deviceNames: deviceNames))
            }
        }
        return faults
    }

    private static func partition(_ value: JSONValue, at location: String, deviceNames: [String])
        throws(ScenarioError) -> Partition
    {
        let fields = try Fields(value, at: location, allowed: partitionKeys)
        let devicesValue = try fields.required("devices")
        guard case .array(let items) = devicesValue, !items.isEmpty else {
            throw ScenarioError(
                file: nil, location: "\(location).devices",
                reason: "expected a non-empty array of device names")
        }
        var isolated: [Int] = []
        for (index, item) in items.enumerated() {
            let name = try string(item, at: "\(location).devices[\(index)]")
            guard let node = deviceNames.firstIndex(of: name) else {
                throw ScenarioError(
                    file: nil, location: "\(location).devices[\(index)]",
                    reason: "no device is named \"\(name)\"")
            }
            if !isolated.contains(node) { isolated.append(node) }
        }
        let start =
            Instant.zero
            + (try fields.optional("start").map { v throws(ScenarioError) in
                try duration(v, at: "\(location).start", positive: false)
            } ?? .zero)
        var end: Instant?
        if let endValue = try fields.optional("end"), endValue != .null {
            end = Instant.zero + (try duration(endValue, at: "\(location).end", positive: false))
        }
        if let end, end <= start {
            throw ScenarioError(
                file: nil, location: "\(location).end", reason: "a partition must end after it starts")
        }
        return Partition(isolated: isolated, start: start, end: end)
    }

    private static func device(_ value: JSONValue, at location: String, baseDirectory: String)
        throws(ScenarioError) -> DeviceSpec
    {
        let fields = try Fields(value, at: location, allowed: deviceKeys)
        let name = try string(try fields.required("name"), at: "\(location).name")
        guard !name.isEmpty, name.utf8.count <= 32,
            name.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" })
        else {
            throw ScenarioError(
                file: nil, location: "\(location).name",
                reason: "a device name is 1 to 32 letters, digits, '-' or '_'")
        }
        let pose = try self.pose(try fields.required("pose"), at: "\(location).pose")
        var motion: [MotionScript.Step] = []
        if let motionValue = try fields.optional("motion") {
            guard case .array(let steps) = motionValue else {
                throw ScenarioError(
                    file: nil, location: "\(location).motion",
                    reason: "expected an array, found \(motionValue.typeName)")
            }
            for (index, step) in steps.enumerated() {
                motion.append(try motionStep(step, at: "\(location).motion[\(index)]"))
            }
        }
        let consent =
            try fields.optional("consent").map { v throws(ScenarioError) in
                try self.consent(v, at: "\(location).consent")
            } ?? .accept(after: Consent.defaultReaction)
        var card = try self.card(
            try fields.required("card"), at: "\(location).card", baseDirectory: baseDirectory)
        if let bytesValue = try fields.optional("photoBytes") {
            let count = try integer(
                bytesValue, at: "\(location).photoBytes", range: 8...ProfileCard.Limits.photoBytes)
            do {
                card = try card.withPhoto(SyntheticPhoto.jpeg(byteCount: count, label: name))
            } catch {
                throw ScenarioError(file: nil, location: "\(location).photoBytes", reason: error.diagnostic)
            }
        }
        let start =
            try fields.optional("start").map { value throws(ScenarioError) in
                try duration(value, at: "\(location).start", positive: false)
            } ?? .zero
        return DeviceSpec(name: name, pose: pose, motion: motion, consent: consent, card: card, start: start)
    }

    private static func pose(_ value: JSONValue, at location: String) throws(ScenarioError) -> Pose {
        let fields = try Fields(value, at: location, allowed: poseKeys)
        let x = try number(try fields.required("x"), at: "\(location).x", limit: Pose.roomLimit)
        let y = try number(try fields.required("y"), at: "\(location).y", limit: Pose.roomLimit)
        let heading = try number(
            try fields.optional("heading") ?? .number(0), at: "\(location).heading", limit: 3600)
        return Pose(x: x, y: y, heading: heading)
    }

    private static func motionStep(_ value: JSONValue, at location: String) throws(ScenarioError)
        -> MotionScript.Step
    {
        guard case .object(let members) = value else {
            throw ScenarioError(
                file: nil, location: location, reason: "expected an object, found \(value.typeName)")
        }
        if members.contains(where: { $0.key == "hold" }) {
            let fields = try Fields(value, at: location, allowed: ["hold"])
            return .hold(try duration(try fields.required("hold"), at: "\(location).hold", positive: false))
        }
        if members.contains(where: { $0.key == "moveTo" }) {
            let fields = try Fields(value, at: location, allowed: ["moveTo", "over"])
            let target = try pose(try fields.required("moveTo"), at: "\(location).moveTo")
            let over = try duration(try fields.required("over"), at: "\(location).over", positive: false)
            return .move(to: target, over: over)
        }
        throw ScenarioError(
            file: nil, location: location,
            reason: "a motion step is {\"hold\": s} or {\"moveTo\": pose, \"over\": s}")
    }

    private static func consent(_ value: JSONValue, at location: String) throws(ScenarioError) -> Consent {
        var word: String
        var after = Consent.defaultReaction
        switch value {
        case .string(let text): word = text
        case .object:
            let fields = try Fields(value, at: location, allowed: consentKeys)
            word = try string(try fields.required("decision"), at: "\(location).decision")
            if let afterValue = try fields.optional("after") {
                after = try duration(afterValue, at: "\(location).after", positive: false)
            }
        case .null, .bool, .number, .array:
            throw ScenarioError(
                file: nil, location: location,
                reason: "expected \"accept\", \"decline\", \"ignore\" or an object")
        }
        switch word {
        case "accept": return .accept(after: after)
        case "decline": return .decline(after: after)
        case "ignore": return .ignore
        default:
            throw ScenarioError(
                file: nil, location: location,
                reason: "unknown decision \"\(word)\" (allowed: accept, decline, ignore)")
        }
    }

    private static func card(_ value: JSONValue, at location: String, baseDirectory: String)
        throws(ScenarioError) -> ProfileCard
    {
        do {
            switch value {
            case .string(let path):
                let resolved = path.hasPrefix("/") ? path : baseDirectory + "/" + path
                return try CardFile.load(contentsOf: resolved)
            case .object:
                return try CardFile.card(json: value, baseDirectory: baseDirectory)
            case .null, .bool, .number, .array:
                throw ScenarioError(
                    file: nil, location: location,
                    reason: "expected a card object or a card file path, found \(value.typeName)")
            }
        } catch let error as CardError {
            let field = error.field.map { ".\($0)" } ?? ""
            throw ScenarioError(
                file: nil, location: location + (error.code == .unknownKey ? "" : field),
                reason: error.diagnostic)
        } catch let error as ScenarioError {
            throw error
        } catch {
            throw ScenarioError(file: nil, location: location, reason: "\(error)")
        }
    }

    // MARK: Scalar readers

    private static func string(_ value: JSONValue, at location: String) throws(ScenarioError) -> String {
        guard case .string(let text) = value else {
            throw ScenarioError(
                file: nil, location: location, reason: "expected a string, found \(value.typeName)")
        }
        return text
    }

    private static func number(_ value: JSONValue, at location: String, limit: Double) throws(ScenarioError)
        -> Double
    {
        guard case .number(let number) = value else {
            throw ScenarioError(
                file: nil, location: location, reason: "expected a number, found \(value.typeName)")
        }
        guard abs(number) <= limit else {
            throw ScenarioError(
                file: nil, location: location, reason: "must be within ±\(Int(limit)), found \(number)")
        }
        return number
    }

    private static func integer(_ value: JSONValue, at location: String, range: ClosedRange<Int>)
        throws(ScenarioError) -> Int
    {
        guard case .number(let number) = value else {
            throw ScenarioError(
                file: nil, location: location, reason: "expected a number, found \(value.typeName)")
        }
        guard let whole = value.wholeNumber(in: range) else {
            throw ScenarioError(
                file: nil, location: location,
                reason:
                    "expected a whole number from \(range.lowerBound) to \(range.upperBound), found \(number)"
            )
        }
        return whole
    }

    private static func seedValue(_ value: JSONValue, at location: String) throws(ScenarioError) -> UInt64 {
        switch value {
        case .string(let text):
            guard
                let seed = UInt64(text) ?? (text.hasPrefix("0x") ? UInt64(text.dropFirst(2), radix: 16) : nil)
            else {
                throw ScenarioError(
                    file: nil, location: location,
                    reason: "expected a 64-bit unsigned integer, found \"\(text)\"")
            }
            return seed
        case .number:
            // Doubles hold integers exactly only up to 2^53; larger seeds must be strings.
            return UInt64(try integer(value, at: location, range: 0...(1 << 53)))
        case .null, .bool, .array, .object:
            throw ScenarioError(
                file: nil, location: location,
                reason: "expected a number or a decimal string, found \(value.typeName)")
        }
    }

    private static func rate(_ value: JSONValue, at location: String) throws(ScenarioError) -> Double {
        let number = try number(value, at: location, limit: 1e6)
        guard (0...1).contains(number) else {
            throw ScenarioError(
                file: nil, location: location, reason: "a rate must be from 0 to 1, found \(number)")
        }
        return number
    }

    private static func duration(_ value: JSONValue, at location: String, positive: Bool)
        throws(ScenarioError) -> Duration
    {
        let seconds = try number(value, at: location, limit: maximumSeconds)
        guard seconds >= 0, !positive || seconds > 0 else {
            throw ScenarioError(
                file: nil, location: location,
                reason: positive ? "must be a positive number of seconds" : "must not be negative")
        }
        return .nanoseconds(Int64((seconds * 1e9).rounded()))
    }

    private static func milliseconds(_ value: JSONValue, at location: String) throws(ScenarioError)
        -> Duration
    {
        let millis = try number(value, at: location, limit: maximumSeconds * 1000)
        guard millis >= 0 else {
            throw ScenarioError(file: nil, location: location, reason: "must not be negative")
        }
        return .nanoseconds(Int64((millis * 1e6).rounded()))
    }
}

/// A scenario's JSON object, its keys checked against an allowed list, naming its location on
/// every error.
private struct Fields {
    let object: JSONObject
    let location: String

    init(_ value: JSONValue, at location: String, allowed: [String]) throws(ScenarioError) {
        do {
            object = try JSONObject(value, allowedKeys: allowed)
        } catch {
            switch error {
            case .notAnObject(let found):
                throw ScenarioError(
                    file: nil, location: location, reason: "expected an object, found \(found)")
            case .unknownKey(let key):
                throw ScenarioError(
                    file: nil, location: location,
                    reason: "unknown key \"\(key)\" (allowed: \(allowed.joined(separator: ", ")))")
            }
        }
        self.location = location
    }

    func optional(_ key: String) throws(ScenarioError) -> JSONValue? { object[key] }

    func required(_ key: String) throws(ScenarioError) -> JSONValue {
        guard let value = object[key] else {
            throw ScenarioError(file: nil, location: location, reason: "missing required key \"\(key)\"")
        }
        return value
    }
}

extension ProfileCard {
    /// The same card with `photo` in place of its photo.
    func withPhoto(_ photo: ProfileCard.Photo?) throws(CardError) -> ProfileCard {
        try ProfileCard(
            name: name, age: age, sex: sex, neutered: neutered, size: size, keywords: keywords, owner: owner,
            photo: photo)
    }
}

/// Deterministic stand-in photos: a JPEG signature followed by pseudo-random bytes.
public enum SyntheticPhoto {
    /// A JPEG-signed photo of exactly `byteCount` bytes whose content depends only on `label`.
    public static func jpeg(byteCount: Int, label: String) throws(CardError) -> ProfileCard.Photo {
        precondition(byteCount >= 3, "a synthetic JPEG needs room for its signature")
        var random = DeterministicRandom(seedMaterial: Array("synthetic photo \(label)".utf8))
        let body = random.bytes(byteCount - 3)
        return try ProfileCard.Photo(data: [0xFF, 0xD8, 0xFF] + body)
    }
}

extension Timeouts {
    /// The latest a device can still be open, from its start: its overall limit, which closes it
    /// whatever its session is doing (PROTOCOL.md 6.7). Its sessions may still be closing or
    /// draining then; the device sends nothing else.
    public var closeBound: Duration { overall }
}
