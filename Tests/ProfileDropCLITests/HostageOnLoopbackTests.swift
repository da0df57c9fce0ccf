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
        #expect(taker.victims == 2, "the attacker met \(taker.victims) devices")
        #expect(taker.codesReached >= 1, "the attacker reached no code")
        // Its sessions were live while the pair exchanged, so the pair met beside them.
        #expect(
            attacked.seconds <= 2 * alone.seconds + 1,
            "the pair took \(attacked.seconds) s beside the attacker, \(alone.seconds) s alone")
    }

    struct PairResult {
        var codes: [Int32]
        var seconds: Double
        var lastLines: [String]
        var taker: HostageTaker?
    }

    /// Runs Bori and Max held together, sharing with anyone, with or without the attacker; the
    /// time is until the later of the two exits.
    static func pair(attacked: Bool) throws -> PairResult {
        let directory = try TestPaths.temporaryDirectory()
        let port = freeUDPPort()
        var taker: HostageTaker?
        if attacked {
            taker = try HostageTaker(port: port, seconds: 25)
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

/// The attacker: one thread on loopback that listens to the discovery group, and for each device
/// id it hears invites that device at once as the simulator's consent staller does
/// (``MaliciousPeer`` with ``MaliciousBehaviour/consentStall``), driven on real sockets.
final class HostageTaker: @unchecked Sendable {  // Counters are read after `stop()` joined the thread.
    private let host: UDPHost
    private let card: ProfileCard
    private let stopped = NSCondition()
    private var stopping = false
    private var finished = false
    private(set) var victims = 0
    private(set) var codesReached = 0

    init(port: UInt16, seconds: Int) throws {
        var endpoint = DiscoveryEndpoint()
        endpoint.port = port
        host = try UDPHost(
            interfaces: NetworkInterface.select(names: ["lo"], from: NetworkInterface.all()),
            endpoint: endpoint)
        card = try ProfileCard(
            name: "Rex", age: 2, sex: .male, neutered: false, size: .medium, owner: "mallory")
        let end = host.now + .seconds(seconds)
        Thread { self.run(until: end) }.start()
    }

    /// Bounded in time: the run's own limit, or the test's stop.
    private func run(until end: Instant) {
        var peers: [MaliciousPeer] = []
        while host.now < end, !isStopping {
            let due = peers.compactMap(\.nextDeadline).min() ?? end
            _ = try? host.wait(until: min(due, host.now + .milliseconds(20)), alsoWatching: nil)
            let now = host.now
            for datagram in (try? host.receiveReady()) ?? [] {
                if case .beacon(let beacon)? = try? Packet(datagram: datagram.bytes) {
                    let address = PeerAddress(ipv4: datagram.source.ipv4, port: beacon.port)
                    guard address != host.localAddress, peers.count < 2,
                        !peers.contains(where: { $0.target == beacon.deviceID })
                    else { continue }
                    peers.append(
                        MaliciousPeer(
                            behaviour: .consentStall, target: beacon.deviceID, targetAddress: address,
                            card: card,
                            seedMaterial: Array("hostage \(peers.count)".utf8), inviteAt: now))
                } else if let index = peers.firstIndex(where: { $0.targetAddress == datagram.source }) {
                    peers[index].receive(datagram.bytes, from: datagram.source, at: now)
                }
            }
            for index in peers.indices {
                if let due = peers[index].nextDeadline, now >= due { peers[index].handleTimeout(at: now) }
                while let outgoing = peers[index].pollTransmit() { try? host.send(outgoing) }
            }
        }
        stopped.lock()
        victims = peers.count
        codesReached = peers.filter { $0.code != nil }.count
        finished = true
        stopped.broadcast()
        stopped.unlock()
    }

    private var isStopping: Bool {
        stopped.lock()
        defer { stopped.unlock() }
        return stopping
    }

    /// Stops the thread and waits for it.
    func stop() {
        stopped.lock()
        stopping = true
        while !finished { stopped.wait() }
        stopped.unlock()
    }
}
