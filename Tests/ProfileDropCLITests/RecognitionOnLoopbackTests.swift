import Foundation
import ProfileDropCore
import Testing

@testable import ProfileDropAdversaries

/// The recognition oracle against real `share` processes on loopback (PROTOCOL.md 6.5, 11.3): a
/// stranger meets Max once and keeps the IDENT and PROOF Max sent it, then replays them to Bori
/// twice, once while Bori knows Max (they paired before, for real) and once while Bori, with the
/// same key, knows nobody. Under protocol 2.0 the first answer was CLOSE(error 22) and the second
/// went on to the code, so the replay told the stranger who knows whom and linked Bori's runs.
/// Now what Bori sends the stranger is the same either way, and only Bori's own user is warned.
@Suite(.serialized) struct RecognitionOnLoopbackTests {
    @Test func aReplayedIdentityGetsTheSameAnswerWhetherOrNotTheVictimKnowsIt() throws {
        let directory = try TestPaths.temporaryDirectory()
        func path(_ name: String) -> String { directory.appendingPathComponent(name).path }
        for name in ["bori", "max"] {
            try Self.card(name).write(toFile: path("\(name).json"), atomically: true, encoding: .utf8)
        }

        // Bori and Max pair for real, so that each remembers the other.
        let port = freeUDPPort()
        let pairing = try [("0,0,0", "bori"), ("7,0,180", "max")].map { pose, name in
            try Self.share(
                name, pose: pose, port: port, peers: path("\(name).peers"), in: directory, timeout: 20)
        }.map { $0.finish() }
        #expect(pairing.map(\.code) == [0, 0], "\(pairing.map(\.errors))")
        #expect(try String(contentsOfFile: path("bori.peers"), encoding: .utf8).contains("max"))

        // The stranger meets Max alone and keeps what Max sent it.
        let harvest = try Self.attack(
            "max", replaying: nil, peers: path("max.peers"), in: directory, seconds: 4)
        let ident = try #require(harvest.peer.peerIdentity.ident, "Max sent no IDENT")
        let proof = try #require(harvest.peer.peerIdentity.proof, "Max sent no PROOF")

        // It replays them to Bori knowing Max, then to Bori knowing nobody.
        let knowing = try Self.attack(
            "bori", replaying: (ident, proof), peers: path("bori.peers"), in: directory, seconds: 6)
        let notKnowing = try Self.attack(
            "bori", replaying: (ident, proof), peers: path("nobody.peers"), in: directory, seconds: 6)

        // Bori's own user is warned only when it knows Max.
        #expect(knowing.output.contains { $0.contains("known_peer_mismatch") }, "\(knowing.output.suffix(3))")
        #expect(!notKnowing.output.contains { $0.contains("known_peer_mismatch") })
        // What the stranger sees is the same: no CLOSE, the same frames, and the code reached.
        for play in [knowing, notKnowing] {
            #expect(
                !play.peer.observed.contains { $0.contains("CLOSE") },
                "Bori closed on the replay: \(play.peer.observed.filter { $0.contains("CLOSE") })")
            #expect(play.peer.code != nil, "the stranger reached no code: \(play.peer.observed.prefix(8))")
        }
        #expect(Self.frameKinds(knowing.peer.observed) == Self.frameKinds(notKnowing.peer.observed))
    }

    /// One attacked run of `name` (alone at the origin, sharing with anyone), its session with the
    /// attacker stalling at consent, watched for `seconds`; the victim's own limit comes later, so
    /// its closing CLOSE is not part of what was watched.
    static func attack(
        _ name: String, replaying identity: (ident: [UInt8], proof: [UInt8])?, peers: String,
        in directory: URL,
        seconds: Int
    ) throws -> (peer: MaliciousPeer, output: [String]) {
        let port = freeUDPPort()
        let attacker = try LoopbackAttacker(port: port, seconds: seconds, victims: 1) {
            target, address, _, now in
            var peer = MaliciousPeer(
                behaviour: .consentStall, target: target, targetAddress: address, card: LoopbackAttacker.card,
                seedMaterial: Array("replaying prober \(name)".utf8), inviteAt: now)
            peer.replayedIdentity = identity
            return peer
        }
        let victim = try Self.share(
            name, pose: "0,0,0", port: port, peers: peers, in: directory, timeout: seconds + 3)
        let result = victim.finish()
        attacker.stop()
        let peer = try #require(attacker.peers.first, "the attacker heard no BEACON of \(name)")
        return (peer, result.output)
    }

    static func share(
        _ name: String, pose: String, port: UInt16, peers: String, in directory: URL, timeout: Int
    ) throws -> ToolProcess {
        try ToolProcess([
            "share", "--profile", directory.appendingPathComponent("\(name).json").path, "--interface", "lo",
            "--port", String(port), "--pose", pose, "--still", "--yes", "--json", "--timeout",
            String(timeout),
            "--key-file", directory.appendingPathComponent("\(name).key").path, "--known-peers", peers,
        ])
    }

    /// The kinds of frame the victim sent, whatever their number and order (those depend on the
    /// scheduling of two processes).
    static func frameKinds(_ observed: [String]) -> Set<String> {
        Set(
            observed.flatMap { line in line.dropFirst("SECURE ".count).split(separator: ",").map(String.init)
            })
    }

    static func card(_ name: String) -> String {
        #"{"name": "\#(name)", "age": 3, "sex": "female", "neutered": true, "size": "small", "owner": "test"}"#
    }
}
