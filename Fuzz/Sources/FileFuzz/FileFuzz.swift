import Foundation
@_spi(Storage) import ProfileDrop
import ProfileDropCardFile
import ProfileDropCore
import ProfileDropCrypto
import ProfileDropJSON
import ProfileDropSimulator

/// The `file` fuzz target: inputs that reach the program as files. The first byte picks a format,
/// the second how the rest becomes the file: as it is, or (its top bit set) as JSON generated from
/// the format's own keys and values, so that the fuzzer reaches past the parser into validation.
///
/// Beyond "no trap", for every format:
/// - what is accepted is written back and read again to the same value, and written again to the
///   same bytes;
/// - a rejection is one typed error of the format's reader, naming the line and column when the
///   JSON itself is malformed (or the line, in the line-based known-peers store);
/// - a known-peers store or static key file that is rejected is left untouched by the commands
///   that would write it (`peers` remembering and forgetting, `share` creating a key).
///
/// Self-contained (it needs no other fuzz code), so that the CLI tests compile this same file to
/// replay the stored inputs.
public enum FileFuzz {
    /// The file formats, chosen by the first input byte.
    public enum Format: UInt8, CaseIterable, Sendable {
        /// Any JSON text (`JSONValue.parse`).
        case json
        /// A card file and its photo (`CardFile.load`).
        case card
        /// The known-peers store (`KnownPeersStore`).
        case knownPeers
        /// A static key file (`StaticKeyStore`).
        case keyFile
        /// A scenario for `simulate --scenario` (`Scenario.load`).
        case scenario
        /// A swarm summary for `simulate --swarm --merge` (`SwarmSummary`, `merge`).
        case swarmSummary
    }

    /// The broken invariants for one input; empty when every check holds.
    public static func check(_ input: [UInt8]) -> [String] {
        var violations: [String] = []
        guard let first = input.first else { return violations }
        let format = Format.allCases[Int(first) % Format.allCases.count]
        let mode = input.count > 1 ? input[1] : 0
        let body = Array(input.dropFirst(2))
        let generated = mode & 0x80 != 0
        switch format {
        case .json:
            checkJSON(generated ? generate(body, keys: jsonKeys) : body, into: &violations)
        case .card:
            // The card text, then (after the first zero byte) the photo's bytes; with bit 0x40 the
            // photo starts with a JPEG signature, so that it gets past format detection.
            let split = body.firstIndex(of: 0) ?? body.endIndex
            let text = Array(body[..<split])
            var photo = Array(body[min(split + 1, body.endIndex)...])
            if mode & 0x40 != 0 { photo = [0xFF, 0xD8, 0xFF] + photo }
            checkCard(generated ? generate(text, keys: cardKeys) : text, photo: photo, into: &violations)
        case .knownPeers:
            checkKnownPeers(generated ? knownPeersText(body) : body, into: &violations)
        case .keyFile:
            checkKeyFile(body, into: &violations)
        case .scenario:
            checkScenario(generated ? generate(body, keys: scenarioKeys) : body, into: &violations)
        case .swarmSummary:
            checkSwarmSummary(generated ? generate(body, keys: summaryKeys) : body, into: &violations)
        }
        return violations
    }

    // MARK: JSON

    static func checkJSON(_ text: [UInt8], into violations: inout [String]) {
        let value: JSONValue
        do {
            value = try JSONValue.parse(utf8: text)
        } catch {
            checkLocation(error, in: text, into: &violations)
            if let string = String(validating: text, as: UTF8.self) {
                do {
                    _ = try JSONValue.parse(string)
                    violations.append("JSON: text parses, its UTF-8 bytes do not (\(error))")
                } catch let other {
                    if other != error {
                        violations.append("JSON: text and bytes fail apart: \(other) / \(error)")
                    }
                }
            }
            return
        }
        for format in [
            JSONValue.Format.compact, .prettySorted, JSONValue.Format(pretty: true, sortedKeys: false),
        ] {
            let written = value.serialized(format)
            do {
                let again = try JSONValue.parse(written)
                if format.sortedKeys {
                    if again.serialized(format) != written {
                        violations.append("JSON: sorted output is not stable: \(written.prefix(200))")
                    }
                } else if again != value {
                    violations.append("JSON: written and read again differs: \(written.prefix(200))")
                }
            } catch {
                violations.append(
                    "JSON: the parser rejects what the writer wrote (\(error)): \(written.prefix(200))")
            }
        }
    }

