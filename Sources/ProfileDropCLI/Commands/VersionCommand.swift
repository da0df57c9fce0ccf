import ProfileDropCore
import ProfileDropCrypto

/// `profiledrop version` (also `--version`, `-V`): the release, the git commit it was built from,
/// the linked libsodium and the protocol version.
enum VersionCommand: Subcommand {
    static let name = "version"
    static let summary = "show the version, the git commit it was built from and the libsodium version"
    static let parser = ArgumentParser(command: name, options: [])
    static let exitCodes: [(code: ExitCode, meaning: String)] = [
        (.success, ExitCode.success.label), (.usage, ExitCode.usage.label),
    ]

    /// The release number (CHANGELOG.md): the last release's next minor version with `-dev` while
    /// its changes are unreleased; set it to the release itself when tagging one.
    static let release = "0.3.0-dev"

    /// The commit the binary was built from: 12 hex digits, `unknown` outside a git checkout.
    /// `Plugins/GitCommit` writes it at build time (CONTRIBUTING.md, "Version").
    static var commit: String { buildGitCommit }

    /// The lines `profiledrop version` prints.
    static var lines: [String] {
        [
            "profiledrop \(release)",
            "commit: \(commit)",
            "libsodium: \(Sodium.version)",
            "protocol: version \(WireConstants.protocolName) (wire version \(WireConstants.version))",
        ]
    }

    static func run(_ arguments: ParsedArguments, console: Console) throws -> ExitCode {
        guard arguments.positionals.isEmpty else { throw UsageError("takes no arguments") }
        return printVersion(console: console)
    }

    /// Prints ``lines``.
    static func printVersion(console: Console) -> ExitCode {
        lines.forEach(console.output)
        return .success
    }
}
