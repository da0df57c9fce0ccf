import ProfileDropCore
import Testing

@testable import ProfileDropSimulator

@Suite struct WireCheckerTests {
    static let leak = SimulationTrace.Entry.sent(
        device: 0, number: 9, bytes: [0x01] + Array("calm-natured".utf8) + [0x02],
        at: CheckerTrace.cardsPass)

    /// A breach of each invariant the wire checker judges.
    static var breaches: [SimulationInvariant: CheckerTrace.Breach] {
        [.noPlaintext: CheckerTrace.Breach(trace: [leak] + CheckerTrace.exchange())]
    }

    @Test(arguments: CheckerTrace.cases(of: .wire))
    func aTraceThatBreaksItIsReportedAsIt(_ invariant: SimulationInvariant) throws {
        let breach = try #require(Self.breaches[invariant], "no trace breaks \(invariant)")
        #expect(breach.reported == [invariant])
    }

    @Test func aLeakNamesItsSenderAndWhatLeaked() {
        let findings = CheckerTrace.judge([Self.leak] + CheckerTrace.exchange())
        #expect(findings.lines == ["t=1.000s alice sent alice's card keyword in the clear"])
    }
}
