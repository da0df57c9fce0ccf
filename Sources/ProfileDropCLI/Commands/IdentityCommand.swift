import ProfileDropCrypto

/// `profiledrop identity`: shows (creating on first use) the device's static Noise key.
enum IdentityCommand: Subcommand {
    static let name = "identity"
    static let summary = "show this device's static public key, creating the key on first use"
    static let parser = ArgumentParser(command: name, options: [Options.keyFile])

    /// Every option of `identity`, declared once.
    enum Options {
        static let keyFile = Option.text(
            "key-file", valueName: "PATH",
            help: "static key file (default: $XDG_CONFIG_HOME/profiledrop/static-key)")
    }
    static func run(_ arguments: ParsedArguments, console: Console) throws -> ExitCode {
        guard arguments.positionals.isEmpty else { throw UsageError("takes no arguments") }
        let path = try arguments.value(Options.keyFile) ?? StaticKeyStore.defaultPath()
        let (key, created) = try StaticKeyStore.loadOrCreate(at: path)
        console.output("static public key: \(hex(key.publicKey.rawRepresentation))")
        console.output("key file: \(path)\(created ? " (created, mode 0600)" : "")")
        return .success
    }
}
