import Foundation
import ProfileDropCapture
import ProfileDropCore
import ProfileDropCrypto
import ProfileDropTransport

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The run's device on its sockets: the blocking loop on a thread of its own, the inbox the
/// program's calls go through, and the channel the snapshots leave by.
final class PairingEngine: @unchecked Sendable {
    /// What the program asks of the loop.
    enum Command {
        /// An answer about `candidate` (a peer asked about), or with nil about the one candidate
        /// shown (a decline: about them all).
        case answer(ConsentAnswer, candidate: String?)
        case move(Pose)
        case stop(PairingOutcome.Reason, detail: String?)
    }

    let channel = SnapshotChannel()
    let deviceID: String
    let interfaceNames: [String]
    let listeningDescription: String

    private let configuration: PairingConfiguration
    private let clock = MonotonicClock()
    /// Used by the loop's thread alone once it started.
    private let host: UDPHost
    private let deviceConfiguration: DeviceConfiguration
    private let runKey: X25519.PrivateKey
    private let firstDevice: Device

    // The inbox, shared with the program's threads.
    private let lock = NSLock()
    private var inbox: [Command] = []
    private var started = false
    /// The candidates whose question waits for an answer, by peer: set by the loop, cleared by
    /// the answer that takes them.
    private var pendingCandidates: [String] = []
    /// A stop was posted: no answer is taken after it, so that nothing the user agreed to before
    /// stopping can still go out (a stop declines a pending request).
    private var stopping = false
    /// The wake-up pipe: a byte written for each command, so that the loop's wait ends at once.
    private let wakeRead: Int32
    private let wakeWrite: Int32

    init(_ configuration: PairingConfiguration) throws(PairingError) {
        self.configuration = configuration
        // Checked before the key file may be created: the capture's file is not found unwritable
        // once the run it records is over.
        if let capture = configuration.capture,
            let problem = OutputFile.writableProblem(capture.path, option: "--capture")
        {
            throw PairingError(.configuration, problem)
        }
        let secret: [UInt8]
        switch configuration.identity {
        case .keyFile(let path):
            do {
                secret = try StaticKeyStore.loadOrCreate(at: path).key.rawRepresentation
            } catch let error as StaticKeyStoreError {
                throw PairingError(.configuration, error.description)
            } catch {
                throw PairingError(.file, "\(error)")
            }
        case .secret(let bytes):
            guard bytes.count == X25519.keyLength else {
                throw PairingError(
                    .configuration, "an identity secret is \(X25519.keyLength) bytes, got \(bytes.count)")
            }
            secret = bytes
        case .generated:
            var random = SystemRandom()
            secret = X25519.PrivateKey(using: &random).rawRepresentation
        }
        let knownPeers: [KnownPeer]
        switch configuration.knownPeers {
        case .file(let path):
            do {
                knownPeers = try KnownPeersStore.load(at: path)
            } catch {
                throw PairingError(.configuration, "\(error)")
            }
            // Written when an exchange with a new peer completes: a bond that could not be kept is
            // found now, before anything is exchanged.
            do {
                try OutputFile.createDirectories(for: path)
            } catch {
                throw PairingError(.file, "\(error)")
            }
            if let problem = OutputFile.writableProblem(path, option: "--known-peers") {
                throw PairingError(.configuration, problem)
            }
        case .memory(let list):
            knownPeers = list.peers
        }
        var interfaces: [NetworkInterface]
        do {
            interfaces = try NetworkInterface.select(
                names: configuration.network.interfaces, from: NetworkInterface.all())
        } catch let error as TransportError {
            throw PairingError(.configuration, error.diagnostic)
        } catch {
            throw PairingError(.network, "\(error)")
        }
        if !configuration.network.ipv6 {
            for index in interfaces.indices { interfaces[index].ipv6LinkLocalAddresses = [] }
        }
        var endpoint = DiscoveryEndpoint()
        endpoint.port = configuration.network.port
        var unicastAddress: IPv4Address?
        if let text = configuration.network.address {
            guard let address = IPv4Address(text) else {
                throw PairingError(.configuration, "--address takes an IPv4 address a.b.c.d, got '\(text)'")
            }
            unicastAddress = address
        }
        do {
            host = try UDPHost(
                interfaces: interfaces, endpoint: endpoint, unicastAddress: unicastAddress, clock: clock)
        } catch let error as TransportError where error.code == .addressNotAvailable {
            throw PairingError(.configuration, error.diagnostic)
        } catch {
            throw PairingError(.network, "\(error)")
        }
        let policy: ProfileDropCore.ConsentPolicy
        switch configuration.consent {
        case .ask: policy = .askUser
        case .always: policy = configuration.card == nil ? .receiveOnly : .share
        case .knownPeers: policy = .shareWithKnownPeers
        }
        var random = SystemRandom()
        runKey = X25519.PrivateKey(using: &random)
        var timeouts = Timeouts()
        timeouts.overall = configuration.timeout
        deviceConfiguration = DeviceConfiguration(
            card: configuration.card, consent: policy, staticKey: runKey,
            identity: DeviceIdentity(secret: secret), knownPeers: knownPeers, timeouts: timeouts)
        firstDevice = Device(
            configuration: deviceConfiguration, random: SystemRandom(), now: clock.now,
            localAddress: host.localAddress)
        deviceID = firstDevice.deviceID.description
        interfaceNames = interfaces.map(\.name)
        listeningDescription = host.listeningDescription
        var descriptors: [Int32] = [-1, -1]
        guard pipe(&descriptors) == 0 else {
            throw PairingError(.network, "cannot create a pipe: \(systemError())")
        }
        wakeRead = descriptors[0]
        wakeWrite = descriptors[1]
        for descriptor in descriptors {
            _ = fcntl(descriptor, F_SETFL, fcntl(descriptor, F_GETFL) | O_NONBLOCK)
            _ = fcntl(descriptor, F_SETFD, FD_CLOEXEC)
        }
    }

