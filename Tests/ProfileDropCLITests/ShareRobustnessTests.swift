import Foundation
import Glibc
import ProfileDropCore
import ProfileDropCrypto
import ProfileDropTransport
import Synchronization
import Testing

@testable import ProfileDropCLI

/// Hostile traffic at two pairing processes on loopback: garbage, truncated, oversized and forged
/// datagrams are dropped and counted, random INVITEs squat in vain, and the honest pair still
/// exchanges.
@Suite struct ShareRobustnessTests {
    /// Sends a bounded burst of bad datagrams to the discovery group on loopback: 300 datagrams
    /// spread over about 1.5 s.
    func flood(port: UInt16) {
        let descriptor = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        defer { close(descriptor) }
        var interface = in_addr(s_addr: UInt32(0x7f00_0001).bigEndian)
        setsockopt(
            descriptor, Int32(IPPROTO_IP), IP_MULTICAST_IF, &interface, socklen_t(MemoryLayout<in_addr>.size))
        let destination = socketAddress(ipv4: 0xEFFF_5044, port: port)
        var generator = SystemRandomNumberGenerator()
        for index in 0..<300 {
            let payload: [UInt8]
            switch index % 4 {
            case 0:
                payload = (0..<Int.random(in: 1...200, using: &generator)).map { _ in
                    UInt8.random(in: 0...255, using: &generator)
                }
            case 1: payload = [0x50, 0x44]  // the magic, then nothing
            case 2: payload = [UInt8](repeating: 0x41, count: 1400)  // oversized
            default:
                payload =
                    [0x50, 0x44, 0x01] + (0..<60).map { _ in UInt8.random(in: 0...255, using: &generator) }
            }
            send(payload, from: descriptor, to: destination)
            usleep(5_000)
        }
    }

    @Test func garbageIsDroppedAndCountedWhileThePairExchanges() throws {
        let port = freeUDPPort()
        let pair = try SharingPair(port: port, timeout: 20)
        let a = try ToolProcess(pair.arguments(0))
        flood(port: port)
        let b = try ToolProcess(pair.arguments(1))
        let first = a.finish()
        let second = b.finish()
        #expect(first.code == 0, "\(first.output.suffix(3)) \(first.errors)")
        #expect(second.code == 0, "\(second.output.suffix(3)) \(second.errors)")
        let counters = try #require(first.errors.last { $0.hasPrefix("datagrams: ") })
        // Most of the flood reached the first device before its peer even started.
        let afterDropped = try #require(counters.range(of: "dropped ")).upperBound
        let count = Int(counters[afterDropped...].prefix { $0.isNumber }) ?? 0
        #expect(count >= 200, "\(counters)")
        #expect(counters.contains("oversized"))
    }

