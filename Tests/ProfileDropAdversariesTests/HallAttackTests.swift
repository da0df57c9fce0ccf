import Testing

@testable import ProfileDropAdversaries
@testable import ProfileDropCore
@testable import ProfileDropSimulator

/// `simulate --attacks --hall`: the kinds with their victims in a conference hall of bystanders.
@Suite struct HallAttackTests {
    /// A small hall: three pairs, clusters and late arrivals, cheap enough for a debug build.
    static let hall = AttackHall(devices: 60)
    /// A confidentiality kind whose careful victims pair with each other, and an availability kind.
    static let kinds: [AttackKind] = [.beaconRaceMITM, .datagramFlood]

    /// The run of `kind` with `users` among ``kinds``, in ``hall``, from the first seed of its cell
    /// after 60.
    private func run(_ kind: AttackKind, _ users: AttackUsers) -> AttackOutcome {
        let cells = Attacks.cells(of: Self.kinds)
        let cell = cells.firstIndex { $0.kind == kind && $0.users == users } ?? 0
        let runSeed = UInt64(cells.count * 15 + cell)
        return Attacks.runOne(runSeed: runSeed, kinds: Self.kinds, hall: Self.hall)
    }

    @Test func carefulVictimsInAHallPairWithEachOtherAndGiveTheRacerNothing() {
        let outcome = run(.beaconRaceMITM, .careful)
        #expect(outcome.problems.isEmpty, "\(outcome.problems)")
        #expect(outcome.breaches.isEmpty, "\(outcome.breaches)")
        #expect(outcome.codesEqual == true)
        #expect(outcome.cards == 0 && outcome.identities == 0)
        // Each victim's screen, after the line that says when B came.
        let screens = outcome.screens.filter { $0.hasPrefix("A:") || $0.hasPrefix("B:") }
        #expect(screens.count == 2)
        for screen in screens { #expect(screen.hasSuffix("closed: exchanged"), "\(screen)") }
    }

    @Test func aFloodedPairInAHallExchangesAsInTheSameHallWithoutTheFlood() throws {
        let outcome = run(.datagramFlood, .careless)
        #expect(outcome.problems.isEmpty, "\(outcome.problems)")
        #expect(outcome.breaches.isEmpty, "\(outcome.breaches)")
        let result = try #require(outcome.availability)
        #expect(result.baseline != nil && result.underAttack != nil)
        #expect((result.ratio ?? .infinity) <= Availability.maxRatio)
        // The victims heard the hall: alone with the flooder their tables hold one peer.
        #expect(result.peakPeers > 1 && result.peakPeers <= Limits().maxPeers)
    }

    @Test func theHallIsNamedInTheReportAndInTheReplayCommand() {
        let command = Attacks.reproduceCommand(runSeed: 9, kinds: Self.kinds, hall: Self.hall)
        #expect(
            command
                == "profiledrop simulate --attacks --hall --devices 60 --kinds beacon-race-mitm,datagram-flood "
                + "--runs 1 --seed 9")
        #expect(Attacks.reproduceCommand(runSeed: 9) == "profiledrop simulate --attacks --runs 1 --seed 9")
    }
}
