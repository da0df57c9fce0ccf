/// What the device's ended sessions leave behind: the peer a snapshot shows, and why the device
/// did not pair if its overall limit passes (PROTOCOL.md 5, "Candidates"). Discovery keeps it
/// beside the back-offs the same outcomes set, so that each outcome flows from its session to
/// discovery in one call (``DiscoverySession/sessionEnded(_:of:as:context:)``) and the device
/// keeps no copy of its own.
struct EndedSessions {
    /// How the device took an outcome.
    enum Ending: Equatable {
        /// The device closes, or closed: its sessions end with it, unreported. `shown` is the
        /// session the device showed, whose peer it goes on showing.
        case withDevice(shown: Bool)
        /// The outcome ends the device: an exchange, or our user's decline with no other candidate.
        case endsDevice
        /// Reported as the session's end; the device goes on.
        case reported
    }

    /// The peer of the latest session that ended the device or was reported, or of the one a
    /// closing device showed.
    private(set) var lastPeer: DeviceID?
    /// The reason of the latest reported session end; an unanswered invitation replaces none.
    private(set) var lastFailure: CloseReason?
    /// The latest error a session of this run ended with.
    private(set) var lastError: CloseReason?

    /// Notes `outcome`, taken as `ending`.
    mutating func record(_ outcome: SessionOutcome, as ending: Ending) {
        if case .error = outcome.reason { lastError = outcome.reason }
        switch ending {
        case .withDevice(let shown):
            if shown { lastPeer = outcome.peer }
        case .endsDevice:
            lastPeer = outcome.peer
        case .reported:
            lastPeer = outcome.peer
            // An unanswered invitation says less than what an earlier session measured.
            if outcome.reason != .timeout(.handshake) || lastFailure == nil { lastFailure = outcome.reason }
        }
    }

    /// Why the device closes at its overall limit, most informative first: the latest error a
    /// session of the run ended with (a peer broke a rule, which trying again will not mend); else
    /// the reason the live session was closed with at the limit (`cut`), unless it was a handshake
    /// and the last session ended out of range; else `out of range` if the last session ended so;
    /// else `timeout: no exchange`.
    ///
    /// A handshake cut at the limit is a new attempt that had no time to say anything, while an
    /// out-of-range session measured the peer: two devices whose limits fall a few milliseconds
    /// apart, the later one inviting the other again just as it closed, should both say why they
    /// did not pair.
    func reasonAtLimit(cut: CloseReason?) -> CloseReason {
        if let lastError { return lastError }
        let measured: CloseReason? =
            switch lastFailure {
            case .outOfRange, .declined, .timeout(.consent): lastFailure
            case .exchanged, .timeout, .error, nil: nil
            }
        if let cut, !(cut == .timeout(.handshake) && measured != nil) { return cut }
        return measured ?? .timeout(.noExchange)
    }
}
