import ProfileDropCore

/// Judges each delivered card: ``SimulationInvariant/cardFromAPeer``,
/// ``SimulationInvariant/cardAsSent`` and ``SimulationInvariant/cardWithinReach``.
struct CardChecker {
    let scenario: Scenario
    let options: SimulationOptions

    func record(_ entry: SimulationTrace.Entry, into findings: inout SimulationFindings) {
        switch entry {
        case .cardReceived(let device, let card, let sender, let poses, let time):
            let name = scenario.devices[device].name
            guard let sender, scenario.devices.indices.contains(sender) else {
                findings.report(.cardFromAPeer, "t=\(time) \(name) received a card that no peer sent")
                return
            }
            let senderName = scenario.devices[sender].name
            if scenario.devices[sender].card != card {
                findings.report(
                    .cardAsSent,
                    "t=\(time) \(name) received a card from \(senderName) that differs from the one sent")
            }
            guard let poses, !options.allowsExchange(poses.receiver, poses.sender) else { return }
            let distance = poses.receiver.distance(to: poses.sender)
            findings.report(
                .cardWithinReach,
                "t=\(time) \(name) received \(senderName)'s card out of range: \(Self.format(distance)) cm, "
                    + "bearings \(Self.format(poses.receiver.bearing(to: poses.sender)))° and "
                    + "\(Self.format(poses.sender.bearing(to: poses.receiver)))°")
        case .sent, .delivered, .cardVerified, .closed, .livelock:
            break
        }
    }

    /// `value` to a tenth, without a trailing `.0`.
    static func format(_ value: Double) -> String {
        let tenths = (value * 10).rounded()
        return tenths.truncatingRemainder(dividingBy: 10) == 0
            ? String(Int(tenths / 10)) : String(tenths / 10)
    }
}