    /// A JSON syntax error names a line and column inside the text.
    static func checkLocation(_ error: JSONParseError, in text: [UInt8], into violations: inout [String]) {
        let lines = text.split(separator: 0x0A, omittingEmptySubsequences: false)
        guard error.line >= 1, error.line <= lines.count, error.column >= 1,
            error.column <= lines[error.line - 1].count + 1
        else {
            violations.append("JSON: error at line \(error.line), column \(error.column) is outside the text")
            return
        }
    }

    /// The location a reader of a JSON format reports when the JSON itself is malformed.
    static func syntaxError(_ text: [UInt8]) -> JSONParseError? {
        do {
            _ = try JSONValue.parse(utf8: text)
            return nil
        } catch {
            return error
        }
    }

    // MARK: Card files

    static func checkCard(_ text: [UInt8], photo: [UInt8], into violations: inout [String]) {
        let directory = workDirectory()
        defer { remove(directory) }
        let cardPath = directory + "/card.json"
        write(text, to: cardPath)
        write(photo, to: directory + "/p.jpg")
        let card: ProfileCard
        do {
            card = try CardFile.load(contentsOf: cardPath)
        } catch {
            if let syntax = syntaxError(text) {
                let location = "\(cardPath):\(syntax.line):\(syntax.column): "
                if error.code != .invalidJSON || !error.diagnostic.hasPrefix(location) {
                    violations.append("card: malformed JSON reported without \(location): \(error)")
                }
            } else if error.code == .invalidJSON {
                violations.append("card: valid JSON reported as invalid: \(error)")
            }
            return
        }
        // Written back in the users' format (the photo under the name it was read from), read again.
        let written = card.jsonData(photoFileName: card.photo == nil ? nil : "p.jpg")
        do {
            let again = try CardFile.card(jsonData: written, baseDirectory: directory)
            if again != card { violations.append("card: written and read again differs") }
            if again.jsonData(photoFileName: card.photo == nil ? nil : "p.jpg") != written {
                violations.append("card: written twice differs")
            }
        } catch {
            violations.append("card: the written card file is rejected: \(error)")
        }
        // And on the wire, as a peer receives it.
        do {
            if try ProfileCard(decoding: card.encoded()) != card {
                violations.append("card: encoded and decoded differs")
            }
        } catch {
            violations.append("card: an accepted card does not decode from its encoding: \(error)")
        }
    }

    // MARK: Known peers

    static func checkKnownPeers(_ contents: [UInt8], into violations: inout [String]) {
        let path = workFile(contents, named: "known-peers")
        defer { remove(directoryOf: path) }
        let peers: [KnownPeer]
        do {
            peers = try KnownPeersStore.load(at: path)
        } catch {
            // One line of the file is to blame, and the error says which.
            let text = "\(error)"
            if !(error is KnownPeersStoreError) || !text.hasPrefix(path + ":") {
                violations.append("known peers: rejection is not located at a line: \(text.prefix(200))")
            }
            // Nothing that writes the store may replace a store it cannot read.
            let peer = KnownPeer(
                resolvingKey: Array(repeating: 1, count: 32), bondKey: Array(repeating: 2, count: 32),
                name: "x")
            if (try? KnownPeersStore.remember(peer, at: path)) != nil {
                violations.append("known peers: remember succeeded on a store load rejects")
            }
            if (try? KnownPeersStore.forget("1", at: path)) != nil {
                violations.append("known peers: forget succeeded on a store load rejects")
            }
            if read(path) != contents { violations.append("known peers: a rejected store was overwritten") }
            return
        }
        let copy = path + "-copy"
        do {
            try KnownPeersStore.save(peers, at: copy)
            let once = read(copy)
            let again = try KnownPeersStore.load(at: copy)
            if again != peers { violations.append("known peers: saved and loaded again differs") }
            try KnownPeersStore.save(again, at: copy)
            if read(copy) != once { violations.append("known peers: saved twice differs") }
        } catch {
            violations.append("known peers: a store that loads cannot be saved and loaded again: \(error)")
        }
    }

    /// Known-peers text built from the input: mostly well-formed lines whose fields the bytes
    /// choose, some of them broken on purpose.
    static func knownPeersText(_ bytes: [UInt8]) -> [UInt8] {
        var cursor = Cursor(bytes)
        var text = ""
        for _ in 0..<Int(cursor.byte() % 6) {
            let shape = cursor.byte()
            switch shape % 8 {
            case 0: text += "# a comment\n"
            case 1: text += "   \n"
            case 2:
                text +=
                    "v\(cursor.byte() % 12) \(Hex.encode(cursor.bytes(32))) \(Hex.encode(cursor.bytes(32))) \"x\"\n"
            default:
                let resolving = shape % 4 == 3 ? Array(repeating: 7, count: 32) : cursor.bytes(32)
                let name = JSONValue.string(cursor.string()).serialized
                text += "v2 \(Hex.encode(resolving)) \(Hex.encode(cursor.bytes(32))) \(name)"
                text += shape & 0x10 != 0 ? "\r\n" : "\n"
            }
        }
        return Array(text.utf8) + cursor.rest()
    }

