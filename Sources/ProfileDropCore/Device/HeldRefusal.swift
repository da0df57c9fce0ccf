/// A refusal of our invitation (BUSY 1, 2 or 4), held back for a moment before it is believed.
///
/// BUSY is not authenticated: whoever sees our INVITE and spoofs the invitee's address can forge
/// one, and it arrives before the invitee's ACCEPT. Only the invitee can answer ACCEPT, so the
/// invitation keeps waiting for it a little: if ACCEPT comes, the handshake goes on and the BUSY is
/// dropped; if not, the refusal applies when the hold ends (PROTOCOL.md 5, "Refusals").
struct HeldRefusal: Equatable {
    /// The BUSY, already matched against the invitation: its session, both ids and its source.
    let busy: Busy
    /// When the refusal applies, unless ACCEPT came first.
    let until: Instant

    /// The shortest hold: longer than the gap between a forger's BUSY and the invitee's ACCEPT on a
    /// local network.
    static let minimumHold: Duration = .milliseconds(50)

    /// How long a refusal that arrived at `now` is held: as long again as it took to come since our
    /// INVITE last went out at `invitedAt` (a slow BUSY means a slow path, and the ACCEPT may be as
    /// slow), at least ``minimumHold``, and never past the INVITE's next retransmission, which the
    /// refusal replaces.
    static func until(now: Instant, invitedAt: Instant, retransmitAt: Instant) -> Instant {
        min(now + max(now - invitedAt, minimumHold), retransmitAt)
    }
}
