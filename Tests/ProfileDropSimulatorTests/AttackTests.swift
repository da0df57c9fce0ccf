import ProfileDropCore
import Testing

@testable import ProfileDropCLI
@testable import ProfileDropSimulator

/// The `n`th seed whose run faces `kind` with `users`.
private func seed(_ kind: AttackKind, _ users: AttackUsers, _ n: Int) -> UInt64 {
    let cell = Attacks.cells.firstIndex { $0.kind == kind && $0.users == users } ?? 0
    return UInt64(Attacks.cells.count * (n + 1) + cell)
}

@Suite struct AttackTests {
    @Test func aRunsSeedAlonePicksItsKindAndUsersAndRunsSplitEvenly() {
        let seeds = Attacks.runSeeds(seed: 5, count: 80)
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

    @Test func aBreachPrintsTheCommandThatReplaysItsRunAndFails() {
        let report = Attacks.run(runs: 3, seed: 9) { runSeed in
            var outcome = AttackOutcome(
                runSeed: runSeed, kind: Attacks.cell(of: runSeed).kind, users: .careful)
            if runSeed != 9 { outcome.breaches.append("A's card reached the adversary") }
            return outcome
        }
        #expect(!report.passed)
        #expect(report.breaches == 2)
        #expect(report.lines.last == "attacks: 3 runs, 4 kinds, 2 breaches")
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
            #expect(outcome.intercepted > 0)
            #expect(outcome.breaches.isEmpty)
        }
    }

    @Test func theSameManInTheMiddleGetsNothingFromCarefulUsersWhoseCodesDiffer() {
        for n in 0..<3 {
            let outcome = Attacks.runOne(runSeed: seed(.mitmRelay, .careful, n))
            #expect(outcome.cards == 0 && outcome.identities == 0, "\(outcome.summary)")
            #expect(outcome.codesEqual == false)
            #expect(outcome.declines == 2)
            #expect(outcome.breaches.isEmpty)
        }
    }

    @Test func knownPeersNeverSeeTheAdversaryAsKnown() {
        for users in AttackUsers.allCases {
            for n in 0..<2 {
                let outcome = Attacks.runOne(runSeed: seed(.mitmKnownPeers, users, n))
                #expect(!outcome.setupFailed)
                #expect(outcome.adversaryShownKnown == 0, "\(outcome.summary)")
                // The relayed IDENT names the known peer, whose PROOF the adversary cannot give.
                #expect(outcome.relayedIdents > 0)
                #expect(outcome.mismatches > 0)
                #expect(outcome.breaches.isEmpty)
                if users == .careful {
                    #expect(outcome.cards == 0 && outcome.identities == 0)
                }
            }
        }
    }

    @Test func knownPeersMeetingAgainWithoutTheAdversarySeeEachOtherAsKnownAndShare() {
        let pair = VictimPair(runSeed: seed(.mitmKnownPeers, .careful, 0))
        guard let met = pair.meet(users: .careful) else {
            Issue.record("the honest meeting did not complete")
            return
        }
        var stage = AttackStage(users: .careful, victimsKnown: true)
        pair.addVictims(to: &stage, phase: "again", knownPeers: met)
        stage.run(until: Instant.zero + AttackStage.timeouts.overall) { _ in false }
        #expect(stage.victims.allSatisfy { $0.latestKnown && $0.shares == 1 && $0.closed == .exchanged })
        #expect(stage.victims[0].latestCode == stage.victims[1].latestCode)
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

    @Test func theGrinderInTheRoomGetsNoCardAndEveryAttemptIsShown() {
        for n in 0..<3 {
            let outcome = Attacks.runOne(runSeed: seed(.codeGrinder, .careful, n))
            #expect(outcome.cards == 0 && outcome.identities == 0, "\(outcome.summary)")
            #expect(!outcome.grindMatched)
            #expect(outcome.grindAttempts >= 3)
            // Every aborted attempt was shown to B as interrupted (A's own unanswered request counts
            // too).
            #expect(outcome.interrupted >= outcome.grindAttempts)
            #expect(outcome.breaches.isEmpty)
        }
        let careless = Attacks.runOne(runSeed: seed(.codeGrinder, .careless, 0))
        #expect(careless.cards == 2)
    }

    @Test func theIdentityProberFindsNoLink() {
        var identityGiven = 0
        for users in AttackUsers.allCases {
            for n in 0..<4 {
                let outcome = Attacks.runOne(runSeed: seed(.identityProber, users, n))
                #expect(outcome.links.isEmpty, "\(outcome.links)")
                #expect(outcome.breaches.isEmpty)
                if users == .careful {
                    #expect(outcome.cards == 0 && outcome.identities == 0 && outcome.givenLinks.isEmpty)
                }
                if outcome.identityGiven {
                    identityGiven += 1
                    // What a careless user gave does link: the prober resolves the next IDENT.
                    #expect(
                        outcome.givenLinks.contains {
                            $0.hasPrefix("IDENT (run 2) resolved by resolving key")
                        })
                }
            }
        }
        #expect(identityGiven > 0)
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
        #expect(first.output.last == "attacks: 30 runs, 4 kinds, 0 breaches")
        #expect(first.output == second.output)
    }
}
