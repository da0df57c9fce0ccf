import ProfileDropCrypto
import Testing

@testable import FuzzSupport
@testable import ProfileDropCore

// The authenticated peer turned adversary (PROTOCOL.md 11.4, "Inside SECURE"): it holds the session
// keys, so every frame below gets past authentication, and the device must answer it as the
// threat model's per-message table says. The real `Device` runs against a `ScriptedPeer` in virtual
// time; nothing touches a network.

extension ScriptedPeerRun {
    /// A device with a card of three chunks (a 3000-byte photo), under `consent`, with `timeouts`.
    static func configuration(consent: ConsentPolicy = .share, timeouts: Timeouts = Timeouts())
        -> DeviceConfiguration
    {
        Fixtures.configuration("Bori", consent: consent, seed: 1, photoBytes: 3000, timeouts: timeouts)
    }

    /// The pairings the device reported as interrupted: their code, if computed, and why.
    var interruptions: [(code: String?, reason: CloseReason)] {
        events.compactMap {
            if case .pairingInterrupted(_, let code, let reason) = $0.event { (code, reason) } else { nil }
        }
    }

    /// Datagrams the device dropped.
    var rejections: [ProtocolError] {
        events.compactMap { if case .datagramRejected(let error) = $0.event { error } else { nil } }
    }

    // When the device first showed each event (properties, not calls, so that a failed
    // expectation prints the value rather than the whole run).
    var securedAt: Instant? { time(of: Self.isSecured) }
    var inRangeAt: Instant? { time(of: Self.isInRange) }
    var exchangingAt: Instant? { time(of: Self.isExchanging) }
    var consentRequestedAt: Instant? { time(of: Self.isConsentRequested) }
    var cardVerifiedAt: Instant? { time(of: Self.isCardVerified) }
    var acknowledgedAt: Instant? { time(of: Self.isAcknowledged) }
    /// Peers the device remembered.
    var remembered: Int {
        events.filter { if case .peerRemembered = $0.event { true } else { false } }.count
    }

    /// Cards the device delivered.
    var deliveredCards: Int {
        events.filter { if case .cardReceived = $0.event { true } else { false } }.count
    }

    /// Codes the device showed.
    var shownCodes: [String] {
        events.compactMap {
            if case .verified(let verification) = $0.event { verification.code } else { nil }
        }
    }

    /// The peer sends `frames` in one SECURE packet now; both sides react.
    mutating func inject(_ frames: [Frame]) {
        peer.send(frames)
        deliver()
    }

    /// Runs until the first session ends (or `limit`), and returns how it ended.
    mutating func firstSessionEnd(limit: Instant = .zero + .seconds(120)) throws -> (
        time: Instant, reason: CloseReason
    ) {
        run(until: limit) { !$0.endedSessions.isEmpty }
        return try #require(endedSessions.first, "\(events.suffix(6).map(\.event))")
    }

    /// Runs until the first session ends and expects it cut as stalled 10 s after our side was done
    /// (the peer's card verified, ours acknowledged), with CLOSE(timeout) to the peer, no card
    /// delivered and nobody remembered.
    mutating func expectStalledOnceOurSideWasDone() throws {
        let ended = try firstSessionEnd()
        #expect(ended.reason == .timeout(.transferStalled))
        let verified = try #require(cardVerifiedAt)
        let acknowledged = try #require(acknowledgedAt)
        #expect(ended.time == max(verified, acknowledged) + .seconds(10))
        #expect(peer.receivedClose == CloseFrame(code: .timeout))
        #expect(deliveredCards == 0)
        #expect(remembered == 0)
    }

    static func isConsentRequested(_ event: DeviceEvent) -> Bool {
        if case .consentRequested = event { true } else { false }
    }
    static func isCardVerified(_ event: DeviceEvent) -> Bool {
        if case .cardVerified = event { true } else { false }
    }
    static func isAcknowledged(_ event: DeviceEvent) -> Bool {
        if case .acknowledged = event { true } else { false }
    }
    static func isSecured(_ event: DeviceEvent) -> Bool { if case .secured = event { true } else { false } }
}

extension ScriptedPeerRun {
    /// Injects `frames` from the peer, runs until the first session ends, and expects it to end
    /// by the peer's broken rule `code` (``expectProtocolError(_:_:_:sourceLocation:)``).
    @discardableResult
    mutating func endsInError(
        afterInjecting frames: [Frame], _ code: ProtocolError.Code,
        sourceLocation: SourceLocation = #_sourceLocation
    ) throws -> (time: Instant, reason: CloseReason) {
        inject(frames)
        let ended = try firstSessionEnd()
        expectProtocolError(self, ended, code, sourceLocation: sourceLocation)
        return ended
    }
}

