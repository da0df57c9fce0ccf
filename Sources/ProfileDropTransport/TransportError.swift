/// A failure to set up or use the UDP sockets. Each carries a code for callers and a one-line
/// diagnostic for people.
public struct TransportError: Error, Equatable, CustomStringConvertible {
    /// What went wrong.
    public enum Code: String, Equatable, Sendable {
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

    /// What went wrong, for callers.
    public var code: Code
    /// One line for people, naming the interface, address or port involved.
    public var diagnostic: String

    /// An error with its code and one-line diagnostic.
    public init(_ code: Code, _ diagnostic: String) {
        self.code = code
        self.diagnostic = diagnostic
    }

    public var description: String { diagnostic }
}
