import Foundation
import ProfileDropCore
import ProfileDropCrypto
import ProfileDropTransport
import Testing

@testable import ProfileDropAdversaries

/// Protocol 2.1's hostage attack against two real `share` processes on loopback (PROTOCOL.md 5,
/// "Candidates"; 11.6 item 10): an attacker invites each device within milliseconds of its first
/// BEACON, before the pair's own first invitation, completes the handshake, claims a pose 7 cm in
/// front, completes the verification round and never decides. Under protocol 2.0 no pair
/// exchanged within 30 s; now the pair exchanges beside the stalled sessions, within twice the
/// time the same pair takes alone, measured in the same test.
@Suite(.serialized) struct HostageOnLoopbackTests {
    @Test func aStalledSessionDoesNotKeepThePairApart() throws {
        let alone = try Self.pair(attacked: false)
        let attacked = try Self.pair(attacked: true)
        for result in [alone, attacked] {
            #expect(result.codes == [0, 0], "\(result.lastLines)")
        }
        let taker = try #require(attacked.taker)
        // The attack ran: a session with each device, stalled once it reached its code (a device
        // that exchanged first ends the other one sooner).
        #expect(taker.peers.count == 2, "the attacker met \(taker.peers.count) devices")
        #expect(taker.peers.contains { $0.code != nil }, "the attacker reached no code")
        // Its sessions were live while the pair exchanged, so the pair met beside them.
        #expect(
            attacked.seconds <= 2 * alone.seconds + 1,
            "the pair took \(attacked.seconds) s beside the attacker, \(alone.seconds) s alone")
    }

    struct PairResult {
        var codes: [Int32]
        var seconds: Double
        var lastLines: [String]
        var taker: LoopbackAttacker?
    }

    /// Runs Bori and Max held together, sharing with anyone, with or without the attacker; the
    /// time is until the later of the two exits.
    static func pair(attacked: Bool) throws -> PairResult {
        let directory = try TestPaths.temporaryDirectory()
        let port = freeUDPPort()
        var taker: LoopbackAttacker?
        if attacked {
            taker = try LoopbackAttacker(port: port, seconds: 25, victims: 2) { target, address, index, now in
                MaliciousPeer(
                    behaviour: .consentStall, target: target, targetAddress: address,
                    card: LoopbackAttacker.card,
                    seedMaterial: Array("hostage \(index)".utf8), inviteAt: now)
            }
        }
        let start = Date()
        let devices = try [("0,0,0", "bori"), ("7,0,180", "max")].enumerated().map { index, device in
            let card = directory.appendingPathComponent("card\(index).json")
            try Self.card(device.1).write(to: card, atomically: true, encoding: .utf8)
            return try ToolProcess([
                "share", "--profile", card.path, "--interface", "lo", "--port", String(port),
                "--pose", device.0, "--still", "--yes", "--json", "--timeout", "25",
                "--key-file", directory.appendingPathComponent("key\(index)").path,
                "--known-peers", directory.appendingPathComponent("peers\(index)").path,
            ])
        }
        let results = devices.map { $0.finish() }
        let seconds = Date().timeIntervalSince(start)
        taker?.stop()
        return PairResult(
            codes: results.map(\.code), seconds: seconds, lastLines: results.compactMap(\.output.last),
            taker: taker)
    }

    static func card(_ name: String) -> String {
        #"{"name": "\#(name)", "age": 3, "sex": "female", "neutered": true, "size": "small", "owner": "test"}"#
    }
}