    deinit {
        close(wakeRead)
        close(wakeWrite)
    }

    /// Starts the loop's thread, once.
    func start() {
        let first = lock.withLock {
            defer { started = true }
            return !started
        }
        guard first else { return }
        let thread = Thread { [self] in self.main() }
        thread.name = "ProfileDrop run"
        thread.start()
    }

    /// Hands `command` to the loop. An answer with no question pending is refused (false).
    func post(_ command: Command) -> Bool {
        let taken: Bool = lock.withLock {
            switch command {
            case .answer(let answer, let candidate):
                guard !stopping else { return false }
                if let candidate {
                    guard pendingCandidates.contains(candidate) else { return false }
                    // Picking one declines the others.
                    if answer == .decline {
                        pendingCandidates.removeAll { $0 == candidate }
                    } else {
                        pendingCandidates.removeAll()
                    }
                } else {
                    // The one candidate shown; with several, only a decline (of them all).
                    guard pendingCandidates.count == 1 || answer == .decline && !pendingCandidates.isEmpty
                    else { return false }
                    pendingCandidates.removeAll()
                }
            case .stop:
                stopping = true
                pendingCandidates.removeAll()
            case .move:
                break
            }
            inbox.append(command)
            return true
        }
        if taken {
            var byte: UInt8 = 1
            _ = write(wakeWrite, &byte, 1)
        }
        return taken
    }

    private func takeCommands() -> [Command] {
        var drain = [UInt8](repeating: 0, count: 64)
        while read(wakeRead, &drain, drain.count) > 0 {}
        return lock.withLock {
            defer { inbox.removeAll() }
            return inbox
        }
    }

    private func setPendingCandidates(_ peers: [DeviceID]) {
        lock.withLock { pendingCandidates = peers.map(\.description) }
    }

    private func main() {
        var feed: Task<Void, Never>?
        if case .stream(_, let poses) = configuration.motion {
            feed = Task { [weak self] in
                for await pose in poses { _ = self?.post(.move(pose)) }
            }
        }
        defer { feed?.cancel() }
        do {
            try run()
        } catch let error as PairingError {
            channel.finish(error)
        } catch {
            channel.finish(PairingError(.network, "\(error)"))
        }
    }

