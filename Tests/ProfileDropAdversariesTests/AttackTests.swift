import Testing

@testable import ProfileDropAdversaries
@testable import ProfileDropCLI
@testable import ProfileDropCore
@testable import ProfileDropSimulator

/// The `n`th seed whose run faces `kind` with `users`.
private func seed(_ kind: AttackKind, _ users: AttackUsers, _ n: Int) -> UInt64 {
    let cell = Attacks.cells.firstIndex { $0.kind == kind && $0.users == users } ?? 0
    return UInt64(Attacks.cells.count * (n + 1) + cell)
}

/// Runs the availability kind `kind` (careless users) once per seed of `seeds`, checks what every
/// such run must show (a measure, nothing that kept it from testing, no breach, the attacker
/// within its budget), then hands the measure and the kind's own figures to `check`.
private func forEachCleanRun<Kind: AdversaryKind>(
    of kind: Kind.Type, seeds: ClosedRange<UInt64>, _ check: (UInt64, AvailabilityResult, Kind.Result) -> Void
) {
    for runSeed in seeds {
        let outcome = Attacks.runOne(runSeed: runSeed, kind: kind.kind, users: .careless)
        guard let result = outcome.availability, let figures = outcome.result(of: kind) else {
            Issue.record("seed \(runSeed): no availability measure of \(kind.name)")
            continue
        }
        #expect(outcome.problems.isEmpty, "seed \(runSeed): \(outcome.problems)")
        #expect(outcome.breaches.isEmpty, "seed \(runSeed): \(outcome.breaches)")
        #expect(result.peakRate <= (result.budget ?? 0), "seed \(runSeed)")
        check(runSeed, result, figures)
    }
}

/// How the malicious peer of `kind` misbehaves, nil for a kind of another family.
private func maliciousBehaviour(of kind: AttackKind) -> MaliciousBehaviour? {
    (kind.adversary as? any MaliciousPeerKind.Type)?.behaviour
}

/// What became of a malicious peer's sessions in `outcome`, nil for a run of another family.
private func session(_ outcome: AttackOutcome) -> MaliciousSessionResult? {
    outcome.detail as? MaliciousSessionResult
}

/// Runs `body`, which checks that a kind does not breach; for a kind still waiting for its fix the
/// failures are a known issue (they may or may not happen), so the suite stays green until the
/// kind leaves ``Attacks/pendingFixKinds`` and its checks count again.
private func unlessPending(_ kind: AttackKind, _ body: () -> Void) {
    if Attacks.pendingFixKinds.contains(kind) {
        withKnownIssue(
            "\(kind.rawValue) waits for \(Attacks.pendingFix(kind) ?? "a fix")", isIntermittent: true
        ) {
            body()
        }
    } else {
        body()
    }
}

@Suite struct AttackTests {
    /// The registry: every kind has its own name, is found by it, and a run of it, judged, keeps
    /// the figures of its own type.
    @Test func everyKindOfTheRegistryRunsUnderItsNameWithItsOwnFigures() {
        let names = AttackKind.allCases.map(\.rawValue)
        #expect(Set(names).count == names.count, "\(names)")
        for kind in AttackKind.allCases {
            #expect(AttackKind(rawValue: kind.rawValue) == kind)
            let outcome = Attacks.runOne(runSeed: 1, kind: kind, users: kind.users[0])
            #expect(outcome.kind == kind)
            #expect(outcome.detail != nil, "\(kind): no figures of its own")
            #expect((outcome.availability != nil) == kind.isAvailability, "\(kind)")
        }
    }

    @Test func aRunsSeedAlonePicksItsKindAndUsersAndRunsSplitEvenly() {
        let seeds = Attacks.runSeeds(seed: 5, count: Attacks.cells.count * 10)
        #expect(seeds.first == 5)
        for cell in Attacks.cells.indices {
            #expect(seeds.filter { Int($0 % UInt64(Attacks.cells.count)) == cell }.count == 10)
        }
        #expect(Attacks.cell(of: seed(.codeGrinder, .careless, 3)) == (.codeGrinder, .careless))
        // A run replayed alone from its seed is the same run.
        let many = Attacks.run(runs: 10, seed: 5)
        for index in [1, 6, 9] {
            let alone = Attacks.run(runs: 1, seed: seeds[index])
            #expect(alone.outcomes[0].summary == many.outcomes[index].summary)
            #expect(alone.outcomes[0].screens == many.outcomes[index].screens)
        }
    }

    /// A malicious session that honest ranging noise kept shut (the victim's gate closed for the
    /// whole window, about one meeting in 100,000) is no breach: seed 14578494869424990241 (a slow
    /// transfer, from `simulate --attacks --runs 60000 --seed 31338`) is one. Since protocol 2.1
    /// the honest pair exchanges beside it, before that session ends.
    @Test func aMaliciousSessionThatNoiseKeptShutIsNoBreach() {
        let runSeed: UInt64 = 14_578_494_869_424_990_241
        let outcome = Attacks.runOne(runSeed: runSeed, kind: .slowTransfer, users: .careless)
        #expect(outcome.breaches.isEmpty, "\(outcome.breaches)")
        #expect(outcome.availability?.closes == ["V exchanged", "H exchanged"], "\(outcome.summary)")
    }

