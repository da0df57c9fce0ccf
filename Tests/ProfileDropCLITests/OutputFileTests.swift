import Foundation
import ProfileDrop
import ProfileDropTestSupport
import Testing

@testable import ProfileDropCLI

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Files written whole: secrets 0600 whatever was there, symbolic links followed to a regular file
/// and nothing else, a name that exists never taken over by a create, and output that cannot be
/// written reported.
@Suite struct OutputFileTests {
    static func mode(_ path: String) throws -> Int? {
        (try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? NSNumber)?.intValue
    }

    static func contents(_ path: String) throws -> String {
        try String(contentsOfFile: path, encoding: .utf8)
    }

    @Test func aSecretReplacesAnOpenFileWithAPrivateOne() throws {
        let directory = try TestPaths.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("capture.pcapng").path
        try Data("old".utf8).write(to: URL(fileURLWithPath: path))
        try FileManager.default.setAttributes([.posixPermissions: 0o666], ofItemAtPath: path)
        try OutputFile.replace(path, with: Array("secret".utf8), secret: true)
        #expect(try Self.contents(path) == "secret")
        #expect(try Self.mode(path) == 0o600)
        // Nothing is left beside it.
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path) == ["capture.pcapng"])
    }

    @Test func aLinkToARegularFileIsFollowedAndKept() throws {
        let directory = try TestPaths.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let target = directory.appendingPathComponent("real").path
        let link = directory.appendingPathComponent("link").path
        try Data("old".utf8).write(to: URL(fileURLWithPath: target))
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: target)
        try OutputFile.replace(link, with: Array("new".utf8), secret: false)
        #expect(try Self.contents(target) == "new")
        #expect(try FileManager.default.destinationOfSymbolicLink(atPath: link) == target)
        #expect(
            try OutputFile.target(of: link) == URL(fileURLWithPath: target).resolvingSymlinksInPath().path)
    }

    @Test func whatIsNoRegularFileIsRefusedAndLeftAlone() throws {
        let directory = try TestPaths.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let fifo = directory.appendingPathComponent("fifo").path
        #expect(mkfifo(fifo, 0o600) == 0)
        let dangling = directory.appendingPathComponent("dangling").path
        try FileManager.default.createSymbolicLink(
            atPath: dangling, withDestinationPath: directory.appendingPathComponent("nowhere").path)
        let cases: [(String, String)] = [
            (fifo, "is not a regular file"), (directory.path, "is not a regular file"),
            (dangling, "symbolic link to nothing"), ("/dev/null", "is not a regular file"),
        ]
        for (path, expected) in cases {
            #expect(throws: OutputFile.Failure.self) { try OutputFile.replace(path, with: [1], secret: true) }
            do {
                try OutputFile.replace(path, with: [1], secret: true)
            } catch {
                #expect(error.description.contains(expected), "\(path): \(error)")
                #expect(!error.description.contains("\n"))
            }
            #expect(throws: UsageError.self) { try OutputFile.checkWritable(path, option: "--capture") }
        }
        var info = stat()
        #expect(lstat(fifo, &info) == 0 && info.st_mode & S_IFMT == S_IFIFO)
        #expect(lstat(dangling, &info) == 0 && info.st_mode & S_IFMT == S_IFLNK)
    }

    @Test func aCreateNeverTakesOverAName() throws {
        let directory = try TestPaths.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("key").path
        #expect(try OutputFile.create(path, with: Array("first\n".utf8), secret: true))
        #expect(try Self.mode(path) == 0o600)
        #expect(try OutputFile.create(path, with: Array("second\n".utf8), secret: true) == false)
        #expect(try Self.contents(path) == "first\n")
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path) == ["key"])
    }

    /// A console whose output fails after `workingLines` lines, as a closed pipe does.
    final class FailingConsole: Console {
        var workingLines: Int
        var errorLines: [String] = []
        var outputFailure: String?
        init(workingLines: Int) { self.workingLines = workingLines }
        func output(_ line: String) {
            if workingLines == 0 { outputFailure = "Broken pipe" } else { workingLines -= 1 }
        }
        func error(_ line: String) { errorLines.append(line) }
    }

    @Test func outputThatCannotBeWrittenFailsTheRun() {
        let console = FailingConsole(workingLines: 3)
        let code = CommandLineTool.run(arguments: ["man"], console: console)
        #expect(code == ExitCode.runtimeError.rawValue)
        #expect(console.errorLines == ["profiledrop man: cannot write the output: Broken pipe"])
        // A run that fits is untouched.
        let fits = FailingConsole(workingLines: 100_000)
        #expect(CommandLineTool.run(arguments: ["man"], console: fits) == 0)
        #expect(fits.errorLines.isEmpty)
    }

    /// The executable on a full disk: one line, exit 6, instead of an empty file and success.
    @Test func theExecutableReportsAFullDisk() throws {
        guard let full = FileHandle(forWritingAtPath: "/dev/full") else { return }
        let process = Process()
        process.executableURL = TestPaths.executable
        process.arguments = ["completion", "bash"]
        let errors = Pipe()
        process.standardOutput = full
        process.standardError = errors
        try process.run()
        process.waitUntilExit()
        let text = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(process.terminationStatus == 6)
        #expect(text == "profiledrop completion: cannot write the output: No space left on device\n")
    }

    /// A diagnostic stays one line whatever it quotes: a file name with a line break in it.
    @Test func aDiagnosticQuotingALineBreakIsOneLine() throws {
        let result = try runProgram(TestPaths.executable.path, ["replay", "/nonexistent/a\nb.pcapng"])
        #expect(result.status == 2)
        #expect(result.errors.hasSuffix("\n"))
        #expect(result.errors.dropLast().contains("\n") == false, "\(result.errors)")
        #expect(result.errors.contains("a\\nb.pcapng"), "\(result.errors)")
    }
}
