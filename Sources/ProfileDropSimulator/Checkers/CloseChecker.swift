import ProfileDropCore

/// Judges how each device closed: ``SimulationInvariant/closesOnce``,
/// ``SimulationInvariant/exchangedWithACard``, and at the end ``SimulationInvariant/closesInTime``,
/// ``SimulationInvariant/closeReported`` and ``SimulationInvariant/closes``; and that the run could
/// go on until they did (``SimulationInvariant/noLivelock``).
struct CloseChecker {
    let names: [String]
    /// Per device: when it first reported closing.
    private var closedAt: [Instant?]
    /// Per device: whether it delivered a card.
    private var holdsCard: [Bool]

    init(names: [String]) {
        self.names = names
        closedAt = names.map { _ in nil }
        holdsCard = names.map { _ in false }
    }

    mutating func record(_ entry: SimulationTrace.Entry, into findings: inout SimulationFindings) {
        switch entry {
        case .cardReceived(let device, _, _, _, _):
            holdsCard[device] = true
        case .closed(let device, let outcome, _, let time):
            guard closedAt[device] == nil else {
                findings.report(.closesOnce, "t=\(time) \(names[device]) closed twice")
                return
            }
            closedAt[device] = time
            if outcome == .exchanged && !holdsCard[device] {
                findings.report(
                    .exchangedWithACard, "t=\(time) \(names[device]) closed as exchanged without a card")
            }
        case .livelock(let events, let time):
            findings.report(.noLivelock, "t=\(time) livelock: more than \(events) events at one instant")
        case .sent, .delivered, .cardVerified:
            break
        }
    }

    func finish(_ end: SimulationTrace.End, into findings: inout SimulationFindings) {
        let bound = end.closeBound
        for (device, name) in names.enumerated() {
            if let closedAt = closedAt[device] {
                if closedAt > bound {
                    findings.report(
                        .closesInTime, "\(name) closed at t=\(closedAt), after the bound t=\(bound)")
                }
            } else if end.closedInRoom.indices.contains(device) && end.closedInRoom[device] {
                findings.report(.closeReported, "\(name) is closed but never reported how")
            } else {
                findings.report(.closes, "\(name) did not close by t=\(end.time) (bound t=\(bound))")
            }
        }
    }
}
