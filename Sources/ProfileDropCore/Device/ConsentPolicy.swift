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
    /// Share without asking with a peer that proved to be a known peer (its verification shows
    /// ``Verification/knownPeer``); ask, as ``askUser`` does, about any other device. A relay that
    /// replays a known peer's IDENT cannot prove the bond, so it is asked about as a stranger.
    case shareWithKnownPeers

    /// Whether a consent request may reach the user: always with ``askUser``, for strangers with
    /// ``shareWithKnownPeers``.
    public var mayAskUser: Bool {
        switch self {
        case .askUser, .shareWithKnownPeers: true
        case .share, .receiveOnly, .decline: false
        }
    }
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
