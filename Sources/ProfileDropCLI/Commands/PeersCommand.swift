@_spi(Storage) import ProfileDrop
import ProfileDropCore
import ProfileDropJSON

/// `profiledrop peers`: lists the peers this device remembers, and `peers forget SELECTOR` removes
/// one. Peers are shown by number, fingerprint and name; bond keys are never shown.
enum PeersCommand: Subcommand {
    static let name = "peers"
    static let summary =
        "list the peers this device remembers; 'forget SELECTOR' removes one (number, fingerprint or name)"
    static let parser = ArgumentParser(
        command: name, options: [Options.knownPeers, Options.keyFile, Options.json])

    static let usage =
        "usage: profiledrop peers [--json] | peers forget SELECTOR, each with [--known-peers PATH] [--key-file PATH]"

    /// Every option of `peers`, declared once.
    enum Options {
        static let knownPeers = IdentityFileOptions.knownPeers
        static let keyFile = IdentityFileOptions.keyFile
        static let json = Flag("json", help: "list as one JSON object per line")
    }

    static func run(_ arguments: ParsedArguments, console: Console) throws -> ExitCode {
        let positionals = arguments.positionals
        if positionals.isEmpty {
            return try list(at: path(arguments), json: arguments.has(Options.json), console: console)
        }
        guard positionals[0] == "forget" else {
            throw UsageError("unknown argument '\(positionals[0])'; \(usage)")
        }
        guard positionals.count == 2 else {
            throw UsageError(
                positionals.count < 2
                    ? "forget needs a SELECTOR; \(usage)" : "forget takes one SELECTOR; \(usage)")
        }
        guard !arguments.has(Options.json) else { throw UsageError("--json is for the list, not for forget") }
        for peer in try KnownPeersStore.forget(positionals[1], at: path(arguments)) {
            console.output("forgot \(peer.name) (\(KnownPeersStore.fingerprint(peer)))")
        }
        return .success
    }

    /// `--known-peers`, or the file beside `--key-file` or the default static key file.
    private static func path(_ arguments: ParsedArguments) throws -> String {
        try IdentityFileOptions.knownPeersPath(
            arguments, keyFilePath: IdentityFileOptions.keyFilePath(arguments))
    }

    private static func list(at path: String, json: Bool, console: Console) throws -> ExitCode {
        let peers = try KnownPeersStore.load(at: path)
        if peers.isEmpty && !json { console.output("no known peers (\(path))") }
        let width = String(peers.count).count
        for (index, peer) in peers.enumerated() {
            let number = index + 1
            let fingerprint = KnownPeersStore.fingerprint(peer)
            if json {
                console.output(
                    JSONValue.object([
                        ("number", .integer(number)), ("fingerprint", .string(fingerprint)),
                        ("name", .string(peer.name)),
                    ]).serialized)
            } else {
                let padding = String(repeating: " ", count: width - String(number).count)
                console.output("\(padding)\(number)  \(fingerprint)  \(peer.name)")
            }
        }
        return .success
    }
}
