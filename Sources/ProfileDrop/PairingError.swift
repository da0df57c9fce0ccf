/// Why a run could not start or could not go on. Its ``message`` is the one line `profiledrop share`
/// prints after `profiledrop share: `.
public struct PairingError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What kind of problem it is, which decides the command line's exit code.
    public enum Kind: Sendable, Equatable {
        /// The configuration asks for something impossible: a missing or malformed key or
        /// known-peers file, an unknown interface, a directory that cannot take cards. Exit 2.
        case configuration
        /// A file could not be written: the capture, a saved card, a known peer. Exit 6.
        case file
        /// The sockets failed: a port in use, permission denied, a failing system call. Exit 6.
        case network
    }

    /// What kind of problem it is.
    public var kind: Kind
    /// The problem in one line, naming the file or option concerned.
    public var message: String

    /// An error of `kind` explained by `message`.
    public init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    /// The one-line ``message``.
    public var description: String { message }
}