/// What a session ended by the peer's broken rule must show: the error's code as the local reason,
/// CLOSE(error, code) at the peer, and no card delivered.
func expectProtocolError(
    _ run: ScriptedPeerRun, _ ended: (time: Instant, reason: CloseReason), _ code: ProtocolError.Code,
    sourceLocation: SourceLocation = #_sourceLocation
) {
    guard case .error(let error) = ended.reason else {
        Issue.record(
            "the session ended with \(ended.reason), not \(code.name)", sourceLocation: sourceLocation)
        return
    }
    #expect(error.code == code, "\(error)", sourceLocation: sourceLocation)
    #expect(
        run.peer.receivedClose == CloseFrame(code: .error, errorCode: code.wireValue),
        "\(String(describing: run.peer.receivedClose))", sourceLocation: sourceLocation)
    #expect(run.deliveredCards == 0, sourceLocation: sourceLocation)
    // An error ends the session, not the device.
    #expect(run.closed == nil, sourceLocation: sourceLocation)
}

/// COMMIT, NONCE and REVEAL out of place (PROTOCOL.md 6.5, and the rows of 11.4): each is
/// `unexpected-message`, CLOSE(error 17), except a REVEAL that does not open COMMIT, which is
/// `commitment-mismatch`, CLOSE(error 21). A session that ends after verification began is reported
/// as an interrupted pairing; one that ends before is not.
@Suite struct VerificationMisuseTests {
    // MARK: The device as responder (the peer invites it)

    /// The device commits on entering consenting; the initiator answers with a COMMIT of its own
    /// instead of its NONCE. The device never held a NONCE, so its peer learnt no code: no warning.
    @Test func aCommitFromTheInitiatorIsUnexpected() throws {
        var run = ScriptedPeerRun(configuration: ScriptedPeerRun.configuration())
        run.run(until: .zero + .seconds(20)) { $0.peer.session.peerCommitment != nil }
        let commitment = try #require(run.peer.session.peerCommitment)
        try run.endsInError(afterInjecting: [.commit(commitment)], .unexpectedMessage)
        #expect(run.interruptions.isEmpty)
        #expect(run.shownCodes.isEmpty)
    }

    /// A NONCE while the device is still ranging, before it committed.
    @Test func aNonceBeforeOurCommitmentIsUnexpected() throws {
        var run = ScriptedPeerRun(configuration: ScriptedPeerRun.configuration())
        run.run(until: .zero + .seconds(20)) { $0.peer.session.sawPeerIdent }
        #expect(run.device.stage == .ranging)
        #expect(run.peer.session.peerCommitment == nil)
        try run.endsInError(
            afterInjecting: [.nonce(Array(repeating: 0x4E, count: VerificationCode.nonceLength))],
            .unexpectedMessage)
        #expect(run.interruptions.isEmpty)
        #expect(run.shownCodes.isEmpty)
    }

    /// The initiator echoes a REVEAL after the code is known on both sides: the device had received
    /// the NONCE, so the pairing is reported as interrupted, with the code it showed.
    @Test func aRevealFromTheInitiatorIsUnexpected() throws {
        var run = ScriptedPeerRun(configuration: ScriptedPeerRun.configuration())
        run.run(until: .zero + .seconds(20)) { $0.peer.code != nil }
        let code = try #require(run.peer.code)
        let nonce = try #require(run.peer.session.nonce)
        let ended = try run.endsInError(afterInjecting: [.reveal(nonce)], .unexpectedMessage)
        #expect(run.shownCodes == [code])
        #expect(run.interruptions.map(\.code) == [code])
        #expect(run.interruptions.map(\.reason) == [ended.reason])
    }

    /// A second NONCE that differs from the first: a changed repetition.
    @Test func aChangedNonceIsUnexpected() throws {
        var run = ScriptedPeerRun(configuration: ScriptedPeerRun.configuration())
        run.run(until: .zero + .seconds(20)) { $0.peer.code != nil }
        let code = try #require(run.peer.code)
        var other = try #require(run.peer.session.nonce)
        other[0] ^= 0xFF
        try run.endsInError(afterInjecting: [.nonce(other)], .unexpectedMessage)
        #expect(run.interruptions.map(\.code) == [code])
    }

    // MARK: The device as initiator (it invites the peer)

