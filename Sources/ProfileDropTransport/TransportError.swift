import ProfileDropErrors

/// A failure to set up or use the UDP sockets: a code for callers and one line for people, naming
/// the interface, address or port involved.
public typealias TransportError = CodedError<TransportErrorCode>

/// What went wrong with the UDP sockets.
public enum TransportErrorCode: String, ErrorCode {
    /// Another process holds the port (and did not share it with SO_REUSEPORT).
    case addressInUse
    /// `--interface` named an interface this machine does not have.
    case interfaceNotFound
    /// The interface exists but is down, or cannot do multicast and is not loopback.
    case interfaceUnusable
    /// The local address asked for is not one of this machine's.
    case addressNotAvailable
    /// No interface qualifies for the default selection.
    case noInterface
    /// The operating system refused: not allowed for this user or by policy.
    case permissionDenied
    /// Any other socket call that failed.
    case socketFailure
}
