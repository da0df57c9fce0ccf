import Foundation
import ProfileDropJSON
import Testing

#if canImport(Glibc)
    import Glibc
#endif

@Suite struct InputFileTests {
    /// A fresh directory for one test, removed after it.
    static func withDirectory(_ body: (String) throws -> Void) throws {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("profiledrop-input-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try body(directory)
    }

    @Test func aFileWithinTheLimitIsReadWhole() throws {
        try Self.withDirectory { directory throws in
            let path = directory + "/small"
            let bytes = (0..<1000).map { UInt8(truncatingIfNeeded: $0 &* 7) }
            #expect(FileManager.default.createFile(atPath: path, contents: Data(bytes)))
            #expect(try InputFile.read(atPath: path, limit: 1000) == bytes)
            let empty = directory + "/empty"
            #expect(FileManager.default.createFile(atPath: empty, contents: nil))
            #expect(try InputFile.read(atPath: empty, limit: 0) == [])
        }
    }

    @Test func eachProblemIsNamed() throws {
        try Self.withDirectory { directory throws in
            func reason(_ path: String, limit: Int) -> InputFileError.Reason? {
                do {
                    _ = try InputFile.read(atPath: path, limit: limit)
                    return nil
                } catch {
                    #expect(error.path == path)
                    return error.reason
                }
            }
            #expect(reason(directory + "/absent", limit: 10) == .noSuchFile)
            #expect(reason(directory, limit: 10) == .isDirectory)
            let small = directory + "/small"
            #expect(FileManager.default.createFile(atPath: small, contents: Data(count: 11)))
            #expect(reason(small, limit: 10) == .tooLarge(limit: 10))
            #expect(reason(small, limit: 11) == nil)
            // A sparse file of 64 GiB: refused by its size, long before reading it could end.
            let huge = directory + "/huge"
            #expect(FileManager.default.createFile(atPath: huge, contents: nil))
            #expect(truncate(huge, 64 << 30) == 0)
            #expect(reason(huge, limit: 16 << 20) == .tooLarge(limit: 16 << 20))
            // An endless device has no size: refused once what it yields passes the limit.
            #expect(reason("/dev/zero", limit: 1 << 20) == .tooLarge(limit: 1 << 20))
            // The size of a file refused for it is kept; a device has none to keep.
            func size(_ path: String, limit: Int) -> Int? {
                do {
                    _ = try InputFile.read(atPath: path, limit: limit)
                    return nil
                } catch { return error.size }
            }
            #expect(size(huge, limit: 10) == 64 << 30)
            #expect(size("/dev/zero", limit: 10) == nil)
            // A named pipe nobody writes to reads as empty instead of waiting for a writer.
            let pipe = directory + "/pipe"
            #expect(mkfifo(pipe, 0o600) == 0)
            #expect(reason(pipe, limit: 10) == nil)
            let unreadable = InputFileError(path: "p", reason: .unreadable("Permission denied"))
            #expect(unreadable.description == "p: Permission denied")
            #expect(
                InputFileError(path: "p", reason: .tooLarge(limit: 16 << 20)).description
                    == "p: it is larger than 16 MiB, the limit for this file")
        }
    }
}