    /// The honest responder pairs and exchanges: the role the tests below misuse works.
    @Test func anHonestResponderExchanges() throws {
        var run = ScriptedPeerRun(configuration: ScriptedPeerRun.configuration(), peerInvites: false)
        run.run(until: .zero + .seconds(30)) { $0.closed != nil }
        #expect(run.closed?.reason == .exchanged)
        #expect(run.deliveredCards == 1)
        #expect(run.shownCodes.count == 1 && run.shownCodes == [run.peer.code].compactMap { $0 })
        #expect(
            run.events.contains { if case .connecting(_, initiator: true) = $0.event { true } else { false } }
        )
        #expect(run.findings.violations.isEmpty, "\(run.findings.violations)")
    }

    /// The responder reveals a nonce its COMMIT does not open (it tries to choose the code after
    /// seeing ours): `commitment-mismatch`, CLOSE(error 21), and, since we sent our NONCE, the
    /// pairing interrupted with no code.
    @Test func aRevealThatDoesNotOpenTheCommitmentEndsThePairingLoudly() throws {
        var run = ScriptedPeerRun(configuration: ScriptedPeerRun.configuration(), peerInvites: false)
        run.peer.withheld = .reveal
        run.run(until: .zero + .seconds(20)) { $0.peer.session.peerNonce != nil }
        #expect(run.peer.session.peerNonce != nil)
        let ended = try run.endsInError(
            afterInjecting: [.reveal(Array(repeating: 0x52, count: VerificationCode.nonceLength))],
            .commitmentMismatch)
        #expect(run.shownCodes.isEmpty)
        #expect(run.interruptions.count == 1)
        #expect(run.interruptions.first?.code == nil)
        #expect(run.interruptions.first?.reason == ended.reason)
    }

    /// The responder never reveals: no code, `timeout: verification` 10 s after consenting began
    /// (both gates open), and the pairing interrupted, since we sent our NONCE.
    @Test func aWithheldRevealEndsAsVerificationTimeoutWithAWarning() throws {
        var run = ScriptedPeerRun(configuration: ScriptedPeerRun.configuration(), peerInvites: false)
        run.peer.withheld = .reveal
        let ended = try run.firstSessionEnd()
        let consenting = try #require(run.inRangeAt)
        #expect(ended.reason == .timeout(.verification))
        let waited = ended.time - consenting
        #expect(waited > .milliseconds(9500) && waited <= .seconds(10), "ended \(waited) after \(consenting)")
        #expect(run.peer.session.peerNonce != nil, "the device sent its NONCE")
        #expect(run.peer.receivedClose == CloseFrame(code: .timeout))
        #expect(run.shownCodes.isEmpty)
        #expect(run.interruptions.count == 1)
        #expect(run.interruptions.first?.code == nil)
        #expect(run.interruptions.first?.reason == .timeout(.verification))
        #expect(run.deliveredCards == 0)
    }

    /// The responder never commits: we never send NONCE, the code never comes, `timeout:
    /// verification` after 10 s, and no warning (verification never began).
    @Test func aWithheldCommitmentEndsAsVerificationTimeoutWithoutAWarning() throws {
        var run = ScriptedPeerRun(configuration: ScriptedPeerRun.configuration(), peerInvites: false)
        run.peer.withheld = .commit
        let ended = try run.firstSessionEnd()
        let consenting = try #require(run.inRangeAt)
        #expect(ended.reason == .timeout(.verification))
        let waited = ended.time - consenting
        #expect(waited > .milliseconds(9500) && waited <= .seconds(10), "ended \(waited) after \(consenting)")
        #expect(run.peer.session.peerNonce == nil, "the device sent NONCE without a commitment")
        #expect(run.peer.receivedClose == CloseFrame(code: .timeout))
        #expect(run.interruptions.isEmpty)
        #expect(run.shownCodes.isEmpty)
    }

    /// While we still range, before it committed and before our NONCE, the responder sends NONCE
    /// (the initiator's frame) or REVEAL: both are unexpected.
    @Test(arguments: [
        Frame.nonce(Array(repeating: 0x4E, count: VerificationCode.nonceLength)),
        Frame.reveal(Array(repeating: 0x52, count: VerificationCode.nonceLength)),
    ])
    func aNonceFromTheResponderOrARevealBeforeOurNonceIsUnexpected(_ frame: Frame) throws {
        var run = ScriptedPeerRun(configuration: ScriptedPeerRun.configuration(), peerInvites: false)
        run.run(until: .zero + .seconds(20)) { $0.peer.session.sawPeerIdent }
        #expect(run.peer.isSecured)
        #expect(run.device.stage == .ranging)
        try run.endsInError(afterInjecting: [frame], .unexpectedMessage)
        #expect(run.interruptions.isEmpty)
    }

    /// The responder changes its commitment after we answered it with our NONCE.
    @Test func aChangedCommitmentIsUnexpected() throws {
        var run = ScriptedPeerRun(configuration: ScriptedPeerRun.configuration(), peerInvites: false)
        run.peer.withheld = .reveal
        run.run(until: .zero + .seconds(20)) { $0.peer.session.peerNonce != nil }
        var other = try #require(run.peer.session.commitment)
        other[0] ^= 0xFF
        try run.endsInError(afterInjecting: [.commit(other)], .unexpectedMessage)
        #expect(run.interruptions.count == 1 && run.interruptions.first?.code == nil)
    }
}

/// IDENT and PROOF forged (PROTOCOL.md 6.5 and 11.4).
@Suite struct ForgedRecognitionTests {
    /// A second IDENT that differs from the first: CLOSE(error 17).
    @Test func aSecondDifferentIdentIsUnexpected() throws {
        var run = ScriptedPeerRun(configuration: ScriptedPeerRun.configuration())
        run.run(until: .zero + .seconds(20)) { $0.peer.session.peerReceipts.contains(.ident) }
        var other = run.peer.session.ident
        other[0] ^= 0xFF
        try run.endsInError(afterInjecting: [.ident(other)], .unexpectedMessage)
    }

    /// A PROOF before the sender's IDENT: CLOSE(error 17).
    @Test func aProofBeforeTheIdentIsUnexpected() throws {
        var run = ScriptedPeerRun(configuration: ScriptedPeerRun.configuration())
        run.peer.withheld = .ident
        run.run(until: .zero + .seconds(20)) { $0.peer.session.sawPeerIdent }
        try run.endsInError(
            afterInjecting: [.proof(Array(repeating: 0x50, count: 32))], .unexpectedMessage)
    }
}

