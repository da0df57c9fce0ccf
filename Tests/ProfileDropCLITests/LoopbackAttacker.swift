import Foundation
import ProfileDropCore
import ProfileDropTransport

@testable import ProfileDropAdversaries

/// An attacker on real loopback sockets: one thread that listens to the discovery group and, for
/// each device id it hears (up to `victims`), invites that device at once with the simulator's
/// ``MaliciousPeer`` that `makePeer` builds, driven on a real ``UDPHost``. Bounded in time.
final class LoopbackAttacker: @unchecked Sendable {  // `peers` is read only after `stop()` joined the thread.
    /// The attacker's own card.
    static let card: ProfileCard = {
        guard
            let card = try? ProfileCard(
                name: "Rex", age: 2, sex: .male, neutered: false, size: .medium, owner: "mallory")
        else { preconditionFailure("a valid card") }
        return card
    }()

    private let host: UDPHost
    private let victims: Int
    private let makePeer: (DeviceID, PeerAddress, Int, Instant) -> MaliciousPeer
    private let stopped = NSCondition()
    private var stopping = false
    private var finished = false
    /// The attacker's sessions, one per victim; read after ``stop()``.
    private(set) var peers: [MaliciousPeer] = []

    /// Starts listening on `port` of `lo` for `seconds` at most; `makePeer` gets the victim's id,
    /// its address, the victim's number and the time its BEACON arrived.
    init(
        port: UInt16, seconds: Int, victims: Int,
        makePeer: @escaping (DeviceID, PeerAddress, Int, Instant) -> MaliciousPeer
    ) throws {
        var endpoint = DiscoveryEndpoint()
        endpoint.port = port
        host = try UDPHost(
            interfaces: NetworkInterface.select(names: ["lo"], from: NetworkInterface.all()),
            endpoint: endpoint)
        self.victims = victims
        self.makePeer = makePeer
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
                    guard address != host.localAddress, peers.count < victims,
                        !peers.contains(where: { $0.target == beacon.deviceID })
                    else { continue }
                    peers.append(makePeer(beacon.deviceID, address, peers.count, now))
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
        self.peers = peers
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