    // MARK: Static key files

    static func checkKeyFile(_ contents: [UInt8], into violations: inout [String]) {
        let path = workFile(contents, named: "static-key")
        defer { remove(directoryOf: path) }
        let key: X25519.PrivateKey?
        do {
            key = try StaticKeyStore.load(at: path)
        } catch {
            if !(error is StaticKeyStoreError) { violations.append("key file: untyped rejection \(error)") }
            if (try? StaticKeyStore.loadOrCreate(at: path)) != nil {
                violations.append("key file: loadOrCreate succeeded on a key file load rejects")
            }
            if read(path) != contents { violations.append("key file: a rejected key file was overwritten") }
            return
        }
        guard let key else {
            violations.append("key file: an existing file loads as no key")
            return
        }
        let copy = path + "-copy"
        write(Array((Hex.encode(key.rawRepresentation) + "\n").utf8), to: copy)
        let again = try? StaticKeyStore.loadOrCreate(at: copy)
        if again?.key.rawRepresentation != key.rawRepresentation || again?.created != false {
            violations.append("key file: written and read again differs")
        }
    }

    // MARK: Scenarios

    static func checkScenario(_ text: [UInt8], into violations: inout [String]) {
        let path = workFile(text, named: "scenario.json")
        defer { remove(directoryOf: path) }
        let scenario: Scenario
        do {
            scenario = try Scenario.load(contentsOf: path)
        } catch {
            if error.file != path { violations.append("scenario: error does not name the file: \(error)") }
            if String(validating: text, as: UTF8.self) != nil, let syntax = syntaxError(text),
                !error.reason.contains("line \(syntax.line), column \(syntax.column)")
            {
                violations.append("scenario: malformed JSON reported without its location: \(error)")
            }
            return
        }
        if scenario.devices.count > Scenario.maximumDevices {
            violations.append("scenario: \(scenario.devices.count) devices accepted")
        }
        if (try? Scenario.load(contentsOf: path)) != scenario {
            violations.append("scenario: the same file reads differently twice")
        }
    }

    // MARK: Swarm summaries

    static func checkSwarmSummary(_ text: [UInt8], into violations: inout [String]) {
        guard let string = String(validating: text, as: UTF8.self) else { return }
        let summary: SwarmSummary
        do {
            summary = try SwarmSummary(fileText: string)
        } catch {
            if let syntax = syntaxError(text), !string.allSatisfy(\.isWhitespace),
                !error.reason.contains("line \(syntax.line), column \(syntax.column)")
            {
                violations.append("swarm summary: malformed JSON reported without its location: \(error)")
            }
            return
        }
        let written = summary.fileText
        do {
            let again = try SwarmSummary(fileText: written)
            if again != summary { violations.append("swarm summary: written and read again differs") }
            if again.fileText != written { violations.append("swarm summary: written twice differs") }
        } catch {
            violations.append("swarm summary: the written summary is rejected: \(error)")
        }
        // Merging it alone gives it back; merging it with itself is refused or adds up.
        do {
            let merged = try SwarmSummary.merge([("a", summary)])
            _ = merged.fileText
        } catch {}
        _ = try? SwarmSummary.merge([("a", summary), ("b", summary)])
    }

    // MARK: Structure-aware JSON

    static let jsonKeys = ["a", "b", ""]
    static let cardKeys = ProfileCard.jsonKeys + ["female", "male", "small", "medium", "large", "p.jpg"]
    static let scenarioKeys = [
        "seed", "timeLimit", "faults", "timeouts", "devices", "overall", "consent", "rangingWindow",
        "transfer",
        "idle", "delayMs", "jitterMs", "loss", "duplicate", "reorder", "reorderDelayMs", "corrupt",
        "partitions", "start", "end", "name", "pose", "motion", "card", "photoBytes", "x", "y", "heading",
        "decision", "after", "accept", "decline", "ignore", "hold", "moveTo", "over", "card.json",
    ]
    static let summaryKeys = [
        "format", SwarmSummary.formatName, "seed", "runs", "shard", "shardRuns", "exchanged", "aborted",
        "violations", "failing", "run", "reproduce", "1/1", "1/2", "2/2", "42",
    ]