/// CONSENT forged (PROTOCOL.md 6.5 and the CONSENT row of 11.4).
@Suite struct ForgedConsentTests {
    /// CONSENT(decline) before our code is known is kept, not acted on; a peer that then withholds
    /// its NONCE ends only the session, with `timeout: verification`, and the device goes on.
    @Test func aDeclineBeforeOurCodeEndsOnlyTheSession() throws {
        var run = ScriptedPeerRun(configuration: ScriptedPeerRun.configuration())
        run.peer.withheld = .nonce
        run.run(until: .zero + .seconds(20)) { $0.peer.session.sawPeerIdent }
        run.inject([.consent(.decline, nil)])
        let ended = try run.firstSessionEnd()
        #expect(ended.reason == .timeout(.verification))
        let consenting = try #require(run.inRangeAt)
        #expect(ended.time == consenting + .seconds(10))
        #expect(run.peer.receivedClose == CloseFrame(code: .timeout))
        #expect(run.closed == nil, "a decline before our code closed the device")
        #expect(run.interruptions.isEmpty)
    }

    /// Our own decline carries the facts the peer still needs for its code: a device whose policy
    /// declines decides as soon as the peer's NONCE gives it the code, before its REVEAL ever went
    /// out, so the REVEAL travels in the decline packet, ahead of CLOSE. The peer learns the same
    /// code and closes its device too, instead of only its session (PROTOCOL.md 6.5).
    @Test func ourDeclineCarriesTheRevealThePeerNeedsForItsCode() throws {
        var run = ScriptedPeerRun(configuration: ScriptedPeerRun.configuration(consent: .decline))
        run.run(until: .zero + .seconds(20)) { $0.closed != nil }
        let closed = try #require(run.closed)
        #expect(closed.reason == .declined(by: .local))
        #expect(run.peer.receivedClose == CloseFrame(code: .declined))
        let code = try #require(run.peer.code, "the peer never got our REVEAL")
        #expect(run.shownCodes == [code])
    }

    /// CONSENT(decline) once our code is shown ends the session and only the session, as before
    /// the code (PROTOCOL.md 5, "Candidates"): CLOSE(declined) to the peer, `declined by peer`, and
    /// the device goes on.
    @Test func aDeclineAfterOurCodeEndsOnlyTheSession() throws {
        var run = ScriptedPeerRun(configuration: ScriptedPeerRun.configuration())
        run.run(until: .zero + .seconds(20)) { $0.peer.code != nil }
        #expect(run.shownCodes.count == 1)
        run.inject([.consent(.decline, nil)])
        let ended = try #require(run.endedSessions.first)
        #expect(ended.reason == .declined(by: .peer))
        #expect(run.closed == nil, "a decline after our code closed the device")
        #expect(run.peer.receivedClose == CloseFrame(code: .declined))
        #expect(run.deliveredCards == 0 && run.peer.chunksReceived == 0)
    }

    /// A second CONSENT with another decision: CLOSE(error 17).
    @Test func aChangedConsentIsUnexpected() throws {
        var run = ScriptedPeerRun(configuration: ScriptedPeerRun.configuration())
        run.peer.withheld = .chunks
        run.run(until: .zero + .seconds(20)) { $0.peer.session.peerReceipts.contains(.consent) }
        try run.endsInError(afterInjecting: [.consent(.receiveOnly, nil)], .unexpectedMessage)
    }
}

/// IDENT or PROOF withheld (PROTOCOL.md 11.4): the device never learns who the peer is, so it
/// never asks its user; `timeout: verification` 10 s after both gates opened, and no card.
@Suite struct WithheldRecognitionTests {
    enum Fact: String, CaseIterable, Sendable {
        case ident
        case proof
    }

    @Test(arguments: Fact.allCases)
    func aPeerThatWithholdsRecognitionIsNeverAskedAbout(fact: Fact) throws {
        var run = ScriptedPeerRun(configuration: ScriptedPeerRun.configuration(consent: .askUser))
        run.peer.withheld = fact == .ident ? .ident : .proof
        let ended = try run.firstSessionEnd()
        let consenting = try #require(run.inRangeAt)
        #expect(ended.reason == .timeout(.verification))
        let waited = ended.time - consenting
        #expect(waited > .milliseconds(9500) && waited <= .seconds(10), "ended \(waited) after \(consenting)")
        #expect(run.peer.receivedClose == CloseFrame(code: .timeout))
        #expect(run.consentRequestedAt == nil)
        #expect(run.shownCodes.isEmpty)
        #expect(run.deliveredCards == 0)
        #expect(run.peer.chunksReceived == 0, "our card went to a peer we never identified")
        if fact == .ident {
            // No IDENT, no PROOF from us (PROTOCOL.md 11.4, IDENT withheld).
            #expect(!run.peer.sawPeerProof)
        } else {
            #expect(run.peer.sawPeerProof)
        }
        // The peer completed the code round (the device received its NONCE and revealed), so the
        // session ended after verification began: reported, with the code the peer may know.
        #expect(run.peer.code != nil)
        #expect(run.interruptions.map(\.code) == [run.peer.code])
        #expect(run.interruptions.map(\.reason) == [.timeout(.verification)])
    }
}