    /// Joins the discovery group on loopback and returns the device id and unicast port of the first
    /// BEACON heard within 10 s.
    func firstBeacon(port: UInt16) -> (id: DeviceID, port: UInt16)? {
        let descriptor = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        defer { close(descriptor) }
        var one: Int32 = 1
        setsockopt(descriptor, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        setsockopt(descriptor, SOL_SOCKET, SO_REUSEPORT, &one, socklen_t(MemoryLayout<Int32>.size))
        var timeout = timeval(tv_sec: 1, tv_usec: 0)
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        guard bind(descriptor, to: socketAddress(ipv4: INADDR_ANY, port: port)) != nil else { return nil }
        var membership = ip_mreq(
            imr_multiaddr: in_addr(s_addr: UInt32(0xEFFF_5044).bigEndian),
            imr_interface: in_addr(s_addr: UInt32(0x7f00_0001).bigEndian))
        setsockopt(
            descriptor, Int32(IPPROTO_IP), IP_ADD_MEMBERSHIP, &membership,
            socklen_t(MemoryLayout<ip_mreq>.size))
        var buffer = [UInt8](repeating: 0, count: 1500)
        for _ in 0..<10 {
            let count = recv(descriptor, &buffer, buffer.count, 0)
            guard count > 0 else { continue }
            if case .beacon(let beacon) = try? Packet(datagram: Array(buffer[0..<count])) {
                return (beacon.deviceID, beacon.port)
            }
        }
        return nil
    }

    /// Random INVITEs (random session and sender ids, 32 random bytes as Noise message) at about 10
    /// per second, each from one of 16 loopback source addresses, at `victim` on 127.0.0.1:`port`,
    /// until `stop` or 200 datagrams (20 s).
    func squat(victim: DeviceID, port: UInt16, stop: StopFlag) {
        let sockets = (0..<16).map { index -> Int32 in
            let descriptor = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
            _ = bind(descriptor, to: socketAddress(ipv4: UInt32(0x7F00_0100) + UInt32(index) + 1))
            return descriptor
        }
        defer { for descriptor in sockets { close(descriptor) } }
        let destination = socketAddress(ipv4: 0x7F00_0001, port: port)
        var generator = SystemRandomNumberGenerator()
        for index in 0..<200 where !stop.isSet {
            let payload = Packet.invite(
                HandshakePacket(
                    sessionID: generator.next(), sender: DeviceID(rawValue: generator.next()),
                    receiver: victim,
                    noiseMessage: (0..<32).map { _ in UInt8.random(in: 0...255, using: &generator) })
            ).encoded()
            send(payload, from: sockets[index % sockets.count], to: destination)
            usleep(100_000)
        }
    }

    /// A real `share --yes` process squatted with random INVITEs at about 10 per second while it
    /// pairs with another: the pair still exchanges, well within its timeout.
    @Test func randomInvitesDoNotKeepThePairFromExchanging() throws {
        let port = freeUDPPort()
        let pair = try SharingPair(port: port, timeout: 20)
        let a = try ToolProcess(pair.arguments(0))
        guard let victim = firstBeacon(port: port) else {
            _ = a.finish()
            Issue.record("no BEACON from the first device")
            return
        }
        let stop = StopFlag()
        let squatting = DispatchGroup()
        squatting.enter()
        DispatchQueue.global().async {
            squat(victim: victim.id, port: victim.port, stop: stop)
            squatting.leave()
        }
        // Squatted for two seconds before its peer even starts.
        usleep(2_000_000)
        let started = Date()
        let b = try ToolProcess(pair.arguments(1))
        let first = a.finish()
        let second = b.finish()
        let elapsed = Date().timeIntervalSince(started)
        stop.set()
        squatting.wait()
        #expect(first.code == 0, "\(first.output.suffix(3)) \(first.errors.suffix(3))")
        #expect(second.code == 0, "\(second.output.suffix(3)) \(second.errors.suffix(3))")
        #expect(elapsed < 15, "the pair took \(elapsed) s")
    }

    /// `--timeout` bounds the process whatever its session is doing: a peer that pairs and then
    /// stalls (its user never answers) keeps the session alive, yet `share --timeout 5` closes it
    /// with CLOSE(timeout) at 5 s and exits within 6 s, as a timeout (3) that names the wait.
    @Test func aPeerThatPairsAndStallsCannotHoldShareBeyondItsTimeout() throws {
        let directory = try TestPaths.temporaryDirectory()
        let card = directory.appendingPathComponent("bori.json").path
        try ShareCommandTests.bori.write(toFile: card, atomically: true, encoding: .utf8)
        let port = freeUDPPort()
        let peer = StallingPeer(port: port, seconds: 7)
        let started = Date()
        let share = try ToolProcess([
            "share", "--profile", card, "--interface", "lo", "--port", String(port), "--json", "--yes",
            "--pose", "0,0,0", "--still", "--timeout", "5",
            "--key-file", directory.appendingPathComponent("key").path,
            "--known-peers", directory.appendingPathComponent("peers").path,
        ])
        let result = share.finish()
        let elapsed = Date().timeIntervalSince(started)
        #expect(elapsed < 6, "share --timeout 5 ran \(elapsed) s")
        #expect(result.code == ExitCode.timeout.rawValue, "\(result.output.suffix(3)) \(result.errors)")
        let closed = try #require(
            result.output.last.flatMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) }
                as? [String: Any])
        #expect(closed["event"] as? String == "closed")
        #expect(closed["reason"] as? String == "timeout")
        #expect(closed["detail"] as? String == "timeout: peer consent")
        // The session was live: the peer was asked, and heard our CLOSE(timeout).
        let events = peer.finish()
        #expect(events.contains { if case .consentRequested = $0 { true } else { false } }, "\(events)")
        #expect(
            events.contains { if case .sessionEnded(_, .timeout(.peerGaveUp)) = $0 { true } else { false } },
            "\(events)")
    }

    /// The hijack of PROTOCOL.md 11.6 item 6: while two processes pair, a forger announces each of
    /// their ids, as soon as it has heard it, for a dead port, ten times a second (version 2 before
    /// this rule let a BEACON for a known id move its address, and 9 a second stopped all pairing).
    /// The address first heard for an id stays, so they still exchange; the forgeries are counted as
    /// conflicts. The forger sends at most 200 datagrams over at most 20 s.
    @Test func forgedBeaconsForTheirIdsDoNotStopAPairing() throws {
        let port = freeUDPPort()
        let forger = try Forger(port: port)
        let pair = try SharingPair(port: port, timeout: 40)
        let a = try ToolProcess(pair.arguments(0))
        // The forger learns the first device's id from its first beacon, and starts at once: the
        // second device, started now, may hear a forgery for it before the real thing.
        for _ in 0..<50 where forger.ids.isEmpty {
            forger.learn()
            usleep(20_000)
        }
        #expect(forger.ids.count == 1)
        let b = try ToolProcess(pair.arguments(1))
        let started = Date()
        while forger.sent < 200, Date().timeIntervalSince(started) < 20,
            a.process.isRunning || b.process.isRunning
        {
            forger.learn()
            forger.forge()
            usleep(100_000)
        }
        let first = a.finish()
        let second = b.finish()
        #expect(forger.ids.count == 2, "the forger heard both devices")
        #expect(first.code == 0, "\(first.output.suffix(3)) \(first.errors.suffix(3))")
        #expect(second.code == 0, "\(second.output.suffix(3)) \(second.errors.suffix(3))")
        let counters = [first, second].compactMap { $0.errors.last { $0.hasPrefix("datagrams: ") } }
        #expect(counters.count == 2)
        #expect(counters.contains { $0.contains("conflict") }, "\(counters)")
    }
}

