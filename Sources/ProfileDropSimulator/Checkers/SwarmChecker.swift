import ProfileDropCore

/// Judges a swarm run's outcomes against what the swarm's rooms promise beyond any run's own
/// invariants: ``SimulationInvariant/noFarExchange`` and ``SimulationInvariant/closePairExchanges``.
enum SwarmChecker {
    /// The violations in the `outcomes` of a swarm run whose conditions require the close pair (its
    /// first two devices) to exchange when `expectsExchange`.
    static func judge(_ outcomes: [SimulationReport.DeviceOutcome], expectsExchange: Bool)
        -> [SimulationViolation]
    {
        var violations = farExchanges(in: outcomes)
        let pair = outcomes.prefix(2)
        if expectsExchange && !(pair.count == 2 && pair.allSatisfy(\.exchanged)) {
            let reasons = pair.map { "\($0.name) \($0.close?.transcriptName ?? "not closed")" }
            violations.append(
                SimulationViolation(
                    invariant: .closePairExchanges,
                    text:
                        "liveness: the close pair both consented but ended \(reasons.joined(separator: ", "))"
                ))
        }
        return violations
    }

    /// One violation per device that received a card from a peer standing farther than
    /// ``Swarm/farDistance`` away, by the room's true poses, when the card arrived.
    static func farExchanges(in outcomes: [SimulationReport.DeviceOutcome]) -> [SimulationViolation] {
        outcomes.compactMap { outcome in
            guard let distance = outcome.receivedAtDistance, distance > Swarm.farDistance else { return nil }
            let rounded = Double(Int((distance * 10).rounded())) / 10
            return SimulationViolation(
                invariant: .noFarExchange,
                text: "far exchange: \(outcome.name) received \(outcome.receivedFrom ?? "?")'s card "
                    + "\(rounded) cm away (more than \(Int(Swarm.farDistance)) cm)")
        }
    }
}
