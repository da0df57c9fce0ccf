import FileFuzz
import Foundation
import ProfileDropTestSupport
import Testing

/// The `file` fuzz target's checks (the `FileFuzz` library, Fuzz/Sources/FileFuzz, the code the
/// fuzz target runs) over its stored inputs (Tests/ProfileDropCoreTests/FuzzCases/file) and over
/// seeded mutations of them: what a reader accepts is written back and read again the same, a
/// rejection is one typed error at the line (and column) to blame, and a rejected known-peers store
/// or key file is never overwritten.
struct FileFuzzCaseTests {
    static let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent()
        .appendingPathComponent("ProfileDropCoreTests/FuzzCases/file")

    static var cases: [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []).sorted()
    }

    static func input(_ name: String) throws -> [UInt8] {
        Array(try Data(contentsOf: directory.appendingPathComponent(name)))
    }

    @Test func everyFormatHasStoredCases() throws {
        let count = FileFuzz.Format.allCases.count
        let formats = Set(try Self.cases.compactMap { try Self.input($0).first.map { Int($0) % count } })
        #expect(formats == Set(0..<count))
    }

    @Test(arguments: FileFuzzCaseTests.cases)
    func storedInputHoldsEveryCheck(name: String) throws {
        #expect(FileFuzz.check(try Self.input(name)) == [])
    }

    /// 200 seeded one-to-three-byte edits of every stored input, kept after the two format bytes.
    @Test func mutatedInputsHoldEveryCheck() throws {
        var mutations = ByteMutations(seed: 0xF11E)
        for name in Self.cases {
            let input = try Self.input(name)
            let header = Array(input.prefix(2))
            for _ in 0..<200 {
                let mutated =
                    header
                    + mutations.mutate(Array(input.dropFirst(2)), alphabet: Array("{}[]\":, 0a\n".utf8))
                let violations = FileFuzz.check(mutated)
                #expect(violations == [], "\(name): \(mutated)")
                if !violations.isEmpty { return }
            }
        }
    }
}
