/// How a device answers an exchange once both devices are in range.
public enum ConsentPolicy: Sendable, Equatable {
    /// Send our card and receive theirs.
    case share
    /// Receive their card, send nothing.
    case receiveOnly
    /// Refuse: the exchange closes with `.declined`.
    case decline
    /// Emit ``DeviceEvent/consentRequested(peer:)`` and wait for ``Device/decide(_:at:)``;
    /// declines automatically after ``Timeouts/consent`` (60 s by default).
    case askUser
}

/// The user's answer to ``DeviceEvent/consentRequested(peer:)``.
public enum ConsentDecision: UInt8, Sendable, Equatable {
    /// Send our card and receive theirs.
    case share = 1
    /// Receive their card, send nothing.
    case receiveOnly = 2
    /// Refuse the exchange.
    case decline = 3
}
