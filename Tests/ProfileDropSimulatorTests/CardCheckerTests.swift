import ProfileDropCore
import Testing

@testable import ProfileDropSimulator

@Suite struct CardCheckerTests {
    /// Bob delivers `card` from `sender`, standing at `pose`, before alice's own card reaches him.
    static func bobFirstReceives(
        _ card: ProfileCard, from sender: Int?, standing pose: Pose = CheckerTrace.bobPose
    ) -> [SimulationTrace.Entry] {
        let poses = sender.map { _ in (receiver: pose, sender: CheckerTrace.alicePose) }
        return [
            .cardReceived(device: 1, card: card, sender: sender, poses: poses, at: CheckerTrace.cardsPass)
        ]
            + CheckerTrace.exchange()
    }

    /// A breach of each invariant the card checker judges.
    static var breaches: [SimulationInvariant: CheckerTrace.Breach] {
        [
            .cardFromAPeer: CheckerTrace.Breach(
                trace: bobFirstReceives(CheckerTrace.card("Stray"), from: nil)),
            .cardAsSent: CheckerTrace.Breach(trace: bobFirstReceives(CheckerTrace.card("Boriboro"), from: 0)),
            .cardWithinReach: CheckerTrace.Breach(
                trace: bobFirstReceives(
                    CheckerTrace.aliceCard, from: 0, standing: Pose(x: 60, y: 0, heading: 180))),
        ]
    }

    @Test(arguments: CheckerTrace.cases(of: .card))
    func aTraceThatBreaksItIsReportedAsIt(_ invariant: SimulationInvariant) throws {
        let breach = try #require(Self.breaches[invariant], "no trace breaks \(invariant)")
        #expect(breach.reported == [invariant])
    }

    @Test func eachViolationSaysWhoReceivedWhat() {
        let lines = [
            Self.bobFirstReceives(CheckerTrace.card("Stray"), from: nil),
            Self.bobFirstReceives(CheckerTrace.card("Boriboro"), from: 0),
            Self.bobFirstReceives(CheckerTrace.aliceCard, from: 0, standing: Pose(x: 0, y: 60, heading: 0)),
        ].flatMap { CheckerTrace.judge($0).lines }
        #expect(
            lines == [
                "t=1.000s bob received a card that no peer sent",
                "t=1.000s bob received a card from alice that differs from the one sent",
                "t=1.000s bob received alice's card out of range: 60 cm, bearings 90° and 90°",
            ])
    }

    @Test func theGateSlackIsAllowed() {
        // 12 cm: the 5–10 cm band plus the default 2 cm of slack.
        let trace = Self.bobFirstReceives(
            CheckerTrace.aliceCard, from: 0, standing: Pose(x: 12, y: 0, heading: 180))
        #expect(CheckerTrace.judge(trace).violations == [])
    }
}
