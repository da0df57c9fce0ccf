import ProfileDropNoise

/// `profiledrop noise-vectors FILE...`: runs every vector in cacophony-format files.
enum NoiseVectorsCommand: Subcommand {
    static let name = "noise-vectors"
    static let summary = "check the Noise implementation against test-vector files (cacophony JSON schema)"
    static let parser = ArgumentParser(command: name, options: [verbose])
    static let verbose = Flag("verbose", help: "print every vector, not only failures")

    static func run(_ arguments: ParsedArguments, console: Console) throws -> ExitCode {
        guard !arguments.positionals.isEmpty else { throw UsageError("give at least one vector file") }
        let verbose = arguments.has(Self.verbose)
        var total = 0
        var failed = 0
        var skipped = 0
        for path in arguments.positionals {
            let results: [NoiseVectorResult]
            do {
                results = try NoiseVectorRunner.run(contentsOf: path)
            } catch {
                throw UsageError("\(error)")
            }
            for result in results {
                total += 1
                switch result.outcome {
                case .passed:
                    if verbose { console.output("pass  \(result.protocolName.printable)") }
                case .failed(let reason):
                    failed += 1
                    console.output("FAIL  \(result.protocolName.printable): \(reason.printable)")
                case .skipped(let reason):
                    skipped += 1
                    console.output("skip  \(result.protocolName.printable): \(reason.printable)")
                }
            }
        }
        console.output("noise-vectors: \(total) vectors, \(failed) failed, \(skipped) skipped")
        if failed > 0 {
            console.error("profiledrop noise-vectors: \(failed) of \(total) vectors failed (listed above)")
        }
        return failed > 0 ? .failure : .success
    }
}