/// A flag one thread sets and another reads.
final class StopFlag: Sendable {
    private let flag = Atomic(false)
    var isSet: Bool { flag.load(ordering: .relaxed) }
    func set() { flag.store(true, ordering: .relaxed) }
}

/// A peer that pairs and then stalls: a real device on loopback, 7 cm in front of the origin and
/// facing it, whose user is asked and never answers. Its own overall limit ends it; it runs on its
/// own thread, and sends only what the protocol sends (a few datagrams per ranging interval).
final class StallingPeer: @unchecked Sendable {  // `events`, `done` and `failure` are guarded by `condition`.
    private let condition = NSCondition()
    private var events: [DeviceEvent] = []
    private var done = false
    private var failure: String?

    init(port: UInt16, seconds: Int) {
        Thread.detachNewThread { [self] in
            do {
                try run(port: port, seconds: seconds)
            } catch {
                condition.lock()
                failure = "\(error)"
                condition.unlock()
            }
            condition.lock()
            done = true
            condition.broadcast()
            condition.unlock()
        }
    }

    private func run(port: UInt16, seconds: Int) throws {
        var random = SystemRandom()
        var timeouts = Timeouts()
        timeouts.overall = .seconds(seconds)
        let configuration = DeviceConfiguration(
            card: nil, consent: .askUser, staticKey: X25519.PrivateKey(using: &random), timeouts: timeouts)
        var endpoint = DiscoveryEndpoint()
        endpoint.port = port
        let clock = MonotonicClock()
        let host = try UDPHost(
            interfaces: NetworkInterface.select(names: ["lo"], from: NetworkInterface.all()),
            endpoint: endpoint,
            clock: clock)
        var driver = DeviceDriver(
            device: Device(
                configuration: configuration, random: SystemRandom(), now: clock.now,
                localAddress: host.localAddress),
            sockets: host)
        driver.device.updatePose(Pose(x: 7, y: 0, heading: 180), at: clock.now)
        let record = { (event: DeviceEvent, _: Device) in
            self.condition.lock()
            self.events.append(event)
            self.condition.unlock()
        }
        try driver.flush(onEvent: record)
        // Bounded whatever the device does: its limit, and a second more for its last CLOSE.
        let end = clock.now + .seconds(seconds + 1)
        while clock.now < end && driver.device.nextDeadline != nil {
            _ = try driver.turn(wakingBy: clock.now + .milliseconds(100), onEvent: record)
        }
    }

    /// Waits for the peer to stop and returns its events.
    func finish() -> [DeviceEvent] {
        condition.lock()
        defer { condition.unlock() }
        while !done { condition.wait() }
        if let failure { Issue.record("the stalling peer failed: \(failure)") }
        return events
    }
}

