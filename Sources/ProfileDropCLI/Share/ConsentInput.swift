import ProfileDrop
import ProfileDropJSON

/// What one line of standard input asks of `share` when standard input is not a terminal.
enum ConsentInput: Equatable {
    /// An answer to the pending consent request: about one candidate of the list (`s1`, or
    /// `{"decision":"share","candidate":1}`), or with nil about the one candidate shown (a
    /// decline: about them all).
    case decision(ConsentAnswer, candidate: Candidate? = nil)
    /// `q`: quit (lines mode only).
    case quit
    /// A blank line: nothing.
    case blank
    /// A line that is none of the above, with the reason.
    case invalid(String)

    /// Which candidate of the list an answer names.
    enum Candidate: Equatable {
        /// Its number in the list shown, from 1.
        case number(Int)
        /// Its peer, as the `candidates` of the `--json` lines name it.
        case peer(String)
    }

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
        if let unknown = members.first(where: { $0.key != "decision" && $0.key != "candidate" }) {
            return .invalid("unknown member '\(unknown.key)'; the answer has \"decision\" and \"candidate\"")
        }
        let decisions = members.filter { $0.key == "decision" }
        guard decisions.count == 1, case .string(let word) = decisions[0].value else {
            return .invalid("\"decision\" must be one string: share, receive-only or decline")
        }
        let candidates = members.filter { $0.key == "candidate" }
        var candidate: Candidate?
        switch candidates.first?.value {
        case nil, .null?:
            candidate = nil
        case .string(let peer)? where candidates.count == 1:
            candidate = .peer(peer)
        case .number(let number)?
        where candidates.count == 1 && number >= 1 && number <= 99
            && number.rounded() == number:
            candidate = .number(Int(number))
        default:
            return .invalid("\"candidate\" must be one peer (a string) or a number from 1")
        }
        guard
            let decision = [ConsentAnswer.share, .receiveOnly, .decline].first(where: {
                Self.word(for: $0) == word
            })
        else {
            return .invalid("unknown decision '\(word)'; use share, receive-only or decline")
        }
        return .decision(decision, candidate: candidate)
    }

    /// One line of input in lines mode: `s`, `r`, `d` (or `share`, `receive`, `receive-only`,
    /// `decline`), each optionally followed by a candidate's number (`s1`, `r 2`, `decline 3`),
    /// `q` to quit, or the `--json` form.
    static func parseLine(_ line: String) -> ConsentInput {
        let text = line.trimmingWhitespace().lowercased()
        if text.hasPrefix("{") { return parseJSON(line) }
        let digits = text.reversed().prefix { $0.isASCII && $0.isNumber }
        let word = String(text.dropLast(digits.count)).trimmingWhitespace()
        var candidate: Candidate?
        if !digits.isEmpty {
            guard digits.count <= 2, let number = Int(String(digits.reversed())), number >= 1, !word.isEmpty
            else { return invalidLine(text) }
            candidate = .number(number)
        }
        switch word {
        case "": return .blank
        case "s", "share": return .decision(.share, candidate: candidate)
        case "r", "receive", "receive-only", "receive only":
            return .decision(.receiveOnly, candidate: candidate)
        case "d", "decline": return .decision(.decline, candidate: candidate)
        case "q", "quit": return candidate == nil ? .quit : invalidLine(text)
        default: return invalidLine(text)
        }
    }

    private static func invalidLine(_ text: String) -> ConsentInput {
        .invalid(
            "cannot read '\(String(text.prefix(40)))': answer s (share), r (receive only) or d (decline), "
                + "followed by the candidate's number when several are listed (s1, d2)")
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
