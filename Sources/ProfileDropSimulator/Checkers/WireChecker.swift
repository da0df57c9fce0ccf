/// Judges what went on the wire: ``SimulationInvariant/noPlaintext``.
struct WireChecker {
    let scanner: PlaintextScanner
    let names: [String]

    func record(_ entry: SimulationTrace.Entry, into findings: inout SimulationFindings) {
        switch entry {
        case .sent(let device, _, let bytes, let time):
            if let leak = scanner.leak(in: bytes) {
                findings.report(.noPlaintext, "t=\(time) \(names[device]) sent \(leak) in the clear")
            }
        case .delivered, .cardVerified, .cardReceived, .closed, .livelock:
            break
        }
    }
}
