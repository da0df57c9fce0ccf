import ProfileDropCore
import ProfileDropCrypto
import Testing

@testable import ProfileDropTransport

/// An in-memory socket layer on a virtual clock: the test fills the inbox, and every send is noted
/// with the turn the test says is running.
private final class FakeSockets: DatagramSocketLayer {
    var now = Instant.zero
    var inbox: [ReceivedDatagram] = []
    var sent: [(turn: Int, datagram: OutgoingDatagram)] = []
    /// The turn in progress, set by the test before each call of `turn`.
    var turn = 0

    func wait(until deadline: Instant, alsoWatching descriptor: Int32?) throws -> Bool {
        // Waiting with nothing to read lets the virtual clock run to the deadline.
        if inbox.isEmpty, deadline > now { now = deadline }
        return false
    }

    func receiveReady() throws -> [ReceivedDatagram] {
        defer { inbox.removeAll() }
        return inbox
    }

    func send(_ datagram: OutgoingDatagram) throws { sent.append((turn, datagram)) }
}

@Suite struct DeviceDriverTests {
    static let alice = PeerAddress(10, 0, 0, 1, port: 5000)
    static let bob = PeerAddress(10, 0, 0, 2, port: 5000)

    static func device(seed: UInt64, at address: PeerAddress) -> Device {
        var keyRandom = DeterministicRandom(seed: seed &+ 1000)
        let configuration = DeviceConfiguration(
            card: nil, consent: .share, staticKey: X25519.PrivateKey(using: &keyRandom))
        return Device(
            configuration: configuration, random: DeterministicRandom(seed: seed), now: .zero,
            localAddress: address)
    }

    static func type(_ bytes: [UInt8]) -> PacketType? { try? Packet(datagram: bytes).type }

    /// Alice is a bare device the test steps by hand; Bob runs in the driver loop. Bob's reply to
    /// each handshake message must leave in the turn the message arrived in, not a later one.
    @Test func aReplyLeavesInTheTurnItsCauseArrived() throws {
        let sockets = FakeSockets()
        var driver = DeviceDriver(device: Self.device(seed: 2, at: Self.bob), sockets: sockets)
        var alice = Self.device(seed: 1, at: Self.alice)
        var forwarded = 0
        /// The turn in which each handshake message reached Bob, by type.
        var arrivals: [(turn: Int, type: PacketType)] = []
        for _ in 0..<2000 {
            // Bob's sends reach Alice at once.
            for (_, datagram) in sockets.sent[forwarded...] {
                alice.handleDatagram(datagram.bytes, from: Self.bob, at: sockets.now)
            }
            forwarded = sockets.sent.count
            if let due = alice.nextDeadline, due <= sockets.now { alice.handleTimeout(at: sockets.now) }
            while let datagram = alice.pollTransmit() {
                guard datagram.destination == .multicast || datagram.destination == .unicast(Self.bob) else {
                    continue
                }
                sockets.inbox.append(ReceivedDatagram(bytes: datagram.bytes, source: Self.alice))
                if let type = Self.type(datagram.bytes), type == .invite || type == .accept {
                    arrivals.append((driver.turns + 1, type))
                }
            }
            while alice.pollEvent() != nil {}
            let wake = alice.nextDeadline ?? sockets.now + .seconds(1)
            sockets.turn = driver.turns + 1
            _ = try driver.turn(wakingBy: wake) { _, _ in }
            if sockets.sent.contains(where: { [.accept, .confirm].contains(Self.type($0.datagram.bytes)) }) {
                break
            }
        }
        let replies = sockets.sent.filter { [.accept, .confirm].contains(Self.type($0.datagram.bytes)) }
        let first = try #require(replies.first)
        let cause = try #require(arrivals.first)
        // Whoever invites, Bob answers the first handshake message he gets (INVITE with ACCEPT, or
        // ACCEPT with CONFIRM) before the turn that fed it returns, not at the start of the next.
        #expect(Self.type(first.datagram.bytes) == (cause.type == .invite ? .accept : .confirm))
        #expect(first.turn == cause.turn)
        #expect(first.datagram.destination == .unicast(Self.alice))
    }

    @Test func aTurnFiresADueTimeoutAndSendsWhatItQueued() throws {
        let sockets = FakeSockets()
        var driver = DeviceDriver(device: Self.device(seed: 3, at: Self.bob), sockets: sockets)
        try driver.flush { _, _ in }
        let beaconsAtStart = sockets.sent.count
        let deadline = try #require(driver.device.nextDeadline)
        sockets.turn = 1
        _ = try driver.turn(wakingBy: deadline + .seconds(10)) { _, _ in }
        // The wait ended at the device's deadline, not at the later wake-up time.
        #expect(sockets.now == deadline)
        #expect(sockets.sent.count > beaconsAtStart)
        #expect(sockets.sent.last?.turn == 1)
        #expect(driver.turns == 1)
    }
}
