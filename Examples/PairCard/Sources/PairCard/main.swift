// pair-card [--card FILE] [--interface NAME] [--port PORT]
// Pairs with one peer (`profiledrop share` on the same network), shares the card (or only
// receives without --card) once the codes match, and prints the name on the card received.
import Foundation
import ProfileDrop

var arguments = CommandLine.arguments.dropFirst()
var settings: [String: String] = [:]
while let flag = arguments.popFirst(), let value = arguments.popFirst() { settings[flag] = value }

do {
    var card: ProfileCard?
    if let path = settings["--card"] { card = try CardFiles.load(contentsOf: path) }
    let network = PairingConfiguration.Network(
        interfaces: settings["--interface"].map { [$0] } ?? [],
        port: settings["--port"].flatMap(UInt16.init) ?? 47_544)
    let run = try PairingRun(PairingConfiguration(card: card, network: network, timeout: .seconds(30)))
    print("device \(run.deviceID) listening on \(run.listeningDescription)")

    var shown: PairingSnapshot.Stage?
    for try await snapshot in run {
        switch snapshot.event {
        case .consent:
            // A real program shows the code and asks its user; this one trusts the peer.
            guard let question = snapshot.question else { break }
            print("code \(question.code): \(card == nil ? "receiving" : "sharing")")
            if card == nil { run.receiveOnly() } else { run.share() }
        case .closed:
            guard let outcome = snapshot.outcome else { break }
            print("closed: \(outcome.detail ?? outcome.reason.rawValue)")
            if let received = outcome.card {
                print("received: \(received.name)")
            } else {
                exit(outcome.reason == .exchanged ? 0 : 1)
            }
        default:
            guard snapshot.stage != shown else { break }
            shown = snapshot.stage
            print("[\(snapshot.stage.number)/8] \(snapshot.stage.rawValue)")
        }
    }
} catch {
    print("pair-card: \(error)")
    exit(2)
}