/// Forged CLOSE frames (PROTOCOL.md 6.7, 9 and the CLOSE row of 11.4).
@Suite struct ForgedCloseTests {
    /// CLOSE(exchanged) before the exchange completed is not believed: the device answers
    /// CLOSE_ACK, sends no CLOSE of its own, ends the session with `error: unexpected-message`, and
    /// delivers nothing. It comes before both gates opened, while the code is shown and the peer
    /// has not decided, and once both decided but before the peer's card came.
    @Test(arguments: [DeviceStage.ranging, .consenting, .exchanging])
    func anEarlyCloseAsExchangedIsNotBelieved(stage: DeviceStage) throws {
        var run = ScriptedPeerRun(configuration: ScriptedPeerRun.configuration())
        switch stage {
        case .ranging:
            run.run(until: .zero + .seconds(20)) { $0.peer.session.sawPeerIdent }
        case .consenting:
            run.run(until: .zero + .seconds(20)) { $0.peer.code != nil }
        case .exchanging:
            run.peer.withheld = .chunks
            run.run(until: .zero + .seconds(20)) { $0.time(of: ScriptedPeerRun.isExchanging) != nil }
        case .discovering, .connecting, .closing, .closed:
            preconditionFailure("the test's arguments hold no \(stage)")
        }
        #expect(run.device.stage == stage)
        run.inject([.close(CloseFrame(code: .exchanged)), .receipt([])])
        let ended = try run.firstSessionEnd()
        #expect(
            ended.reason
                == .error(
                    ProtocolError(
                        .unexpectedMessage, "peer closed as exchanged before the exchange completed")))
        #expect(run.peer.closeAcked)
        #expect(
            run.peer.receivedClose == nil,
            "the device sent CLOSE(\(String(describing: run.peer.receivedClose)))")
        #expect(run.deliveredCards == 0)
        #expect(run.cardVerifiedAt == nil)
        #expect(run.closed == nil, "an unbelieved CLOSE(exchanged) ends the session, not the device")
        #expect(run.remembered == 0)
        // Only a pairing whose code the device had shown, and not yet agreed both ways, was
        // interrupted.
        #expect(run.interruptions.count == (stage == .consenting ? 1 : 0))
    }

    /// CLOSE(out of range) ends the session as out of range, CLOSE(timeout) as `timeout: peer gave
    /// up waiting`: each a failure and a back-off against that peer, but no blame on its host
    /// (PROTOCOL.md 5, "Faulty hosts").
    @Test(arguments: [CloseCode.outOfRange, .timeout])
    func aCloseAsOutOfRangeOrTimeoutEndsTheSessionAndCountsAFailure(code: CloseCode) throws {
        var run = ScriptedPeerRun(configuration: ScriptedPeerRun.configuration())
        run.run(until: .zero + .seconds(20)) { $0.peer.session.sawPeerIdent }
        run.inject([.close(CloseFrame(code: code)), .receipt([])])
        let ended = try run.firstSessionEnd()
        #expect(ended.reason == (code == .outOfRange ? .outOfRange : .timeout(.peerGaveUp)))
        #expect(run.peer.closeAcked && run.peer.receivedClose == nil)
        #expect(run.closed == nil)
        let entry = try #require(run.device.discovery.peers.first { $0.id == run.peer.deviceID })
        #expect(entry.failures == 1)
        #expect(entry.retryAt > ended.time)
        #expect(!run.device.discovery.isBackingOff(fromHost: run.peer.address.ipv4, now: ended.time))
    }

    /// CLOSE(declined) before our code is known ends only the session, as a failure against that
    /// peer: anyone who completes a handshake with us could send it, and until 2026-12-02 it ended
    /// the device, no gate needed (PROTOCOL.md 11.6, item 10). Tried while ranging and while
    /// consenting with the peer's REVEAL or NONCE withheld, so that no code is known.
    @Test(arguments: [false, true])
    func aCloseAsDeclinedBeforeOurCodeEndsOnlyTheSession(consenting: Bool) throws {
        var run = ScriptedPeerRun(configuration: ScriptedPeerRun.configuration())
        if consenting {
            run.peer.withheld = .nonce
            run.run(until: .zero + .seconds(20)) { $0.inRangeAt != nil }
            run.run(until: run.now + .milliseconds(500))
        } else {
            run.run(until: .zero + .seconds(20)) { $0.peer.session.sawPeerIdent }
        }
        #expect((run.inRangeAt != nil) == consenting)
        #expect(run.shownCodes.isEmpty)
        run.inject([.close(CloseFrame(code: .declined)), .receipt([])])
        let ended = try run.firstSessionEnd()
        #expect(ended.reason == .declined(by: .peer))
        #expect(run.closed == nil, "a decline before our code closed the device")
        #expect(run.peer.closeAcked && run.peer.receivedClose == nil)
        let entry = try #require(run.device.discovery.peers.first { $0.id == run.peer.deviceID })
        #expect(entry.failures == 1)
        #expect(entry.retryAt > ended.time)
    }

    /// CLOSE(declined) once our code is shown ends the session alone, as CONSENT(decline) does: a
    /// peer that passed the gate and the code cannot end our run (PROTOCOL.md 11.6, item 10).
    @Test func aCloseAsDeclinedAfterOurCodeEndsOnlyTheSession() throws {
        var run = ScriptedPeerRun(configuration: ScriptedPeerRun.configuration())
        run.run(until: .zero + .seconds(20)) { $0.peer.code != nil }
        #expect(run.shownCodes.count == 1)
        run.inject([.close(CloseFrame(code: .declined)), .receipt([])])
        let ended = try #require(run.endedSessions.first)
        #expect(ended.reason == .declined(by: .peer))
        #expect(run.closed == nil, "a decline after our code closed the device")
        #expect(run.peer.closeAcked && run.peer.receivedClose == nil)
        #expect(run.deliveredCards == 0 && run.peer.chunksReceived == 0)
    }

    /// CLOSE(error, n): any 16-bit value, shown by name, or as `unexpected-message` when n names no
    /// code; either way the session failed by the peer's say-so, and the host is backed off from.
    @Test(arguments: [
        (UInt16(999), ProtocolError.Code.unexpectedMessage), (0, .unexpectedMessage),
        (24, .unexpectedMessage), (UInt16.max, .unexpectedMessage), (21, .commitmentMismatch),
    ])
    func aCloseWithAnyErrorCodeEndsTheSession(wire: UInt16, shown: ProtocolError.Code) throws {
        var run = ScriptedPeerRun(configuration: ScriptedPeerRun.configuration())
        run.run(until: .zero + .seconds(20)) { $0.peer.session.sawPeerIdent }
        run.inject([.close(CloseFrame(code: .error, errorCode: wire)), .receipt([])])
        let ended = try run.firstSessionEnd()
        #expect(ended.reason == .error(ProtocolError(shown, "peer closed with error \(wire)")))
        #expect(run.peer.closeAcked && run.peer.receivedClose == nil)
        #expect(run.closed == nil)
        #expect(run.rejections.isEmpty, "\(run.rejections)")
        #expect(run.device.discovery.isBackingOff(fromHost: run.peer.address.ipv4, now: ended.time))
    }
}