    private func run() throws {
        let impairment = SendImpairment(loss: configuration.network.sendLoss, seed: 1)
        guard let capture = configuration.capture else {
            let loop = Loop(
                engine: self, device: ImpairedDevice(firstDevice, impairment: impairment), state: \.inner)
            try loop.run { nil }
            return
        }
        let recorder = CaptureRecorder(
            options: CaptureOptions(
                keylog: capture.keylog,
                multicastGroup: PeerAddress(
                    ipv4: DiscoveryEndpoint().ipv4Group.value, port: configuration.network.port),
                epochNanoseconds: epochOfClock()))
        let device = CapturingDevice(
            configuration: deviceConfiguration, random: SystemRandom(), now: clock.now,
            localAddress: host.localAddress, name: "share", recorder: recorder,
            // The run's key is on no disk: replay can only find it in the capture.
            staticKey: capture.keylog ? .embedded(runKey.rawRepresentation) : .external)
        let loop = Loop(
            engine: self, device: ImpairedDevice(device, impairment: impairment), state: \.inner.device)
        // Written however the run ends, so that a failing pairing can be replayed; with its keylog it
        // holds secrets, so only its owner reads it.
        func write() -> PairingError? {
            do {
                try OutputFile.replace(capture.path, with: recorder.fileBytes(), secret: capture.keylog)
                return nil
            } catch {
                return PairingError(.file, "--capture \(error)")
            }
        }
        do {
            try loop.run(captureError: write)
        } catch {
            // A socket that failed mid-run: the capture of exactly that run is kept all the same.
            _ = write()
            throw error
        }
    }

    /// Nanoseconds since 1970 at which the monotonic clock read zero, for capture timestamps.
    private func epochOfClock() -> UInt64 {
        let wall = UInt64(max(0, Date().timeIntervalSince1970 * 1e9))
        return wall &- clock.now.nanoseconds
    }

    /// The loop over one device: `state` reads the core device inside it.
    private final class Loop<D: SansIODevice> {
        let engine: PairingEngine
        var driver: DeviceDriver<D, UDPHost>
        let state: KeyPath<D, Device>
        var builder = SnapshotBuilder()
        var movement: DeviceMotion
        var initiator = false
        var receivedCard: ProfileCard?
        var cardAcknowledged = false
        /// The candidates whose question is on screen, in the order asked.
        var asked: [DeviceID] = []
        var unanswered = false
        var lastSessionFailure: CloseReason?
        let deadline: Instant

        init(engine: PairingEngine, device: D, state: KeyPath<D, Device>) {
            self.engine = engine
            driver = DeviceDriver(device: device, sockets: engine.host)
            self.state = state
            switch engine.configuration.motion {
            case .approach: movement = DeviceMotion(start: Pose(x: 0, y: 0, heading: 0), script: nil)
            case .fixed(let pose), .stream(let pose, _): movement = DeviceMotion(start: pose, script: nil)
            case .scripted(let script): movement = DeviceMotion(start: script.initialPose, script: script)
            case .sampled(let sample): movement = DeviceMotion(start: sample(.zero), script: nil)
            }
            deadline = engine.clock.now + engine.configuration.timeout
        }

        private var core: Device { driver.device[keyPath: state] }
        private var now: Instant { engine.clock.now }

        private func send(_ snapshot: PairingSnapshot?) {
            if let snapshot { engine.channel.send(snapshot) }
        }

