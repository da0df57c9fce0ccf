extension ExchangeSession {
    /// Ends a live session because our owner stopped the device: CLOSE(declined), preceded by
    /// CONSENT(decline) when we had not decided yet, so the peer closes with `declined by peer`
    /// within a round trip (it would otherwise wait 5 s of silence, then look for us again). A
    /// handshake has no channel for it and is dropped. Does nothing to a session already closing
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
            let consent: [Frame] = securedLink.localConsent == nil ? [.consent(.decline, nil)] : []
            transition = .close(.declined(by: .local), frames: consent + decline, endsDevice: true)
        case .closing, .draining, .closed:
            return
        }
        apply(transition, context: &context)
    }
}
