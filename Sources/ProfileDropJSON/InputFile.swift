#if canImport(Glibc)
    import Glibc
    private let systemRead = Glibc.read
#elseif canImport(Darwin)
    import Darwin
    private let systemRead = Darwin.read
#endif

/// Why a file given from outside could not be read.
public struct InputFileError: Error, Equatable, CustomStringConvertible {
    /// What went wrong.
    public enum Reason: Equatable, Sendable {
        /// Nothing is at the path.
        case noSuchFile
        /// The path names a directory.
        case isDirectory
        /// The file holds more than the limit, in bytes.
        case tooLarge(limit: Int)
        /// The system refused to open or read it, with its explanation.
        case unreadable(String)
    }

    /// The path as given.
    public let path: String
    /// What went wrong.
    public let reason: Reason
    /// The file's size in bytes, when it has one and was refused for it (``Reason/tooLarge(limit:)``).
    public let size: Int?

    /// The error for `path`, with `reason` and, for a file refused by its size, that size.
    public init(path: String, reason: Reason, size: Int? = nil) {
        self.path = path
        self.reason = reason
        self.size = size
    }

    /// The reason alone, without the path, for callers that name the file themselves ("cannot read
    /// the card file: …").
    public var reasonText: String {
        switch reason {
        case .noSuchFile: "no such file"
        case .isDirectory: "it is a directory"
        case .tooLarge(let limit): "it is larger than \(Self.size(limit)), the limit for this file"
        case .unreadable(let explanation): explanation
        }
    }

    /// `path: reason`, one line.
    public var description: String { "\(path): \(reasonText)" }

    private static func size(_ bytes: Int) -> String {
        bytes >= 1 << 20 && bytes % (1 << 20) == 0 ? "\(bytes >> 20) MiB" : "\(bytes) bytes"
    }
}

/// Reading a file given from outside (a scenario, a card, a capture, a summary) without trusting
/// its size: a file over the limit is refused before any of it is read, so that a huge or endless
/// file (a device, a pipe) costs neither the memory to hold it nor the time to read it.
/// It lives in this module because every reader of such files depends on it.
public enum InputFile {
    /// The bytes of the file at `path`, at most `limit` of them.
    /// - Throws: ``InputFileError`` when the file is missing, a directory, unreadable, or larger
    ///   than `limit` (by its size, or by what a file without one yields).
    public static func read(atPath path: String, limit: Int) throws(InputFileError) -> [UInt8] {
        precondition(limit >= 0, "a limit is a number of bytes")
        // Opened without blocking, so that a named pipe nobody writes to reads as empty instead of
        // waiting for a writer; reads block again once it is open.
        let descriptor = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        guard descriptor >= 0 else {
            let code = errno
            throw InputFileError(
                path: path, reason: code == ENOENT ? .noSuchFile : .unreadable(message(code)))
        }
        defer { close(descriptor) }
        _ = fcntl(descriptor, F_SETFL, fcntl(descriptor, F_GETFL) & ~O_NONBLOCK)
        var info = stat()
        guard fstat(descriptor, &info) == 0 else {
            throw InputFileError(path: path, reason: .unreadable(message(errno)))
        }
        if info.st_mode & S_IFMT == S_IFDIR { throw InputFileError(path: path, reason: .isDirectory) }
        if info.st_mode & S_IFMT == S_IFREG && info.st_size > limit {
            throw InputFileError(path: path, reason: .tooLarge(limit: limit), size: Int(info.st_size))
        }
        return try read(descriptor: descriptor, path: path, limit: limit)
    }

    /// What is left to read from `descriptor`, open for reading, at most `limit` bytes; `path`
    /// names it in errors. For a caller that checks the opened file itself first (its owner and
    /// mode, say) and then reads it.
    /// - Throws: ``InputFileError`` when reading fails or passes `limit`.
    public static func read(descriptor: Int32, path: String, limit: Int) throws(InputFileError) -> [UInt8] {
        var contents: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let count = chunk.withUnsafeMutableBytes { systemRead(descriptor, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                throw InputFileError(path: path, reason: .unreadable(message(errno)))
            }
            if count == 0 { return contents }
            // Checked per chunk: a file without a size (a pipe, a device) or one that grows is
            // refused as soon as it passes the limit.
            guard count <= limit - contents.count else {
                throw InputFileError(path: path, reason: .tooLarge(limit: limit))
            }
            contents.append(contentsOf: chunk[0..<count])
        }
    }

    private static func message(_ code: Int32) -> String {
        guard let text = strerror(code) else { return "error \(code)" }
        return String(cString: text)
    }
}
