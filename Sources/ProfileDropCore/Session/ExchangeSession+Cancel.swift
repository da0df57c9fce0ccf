extension ExchangeSession {
    /// Ends a live session because our owner stopped the device: CLOSE(declined), preceded while
    /// consenting by CONSENT(decline) when we had not decided yet and by the facts the peer still
    /// needs for its code (``Link/declineFrames()``). The peer learns within a round trip instead of
    /// after 5 s of silence: once its code is known it closes with `declined by peer`; before
    /// (ranging, or consenting before its code), only that session ends, and it goes on looking
    /// (PROTOCOL.md 11.6, item 10).
    /// A handshake has no channel for it and is dropped. Does nothing to a session already closing
    /// or draining.
    mutating func cancelByOwner(context: inout SessionContext) {
        let decline: [Frame] = [.close(CloseFrame(code: .declined))]
        let transition: Transition
        switch state {
        case .handshaking:
            transition = .closed(outcome: .declined(by: .local))
        case .ranging, .transferring:
            transition = .close(.declined(by: .local), frames: decline, endsDevice: true)
        case .consenting:
            transition = .close(.declined(by: .local), frames: securedLink.declineFrames(), endsDevice: true)
        case .closing, .draining, .closed:
            return
        }
        apply(transition, context: &context)
    }
}
