import Foundation

/// A cursor over a fuzzer input that never runs dry: once the bytes are used up every read yields
/// zeros, so any input, however short, decodes to some sequence of actions.
public struct FuzzBytes {
    private let bytes: [UInt8]
    private var index = 0

    /// Starts at the first byte of `bytes`.
    public init(_ bytes: [UInt8]) { self.bytes = bytes }

    /// Whether every byte was consumed.
    public var isExhausted: Bool { index >= bytes.count }

    /// The next byte, or 0.
    public mutating func byte() -> UInt8 {
        guard index < bytes.count else { return 0 }
        defer { index += 1 }
        return bytes[index]
    }

    /// The next two bytes as a big-endian value.
    public mutating func uint16() -> UInt16 { UInt16(byte()) << 8 | UInt16(byte()) }

    /// The next eight bytes as a big-endian value.
    public mutating func uint64() -> UInt64 {
        var value: UInt64 = 0
        for _ in 0..<8 { value = value << 8 | UInt64(byte()) }
        return value
    }

    /// Up to `count` bytes; fewer when the input ends.
    public mutating func take(_ count: Int) -> [UInt8] {
        let end = min(bytes.count, index + max(count, 0))
        guard index < end else { return [] }
        defer { index = end }
        return Array(bytes[index..<end])
    }

    /// One of `T`'s cases, chosen by the next byte. Driving choices by `allCases` means a case added
    /// to the protocol is fuzzed without touching the harness, and its `switch` makes the compiler
    /// ask how to build one.
    public mutating func pick<T: CaseIterable>(_: T.Type) -> T {
        let cases = Array(T.allCases)
        precondition(!cases.isEmpty, "a type with no cases cannot be picked")
        return cases[Int(byte()) % cases.count]
    }

    /// Everything not consumed yet.
    public mutating func rest() -> [UInt8] { take(bytes.count - index) }

    /// Exactly 32 bytes: the next ones, zero-padded when the input runs out.
    public mutating func take32() -> [UInt8] { Array((take(32) + Array(repeating: 0, count: 32)).prefix(32)) }
}

/// Invariant failures found while running one input. Fuzz targets trap on them; the regression
/// tests expect none.
public struct FuzzFindings {
    /// One line per broken invariant.
    public private(set) var violations: [String] = []

    /// Creates an empty list.
    public init() {}

    /// Records `message` unless `condition` holds.
    public mutating func check(_ condition: Bool, _ message: @autoclosure () -> String) {
        if !condition { violations.append(message()) }
    }

    /// Records `message`.
    public mutating func fail(_ message: String) { violations.append(message) }
}

/// What the fuzz executables do with findings.
public enum FuzzReport {
    /// Prints every violation and traps, so libFuzzer records the input as a crash.
    public static func trapOnViolations(_ findings: FuzzFindings, target: String) {
        guard !findings.violations.isEmpty else { return }
        for violation in findings.violations {
            FileHandle.standardError.write(Data("\(target): invariant broken: \(violation)\n".utf8))
        }
        fatalError("\(target): \(findings.violations.count) invariant(s) broken")
    }
}
