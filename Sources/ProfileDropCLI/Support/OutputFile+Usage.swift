@_spi(Storage) import ProfileDrop

/// The command-line form of the library's file checks: each problem is a usage error (exit 2).
extension OutputFile {
    /// Checks, before any work is done, that a file can be written at `path` for `option`: a
    /// regular file that can be written (or a link to one), or a new name in a directory that
    /// exists and can be written. Anything else is a usage error naming the option.
    static func checkWritable(_ path: String, option: String) throws(UsageError) {
        if let problem = writableProblem(path, option: option) { throw UsageError(problem) }
    }

    /// Checks that no two of `outputs` name the same file, and that none names one of `inputs`
    /// (each with what to call it in the message): the later write would silently replace the
    /// earlier file, or the file the command reads. Paths are compared by the file they name, links
    /// followed, or by their absolute form when nothing is there yet.
    static func checkDistinct(
        _ outputs: [(option: String, path: String)], from inputs: [(what: String, path: String)]
    ) throws(UsageError) {
        var seen: [(name: String, identity: String)] = inputs.map { ($0.what, Self.identity(of: $0.path)) }
        for output in outputs {
            let identity = Self.identity(of: output.path)
            if let earlier = seen.first(where: { $0.identity == identity }) {
                throw UsageError("\(output.option) \(output.path) names the same file as \(earlier.name)")
            }
            seen.append((output.option, identity))
        }
    }

}

extension CardSaver {
    /// Checks, before anything is exchanged, that `directory` can take a card (`--save`).
    /// - Throws: ``UsageError`` naming the problem, in one line.
    static func checkDirectory(_ directory: String) throws(UsageError) {
        if let problem = directoryProblem(directory) { throw UsageError(problem) }
    }
}

extension KnownPeersStoreError: InputError {}
extension StaticKeyStoreError: InputError {}