/// The forger of the hijack test: it listens to the discovery group on loopback, learns each
/// device id from its first BEACON, and announces that id for its own port, where nobody will
/// ever answer an INVITE. The sending socket's port is the one the forged BEACONs name, so they
/// pass the port check and only the conflict rule stands in their way.
private final class Forger {
    let listener: Int32
    let sender: Int32
    let port: UInt16
    let deadPort: UInt16
    private(set) var ids: [UInt64] = []
    private(set) var sent = 0

    init(port: UInt16) throws {
        self.port = port
        let listener = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        let sender = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        self.listener = listener
        self.sender = sender
        var one: Int32 = 1
        setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        setsockopt(listener, SOL_SOCKET, SO_REUSEPORT, &one, socklen_t(MemoryLayout<Int32>.size))
        let bound = bind(listener, to: socketAddress(ipv4: 0, port: port))
        var membership = ip_mreq(
            imr_multiaddr: in_addr(s_addr: UInt32(0xEFFF_5044).bigEndian),
            imr_interface: in_addr(s_addr: UInt32(0x7F00_0001).bigEndian))
        let joined = setsockopt(
            listener, Int32(IPPROTO_IP), IP_ADD_MEMBERSHIP, &membership,
            socklen_t(MemoryLayout<ip_mreq>.size))
        _ = fcntl(listener, F_SETFL, fcntl(listener, F_GETFL) | O_NONBLOCK)
        var interface = in_addr(s_addr: UInt32(0x7F00_0001).bigEndian)
        setsockopt(
            sender, Int32(IPPROTO_IP), IP_MULTICAST_IF, &interface, socklen_t(MemoryLayout<in_addr>.size))
        deadPort = bind(sender, to: socketAddress(ipv4: 0x7F00_0001)) ?? 0
        guard bound != nil, joined == 0, deadPort != 0 else {
            throw ProtocolError(
                .unexpectedMessage, "forger sockets: listener bound \(bound != nil), join \(joined)")
        }
    }

    deinit {
        close(listener)
        close(sender)
    }

    /// Reads every BEACON waiting on the group and remembers ids not seen before.
    func learn() {
        var buffer = [UInt8](repeating: 0, count: 1500)
        while true {
            let count = recv(listener, &buffer, buffer.count, 0)
            guard count > 0 else { return }
            let bytes = Array(buffer.prefix(count))
            // Our own forgeries loop back too: they name the dead port.
            if case .beacon(let beacon) = try? Packet(datagram: bytes), beacon.port != deadPort,
                !ids.contains(beacon.deviceID.rawValue)
            {
                ids.append(beacon.deviceID.rawValue)
            }
        }
    }

    /// Announces the next learnt id (in turn) at the dead port, with a sequence number far ahead.
    func forge() {
        guard !ids.isEmpty else { return }
        let id = ids[sent % ids.count]
        let beacon = Packet.beacon(
            Beacon(
                deviceID: DeviceID(rawValue: id), port: deadPort, busy: false,
                sequence: 0xF000_0000 + UInt32(sent))
        ).encoded()
        send(beacon, from: sender, to: socketAddress(ipv4: 0xEFFF_5044, port: port))
        sent += 1
    }
}

/// Two `share --yes --verbose` processes on loopback, with the example cards and each its own key
/// and known-peers files: the honest pair every robustness test attacks.
struct SharingPair {
    let directory: URL
    let cards: [String]
    let port: UInt16
    let timeout: Int

    init(port: UInt16, timeout: Int) throws {
        directory = try TestPaths.temporaryDirectory()
        let directory = directory
        cards = [ShareCommandTests.bori, ShareCommandTests.max].enumerated().map { index, text in
            let path = directory.appendingPathComponent("card\(index).json").path
            try? text.write(toFile: path, atomically: true, encoding: .utf8)
            return path
        }
        self.port = port
        self.timeout = timeout
    }

    /// The arguments of device `index` (0 or 1).
    func arguments(_ index: Int) -> [String] {
        [
            "share", "--profile", cards[index], "--interface", "lo", "--port", String(port), "--verbose",
            "--timeout", String(timeout), "--yes", "--key-file",
            directory.appendingPathComponent("key\(index)").path,
            "--known-peers", directory.appendingPathComponent("peers\(index)").path,
        ]
    }
}