/// TOKEN, RANGING and IN_RANGE forged (PROTOCOL.md 6.3, 6.4 and 11.4).
@Suite struct ForgedRangingTests {
    /// A second TOKEN that differs from the first: CLOSE(error 13).
    @Test func aSecondDifferentTokenIsATokenMismatch() throws {
        var run = ScriptedPeerRun(configuration: ScriptedPeerRun.configuration())
        run.run(until: .zero + .seconds(20)) { $0.peer.session.peerReceipts.contains(.token) }
        try run.endsInError(
            afterInjecting: [.token(DiscoveryToken(Array(0x10..<0x20)))], .tokenMismatch)
    }

    /// A RANGING whose token is not the peer's TOKEN: CLOSE(error 13), even with a sequence never
    /// used (the token is checked first).
    @Test func aRangingWithAnotherTokenIsATokenMismatch() throws {
        var run = ScriptedPeerRun(configuration: ScriptedPeerRun.configuration())
        run.run(until: .zero + .seconds(20)) { $0.peer.session.peerReceipts.contains(.token) }
        let ranging = RangingFrame(
            sequence: 1_000, pose: run.peer.pose, token: DiscoveryToken(Array(0x10..<0x20)))
        try run.endsInError(afterInjecting: [.ranging(ranging)], .tokenMismatch)
    }

    /// A peer 30 cm away that claims IN_RANGE(1) from its fourth round on: our own gate never opens,
    /// so we stay ranging and close as out of range when the window ends (3 s, restarted at the
    /// peer's first RANGING).
    @Test func aClaimedInRangeDoesNotOpenOurGate() throws {
        var run = ScriptedPeerRun(configuration: ScriptedPeerRun.configuration())
        run.peer.pose = Pose(x: 30, y: 0, heading: 180)
        let ended = try run.firstSessionEnd()
        let secured = try #require(run.securedAt)
        #expect(ended.reason == .outOfRange)
        #expect(ended.time - secured >= .seconds(3) && ended.time - secured <= .milliseconds(3250))
        #expect(run.peer.receivedClose == CloseFrame(code: .outOfRange))
        #expect(run.inRangeAt == nil)
        #expect(run.peer.session.peerCommitment == nil, "the device committed without its own gate open")
        #expect(run.shownCodes.isEmpty && run.interruptions.isEmpty)
    }

    /// After every honest RANGING (30 cm away) comes a packet whose RANGING carries an older
    /// sequence and a pose 7 cm in front of us, followed by the peer's IDENT. The stale RANGING is
    /// skipped (no error, its pose not used: our gate never opens), and the rest of its packet is
    /// taken (the device holds the IDENT it carried).
    @Test func aRangingWithAnOlderSequenceIsSkipped() throws {
        var run = ScriptedPeerRun(configuration: ScriptedPeerRun.configuration())
        run.peer.pose = Pose(x: 30, y: 0, heading: 180)
        run.peer.withheld = .ident
        run.afterTick = { peer in
            let stale = RangingFrame(
                sequence: peer.rangingSequence - 1, pose: Pose(x: 7, y: 0, heading: 180), token: peer.token)
            peer.send([.ranging(stale), .ident(peer.session.ident)])
        }
        let ended = try run.firstSessionEnd()
        #expect(ended.reason == .outOfRange)
        #expect(run.inRangeAt == nil)
        #expect(run.rejections.isEmpty, "\(run.rejections)")
        #expect(run.peer.session.peerReceipts.contains(.ident))
    }

