/// How a device answers an exchange once both devices are in range.
public enum ConsentPolicy: Sendable, Equatable {
    /// Send our card and receive theirs.
    case share
    /// Receive their card, send nothing.
    case receiveOnly
    /// Refuse: the exchange closes with `.declined`.
    case decline
    /// Emit ``DeviceEvent/consentRequested(peer:)`` and wait for ``Device/decide(_:for:at:)``
    /// (or ``Device/decide(_:at:)`` for a single candidate); each candidate asked about declines
    /// by itself ``Timeouts/consent`` (60 s by default) after it was asked.
    case askUser
    /// Share without asking with a peer that proved to be a known peer (its verification shows
    /// ``Verification/knownPeer``); ask, as ``askUser`` does, about any other device. A relay that
    /// replays a known peer's IDENT cannot prove the bond, so it is asked about as a stranger.
    case shareWithKnownPeers

    /// The decision the policy takes by itself once the code is shown, for a peer that proved to
    /// be a known peer or not; nil when the user is asked.
    public func decision(knownPeer: Bool) -> ConsentDecision? {
        switch self {
        case .share: .share
        case .receiveOnly: .receiveOnly
        case .decline: .decline
        case .askUser: nil
        case .shareWithKnownPeers: knownPeer ? .share : nil
        }
    }

    /// Whether a consent request may reach the user: with ``askUser``, and for a stranger with
    /// ``shareWithKnownPeers``.
    public var mayAskUser: Bool { decision(knownPeer: false) == nil }
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