    @Test func aBreachPrintsTheCommandThatReplaysItsRunAndFails() {
        let report = Attacks.run(runs: 3, seed: 9) { runSeed in
            var outcome = AttackOutcome(
                runSeed: runSeed, kind: Attacks.cell(of: runSeed).kind, users: .careful)
            if runSeed != 9 { outcome.breaches.append(.secretTaken(.card(victim: "A"), users: .careful)) }
            return outcome
        }
        #expect(!report.passed)
        #expect(report.breaches == 2)
        #expect(report.lines.last == "attacks: 3 runs, \(Attacks.defaultKinds.count) kinds, 2 breaches")
        let seeds = Attacks.runSeeds(seed: 9, count: 3)
        #expect(
            report.lines.contains("  reproduce: profiledrop simulate --attacks --runs 1 --seed \(seeds[1])"))
        #expect(
            report.lines.contains("  reproduce: profiledrop simulate --attacks --runs 1 --seed \(seeds[2])"))
        #expect(!report.lines.contains("  reproduce: profiledrop simulate --attacks --runs 1 --seed 9"))
    }

    @Test func aManInTheMiddleGetsBothCardsFromCarelessUsers() {
        for n in 0..<2 {
            let outcome = Attacks.runOne(runSeed: seed(.mitmRelay, .careless, n))
            #expect(outcome.cards == 2, "\(outcome.summary)")
            // Careless users bond with whoever they share with: the adversary has their identities.
            #expect(outcome.identities == 2)
            #expect((outcome.result(of: MITMRelayAttack.self)?.assessment.intercepted ?? 0) > 0)
            #expect(outcome.breaches.isEmpty)
        }
    }

    @Test func theSameManInTheMiddleGetsNothingFromCarefulUsersWhoseCodesDiffer() {
        for n in 0..<3 {
            let outcome = Attacks.runOne(runSeed: seed(.mitmRelay, .careful, n))
            #expect(outcome.cards == 0 && outcome.identities == 0, "\(outcome.summary)")
            #expect(outcome.codesEqual == false)
            // Each user declines the relay's session once its code has not shown on the other
            // screen for a while; the first decline, relayed, may end the other's session first.
            #expect((1...2).contains(outcome.declines))
            #expect(outcome.breaches.isEmpty)
        }
    }

    @Test func knownPeersNeverSeeTheAdversaryAsKnown() throws {
        for users in AttackUsers.allCases {
            for n in 0..<2 {
                let outcome = Attacks.runOne(runSeed: seed(.mitmKnownPeers, users, n))
                let relay = try #require(outcome.result(of: MITMKnownPeersAttack.self))
                #expect(!relay.setupFailed)
                #expect(relay.assessment.adversaryShownKnown == 0, "\(outcome.summary)")
                // The relayed IDENT names the known peer. The adversary relays the genuine PROOF the
                // other victim made with the pair's bond key, and it fails: it is bound to the
                // session it was made in. Each victim's screen shows the warning, and each meets
                // the relay as a stranger: no session ends for it, so the relay cannot tell a
                // recognised IDENT from an unknown one (PROTOCOL.md 6.5).
                #expect(relay.relayedIdents == 2)
                #expect(relay.relayedProofs >= 1, "\(outcome.summary)")
                #expect(relay.assessment.proofFailures == 0, "\(outcome.summary)")
                #expect(relay.assessment.mismatchesPerVictim == [1, 1], "\(outcome.summary)")
                #expect(outcome.breaches.isEmpty)
                if users.withholdFromStrangers {
                    #expect(outcome.cards == 0 && outcome.identities == 0)
                }
            }
        }
    }

    /// Known peers meeting again without the adversary see each other as known and exchange: the
    /// careful users by sharing, the unattended ones (`--yes-known`) with no answer at all.
    @Test(arguments: [AttackUsers.careful, .unattended])
    func knownPeersMeetingAgainWithoutTheAdversarySeeEachOtherAsKnownAndExchange(users: AttackUsers) {
        let pair = VictimPair(runSeed: seed(.mitmKnownPeers, users, 0))
        guard let met = pair.meet(users: .careful) else {
            Issue.record("the honest meeting did not complete")
            return
        }
        var stage = AttackStage(users: users, victimsKnown: true)
        pair.addVictims(to: &stage, phase: "again", knownPeers: met)
        stage.run(until: Instant.zero + AttackStage.timeouts.overall) { _ in false }
        let answers = users == .careful ? 1 : 0
        #expect(
            stage.victims.allSatisfy { $0.latestKnown && $0.shares == answers && $0.closed == .exchanged })
        #expect(stage.victims[0].latestCode == stage.victims[1].latestCode)
    }

    /// `share --yes-known` with nobody at the terminal: the man in the middle, as a stranger or
    /// relaying a known peer's IDENT, gets nothing, and each request it causes declines unanswered
    /// (ending only its session: the devices go on, and may be asked again).
    @Test func unattendedUsersWhoShareWithKnownPeersOnlyGiveTheManInTheMiddleNothing() {
        for kind in [AttackKind.mitmRelay, .mitmKnownPeers] {
            for n in 0..<2 {
                let outcome = Attacks.runOne(runSeed: seed(kind, .unattended, n))
                #expect(outcome.cards == 0 && outcome.identities == 0, "\(outcome.summary)")
                #expect(outcome.declines >= 1)
                #expect(outcome.breaches.isEmpty)
                if kind == .mitmKnownPeers { #expect(outcome.mismatches > 0) }
            }
        }
    }

    @Test func grindingACommitThenRevealCodeMatchesOnlyByChance() {
        // One-digit codes, so that chance (1/10) is measurable: the grinder knows everything once
        // the victim's nonce arrives and tries 50 other nonces, but only the committed one opens.
        let trials = 4000
        let matches = GrindingTrials.commitReveal(trials: trials, digits: 1, alternatives: 50, seed: 1)
        let mean = Double(trials) * 0.1
        let sigma = (Double(trials) * 0.1 * 0.9).squareRoot()
        #expect(Double(matches) <= mean + 4 * sigma, "\(matches) of \(trials)")
        #expect(Double(matches) >= mean - 4 * sigma, "\(matches) of \(trials)")
        // Against a code whose last input the grinder picks, as in version 1, it always wins.
        #expect(GrindingTrials.lastInputChosen(trials: 300, digits: 1, candidates: 300, seed: 1) == 300)
    }

    @Test func theGrinderInTheRoomGetsNoCardAndEveryAttemptIsShown() throws {
        for n in 0..<3 {
            let outcome = Attacks.runOne(runSeed: seed(.codeGrinder, .careful, n))
            let grind = try #require(outcome.result(of: CodeGrinderAttack.self))
            #expect(outcome.cards == 0 && outcome.identities == 0, "\(outcome.summary)")
            #expect(!grind.matched)
            #expect(grind.attempts >= 3)
            // Every aborted attempt was shown to B as interrupted (A's own unanswered request counts
            // too).
            #expect(outcome.interrupted >= grind.attempts)
            #expect(outcome.breaches.isEmpty)
        }
        let careless = Attacks.runOne(runSeed: seed(.codeGrinder, .careless, 0))
        #expect(careless.cards == 2)
    }

    /// The identity thief (PROTOCOL.md 6.5, "Bond"): B shared with it once, so it holds B's resolving
    /// key, and it meets A, B's known peer, as a new device whose BOND names that key. A careless A
    /// shares, and each such session shows the warning naming B and ends as any exchange does, so
    /// that the thief cannot tell that A knows B; nothing is remembered under B's key, and the thief
    /// is never shown as known. Careful and unattended
    /// users never share with it, so it sends no BOND at all. Before the BOND check, every careless
    /// run remembered the thief under B's key (`--kinds identity-thief --runs 30 --seed 1`: 10 of 10).
    @Test func anIdentityThiefsBondIsRefusedAndTheKnownPeerKept() throws {
        for n in 0..<3 {
            let careless = Attacks.runOne(runSeed: seed(.identityThief, .careless, n))
            #expect(careless.problems.isEmpty && careless.breaches.isEmpty, "\(careless.breaches)")
            let theft = try #require(careless.result(of: IdentityThiefAttack.self))
            #expect(theft.stolenBonds > 0)
            #expect(careless.mismatches == theft.stolenBonds, "\(careless.screens)")
            #expect(theft.adversaryShownKnown == 0)
            for users in [AttackUsers.careful, .unattended] {
                let outcome = Attacks.runOne(runSeed: seed(.identityThief, users, n))
                #expect(outcome.problems.isEmpty && outcome.breaches.isEmpty, "\(users): \(outcome.breaches)")
                #expect(outcome.result(of: IdentityThiefAttack.self)?.stolenBonds == 0, "\(users)")
                #expect(outcome.cards == 0, "\(users)")
            }
        }
    }

    @Test func theIdentityProberFindsNoLink() throws {
        var identityGiven = 0
        for users in AttackUsers.allCases {
            // Enough careless runs that some careless user shares (about one run in three).
            for n in 0..<(users == .careless ? 10 : 4) {
                let outcome = Attacks.runOne(runSeed: seed(.identityProber, users, n))
                let probe = try #require(outcome.result(of: IdentityProberAttack.self))
                #expect(probe.links.isEmpty, "\(probe.links)")
                #expect(outcome.breaches.isEmpty)
                if users.withholdFromStrangers {
                    #expect(outcome.cards == 0 && outcome.identities == 0 && probe.givenLinks.isEmpty)
                }
                if probe.identityGiven {
                    identityGiven += 1
                    // What a careless user gave does link: the prober resolves the next IDENT.
                    #expect(
                        probe.givenLinks.contains {
                            $0.hasPrefix("IDENT (run 2) resolved by resolving key")
                        })
                }
            }
        }
        #expect(identityGiven > 0)
    }

    /// PROTOCOL.md 6.5: M's IDENT, PROOF and BOND, replayed to B, draw the same reaction whether or
    /// not B knows M, datagram by datagram; B's own user alone is warned. Under the rule before
    /// (CLOSE(error 22) on a failed proof) every run of this kind breached.
    @Test(arguments: AttackUsers.allCases)
    func theReplayingProberLearnsNothingFromAReplayedIdentity(users: AttackUsers) {
        for n in 0..<3 {
            let outcome = Attacks.runOne(runSeed: seed(.replayingProber, users, n))
            #expect(outcome.kind == .replayingProber && outcome.users == users)
            #expect(outcome.problems.isEmpty, "\(outcome.problems)")
            #expect(outcome.breaches.isEmpty, "\(outcome.breaches)")
            // The play in which B knows M warns B's user (once per meeting: an unanswered or
            // declined session ends only itself, so B and M may meet again).
            #expect(outcome.mismatches >= 1, "\(outcome.screens)")
            let classes = outcome.result(of: ReplayingProberAttack.self)?.replayClasses ?? []
            #expect(classes.count == 2 && classes.first == classes.last)
        }
    }

    /// Protocol 2.1's strict kinds (PROTOCOL.md 5, 11.5, 11.6 item 10): a malicious peer for each
    /// victim invites it first and then stalls at a stage drawn per run (the session hog) or
    /// declines after the code (the late decliner). Before candidate sessions the hog held the pair
    /// past twice its time (median 3.41×, at most 9.88×) and the late decliner ended its victim's
    /// run; now both run by default, and the pair exchanges in time beside them.
    @Test(arguments: [AttackKind.sessionHog, .lateDecliner])
    func aHostageTakerNoLongerKeepsThePairApart(kind: AttackKind) {
        #expect(Attacks.defaultKinds.contains(kind) && !Attacks.pendingFixKinds.contains(kind))
        for n in 0..<3 {
            let outcome = Attacks.runOne(runSeed: UInt64(1000 + n), kind: kind, users: .careless)
            #expect(outcome.problems.isEmpty, "\(outcome.problems)")
            #expect(outcome.breaches.isEmpty, "\(outcome.screens)")
            #expect(outcome.availability?.closes == ["A exchanged", "B exchanged"], "\(outcome.summary)")
            #expect((outcome.availability?.ratio ?? 99) <= Availability.maxRatio)
        }
    }

    /// Unattended known peers (`--yes-known`, nobody at the terminal): each victim's hog is a
    /// stranger whose question nobody answers, which ends only its session, while the pair shares
    /// without asking beside it.
    @Test func unattendedKnownPeersPairBesideTheirHogs() {
        #expect(Attacks.defaultKinds.contains(.sessionHogKnown))
        for n in 0..<2 {
            let outcome = Attacks.runOne(runSeed: UInt64(2000 + n), kind: .sessionHogKnown, users: .careless)
            #expect(outcome.problems.isEmpty, "\(outcome.problems)")
            #expect(outcome.breaches.isEmpty, "\(outcome.screens)")
            #expect(outcome.availability?.closes == ["A exchanged", "B exchanged"], "\(outcome.summary)")
        }
    }

    /// Careful users see every candidate with its code at once: each finds the pair's own code
    /// among its hog's and picks it, which declines the hog (PROTOCOL.md 5, "Candidates"). The
    /// kind is in the default run, and none of its runs breach (before: 27 of 100 from seed 7,
    /// when one question was shown at a time).
    @Test func carefulUsersBesideTheirHogsPickTheirPairAmongTheCandidates() {
        #expect(!Attacks.pendingFixKinds.contains(.sessionHogCareful))
        #expect(Attacks.defaultKinds.contains(.sessionHogCareful))
        for n in 0..<12 {
            let outcome = Attacks.runOne(
                runSeed: UInt64(3000 + n), kind: .sessionHogCareful, users: .careless)
            #expect(outcome.problems.isEmpty, "\(outcome.problems)")
            #expect(outcome.breaches.isEmpty, "\(outcome.screens)")
        }
    }

    /// The BEACON reflector runs by default since protocol 2.1's return routability: its phantoms'
    /// BEACONs draw only PROBEs to the reflection's target, paid by the bytes the attacker sent,
    /// and no INVITE. Under wire version 2 each run was a breach, at about 16 times the
    /// attacker's bytes.
    @Test func theBeaconReflectorGetsNoMoreThanItSent() {
        #expect(
            !Attacks.pendingFixKinds.contains(.beaconReflector)
                && Attacks.defaultKinds.contains(.beaconReflector))
        for n in 0..<3 {
            let outcome = Attacks.runOne(runSeed: UInt64(1000 + n), kind: .beaconReflector, users: .careless)
            #expect(outcome.problems.isEmpty, "\(outcome.problems)")
            #expect(outcome.breaches.isEmpty, "\(outcome.screens)")
            let measured = outcome.availability
            // The victims did probe the target (the attack ran), within the attacker's bytes.
            #expect((measured?.bytesToNowhere ?? 0) > 0, "\(outcome.screens)")
            #expect((measured?.bytesToNowhere ?? 0) <= (measured?.attackerBytes ?? 0))
        }
    }

    @Test func theIndependenceTestFindsADependenceAndOnlyThen() {
        // Every run that knew closed, every run that did not went on: as dependent as can be.
        let dependent = IndependenceTest([[30, 0], [0, 30]])
        #expect(dependent.statistic == 60 && dependent.degreesOfFreedom == 1 && dependent.rejectsIndependence)
        let independent = IndependenceTest([[15, 15], [15, 15]])
        #expect(independent.statistic == 0 && !independent.rejectsIndependence)
        // 4.89 with one degree of freedom is under the 1 % point (6.635).
        #expect(!IndependenceTest([[40, 20], [28, 32]]).rejectsIndependence)
        #expect(IndependenceTest([[30, 0, 10], [20, 10, 10]]).degreesOfFreedom == 2)
        #expect(IndependenceTest.wilsonHilferty(10) > 23.0 && IndependenceTest.wilsonHilferty(10) < 23.4)
    }

    @Test func theProberSeesFreshValuesEveryRun() {
        let runs = ProberRuns(runSeed: seed(.identityProber, .careful, 0), users: .careful)
        for labels in ["device id", "ephemeral key", "static key", "TOKEN", "IDENT", "PROOF", "COMMIT"] {
            #expect(runs.learned.allSatisfy { run in run.contains { $0.label == labels } }, "\(labels)")
        }
        // A victim that kept its static key across runs, as version 1 did, is linked.
        let tracked = ProberRuns(
            runSeed: seed(.identityProber, .careful, 0), users: .careful, keepsStaticKey: true)
        #expect(
            tracked.links.contains(
                ProberLink(description: "static key (run 2) ~ static key (run 1)", given: false)))
    }

    /// PROTOCOL.md 11.4, ACCEPT: an observer that answers an INVITE first, from the invitee's
    /// address, is who the initiator secures with. Every handshake a victim completed was with it;
    /// the invitee's own ACCEPT came second and its half-open handshake ended without a word; the
    /// codes never match, so careful and unattended users give it nothing.
    @Test(arguments: [AttackUsers.careful, .unattended])
    func anAcceptRacerHoldsEveryHandshakeButCarefulAndUnattendedUsersGiveItNothing(users: AttackUsers) throws
    {
        for n in 0..<3 {
            let outcome = Attacks.runOne(runSeed: seed(.acceptRacer, users, n))
            let race = try #require(outcome.result(of: AcceptRacerAttack.self))
            #expect(race.racesWon > 0, "\(outcome.summary)")
            #expect(race.victimSessions == race.racesWon)
            #expect(race.genuineAccepts > 0)
            // A careful user declines the racer's session once its code has not shown on the other
            // screen for a while, and an unanswered request ends only its session: either way the
            // victims, free beside it, may then pair with each other as responders.
            #expect(outcome.codesEqual != true)
            #expect(outcome.cards == 0 && outcome.identities == 0)
            #expect(outcome.declines > 0)
            #expect(outcome.breaches.isEmpty, "\(outcome.breaches)")
        }
    }

    /// PROTOCOL.md 11.1 and 11.6 item 6: a BEACON racer with a live address gets a newcomer to hold
    /// its partner's id there, and the newcomer's handshake is with the racer's device, off the
    /// path. That is the man in the middle's position, and no more: the newcomer's code is one its
    /// partner, which paired with nobody, does not show, so careful and unattended users give it
    /// nothing, while a careless user gives it the card, as `--yes` warns.
    @Test(arguments: AttackUsers.allCases)
    func aBeaconRacerWithALiveAddressIsAManInTheMiddleTheCodeStops(users: AttackUsers) throws {
        for n in 0..<3 {
            let outcome = Attacks.runOne(runSeed: seed(.beaconRaceMITM, users, n))
            let race = try #require(outcome.result(of: BeaconRaceMITMAttack.self))
            #expect(outcome.problems.isEmpty, "\(outcome.problems)")
            #expect(race.divertedInvitations > 0 && race.racesWon > 0, "\(outcome.summary)")
            #expect(outcome.breaches.isEmpty, "\(outcome.breaches)")
            if users.withholdFromStrangers {
                // The racer gets nothing; the victims, free beside its session, may pair with each
                // other (equal codes) or decline it (different ones).
                #expect(outcome.cards == 0 && outcome.identities == 0)
                #expect(outcome.declines > 0 || outcome.codesEqual == true)
            } else {
                #expect(outcome.cards == 1, "the newcomer's card, given by its careless user")
            }
        }
    }

    /// When both victims invited and each met the racer as the other, both screens show a code:
    /// two sessions, two codes, which differ.
    @Test func theCodesOfTwoRacedVictimsDiffer() {
        var compared = 0
        for n in 0..<40 where compared < 2 {
            let outcome = Attacks.runOne(runSeed: seed(.acceptRacer, .careful, n))
            guard let equal = outcome.codesEqual else { continue }
            compared += 1
            #expect(!equal, "\(outcome.summary)")
            let race = outcome.result(of: AcceptRacerAttack.self)
            #expect((race?.racesWon ?? 0) >= 2 && race?.victimSessions == race?.racesWon)
        }
        #expect(compared == 2)
    }

    @Test func aCarelessUserGivesTheAcceptRacerItsCard() {
        for n in 0..<2 {
            let outcome = Attacks.runOne(runSeed: seed(.acceptRacer, .careless, n))
            let race = outcome.result(of: AcceptRacerAttack.self)
            #expect(outcome.cards > 0 && outcome.cards == race?.racesWon, "\(outcome.summary)")
            #expect(race?.victimSessions == race?.racesWon && race?.genuineReported == 0)
            #expect(outcome.breaches.isEmpty)
        }
    }

    @Test func theCommandEndsWithTheSummaryExitsZeroAndRepeatsByteForByte() {
        func run() -> (code: Int32, output: [String]) {
            let console = CapturingConsole()
            let code = CommandLineTool.run(
                arguments: ["simulate", "--attacks", "--runs", "30", "--seed", "5"], console: console)
            return (code, console.outputLines)
        }
        let first = run()
        let second = run()
        #expect(first.code == 0)
        #expect(first.output.last == "attacks: 30 runs, \(Attacks.defaultKinds.count) kinds, 0 breaches")
        #expect(first.output == second.output)
    }
}