    /// The same stale packets with the sequence of the honest RANGING just sent (a duplicate) are
    /// skipped too; with a newer sequence, the near pose is used and the gate opens: the test above
    /// would see it.
    @Test(arguments: [0, 1])
    func onlyANewerSequenceMovesThePose(ahead: UInt32) throws {
        var run = ScriptedPeerRun(configuration: ScriptedPeerRun.configuration())
        run.peer.pose = Pose(x: 30, y: 0, heading: 180)
        run.afterTick = { peer in
            let other = RangingFrame(
                sequence: peer.rangingSequence + ahead, pose: Pose(x: 7, y: 0, heading: 180),
                token: peer.token)
            peer.send([.ranging(other)])
            // Our next honest RANGING must still be newer.
            peer.rangingSequence += ahead
        }
        run.run(until: .zero + .seconds(8)) {
            !$0.endedSessions.isEmpty || $0.peer.session.peerCommitment != nil
        }
        #expect((run.inRangeAt != nil) == (ahead == 1))
        #expect(run.rejections.isEmpty, "\(run.rejections)")
    }
}

/// TOKEN or RANGING withheld (PROTOCOL.md 11.4).
@Suite struct WithheldRangingTests {
    /// Without the peer's TOKEN its RANGING cannot be checked and is ignored: our gate starves, and
    /// the ranging window, never restarted (no peer RANGING was used), ends the session as out of
    /// range 3 s after the handshake.
    @Test func aWithheldTokenStarvesOurGate() throws {
        var run = ScriptedPeerRun(configuration: ScriptedPeerRun.configuration())
        run.peer.withheld = .token
        let ended = try run.firstSessionEnd()
        let secured = try #require(run.securedAt)
        #expect(ended.reason == .outOfRange)
        #expect(ended.time == secured + .seconds(3))
        #expect(run.peer.receivedClose == CloseFrame(code: .outOfRange))
        #expect(run.inRangeAt == nil)
        #expect(run.rejections.isEmpty, "\(run.rejections)")
    }

    /// RANGING withheld once the cards are moving (our gate had opened): the cards complete, but
    /// the confirmation hold decides only at a round that measured the peer, so it never decides;
    /// the peer's other packets keep the session from going silent, and it is cut as stalled 10 s
    /// after our side was done, delivering nothing. The walk-away rule does not fire: a gate starved
    /// of samples cancels nothing.
    @Test func withheldRangingAfterTheGateOpenedStallsTheHold() throws {
        var run = ScriptedPeerRun(configuration: ScriptedPeerRun.configuration())
        run.run(until: .zero + .seconds(20)) { $0.time(of: ScriptedPeerRun.isExchanging) != nil }
        #expect(run.inRangeAt != nil)
        run.peer.withheld = .ranging
        try run.expectStalledOnceOurSideWasDone()
    }
}

/// BOND forged or withheld (PROTOCOL.md 6.5, "Bond", and 11.4).
@Suite struct ForgedBondTests {
    /// A BOND before the peer's CONSENT: CLOSE(error 17). Sent once the code is shown, so the
    /// pairing is also reported as interrupted.
    @Test func aBondBeforeConsentIsUnexpected() throws {
        var run = ScriptedPeerRun(configuration: ScriptedPeerRun.configuration())
        run.run(until: .zero + .seconds(20)) { $0.peer.code != nil }
        #expect(run.peer.session.peerReceipts.contains(.consent) == false)
        let ended = try run.endsInError(
            afterInjecting: [
                .bond(resolvingKey: run.peer.session.ident, share: Array(repeating: 0xB0, count: 32))
            ],
            .unexpectedMessage)
        #expect(run.interruptions.map(\.reason) == [ended.reason])
    }

    /// A stranger whose BOND names a known peer's resolving key, which any device that peer bonded
    /// with holds: were it remembered, it would replace that peer's record with a bond the stranger
    /// holds, so the stranger would pass as the peer and the peer fail its PROOF. The record is not
    /// kept, and our user is warned, naming the known peer; the exchange the user agreed to ends as
    /// any other, so that the sender cannot tell that we know the key it named. The same stranger
    /// naming a key nobody knows is bonded with as usual.
    @Test func aStrangersBondNamingAKnownPeerIsNeverRemembered() throws {
        let known = KnownPeer(
            resolvingKey: Fixtures.identity("Rex").resolvingKey, bondKey: Array(repeating: 0x4B, count: 32),
            name: "Rex (Sam)")
        let configuration = Fixtures.configuration(
            "Bori", seed: 1, photoBytes: 3000, identity: Fixtures.identity("Bori"), knownPeers: [known])
        var impostor = ScriptedPeerRun(configuration: configuration)
        impostor.peer.bondResolvingKey = known.resolvingKey
        impostor.run(until: .zero + .seconds(30)) { $0.closed != nil }
        #expect(impostor.closed?.reason == .exchanged)
        #expect(impostor.remembered == 0)
        let warnings = impostor.events.compactMap {
            if case .knownPeerMismatch(let name) = $0.event { name } else { nil }
        }
        #expect(warnings == ["Rex (Sam)"])

        var stranger = ScriptedPeerRun(configuration: configuration)
        let fresh = Fixtures.identity("Kong").resolvingKey
        stranger.peer.bondResolvingKey = fresh
        stranger.run(until: .zero + .seconds(30)) { $0.closed != nil }
        #expect(stranger.closed?.reason == .exchanged)
        let remembered = stranger.events.compactMap {
            if case .peerRemembered(let peer) = $0.event { peer.resolvingKey } else { nil }
        }
        #expect(remembered == [fresh])
    }

