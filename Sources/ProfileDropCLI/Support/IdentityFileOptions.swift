@_spi(Storage) import ProfileDrop

/// `--key-file` and `--known-peers`, which `share`, `identity` and `peers` take with one meaning:
/// declared once, and resolved to a path by one rule.
enum IdentityFileOptions {
    static let keyFile = Option.path(
        "key-file", valueName: "PATH",
        help: "static key file, the device's long-term identity secret, which share and identity create "
            + "on first use (default: $XDG_CONFIG_HOME/profiledrop/static-key)")
    static let knownPeers = Option.path(
        "known-peers", valueName: "PATH",
        help: "known-peers file (default: 'known-peers' beside the static key file)")

    /// `--key-file`, or the default location; a usage error when neither `XDG_CONFIG_HOME` nor
    /// `HOME` says where that is.
    static func keyFilePath(_ arguments: ParsedArguments) throws -> String {
        try arguments.value(keyFile) ?? StaticKeyStore.defaultPath()
    }

    /// `--known-peers`, or the file beside the static key file at `keyFilePath`.
    static func knownPeersPath(_ arguments: ParsedArguments, keyFilePath: String) -> String {
        arguments.value(knownPeers) ?? KnownPeersStore.defaultPath(keyFilePath: keyFilePath)
    }
}
