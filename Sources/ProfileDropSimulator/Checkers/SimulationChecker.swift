import ProfileDropCore

/// Judges a simulation run from its trace, as a VOPR's auditors do: the run only records
/// (``SimulationTrace``), and each part here judges its invariants (``SimulationInvariant``).
struct SimulationChecker {
    /// The parts, each judging its own invariants.
    enum Part: CaseIterable, Sendable {
        /// ``WireChecker``.
        case wire
        /// ``CardChecker``.
        case card
        /// ``CloseChecker``.
        case close
        /// ``CloseRuleChecker``.
        case closeRule
        /// ``SwarmChecker``, over a whole run's outcomes rather than its trace.
        case swarm
    }

    private let wire: WireChecker
    private let card: CardChecker
    private var close: CloseChecker
    private var closeRule: CloseRuleChecker
    private var findings = SimulationFindings()

    /// A checker of a run of `scenario` with `options`; `scanner` finds the scenario's plaintext.
    init(scenario: Scenario, options: SimulationOptions, scanner: PlaintextScanner) {
        let names = scenario.devices.map(\.name)
        wire = WireChecker(scanner: scanner, names: names)
        card = CardChecker(scenario: scenario, options: options)
        close = CloseChecker(names: names)
        closeRule = CloseRuleChecker(scenario: scenario, poseFreshness: options.poseFreshness)
    }

    /// Reads the next entry of the trace.
    mutating func record(_ entry: SimulationTrace.Entry) {
        wire.record(entry, into: &findings)
        card.record(entry, into: &findings)
        close.record(entry, into: &findings)
        closeRule.record(entry)
    }

    /// Judges what is left once the run `end`ed; returns everything found.
    mutating func finish(_ end: SimulationTrace.End) -> SimulationFindings {
        closeRule.finish(into: &findings)
        close.finish(end, into: &findings)
        return findings
    }

    /// Judges a whole recorded `trace` of a run of `scenario` that `end`ed.
    static func judge(
        _ trace: [SimulationTrace.Entry], end: SimulationTrace.End, scenario: Scenario,
        options: SimulationOptions = SimulationOptions(), scanner: PlaintextScanner? = nil
    ) -> SimulationFindings {
        var checker = SimulationChecker(
            scenario: scenario, options: options, scanner: scanner ?? PlaintextScanner(for: scenario))
        for entry in trace { checker.record(entry) }
        return checker.finish(end)
    }
}
