@_spi(Storage) import ProfileDrop
import ProfileDropCore
import ProfileDropCrypto

/// `profiledrop identity`: shows (creating on first use) the device's long-term identity, as the
/// fingerprint its known peers list for it.
enum IdentityCommand: Subcommand {
    static let name = "identity"
    static let summary = "show this device's identity fingerprint, creating its secret on first use"
    static let parser = ArgumentParser(command: name, options: [Options.keyFile])

    /// Every option of `identity`, declared once.
    enum Options {
        static let keyFile = IdentityFileOptions.keyFile
    }

    static func run(_ arguments: ParsedArguments, console: Console) throws -> ExitCode {
        guard arguments.positionals.isEmpty else { throw UsageError("takes no arguments") }
        let path = try IdentityFileOptions.keyFilePath(arguments)
        let (key, created) = try StaticKeyStore.loadOrCreate(at: path)
        // The file's secret is the identity secret; the Noise static key is fresh every run.
        let identity = DeviceIdentity(secret: key.rawRepresentation)
        let fingerprint = KnownPeersStore.fingerprint(
            KnownPeer(resolvingKey: identity.resolvingKey, bondKey: Array(repeating: 0, count: 32), name: ""))
        console.output("identity fingerprint: \(fingerprint) (what `profiledrop peers` shows on known peers)")
        console.output("key file: \(path)\(created ? " (created, mode 0600)" : "")")
        return .success
    }
}