/// The first `count` seeds from 1 up whose malicious peer comes early (or late, with `late`).
private func maliciousSeeds(late: Bool, count: Int) -> [UInt64] {
    var seeds: [UInt64] = []
    var candidate: UInt64 = 1
    while seeds.count < count {
        if Availability.plan(runSeed: candidate).late == late { seeds.append(candidate) }
        candidate += 1
    }
    return seeds
}

@Suite struct AvailabilityAttackTests {
    @Test func pendingKindsAreOutOfTheDefaultRunAndAllRunsThem() {
        #expect(Attacks.defaultKinds.allSatisfy { !Attacks.pendingFixKinds.contains($0) })
        #expect(Attacks.defaultKinds.count + Attacks.pendingFixKinds.count == AttackKind.allCases.count)
        #expect(Attacks.cells.allSatisfy { Attacks.defaultKinds.contains($0.kind) })
        #expect(Attacks.kinds(named: "default") == Attacks.defaultKinds)
        // With no kind pending, all kinds are the default run, which needs no argument.
        #expect(Attacks.kindsArgument(AttackKind.allCases) == (Attacks.pendingFixKinds.isEmpty ? nil : "all"))
        if !Attacks.pendingFixKinds.isEmpty {
            let plain = Attacks.run(runs: 0, seed: 1)
            #expect(
                plain.lines.contains(
                    "attacks: pending a fix, not run (--kinds all runs them): "
                        + Attacks.pendingFixKinds.map(\.rawValue).joined(separator: ",")))
            let all = Attacks.run(runs: 0, seed: 1, kinds: AttackKind.allCases)
            #expect(!all.lines.contains { $0.hasPrefix("attacks: pending a fix") })
        }
    }

    @Test func kindsAreChosenByNameAndTheirBreachesReplayWithTheirKinds() {
        #expect(Attacks.defaultKinds == AttackKind.allCases.filter { !Attacks.pendingFixKinds.contains($0) })
        #expect(Attacks.kinds(named: "all") == AttackKind.allCases)
        #expect(Attacks.kinds(named: "slowloris,fake-ack") == [.fakeAck, .slowloris])
        #expect(Attacks.kinds(named: "nonsense") == nil)
        #expect(Attacks.reproduceCommand(runSeed: 7) == "profiledrop simulate --attacks --runs 1 --seed 7")
        #expect(
            Attacks.reproduceCommand(runSeed: 7, kinds: [.slowloris])
                == "profiledrop simulate --attacks --kinds slowloris --runs 1 --seed 7")
        let report = Attacks.run(runs: 2, seed: 3, kinds: [.slowloris]) { runSeed in
            var outcome = AttackOutcome(runSeed: runSeed, kind: .slowloris, users: .careless)
            outcome.breaches.append(.sessionNeverEnded)
            return outcome
        }
        #expect(report.lines.last == "attacks: 2 runs, 1 kinds, 2 breaches")
        #expect(
            report.lines.contains(
                "  reproduce: profiledrop simulate --attacks --kinds slowloris --runs 1 --seed 3"))
    }

    @Test func everyAvailabilityRunReplaysAloneFromItsSeed() {
        for kind in AttackKind.allCases where kind.isAvailability {
            let first = Attacks.runOne(runSeed: 11, kind: kind, users: .careless)
            let again = Attacks.runOne(runSeed: 11, kind: kind, users: .careless)
            #expect(first.summary == again.summary, "\(kind)")
            #expect(first.screens == again.screens, "\(kind)")
            #expect(first.breaches == again.breaches, "\(kind)")
            #expect(first.problems.isEmpty, "\(kind): \(first.problems)")
        }
        // With the availability kinds only, a run's kind comes from its seed among them.
        let kinds = AttackKind.allCases.filter(\.isAvailability)
        let seeds = Attacks.runSeeds(seed: 4, count: kinds.count * 2, kinds: kinds)
        for kind in kinds {
            #expect(seeds.filter { Attacks.cell(of: $0, kinds: kinds).kind == kind }.count == 2)
        }
    }

    @Test func cleartextAttackersForgeWhatTheySayAtTheirBudget() {
        /// An attacker of `behaviour` that heard the victims' first BEACONs, and what it forged in
        /// the second after.
        func forged(_ behaviour: CleartextBehaviour) -> (
            targets: [CleartextAttacker.Target], forged: [ForgedDatagram]
        ) {
            var stage = AttackStage(users: .careless, victimsKnown: false)
            VictimPair(runSeed: 1).addVictims(to: &stage, phase: "forging")
            let attacker = CleartextAttacker(
                behaviour: behaviour, budget: 50,
                targets: stage.victims.map {
                    CleartextAttacker.Target(member: $0.member, address: stage.room.address(of: $0.member))
                },
                ownAddress: stage.nextAddress, seedMaterial: Array("test".utf8), startAt: .zero)
            stage.addSpeaker(AttackerSpeaker(attacker: attacker))
            stage.run(until: Instant.zero + .milliseconds(300)) { _ in false }
            attacker.pending.removeAll()
            attacker.fire(at: Instant.zero + .milliseconds(1_319))
            return (attacker.targets, attacker.pending)
        }
        let (targets, hijack) = forged(.hijack)
        #expect(targets.allSatisfy { $0.id != nil && $0.beacon != nil })
        #expect(hijack.count == 50)
        for datagram in hijack {
            guard case .beacon(let beacon)? = try? Packet(datagram: datagram.bytes) else {
                Issue.record("not a BEACON")
                continue
            }
            // The other victim's id, from its IP address and the port it names, nobody's port.
            let other = targets[1 - datagram.recipient]
            #expect(beacon.deviceID == other.id)
            #expect(datagram.source.ipv4 == other.address.ipv4)
            #expect(datagram.source.port == beacon.port)
            #expect(beacon.port != DeviceContext.simulatedPort)
        }
        let squat = forged(.squat).forged
        #expect(squat.count == 50)
        for datagram in squat {
            guard case .invite(let invite)? = try? Packet(datagram: datagram.bytes) else {
                Issue.record("not an INVITE")
                continue
            }
            #expect(invite.receiver == targets[datagram.recipient].id)
            #expect(invite.noiseMessage.count == 32)
        }
        let phantoms = forged(.phantoms).forged.compactMap { datagram -> DeviceID? in
            guard case .beacon(let beacon)? = try? Packet(datagram: datagram.bytes) else { return nil }
            #expect(datagram.source.port == beacon.port)
            return beacon.deviceID
        }
        #expect(Set(phantoms).count == 50)
        let flood = CleartextAttacker(
            behaviour: .flood, budget: 50, targets: targets, ownAddress: Simulation.address(ofNode: 2),
            seedMaterial: Array("test".utf8), startAt: .zero)
        flood.fire(at: Instant.zero + .seconds(30))
        let sources = Set(flood.pending.map(\.source))
        #expect(flood.pending.count == 1501)
        #expect(sources.count == 1024)
        #expect(Set(sources.map(\.ipv4)).count == 4)
    }

    @Test func aFloodOfJunkFromManySourcesDoesNotSlowThePair() {
        for runSeed: UInt64 in [1, 2, 3] {
            let outcome = Attacks.runOne(runSeed: runSeed, kind: .datagramFlood, users: .careless)
            let result = outcome.availability
            #expect(result?.peakRate == result?.budget)
            #expect(outcome.breaches.isEmpty, "\(outcome.summary) \(outcome.breaches)")
            #expect((result?.ratio ?? 99) <= Availability.maxRatio)
        }
    }

    @Test func cleartextBudgetsSpanOneToTheCeilingAndReplayFromTheSeed() {
        let budgets = (UInt64(1)...200).map { Availability.budget(runSeed: $0) }
        #expect(budgets.allSatisfy { (1...Availability.budget).contains($0) })
        let atCeiling = budgets.filter { $0 == Availability.budget }.count
        #expect((70...130).contains(atCeiling), "about half the runs at the ceiling: \(atCeiling)")
        #expect(Set(budgets.filter { $0 < Availability.budget }).count > 30, "the rest spread below it")
        #expect(budgets == (UInt64(1)...200).map { Availability.budget(runSeed: $0) })
        let slow = (UInt64(1)...200).first { Availability.budget(runSeed: $0) < 10 } ?? 0
        let outcome = Attacks.runOne(runSeed: slow, kind: .inviteSquatter, users: .careless)
        #expect(outcome.availability?.budget == Availability.budget(runSeed: slow))
        #expect((outcome.availability?.peakRate ?? 99) <= Availability.budget(runSeed: slow))
        #expect(outcome.breaches.isEmpty, "\(outcome.breaches)")
    }

    @Test func cleartextAttackersWithinTheirBudgetDoNotKeepThePairApart() {
        for kind in [AttackKind.beaconHijack, .inviteSquatter, .phantomFlood, .beaconReplay, .beaconDisplace]
        {
            for runSeed: UInt64 in [1, 2] {
                let outcome = Attacks.runOne(runSeed: runSeed, kind: kind, users: .careless)
                #expect((outcome.availability?.peakRate ?? 99) <= Availability.budget)
                #expect(outcome.problems.isEmpty)
                #expect(outcome.breaches.isEmpty, "\(kind) seed \(runSeed): \(outcome.breaches)")
            }
        }
    }

    /// The busy forger (an observer of the INVITEs, spoofing the invitee's address) against what
    /// PROTOCOL.md says its BUSYs do (5; 11.4, BUSY; 11.6 item 3): the initiator takes each while it
    /// awaits ACCEPT, within the forger's budget; it holds a BUSY(1), (2) or (4) for the invitee's
    /// ACCEPT, which comes a round trip after the INVITE and overrules every one of them: no peer is
    /// shown busy, backed off from or forgotten, and the pair exchanges in its usual time. Forged
    /// cookies cost at most three extra INVITEs an invitation, and never make one time out.
    @Test func theBusyForgersBusysDoWhatProtocolSaysAndNoMore() {
        var total = ForgedBusyResult()
        // A run's pair mostly exchanges at its first invitation, which gets one reason: enough runs
        // for every reason.
        for runSeed: UInt64 in 1...16 {
            let outcome = Attacks.runOne(runSeed: runSeed, kind: .busyForger, users: .careless)
            guard let result = outcome.availability, let forgery = outcome.result(of: BusyForgerAttack.self)
            else {
                Issue.record("no measure of the busy forger")
                continue
            }
            #expect(outcome.problems.isEmpty)
            #expect(outcome.breaches.isEmpty, "seed \(runSeed): \(outcome.breaches)")
            #expect(result.peakRate <= (result.budget ?? 0))
            #expect(forgery.taken.indices.allSatisfy { forgery.taken[$0] <= forgery.forged[$0] })
            #expect(forgery.believed == [0, 0, 0, 0], "seed \(runSeed)")
            #expect(
                forgery.refusalsShown == 0 && forgery.reinvitations.isEmpty && forgery.staleForgotten == 0)
            #expect((forgery.extraInvites.max() ?? 0) <= Availability.cookieLimit, "seed \(runSeed)")
            #expect(forgery.invitationsTimedOut == 0 && forgery.failures == 0, "seed \(runSeed)")
            #expect(Availability.forgedBusyBreaches(forgery).isEmpty, "seed \(runSeed)")
            for reason in 0..<4 {
                total.forged[reason] += forgery.forged[reason]
                total.taken[reason] += forgery.taken[reason]
                total.overruled[reason] += forgery.overruled[reason]
            }
            total.extraInvites += forgery.extraInvites
        }
        // Every reason was forged and taken, and every held reason overruled.
        #expect(total.taken.allSatisfy { $0 > 0 }, "\(total.taken)")
        #expect([0, 1, 3].allSatisfy { total.overruled[$0] > 0 }, "\(total.overruled)")
        #expect(total.overruled[2] == 0)
    }

    /// The invite forger (PROTOCOL.md 11.4, INVITE): each INVITE between the victims is answered with
    /// an INVITE to the inviter in the name of a bystander it has long heard, from the bystander's
    /// address. None cancels an invitation (the invitee's ACCEPT is always CONFIRMed), and the pair
    /// exchanges in about its usual time. Until 2026-12-01 each such INVITE ended a tentative
    /// invitation: `simulate --attacks --kinds invite-forger --runs 40 --seed 1` on that code counted
    /// 45 invitations cancelled, in every one of the 40 runs.
    @Test func theInviteForgersInvitesCancelNoInvitation() {
        forEachCleanRun(of: InviteForgerAttack.self, seeds: 1...8) { runSeed, _, forgery in
            #expect(forgery.invitationsHit > 0)
            #expect(forgery.cancelled == 0, "seed \(runSeed)")
        }
    }

    /// The crossing forger (PROTOCOL.md 2, tie-break; 11.4, INVITE): every INVITE between the
    /// victims is answered with an INVITE in the invitee's own name from the invitee's address,
    /// arriving before the invitee's ACCEPT. An inviter with the higher id accepts it beside its own
    /// invitation, which goes on and secures with the invitee. Until 2026-12-02 it abandoned its
    /// invitation for the forgery: `--kinds crossing-forger --runs 200 --seed 1` on that code
    /// counted an invitation cancelled in 92 of the 200 runs.
    @Test func forgedCrossingInvitesCancelNoInvitation() {
        var hit = 0
        forEachCleanRun(of: CrossingForgerAttack.self, seeds: 1...12) { runSeed, result, forgery in
            hit += forgery.invitationsHit
            #expect(forgery.cancelled == 0, "seed \(runSeed)")
            #expect(result.closes.allSatisfy { $0.hasSuffix("exchanged") }, "\(result.closes)")
        }
        #expect(hit >= 12)
    }

    /// The BEACON racer (PROTOCOL.md 11.4, BEACON): a newcomer hears the other victim's id first
    /// from the racer's dead address, and invites it there once brought to it. The real device's
    /// INVITE, from its own address, runs beside that invitation and completes, so the pair
    /// exchanges in about its usual time. Until 2026-12-02 the newcomer refused it with BUSY(1)
    /// until its invitation timed out: `--kinds beacon-racer --runs 200 --seed 1` took a median
    /// 2.87× the pair's time, and every run breached.
    @Test func theBeaconRacerCostsThePairNoInvitationTimeout() {
        forEachCleanRun(of: BeaconRacerAttack.self, seeds: 1...8) { runSeed, result, race in
            // The race was won: the newcomer invited the racer's address, and since wire version 3
            // only probed it: the dead address never echoed, so no INVITE went there.
            #expect(race.diverted == 1, "seed \(runSeed)")
            #expect(race.divertedInvites == 0, "seed \(runSeed)")
            #expect(result.closes.allSatisfy { $0.hasSuffix("exchanged") }, "\(result.closes)")
        }
    }

    /// PROTOCOL.md 11.4, "Inside SECURE": the victims' own SECURE packets, replayed (in their
    /// session and after it), with one bit flipped, or reflected to their sender, are each dropped
    /// without effect: the run is the no-attack run, to the nanosecond.
    @Test func secureCopiesReplayedTamperedOrReflectedChangeNothing() {
        var rejections: [String: Int] = [:]
        forEachCleanRun(of: SecureReplayerAttack.self, seeds: 1...6) { runSeed, _, replays in
            #expect(replays.unchanged, "seed \(runSeed)")
            #expect(replays.replayed > 0 && replays.tampered > 0 && replays.reflected > 0)
            rejections.merge(replays.rejections, uniquingKeysWith: +)
        }
        // Replays inside the session meet the replay window; later ones, and reflections, no
        // session; a flipped bit in the ciphertext or tag, the AEAD.
        for rule in ["replayed", "unknown-session", "authentication-failed"] {
            #expect((rejections[rule] ?? 0) > 0, "no copy was rejected as \(rule): \(rejections)")
        }
    }

    /// PROTOCOL.md 11.4, CLOSE withheld: an attacker on the path that drops one victim's datagrams
    /// to the other for good, from a moment across the exchange, leaves only the endings 6.7 allows.
    /// A cut during the silenced side's confirmation hold leaves it exchanged and the other `timeout:
    /// peer silent` without its card; a later cut, both exchanged; an earlier one, neither. The side
    /// cut off never exchanges alone, and nobody exchanges without the other's card.
    @Test func aCutPathLeavesOnlyTheEndingsTheCloseRuleAllows() {
        var results: [CutCloseResult] = []
        forEachCleanRun(of: CloseCutterAttack.self, seeds: 1...60) { runSeed, _, cut in
            #expect(cut.ending != .cutOffOnly, "seed \(runSeed)")
            if cut.ending == .silencedOnly {
                #expect(cut.cutOffEnd == "timeout: peer silent", "seed \(runSeed)")
                // Before the silenced side decided, and within its hold: one gate window, then the
                // first ranging round that measured the peer (one interval later, two if one failed).
                let before = cut.cutBeforeDecision ?? .zero
                #expect(before > .zero && before <= .milliseconds(1_250), "seed \(runSeed): \(before)")
            }
            results.append(cut)
        }
        // The draws reach every ending the rule allows.
        for ending in [CutEnding.both, .silencedOnly, .neither] {
            #expect(results.contains { $0.ending == ending }, "no run ended \(ending.rawValue)")
        }
    }

    /// The forger's room tests what it is for: when the first victim invites the newcomer, that
    /// invitation is tentative (the newcomer is not established yet) while the bystander, whose name
    /// the forger uses, is established there.
    @Test func theInviteForgersTargetIsATentativeInvitationWithTheBystanderEstablished() throws {
        var tentativeWithBystander = 0
        for runSeed: UInt64 in 1...12 {
            let pair = VictimPair(runSeed: runSeed)
            var stage = Availability.newcomerStage(pair)
            let bystander = try #require(stage.room.device(0)?.deviceID)
            let tap = UnicastTap(victims: [1, 2])
            stage.room.hook = TapHook(tap: tap)
            stage.run(until: Availability.runLimit) { stage in
                Availability.addNewcomer(pair, to: &stage)
                let invite = tap.take().first {
                    if case .invite? = try? Packet(datagram: $0.bytes) { true } else { false }
                }
                guard let invite else { return false }
                if invite.source == 1, let inviter = stage.room.device(1) as? Device,
                    case .invite(let packet)? = try? Packet(datagram: invite.bytes),
                    inviter.isInvitingTentatively, !inviter.discovery.isEstablished(peer: packet.receiver),
                    inviter.discovery.isEstablished(peer: bystander)
                {
                    tentativeWithBystander += 1
                }
                return true
            }
        }
        #expect(tentativeWithBystander == 12, "\(tentativeWithBystander) of 12")
    }

    /// The same forger also on the path, withholding the victims' ACCEPTs: its refusals are believed
    /// when their hold ends, and then do what PROTOCOL.md 5 says and no more. BUSY(1) and BUSY(2)
    /// are shown as the peer being busy and count no failure: the initiator invites the peer again
    /// after the BUSY back-off (0.5–1.5 s), not a failure's (4 s ± 20 %); after BUSY(4) the peer is
    /// forgotten until its next BEACON puts it back.
    @Test func believedRefusalsDoWhatProtocolSaysAndNoMore() {
        var total = ForgedBusyResult()
        for runSeed: UInt64 in [1, 2, 3, 4, 5, 6] {
            let forgery = Availability.busyForgerRun(runSeed: runSeed, withholdingAccepts: true).result
            #expect(forgery.overruled == [0, 0, 0, 0], "seed \(runSeed)")
            #expect(forgery.refusalsShown == forgery.believed[0] + forgery.believed[1], "seed \(runSeed)")
            #expect(forgery.early == 0 && forgery.late == 0, "seed \(runSeed)")
            #expect(forgery.staleForgotten == forgery.believed[3], "seed \(runSeed)")
            #expect(forgery.staleNotBack == 0, "seed \(runSeed)")
            for reason in 0..<4 { total.believed[reason] += forgery.believed[reason] }
            total.reinvitations += forgery.reinvitations
            total.staleBack += forgery.staleBack
        }
        #expect([0, 1, 3].allSatisfy { total.believed[$0] > 0 }, "\(total.believed)")
        #expect(!total.reinvitations.isEmpty)
        let backoff = AttackStage.timeouts.busyBackoff
        #expect(total.reinvitations.allSatisfy { backoff.contains($0) }, "\(total.reinvitations)")
        // The next BEACON comes within one interval at rest: 4 s ± 10 %.
        #expect(!total.staleBack.isEmpty && total.staleBack.allSatisfy { $0 <= .milliseconds(4_400) })
    }

    /// Forged cookies alone cost INVITEs and nothing else: the invitee, under no load, answers the
    /// first INVITE with its ACCEPT, which the cookies only delay by the INVITEs they cost.
    @Test func forgedCookiesAloneCostAtMostThreeInvitesAndThePairExchanges() {
        for runSeed: UInt64 in [1, 2, 3] {
            let outcome = BusyForgerAttack.judged(
                Availability.busyForgerRun(runSeed: runSeed, reasons: [.retry]))
            let forgery = outcome.result(of: BusyForgerAttack.self)
            #expect((forgery?.extraInvites.max() ?? 99) <= Availability.cookieLimit)
            #expect(forgery?.invitationsTimedOut == 0)
            #expect(outcome.breaches.isEmpty, "\(outcome.breaches)")
        }
    }

    /// Across its reasons the busy forger does not keep the pair apart: the invitee's ACCEPT
    /// overrules each held BUSY(1), (2) or (4), and forged cookies never crowd out the invitee's own,
    /// so no invitation times out and the pair exchanges within twice its time.
    @Test func theBusyForgerDoesNotKeepThePairApart() {
        for runSeed: UInt64 in [1, 2, 3, 4] {
            let outcome = Attacks.runOne(runSeed: runSeed, kind: .busyForger, users: .careless)
            unlessPending(.busyForger) {
                #expect(
                    outcome.result(of: BusyForgerAttack.self)?.invitationsTimedOut == 0, "seed \(runSeed)")
                #expect(outcome.breaches.isEmpty, "seed \(runSeed): \(outcome.breaches)")
            }
        }
    }

    /// The phantom keeper (PROTOCOL.md 11.6 item 6): four fake ids kept alive become established
    /// peers that claim the victims' position, which ties with the partner's 7 cm (every position
    /// within 10 cm ranks as equally near), and each drawn before the partner costs one INVITE's
    /// wait of 250 ms. It keeps the forged BEACONs within its budget, and the pair still exchanges
    /// within twice its usual time.
    @Test func thePhantomKeeperStaysWithinItsBudgetAndThePairStillExchanges() {
        for runSeed: UInt64 in [1, 2] {
            let outcome = Attacks.runOne(runSeed: runSeed, kind: .phantomKeeper, users: .careless)
            let result = outcome.availability
            #expect(result?.underAttack != nil, "seed \(runSeed): the pair did not exchange")
            #expect((result?.peakRate ?? 99) <= (result?.budget ?? 0))
            #expect(outcome.problems.isEmpty)
            unlessPending(.phantomKeeper) {
                #expect(outcome.breaches.isEmpty, "seed \(runSeed): \(outcome.breaches)")
            }
        }
    }

    /// The hall imitator sends what a conference hall sends, a thousand phantoms each once a second
    /// to each victim, at its fixed rate and no more. It raises the victims' budget of unknown
    /// sources (PROTOCOL.md 7, rule 3) without filling their tables past the limit, and the pair
    /// still exchanges in time: probing ahead finds the one candidate that answers (PROTOCOL.md 5,
    /// "Probing ahead"; 11.6, item 22).
    @Test func theHallImitatorStaysAtAHallsRateAndWithinTheTablesAndThePairExchanges() {
        let outcome = Attacks.runOne(runSeed: 1, kind: .hallImitator, users: .careless)
        let result = outcome.availability
        #expect(result?.budget == 2 * CleartextAttacker.imitatedHall)
        #expect((result?.peakRate ?? Int.max) <= (result?.budget ?? 0))
        #expect(outcome.problems.isEmpty)
        #expect(
            !Attacks.pendingFixKinds.contains(.hallImitator) && Attacks.defaultKinds.contains(.hallImitator))
        #expect(result?.underAttack != nil, "the pair did not exchange")
        unlessPending(.hallImitator) {
            #expect(outcome.breaches.isEmpty, "\(outcome.breaches)")
        }
    }

    /// Whatever a malicious session does, the victim pairs with the honest device in time; the
    /// malicious session ends with its real cause, or, when the victim exchanged first, with the
    /// victim's run (PROTOCOL.md 5, "Candidates").
    @Test func aVictimPairsWithTheHonestDeviceBesideAMaliciousSession() {
        let kinds: [AttackKind] = [
            .oversizeOffer, .badChunkIndex, .badDigest, .neverAck, .falseSack, .slowTransfer, .consentStall,
            .slowloris, .closeAckWithholder, .falseReceipt, .inRangeWithholder,
        ]
        for kind in kinds {
            guard let behaviour = maliciousBehaviour(of: kind) else {
                Issue.record("\(kind) has no malicious peer")
                continue
            }
            for runSeed in maliciousSeeds(late: false, count: 2) {
                let outcome = Attacks.runOne(runSeed: runSeed, kind: kind, users: .careless)
                let result = outcome.availability
                let malicious = session(outcome)
                #expect(
                    malicious?.attackSessionEnd == Availability.expectedCause(behaviour)
                        || (malicious?.attackSessionEnd == nil && malicious?.endedWithRun == true), "\(kind)")
                #expect(result?.exchangeRequired == true, "\(kind)")
                #expect((result?.ratio ?? 99) <= Availability.maxRatio, "\(kind): \(outcome.summary)")
                #expect(result?.closes == ["V exchanged", "H exchanged"], "\(kind)")
                #expect(outcome.breaches.isEmpty, "\(kind): \(outcome.breaches)")
            }
        }
    }

    /// A peer that ranges honestly, so that the victim's gate opens, and withholds IN_RANGE: its
    /// session waits for IN_RANGE for at most two ranging windows (PROTOCOL.md 6.4), but holds only
    /// one candidate place, and the victim pairs with the honest device beside it, well before.
    @Test func anInRangeWithholderDoesNotHoldTheVictim() {
        let window = AttackStage.timeouts.rangingWindow
        for runSeed in maliciousSeeds(late: false, count: 3) {
            let outcome = Attacks.runOne(runSeed: runSeed, kind: .inRangeWithholder, users: .careless)
            let (_, invitation) = Availability.plan(runSeed: runSeed)
            let malicious = session(outcome)
            #expect(malicious?.endedWithRun == true, "seed \(runSeed): \(outcome.summary)")
            #expect(outcome.availability?.closes == ["V exchanged", "H exchanged"], "seed \(runSeed)")
            let closedAt = outcome.availability?.underAttack
            #expect(closedAt.map { invitation + $0 < invitation + window + window } ?? false)
            #expect(outcome.breaches.isEmpty, "seed \(runSeed): \(outcome.breaches)")
        }
    }

    @Test func aMaliciousSessionLiveAtTheDeadlineDoesNotKeepTheVictimOpen() {
        for kind in AttackKind.allCases where maliciousBehaviour(of: kind) != nil {
            for runSeed in maliciousSeeds(late: true, count: 2) {
                let outcome = Attacks.runOne(runSeed: runSeed, kind: kind, users: .careless)
                #expect(session(outcome)?.late == true)
                #expect(outcome.availability?.overruns == 0, "\(kind): \(outcome.summary)")
                #expect(outcome.breaches.isEmpty, "\(kind): \(outcome.breaches)")
            }
        }
    }

    @Test func aPeerThatComesBackDoesNotKeepTheVictimFromTheHonestDevice() {
        for runSeed in maliciousSeeds(late: false, count: 2) {
            let outcome = Attacks.runOne(runSeed: runSeed, kind: .reinviter, users: .careless)
            #expect(session(outcome)?.attackSessionEnd == .error(.cardTooLarge))
            #expect((outcome.availability?.peakRate ?? 99) <= Availability.budget)
            #expect(outcome.breaches.isEmpty, "\(outcome.summary) \(outcome.breaches)")
        }
    }

    /// PROTOCOL.md 11.6 item 19: a peer whose sessions end out of range (which blames no host) and
    /// that comes back under a fresh id at once counts its failures against its host, so the victim
    /// refuses it for the honest device, a candidate with fewer; until 2026-12-02 every fresh id was
    /// accepted, and the victim never met the honest device (186 of 200 runs from seed 1 breached).
    @Test func aPeerThatComesBackFromFarUnderFreshIdsDoesNotKeepTheVictimFromTheHonestDevice() {
        for runSeed in maliciousSeeds(late: false, count: 2) {
            let outcome = Attacks.runOne(runSeed: runSeed, kind: .farReturner, users: .careless)
            let result = outcome.availability
            #expect(
                session(outcome)?.attackSessionEnd == .outOfRange || session(outcome)?.endedWithRun == true)
            #expect(result?.closes == ["V exchanged", "H exchanged"], "\(outcome.summary)")
            #expect(outcome.breaches.isEmpty, "\(outcome.summary) \(outcome.breaches)")
        }
    }

    /// PROTOCOL.md 11.6 item 10: a CLOSE(declined) before the victim's code ends only that session,
    /// however often a peer comes back with one; until 2026-12-02 the first ended the victim's run.
    @Test func anEarlyDeclineEndsOnlyTheSessionHoweverOftenItComes() {
        for runSeed in maliciousSeeds(late: false, count: 2) {
            let outcome = Attacks.runOne(runSeed: runSeed, kind: .earlyDecliner, users: .careless)
            let result = outcome.availability
            #expect(session(outcome)?.attackSessionEnd == .declined(by: .peer))
            #expect(
                (session(outcome)?.attackSessions ?? 0) > 1,
                "the decliner never came back: \(outcome.summary)")
            #expect(result?.closes == ["V exchanged", "H exchanged"], "\(outcome.summary)")
            #expect(outcome.breaches.isEmpty, "\(outcome.summary) \(outcome.breaches)")
        }
    }

    @Test func theFakeAcknowledgerGetsAnExchangeTheVictimCannotTellFromARealOne() {
        // PROTOCOL.md 11.6 item 12: CARD_ACK repeats our own offer's digest, so it proves nothing
        // against a malicious peer; the victim's exchange with it completes, on time.
        for runSeed in maliciousSeeds(late: false, count: 2) {
            let outcome = Attacks.runOne(runSeed: runSeed, kind: .fakeAck, users: .careless)
            #expect(session(outcome)?.attackSessionEnd == .exchanged)
            #expect(outcome.availability?.closes == ["V exchanged"])
            #expect(outcome.breaches.isEmpty, "\(outcome.breaches)")
        }
    }

    @Test func theSlowTransferFillsNoMoreThanTheCardLimit() {
        let runSeed = maliciousSeeds(late: false, count: 1)[0]
        let outcome = Attacks.runOne(runSeed: runSeed, kind: .slowTransfer, users: .careless)
        // The offer is as large as the victim takes, and its buffer is sized by the offer.
        #expect(outcome.availability?.peakBufferChunks == Availability.maxBufferChunks)
        // The victim exchanges with the honest device first: the slow session ends with its run.
        #expect(session(outcome)?.endedWithRun == true)
        #expect(outcome.breaches.isEmpty, "\(outcome.breaches)")
    }

    @Test func theAvailabilityTableHasOneRowPerKind() {
        let kinds = AttackKind.allCases.filter(\.isAvailability)
        let report = Attacks.run(runs: kinds.count, seed: 2, kinds: kinds) { runSeed in
            var outcome = AttackOutcome(
                runSeed: runSeed, kind: Attacks.cell(of: runSeed, kinds: kinds).kind, users: .careless)
            var result = AvailabilityResult()
            result.baseline = .seconds(2)
            result.underAttack = .seconds(3)
            result.exchangeRequired = true
            result.closes = ["A exchanged", "B exchanged"]
            outcome.availability = result
            return outcome
        }
        let header = report.lines.first { $0.hasPrefix("kind ") }
        #expect(header?.contains("exchange ×no-attack median/max") == true)
        for kind in kinds {
            let row = report.lines.first { $0.hasPrefix(kind.rawValue + " ") }
            #expect(row?.contains("1.50/1.50") == true, "\(kind)")
            #expect(row?.contains("closed: A exchanged 1, B exchanged 1") == true, "\(kind)")
        }
        #expect(report.lines.last == "attacks: \(kinds.count) runs, \(kinds.count) kinds, 0 breaches")
        for kind in Attacks.pendingFixKinds where kinds.contains(kind) {
            #expect(
                report.lines.first { $0.hasPrefix(kind.rawValue + " ") }?.contains("pending fix:") == true)
        }
    }
}