    /// A stranger that never sends BOND: our side is never done, the transfer is cut as stalled 10
    /// s after its last step forward, nobody is remembered, and the verified card is not delivered.
    @Test func aWithheldBondStallsTheTransferAndNobodyIsRemembered() throws {
        var run = ScriptedPeerRun(configuration: ScriptedPeerRun.configuration())
        run.peer.withheld = .bond
        try run.expectStalledOnceOurSideWasDone()
        // The device sent its own BOND: only the peer's was missing.
        #expect(run.peer.session.sawPeerBond)
    }
}

/// The parameters of CONFIRM (an inviting peer) and ACCEPT (an invited one) are the peer's to choose
/// (PROTOCOL.md 11.4, CONFIRM). A card limit of 0 only keeps our card from the peer: sharing becomes
/// receiving only. A window of 1 or 65535 only sets how many of our chunks may be in flight (never
/// more than our own send window, `TransferringState`): the exchange completes either way.
@Suite struct HostileParameterTests {
    @Test(arguments: [true, false])
    func aCardLimitOfZeroOnlyKeepsOurCardFromThePeer(peerInvites: Bool) {
        var run = ScriptedPeerRun(
            configuration: ScriptedPeerRun.configuration(), peerInvites: peerInvites,
            peerParameters: HandshakeParameters(maxCardBytes: 0, receiveWindow: 64))
        run.run(until: .zero + .seconds(30)) { $0.closed != nil }
        #expect(run.closed?.reason == .exchanged)
        #expect(run.peer.chunksReceived == 0)
        #expect(run.deliveredCards == 1)
    }

    @Test(arguments: [UInt16(1), 65_535], [true, false])
    func anyWindowStillMovesOurCard(window: UInt16, peerInvites: Bool) {
        var run = ScriptedPeerRun(
            configuration: ScriptedPeerRun.configuration(), peerInvites: peerInvites,
            peerParameters: HandshakeParameters(maxCardBytes: .max, receiveWindow: window))
        run.run(until: .zero + .seconds(30)) { $0.closed != nil }
        #expect(run.closed?.reason == .exchanged)
        // Our card's three chunks, each once on a lossless link.
        #expect(run.peer.chunksReceived == 3)
        #expect(run.deliveredCards == 1)
    }
}

/// CARD_ACK and CARD_SACK forged (PROTOCOL.md 6.6 and 11.4).
@Suite struct ForgedAcknowledgementTests {
    /// A CARD_ACK for a digest we did not offer: `card-digest-mismatch`, CLOSE(error 15).
    @Test func aCardAckWithAnotherDigestIsADigestMismatch() throws {
        var run = ScriptedPeerRun(configuration: ScriptedPeerRun.configuration())
        run.peer.withheld = .acknowledgements
        run.run(until: .zero + .seconds(20)) { $0.time(of: ScriptedPeerRun.isExchanging) != nil }
        try run.endsInError(
            afterInjecting: [.cardAck(digest: Array(repeating: 0xDD, count: WireConstants.digestLength))],
            .cardDigestMismatch)
        #expect(run.acknowledgedAt == nil)
    }

    /// A CARD_SACK that acknowledges every chunk, and no CARD_ACK: the device stops sending chunks
    /// and waits for CARD_ACK, and the transfer is cut as stalled 10 s after its last step forward.
    @Test func aSackOfEveryChunkWithoutCardAckStopsTheChunksAndStalls() throws {
        var run = ScriptedPeerRun(configuration: ScriptedPeerRun.configuration())
        run.peer.withheld = .acknowledgements
        run.run(until: .zero + .seconds(20)) { $0.time(of: ScriptedPeerRun.isExchanging) != nil }
        let offer = try #require(run.peer.session.peerOffer)
        let count = offer.chunkCount
        #expect(count == 3)
        run.inject([.cardSack(CardSack(count: count, cumulative: count) { _ in true })])
        let sackedAt = run.now
        let chunksBefore = run.peer.chunksReceived
        let ended = try run.firstSessionEnd()
        #expect(ended.reason == .timeout(.transferStalled))
        #expect(run.peer.chunksReceived == chunksBefore, "chunks went out after every one was acknowledged")
        #expect(
            run.events.contains {
                if case .exchanging(let sent, let total) = $0.event {
                    sent == count && total == count
                } else {
                    false
                }
            })
        #expect(run.acknowledgedAt == nil)
        let verified = try #require(run.cardVerifiedAt)
        #expect(ended.time == max(verified, sackedAt) + .seconds(10))
        #expect(run.peer.receivedClose == CloseFrame(code: .timeout))
        #expect(run.deliveredCards == 0)
    }
}
