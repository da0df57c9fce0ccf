import ProfileDropErrors

/// Why a run could not start or could not go on: a code, which decides the command line's exit
/// code, and one line naming the file or option concerned, which `profiledrop share` prints after
/// `profiledrop share: `.
public typealias PairingError = CodedError<PairingErrorCode>

/// What kind of problem stopped a run.
public enum PairingErrorCode: String, ErrorCode {
    /// The configuration asks for something impossible: a missing or malformed key or
    /// known-peers file, an unknown interface, a directory that cannot take cards. Exit 2.
    case configuration
    /// A file could not be written: the capture, a saved card, a known peer. Exit 6.
    case file
    /// The sockets failed: a port in use, permission denied, a failing system call. Exit 6.
    case network
}