    /// JSON text generated from `bytes`: objects whose keys (and string values) come mostly from
    /// `keys`, so that a reader's validation is reached, not only its parser.
    static func generate(_ bytes: [UInt8], keys: [String]) -> [UInt8] {
        var cursor = Cursor(bytes)
        let value = object(&cursor, keys: keys, depth: 0)
        let pretty = cursor.byte() & 1 == 0
        return Array(value.serialized(JSONValue.Format(pretty: pretty, sortedKeys: false)).utf8)
    }

    private static func object(_ cursor: inout Cursor, keys: [String], depth: Int) -> JSONValue {
        var members: [(key: String, value: JSONValue)] = []
        for _ in 0..<Int(cursor.byte() % 9) {
            let key = cursor.byte() % 16 == 15 ? cursor.string() : keys[Int(cursor.byte()) % keys.count]
            members.append((key, value(&cursor, keys: keys, depth: depth + 1)))
        }
        return .object(members)
    }

    private static func value(_ cursor: inout Cursor, keys: [String], depth: Int) -> JSONValue {
        let choice = depth > 5 ? cursor.byte() % 5 : cursor.byte() % 8
        switch choice {
        case 0: return .null
        case 1: return .bool(cursor.byte() & 1 == 0)
        case 2:
            let numbers: [Double] = [
                0, 1, -1, 2, 3, 7, 10, 0.5, 1e6, 86_400, 9_007_199_254_740_992, -0.0, 1e300,
            ]
            let pick = cursor.byte()
            return .number(
                pick < 128 ? numbers[Int(pick) % numbers.count] : Double(Int16(bitPattern: cursor.uint16())))
        case 3: return .string(keys[Int(cursor.byte()) % keys.count])
        case 4: return .string(cursor.string())
        case 5, 6:
            return .array(
                (0..<Int(cursor.byte() % 5)).map { _ in value(&cursor, keys: keys, depth: depth + 1) })
        default: return object(&cursor, keys: keys, depth: depth)
        }
    }

    /// Reads the input without running dry: past the end every byte is zero.
    struct Cursor {
        private let bytes: [UInt8]
        private var index = 0

        init(_ bytes: [UInt8]) { self.bytes = bytes }

        mutating func byte() -> UInt8 {
            guard index < bytes.count else { return 0 }
            defer { index += 1 }
            return bytes[index]
        }

        mutating func uint16() -> UInt16 { UInt16(byte()) << 8 | UInt16(byte()) }

        mutating func bytes(_ count: Int) -> [UInt8] { (0..<count).map { _ in byte() } }

        /// A short string: a length byte, then that many bytes as UTF-8 (repaired).
        mutating func string() -> String { String(decoding: bytes(Int(byte() % 24)), as: UTF8.self) }

        mutating func rest() -> [UInt8] {
            defer { index = bytes.count }
            return index < bytes.count ? Array(bytes[index...]) : []
        }
    }

    // MARK: Files

    /// Where the inputs' files are written: in memory where there is a tmpfs, since the stores sync
    /// what they write and on a disk the syncs were the whole cost of an input.
    private static let base: String = {
        var isDirectory: ObjCBool = false
        let memory =
            FileManager.default.fileExists(atPath: "/dev/shm", isDirectory: &isDirectory)
            && isDirectory.boolValue
        return (memory ? "/dev/shm/" : NSTemporaryDirectory()) + "profiledrop-file-fuzz"
    }()

    /// A fresh private directory for one input, which the caller removes: inputs checked at once
    /// (the tests run in parallel) never share a file, and nothing is left behind.
    private static func workDirectory() -> String {
        let made = base + "/" + UUID().uuidString
        try? FileManager.default.createDirectory(
            atPath: made, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        return made
    }

    private static func remove(_ directory: String) {
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// The path of a file named `name` holding `contents`, alone in a fresh ``workDirectory()``,
    /// which the caller removes with ``remove(directoryOf:)``.
    private static func workFile(_ contents: [UInt8], named name: String) -> String {
        let path = workDirectory() + "/" + name
        write(contents, to: path)
        return path
    }

    /// Removes the work directory of a ``workFile(_:named:)``.
    private static func remove(directoryOf path: String) {
        remove(String(path[..<(path.lastIndex(of: "/") ?? path.endIndex)]))
    }

    /// Replaces the file at `path` with `bytes`, mode 0600 (the stores refuse anything looser).
    private static func write(_ bytes: [UInt8], to path: String) {
        try? FileManager.default.removeItem(atPath: path)
        _ = FileManager.default.createFile(
            atPath: path, contents: Data(bytes), attributes: [.posixPermissions: 0o600])
    }

    private static func read(_ path: String) -> [UInt8]? {
        FileManager.default.contents(atPath: path).map { Array($0) }
    }
}
