import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A file the tool writes whole, safely: into a new file beside it, synced, then renamed over it
/// (or linked to its name when it must not exist yet). A reader or a crash sees the old file or the
/// new one, never a part. Secrets are created 0600 whatever the umask.
///
/// The path may name a regular file, nothing yet, or a symbolic link to a regular file, which is
/// followed: the link stays, its target is replaced. Anything else (a directory, a FIFO, a device,
/// a link to nothing) is refused rather than replaced by a file.
package enum OutputFile {
    /// A write that failed: the path and why, in one line.
    package struct Failure: Error, CustomStringConvertible {
        package let path: String
        package let reason: String
        package var description: String { "cannot write \(path): \(reason)" }
    }

    /// What stands in the way of writing a file at `path` for `option`, checked before any work is
    /// done: nil for a regular file that can be written (or a link to one), or a new name in a
    /// directory that exists and can be written; otherwise the problem in one line, naming the option.
    package static func writableProblem(_ path: String, option: String) -> String? {
        guard !path.isEmpty else { return "\(option) needs a file name" }
        let target: String
        do {
            target = try Self.target(of: path)
        } catch {
            return "\(option) \(error.description)"
        }
        let files = FileManager.default
        var isDirectory: ObjCBool = false
        if files.fileExists(atPath: target) {
            guard files.isWritableFile(atPath: target) else { return "\(option) cannot write \(path)" }
            return nil
        }
        let parent = URL(fileURLWithPath: target).deletingLastPathComponent().path
        guard files.fileExists(atPath: parent, isDirectory: &isDirectory), isDirectory.boolValue else {
            return "\(option) \(path): no directory \(parent)"
        }
        guard files.isWritableFile(atPath: parent) else {
            return "\(option) cannot write \(path): the directory is not writable"
        }
        return nil
    }

    /// What a path names: its device and inode when something is there, else its absolute form.
    package static func identity(of path: String) -> String {
        var info = stat()
        if stat(path, &info) == 0 { return "inode \(info.st_dev):\(info.st_ino)" }
        return "path " + URL(fileURLWithPath: path).standardizedFileURL.path
    }

    /// The path to write for `path`: `path` itself, or the regular file its symbolic link names.
    /// - Throws: ``Failure`` for a path that names something other than a regular file.
    package static func target(of path: String) throws(Failure) -> String {
        var info = stat()
        guard lstat(path, &info) == 0 else {
            if errno == ENOENT { return path }
            throw Failure(path: path, reason: "cannot look at it: \(systemError())")
        }
        var target = path
        if info.st_mode & S_IFMT == S_IFLNK {
            guard let resolved = realpath(path, nil) else {
                throw Failure(
                    path: path, reason: "it is a symbolic link to nothing; remove it or name another file")
            }
            target = String(cString: resolved)
            free(resolved)
            guard stat(target, &info) == 0 else {
                throw Failure(
                    path: path, reason: "cannot look at \(target), which it links to: \(systemError())")
            }
        }
        guard info.st_mode & S_IFMT == S_IFREG else {
            throw Failure(path: path, reason: "it is not a regular file; name a file to write")
        }
        return target
    }

    /// Writes `contents` to `path` (see ``target(of:)``), replacing the file there. A `secret` file
    /// is made 0600; any other gets the umask's permissions.
    package static func replace(_ path: String, with contents: [UInt8], secret: Bool) throws(Failure) {
        let target = try target(of: path)
        let temporary = try writeTemporary(beside: target, contents: contents, secret: secret)
        guard rename(temporary, target) == 0 else {
            let failure = systemError()
            unlink(temporary)
            throw Failure(path: path, reason: failure)
        }
        syncDirectory(of: target)
    }

    /// Creates `path` with `contents`, unless something is there already (a dangling symbolic link
    /// included). A `secret` file is made 0600; any other gets the umask's permissions.
    /// - Returns: false, writing nothing, when `path` exists (another process may have just made
    ///   it); true once the file is in place whole.
    package static func create(_ path: String, with contents: [UInt8], secret: Bool) throws(Failure) -> Bool {
        let temporary = try writeTemporary(beside: path, contents: contents, secret: secret)
        defer { unlink(temporary) }
        guard link(temporary, path) == 0 else {
            if errno == EEXIST { return false }
            throw Failure(path: path, reason: systemError())
        }
        syncDirectory(of: path)
        return true
    }

    /// A new file beside `path` holding `contents`, synced; its name is returned.
    private static func writeTemporary(beside path: String, contents: [UInt8], secret: Bool) throws(Failure)
        -> String
    {
        let directory = directoryPrefix(of: path)
        let base = String(decoding: path.utf8.dropFirst(directory.utf8.count), as: UTF8.self)
        var temporary = ""
        var descriptor: Int32 = -1
        for _ in 0..<8 {
            temporary = directory + ".\(base).\(String(UInt64.random(in: .min ... .max), radix: 16)).tmp"
            descriptor = open(
                temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, secret ? 0o600 : 0o666)
            if descriptor >= 0 || errno != EEXIST { break }
        }
        guard descriptor >= 0 else {
            throw Failure(path: path, reason: "cannot create a file beside it: \(systemError())")
        }
        var failure: String?
        // The umask can only take permissions away; a secret is 0600 whatever it is.
        if secret && fchmod(descriptor, 0o600) != 0 {
            failure = systemError()
        } else if !writeAll(contents, to: descriptor) || fsync(descriptor) != 0 {
            failure = systemError()
        }
        if close(descriptor) != 0 && failure == nil { failure = systemError() }
        if let failure {
            unlink(temporary)
            throw Failure(path: path, reason: failure)
        }
        return temporary
    }

    /// Creates the directories above `path` that do not exist, with mode 0700 (they may hold
    /// secrets).
    package static func createDirectories(for path: String) throws(Failure) {
        var current = path.hasPrefix("/") ? "" : "."
        for component in directoryPrefix(of: path).utf8.split(separator: UInt8(ascii: "/")) {
            current += "/" + String(decoding: component, as: UTF8.self)
            if mkdir(current, 0o700) != 0 && errno != EEXIST {
                throw Failure(path: path, reason: "cannot create the directory \(current): \(systemError())")
            }
        }
    }

    /// Makes a rename or link in `path`'s directory durable. Best effort: some file systems cannot
    /// sync a directory.
    private static func syncDirectory(of path: String) {
        let directory = directoryPrefix(of: path)
        let descriptor = open(directory.isEmpty ? "." : directory, O_RDONLY | O_CLOEXEC)
        if descriptor >= 0 {
            _ = fsync(descriptor)
            close(descriptor)
        }
    }

    private static func writeAll(_ bytes: [UInt8], to descriptor: Int32) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
            if written < 0 {
                if errno == EINTR { continue }
                return false
            }
            offset += written
        }
        return true
    }

    /// `path` up to and including its last `/`; empty for a bare file name. Found in bytes: as a
    /// character, a `/` followed by a combining mark is not a `/`.
    package static func directoryPrefix(of path: String) -> String {
        guard let slash = path.utf8.lastIndex(of: UInt8(ascii: "/")) else { return "" }
        return String(decoding: path.utf8[...slash], as: UTF8.self)
    }
}
