/// The session hog against a pair of asked users who compare codes (careful): each is asked about
/// its hog first and sees a code the other screen does not show. Today one question is shown at a
/// time, so the two screens can show questions about different sessions: a careful user then
/// declines the pair's own session too, and a decline with no other candidate held ends the run.
enum SessionHogCarefulAttack: PairHogKind {
    static let name = "session-hog-careful"
    static let stall: MaliciousBehaviour? = nil
    static let pairUsers = AttackUsers.careful
    static let pendingFix: String? =
        "a user sees every candidate with its code at once, and a decline ends only its session (protocol 2.1)"
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