        func run(captureError: () -> PairingError?) throws {
            driver.device.updatePose(movement.pose, at: now)
            send(builder.started(core.snapshot))
            try flush()
            var closedAt: Instant?
            var stop: (reason: PairingOutcome.Reason, detail: String?)?
            var timedOut: CloseReason?
            var sampledAt = now
            while true {
                var wake = now + .milliseconds(250)
                if movement.isMoving || isSampled { wake = min(wake, now + PairingRun.motionTick) }
                wake = min(
                    wake, closedAt.map { $0 + PairingRun.exitLinger } ?? deadline + PairingRun.deadlineGrace)
                let woken = try driver.turn(wakingBy: wake, alsoWatching: engine.wakeRead) { event, device in
                    self.handle(event, device[keyPath: self.state])
                }
                if woken {
                    for command in engine.takeCommands() {
                        switch command {
                        case .answer(let answer, let candidate):
                            // Taken before a stop in the same batch: the stop declines instead.
                            guard stop == nil else { continue }
                            if let candidate {
                                // A candidate whose session ended since the answer was posted is
                                // answered by nobody: never by another candidate.
                                guard let peer = asked.first(where: { $0.description == candidate }) else {
                                    engine.setPendingCandidates(asked)
                                    continue
                                }
                                driver.device.decide(Self.decision(answer), for: peer, at: now)
                                if answer == .decline {
                                    asked.removeAll { $0 == peer }
                                } else {
                                    asked.removeAll()
                                }
                            } else {
                                // Another candidate asked about since the answer was posted: the
                                // answer no longer says with whom, and only a decline (of all) stands.
                                guard asked.count <= 1 || answer == .decline else {
                                    engine.setPendingCandidates(asked)
                                    continue
                                }
                                driver.device.decide(Self.decision(answer), at: now)
                                asked.removeAll()
                            }
                            send(builder.answered(answer, candidate: candidate, core.snapshot))
                        case .move(let pose):
                            guard let moved = movement.step(to: pose) else { continue }
                            driver.device.updatePose(moved, at: now)
                            send(builder.moved(core.snapshot))
                        case .stop(let reason, let detail):
                            if stop == nil { stop = (reason, detail) }
                        }
                    }
                }
                if let stop, !driver.device.isClosed {
                    try endEarly()
                    finish(
                        reason: stop.reason, detail: stop.detail, closeReason: nil,
                        captureError: captureError())
                    return
                }
                let current = now
                if let pose = movement.advance(to: current) { driver.device.updatePose(pose, at: current) }
                if case .sampled(let sample) = engine.configuration.motion,
                    current - sampledAt >= PairingRun.motionTick
                {
                    sampledAt = current
                    let pose = sample(current - .zero)
                    if movement.step(to: pose) != nil { driver.device.updatePose(pose, at: current) }
                }
                try flush()
                if driver.device.isClosed {
                    if closedAt == nil { closedAt = current }
                    if driver.device.nextDeadline == nil
                        || current >= (closedAt ?? current) + PairingRun.exitLinger
                        || current >= deadline + PairingRun.deadlineGrace || stop != nil
                    {
                        break
                    }
                } else if current >= deadline + PairingRun.deadlineGrace {
                    // Not reached while the core keeps its overall limit, which closes the device
                    // in every state; kept so that the run ends on time all the same.
                    timedOut = lastSessionFailure == .outOfRange ? .outOfRange : .timeout(.noExchange)
                    break
                }
            }
            let reason = timedOut ?? core.closedReason ?? .timeout(.noExchange)
            let nothingMoved = reason == .exchanged && receivedCard == nil && !cardAcknowledged
            finish(
                reason: nothingMoved ? .nothingExchanged : SnapshotBuilder.outcomeReason(reason),
                detail: nothingMoved ? "nothing exchanged: both sides only receive" : reason.description,
                closeReason: reason, captureError: captureError())
        }

        private var isSampled: Bool {
            if case .sampled = engine.configuration.motion { return true }
            return false
        }

        /// Cancels a device still running: a live session sends CLOSE(declined) (with
        /// CONSENT(decline) if a question was pending), and the run stays until the core has
        /// nothing left to do, at most ``PairingRun/exitLinger``, answering the close.
        private func endEarly() throws {
            engine.setPendingCandidates([])
            driver.device.cancel(at: now)
            try flush()
            let end = now + PairingRun.exitLinger
            while let due = driver.device.nextDeadline, now < end {
                _ = try driver.turn(wakingBy: min(due, end), alsoWatching: nil) { event, device in
                    self.handle(event, device[keyPath: self.state])
                }
            }
        }

