import ProfileDrop
import ProfileDropJSON

/// What one line of standard input asks of `share` when standard input is not a terminal.
enum ConsentInput: Equatable {
    /// An answer to the pending consent request.
    case decision(ConsentAnswer)
    /// `q`: quit (lines mode only).
    case quit
    /// A blank line: nothing.
    case blank
    /// A line that is none of the above, with the reason.
    case invalid(String)

    /// The words `--json` input uses for each decision, also used in its `decision` events.
    static func word(for decision: ConsentAnswer) -> String {
        switch decision {
        case .share: "share"
        case .receiveOnly: "receive-only"
        case .decline: "decline"
        }
    }

    /// One line of `--json` input: exactly `{"decision":"share"}`, `{"decision":"receive-only"}` or
    /// `{"decision":"decline"}`, with any white space JSON allows.
    static func parseJSON(_ line: String) -> ConsentInput {
        if line.allSatisfy(\.isWhitespace) { return .blank }
        let value: JSONValue
        do {
            value = try JSONValue.parse(line)
        } catch {
            return .invalid("not JSON: \(error)")
        }
        guard case .object(let members) = value else {
            return .invalid("expected an object like {\"decision\":\"share\"}, got \(value.typeName)")
        }
        if let unknown = members.first(where: { $0.key != "decision" }) {
            return .invalid("unknown member '\(unknown.key)'; the answer has only \"decision\"")
        }
        guard members.count == 1, case .string(let word) = members[0].value else {
            return .invalid("\"decision\" must be one string: share, receive-only or decline")
        }
        guard
            let decision = [ConsentAnswer.share, .receiveOnly, .decline].first(where: {
                Self.word(for: $0) == word
            })
        else {
            return .invalid("unknown decision '\(word)'; use share, receive-only or decline")
        }
        return .decision(decision)
    }

    /// One line of input in lines mode: `s`, `r`, `d` (or `share`, `receive`, `receive-only`,
    /// `decline`), `q` to quit, or the `--json` form.
    static func parseLine(_ line: String) -> ConsentInput {
        let text = line.trimmingWhitespace().lowercased()
        switch text {
        case "": return .blank
        case "s", "share": return .decision(.share)
        case "r", "receive", "receive-only", "receive only": return .decision(.receiveOnly)
        case "d", "decline": return .decision(.decline)
        case "q", "quit": return .quit
        default:
            if text.hasPrefix("{") { return parseJSON(line) }
            return .invalid(
                "cannot read '\(String(text.prefix(40)))': answer s (share), r (receive only) or d (decline)")
        }
    }
}

/// Splits standard input into lines, however the reads cut it. A line longer than
/// ``maximumLineBytes`` is reported once and skipped up to its end, so input cannot grow memory.
struct LineSplitter {
    /// The longest line kept.
    static let maximumLineBytes = 4096

    /// One line of input, without its line ending.
    enum Line: Equatable {
        case text(String)
        case tooLong
    }

    private var pending: [UInt8] = []
    private var skipping = false

    /// The lines `bytes` completes.
    mutating func feed(_ bytes: [UInt8]) -> [Line] {
        var lines: [Line] = []
        for byte in bytes {
            if byte == UInt8(ascii: "\n") {
                if skipping {
                    skipping = false
                } else {
                    lines.append(Self.line(pending))
                }
                pending.removeAll(keepingCapacity: true)
            } else if !skipping {
                if pending.count == Self.maximumLineBytes {
                    lines.append(.tooLong)
                    pending.removeAll(keepingCapacity: true)
                    skipping = true
                } else {
                    pending.append(byte)
                }
            }
        }
        return lines
    }

    /// The last line at the end of input, when it had no line ending.
    mutating func finish() -> Line? {
        defer {
            pending = []
            skipping = false
        }
        return pending.isEmpty || skipping ? nil : Self.line(pending)
    }

    private static func line(_ bytes: [UInt8]) -> Line {
        var bytes = bytes
        if bytes.last == UInt8(ascii: "\r") { bytes.removeLast() }
        return .text(String(decoding: bytes, as: UTF8.self))
    }
}
