#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Where commands write. Tests capture the lines; the executable writes to the standard streams.
public protocol Console: AnyObject {
    /// Writes one line of regular output.
    func output(_ line: String)
    /// Writes one line of diagnostics.
    func error(_ line: String)
    /// Why regular output could not be written (a closed pipe, a full disk), once it failed.
    var outputFailure: String? { get }
}

extension Console {
    /// Nothing fails to write in memory.
    public var outputFailure: String? { nil }
}

/// Writes output to standard output and diagnostics to standard error, unbuffered, so that two
/// processes sharing a terminal interleave whole lines.
public final class StandardConsole: Console {
    /// The first error writing standard output; later output is not attempted.
    public private(set) var outputFailure: String?

    /// A console on the process's standard streams.
    public init() {}

    /// Writes `line` and a newline to standard output.
    public func output(_ line: String) {
        guard outputFailure == nil else { return }
        outputFailure = writeAll(STDOUT_FILENO, line + "\n")
    }

    /// Writes `line` and a newline to standard error. A diagnostic is one line whatever it quotes:
    /// a line break in it (from a file name, say) is written as `\n`.
    public func error(_ line: String) {
        let oneLine = line.replacing("\r", with: "\\r").replacing("\n", with: "\\n")
        _ = writeAll(STDERR_FILENO, oneLine + "\n")
    }
}

/// Writes all of `text` to `descriptor`, retrying short writes and interrupted calls.
/// - Returns: nil, or why the write failed.
func writeAll(_ descriptor: Int32, _ text: String) -> String? {
    var bytes = Array(text.utf8)[...]
    while !bytes.isEmpty {
        let written = bytes.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
        if written < 0 {
            if errno == EINTR { continue }
            return String(cString: strerror(errno))
        }
        bytes = bytes.dropFirst(written)
    }
    return nil
}

/// Keeps every line in memory, for tests.
public final class CapturingConsole: Console {
    /// Lines written with ``output(_:)``.
    public private(set) var outputLines: [String] = []
    /// Lines written with ``error(_:)``.
    public private(set) var errorLines: [String] = []

    /// An empty console.
    public init() {}

    /// Keeps `line` in ``outputLines``.
    public func output(_ line: String) { outputLines.append(line) }
    /// Keeps `line` in ``errorLines``.
    public func error(_ line: String) { errorLines.append(line) }
}

extension Console {
    /// Writes `text`, which ends with a newline, one line at a time.
    func outputText(_ text: String) {
        var lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        if lines.last == "" { lines.removeLast() }
        for line in lines { output(String(line)) }
    }
}
