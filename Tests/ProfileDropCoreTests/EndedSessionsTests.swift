import Testing

@testable import ProfileDropCore

/// What ended sessions leave (PROTOCOL.md 5, "Candidates"): the peer the device shows, and why it
/// says it did not pair at its overall limit.
@Suite struct EndedSessionsTests {
    static func outcome(_ peer: UInt64, _ reason: CloseReason) -> SessionOutcome {
        SessionOutcome(sessionID: peer, peer: DeviceID(rawValue: peer), reason: reason, endsDevice: false)
    }

    static let broke = CloseReason.error(ProtocolError(.cardDigestMismatch, "digest"))

    @Test func thePeerShownIsTheLatestReportedOrEndingOneAndAClosingDeviceKeepsTheOneItShowed() {
        var ended = EndedSessions()
        ended.record(Self.outcome(1, .outOfRange), as: .reported)
        #expect(ended.lastPeer == DeviceID(rawValue: 1))
        ended.record(Self.outcome(2, .declined(by: .local)), as: .withDevice(shown: false))
        #expect(ended.lastPeer == DeviceID(rawValue: 1))
        ended.record(Self.outcome(3, .timeout(.handshake)), as: .withDevice(shown: true))
        #expect(ended.lastPeer == DeviceID(rawValue: 3))
        ended.record(Self.outcome(4, .exchanged), as: .endsDevice)
        #expect(ended.lastPeer == DeviceID(rawValue: 4))
    }

    @Test func anErrorIsKeptWhateverTheEndingAndSaidFirstAtTheLimit() {
        var ended = EndedSessions()
        ended.record(Self.outcome(1, Self.broke), as: .withDevice(shown: false))
        ended.record(Self.outcome(2, .outOfRange), as: .reported)
        #expect(ended.lastError == Self.broke && ended.lastFailure == .outOfRange)
        #expect(ended.reasonAtLimit(cut: .timeout(.consent)) == Self.broke)
    }

    @Test func anUnansweredInvitationReplacesNoEarlierReasonAndAHandshakeCutAtTheLimitSaysLess() {
        var ended = EndedSessions()
        #expect(ended.reasonAtLimit(cut: nil) == .timeout(.noExchange))
        ended.record(Self.outcome(1, .timeout(.handshake)), as: .reported)
        #expect(ended.lastFailure == .timeout(.handshake))
        #expect(ended.reasonAtLimit(cut: nil) == .timeout(.noExchange))
        ended.record(Self.outcome(2, .outOfRange), as: .reported)
        ended.record(Self.outcome(3, .timeout(.handshake)), as: .reported)
        #expect(ended.lastFailure == .outOfRange)
        #expect(ended.reasonAtLimit(cut: .timeout(.handshake)) == .outOfRange)
        #expect(ended.reasonAtLimit(cut: .timeout(.consent)) == .timeout(.consent))
        #expect(ended.reasonAtLimit(cut: nil) == .outOfRange)
    }
}