        private func finish(
            reason: PairingOutcome.Reason, detail: String?, closeReason: CloseReason?,
            captureError: PairingError?
        ) {
            var outcome = PairingOutcome(
                reason: reason, detail: detail, hint: nil, closeReason: closeReason, card: nil,
                cardAcknowledged: cardAcknowledged, unanswered: unanswered, savedPath: nil,
                captureError: captureError,
                traffic: Self.trafficLine(core.counters, host: engine.host.statistics))
            // The card is the outcome only of an exchange; an interrupted run reports none.
            if closeReason == .exchanged { outcome.card = receivedCard }
            var last = builder.closed(outcome, core.snapshot)
            if let closeReason, reason != .nothingExchanged {
                let hint = SnapshotBuilder.hint(
                    for: closeReason, snapshot: last, peersSeen: core.snapshot.peersSeen)
                last.outcome?.hint = hint
            }
            engine.channel.send(last)
            engine.channel.finish()
        }

        private func flush() throws {
            try driver.flush { event, device in self.handle(event, device[keyPath: self.state]) }
        }

        private func handle(_ event: DeviceEvent, _ device: Device) {
            switch event {
            case .connecting(_, let isInitiator):
                initiator = isInitiator
            case .secured:
                if case .approach = engine.configuration.motion {
                    movement.startApproach(initiator: initiator, at: now)
                }
            case .cardReceived(let card, _):
                receivedCard = card
            case .acknowledged:
                cardAcknowledged = true
            case .consentRequested(let peer):
                asked.append(peer)
                engine.setPendingCandidates(asked)
                send(
                    builder.asked(
                        peer: peer, timeoutSeconds: consentSeconds(),
                        offersCard: engine.configuration.card != nil, device.snapshot))
                return
            case .peerRemembered(let peer):
                send(
                    builder.remembered(
                        peer, fingerprint: KnownPeersStore.fingerprint(peer), storeError: remember(peer),
                        device.snapshot))
                return
            case .sessionEnded(let peer, let reason):
                // Only the end of a session asked withdraws its question.
                if asked.contains(peer) {
                    asked.removeAll { $0 == peer }
                    engine.setPendingCandidates(asked)
                }
                lastSessionFailure = reason
            case .closed(let reason):
                if !asked.isEmpty {
                    // No question stays on screen once the device closed, however it closed.
                    builder.unanswered()
                    if reason == .timeout(.consent) { unanswered = true }
                }
                asked.removeAll()
                engine.setPendingCandidates([])
            case .advertising, .peerFound, .peerBusy, .ranging, .inRange, .exchanging, .cardVerified,
                .datagramRejected, .verified, .pairingInterrupted, .knownPeerMismatch, .incompatiblePeer:
                break
            }
            send(builder.event(event, device.snapshot))
        }

        /// How long the question just asked waits: the core's consent timeout, or less when the
        /// run's timeout comes first.
        private func consentSeconds() -> Int {
            let left = now < deadline ? deadline - now : .zero
            return Int(min(Timeouts().consent, left).components.seconds)
        }

        /// Keeps a peer the exchange completed with; why the store could not take it, or nil (the
        /// exchange happened all the same).
        private func remember(_ peer: KnownPeer) -> String? {
            switch engine.configuration.knownPeers {
            case .memory(let list):
                list.remember(peer)
                return nil
            case .file(let path):
                do {
                    try KnownPeersStore.remember(peer, at: path)
                    return nil
                } catch {
                    return "\(error)"
                }
            }
        }

        static func decision(_ answer: ConsentAnswer) -> ConsentDecision {
            switch answer {
            case .share: .share
            case .receiveOnly: .receiveOnly
            case .decline: .decline
            }
        }

        /// One line of traffic counters: what was dropped, by reason, and what was resent.
        static func trafficLine(_ counters: DeviceCounters, host: UDPHost.Statistics) -> String {
            let dropped = ProtocolError.Code.allCases.compactMap { code -> String? in
                let count = counters.rejected(code)
                return count > 0 ? "\(code.name) \(count)" : nil
            }
            return
                "datagrams: received \(counters.datagramsReceived), accepted \(counters.datagramsAccepted), "
                + "dropped \(counters.datagramsRejected)"
                + (dropped.isEmpty ? "" : " (" + dropped.joined(separator: ", ") + ")")
                + ", sent \(counters.datagramsSent); resent: handshake \(counters.handshakeRetransmissions), "
                + "chunks \(counters.chunkRetransmissions); send failures \(host.sendFailures)"
        }
    }
}
