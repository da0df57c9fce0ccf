import ProfileDropCore

/// Judges the close rule (PROTOCOL.md section 6.7) once the run is over, for each device that closed
/// as exchanged with a peer:
/// - the peer verified our card: we hold its CARD_ACK, so it must have checked the card
///   (``SimulationInvariant/peerVerified``);
/// - the peer delivered it too, unless our decision never reached it
///   (``SimulationInvariant/decisionUnheard``) because a partition that never heals cut them apart
///   first (``SimulationInvariant/cutExplainsLoss``): the two generals' problem. Such a
///   cut must have begun at most one pose-freshness before the decision
///   (``SimulationInvariant/decidedWhileFresh``): a side decides only at a round that measured the
///   peer, so it heard the peer that recently.
struct CloseRuleChecker {
    private struct DeviceRecord {
        /// Whether the device reported closing.
        var closed = false
        var receivedCard: ProfileCard?
        var receivedFrom: Int?
        /// Cards the device verified (and acknowledged), with their senders, delivered or not.
        var verified: [(card: ProfileCard, from: Int?)] = []
        /// The number of the last datagram the device sent.
        var lastSent: UInt64?
        /// When the device decided to close as exchanged (its first close), and the number of its
        /// last datagram then (its CLOSE): that datagram and every later one carry the decision.
        var decision: (time: Instant, datagram: UInt64)?
        /// Nodes that received an intact datagram carrying the decision.
        var decisionReached: Set<Int> = []
    }

    let scenario: Scenario
    let poseFreshness: Duration
    private var devices: [DeviceRecord]

    init(scenario: Scenario, poseFreshness: Duration) {
        self.scenario = scenario
        self.poseFreshness = poseFreshness
        devices = scenario.devices.map { _ in DeviceRecord() }
    }

    mutating func record(_ entry: SimulationTrace.Entry) {
        switch entry {
        case .sent(let device, let number, _, _):
            devices[device].lastSent = number
        case .delivered(let number, let source, let recipient, let altered):
            if let source, devices.indices.contains(source), let decision = devices[source].decision,
                number >= decision.datagram, !altered
            {
                devices[source].decisionReached.insert(recipient)
            }
        case .cardVerified(let device, let card, let from):
            devices[device].verified.append((card, from))
        case .cardReceived(let device, let card, let sender, _, _):
            devices[device].receivedCard = card
            devices[device].receivedFrom = sender
        case .closed(let device, let outcome, let nextDatagram, let time):
            guard !devices[device].closed else { return }
            devices[device].closed = true
            if outcome == .exchanged {
                // The CLOSE that carries the decision went out in this same step, last.
                devices[device].decision = (time, devices[device].lastSent ?? nextDatagram)
            }
        case .livelock:
            break
        }
    }

    func finish(into findings: inout SimulationFindings) {
        for (index, record) in devices.enumerated() {
            guard let decision = record.decision, let peer = record.receivedFrom,
                devices.indices.contains(peer)
            else { continue }
            check(exchanged: index, at: decision.time, peer: peer, into: &findings)
        }
    }

    /// The close rule for device `index`, which decided the exchange with `peer` at `decision`.
    private func check(
        exchanged index: Int, at decision: Instant, peer: Int, into findings: inout SimulationFindings
    ) {
        let name = scenario.devices[index].name
        let peerName = scenario.devices[peer].name
        let card = scenario.devices[index].card
        guard devices[peer].receivedCard != card else { return }
        let failure = "\(name) closed as exchanged but \(peerName) never received \(name)'s card"
        guard devices[peer].verified.contains(where: { $0.card == card && $0.from == index }) else {
            findings.report(.peerVerified, "\(failure), nor verified it")
            return
        }
        guard let cut = scenario.faults.permanentCut(between: index, peer) else {
            findings.report(.cutExplainsLoss, "\(failure), and no partition that never heals separated them")
            return
        }
        if devices[index].decisionReached.contains(peer) {
            findings.report(
                .decisionUnheard,
                "\(failure), though \(name)'s CLOSE(exchanged) reached \(peerName) before the cut")
        } else if cut.start + poseFreshness < decision {
            findings.report(
                .decidedWhileFresh,
                "\(failure): \(name) decided at t=\(decision), \(Instant.zero + (decision - cut.start)) "
                    + "into a cut that never healed, without a fresh measurement of \(peerName)")
        } else {
            findings.note(
                "\(name) decided the exchange at t=\(decision); \(peerName), cut off for good from "
                    + "t=\(cut.start), never learnt it: it verified \(name)'s card but delivered nothing "
                    + "(the two generals' problem, allowed by the close rule)")
        }
    }
}
