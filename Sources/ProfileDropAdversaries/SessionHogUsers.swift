/// The session hog against a pair of asked users who compare codes (careful): each is asked about
/// its hog first, with a code the other screen does not show. Every candidate is on screen at
/// once with its code, so each user finds the pair's own code among them when it comes and picks
/// it, which declines the hog; a decline of a mismatch ends only its session.
enum SessionHogCarefulAttack: PairHogKind {
    static let name = "session-hog-careful"
    static let stall: MaliciousBehaviour? = nil
    static let pairUsers = AttackUsers.careful
    static let pendingFix: String? = nil
}

/// The session hog against unattended known peers (`--yes-known`, nobody at the terminal, who met
/// before): each hog is a stranger, whose question nobody answers, while the pair shares without
/// asking; an unanswered question ends only its session.
enum SessionHogKnownAttack: PairHogKind {
    static let name = "session-hog-known"
    static let stall: MaliciousBehaviour? = nil
    static let pairUsers = AttackUsers.unattended
    static let pendingFix: String? = nil
}

extension AttackKind {
    /// Availability, malicious peers judged strictly, against careful users.
    public static let sessionHogCareful = SessionHogCarefulAttack.kind
    /// Availability, malicious peers judged strictly, against unattended known peers.
    public static let sessionHogKnown = SessionHogKnownAttack.kind
}
