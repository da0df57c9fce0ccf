import ProfileDropCrypto

/// One ProfileDrop device: its discovery session and at most one exchange session, as a sans-IO
/// state machine.
///
/// The driver feeds it inputs, each stamped with the current time, and drains its outputs:
///
/// ```swift
/// var device = Device(configuration: config, random: SystemRandom(), now: clock.now, localAddress: me)
/// // on every input: handleDatagram / handleTimeout / updatePose / decide, then
/// while let datagram = device.pollTransmit() { send(datagram) }
/// while let event = device.pollEvent() { show(event) }
/// // and arm one timer for device.nextDeadline; on expiry call handleTimeout(at:).
/// ```
///
/// The device never reads a clock, opens a socket or draws global randomness: time comes with every
/// input, datagrams go out through ``pollTransmit()``, and randomness comes from the injected
/// source, so a seeded source makes a run reproducible. Inputs with a time earlier than a previous
/// input are treated as happening at the latest time seen.
///
/// Drivers use it through ``SansIODevice``, which wrappers (capture, impairment) also conform to.
public struct Device {
    /// The configuration it was created with.
    public let configuration: DeviceConfiguration
    /// Our random per-run identifier, announced in beacons.
    public let deviceID: DeviceID
    /// The address our unicast socket is bound to.
    public let localAddress: PeerAddress

    var context: SessionContext
    /// When the overall limit ends the device: its start plus `timeouts.overall`, computed once.
    let overallLimitAt: Instant
    var discovery: DiscoverySession
    /// Every session the device holds, live, half-open or lingering, indexed for routing.
    var sessions = SessionTable()
    /// The live sessions, whose outcome is not yet decided: at most one invitation of ours awaiting
    /// ACCEPT, and up to ``InvitationArbiter/maxCandidates`` secured sessions (PROTOCOL.md 5,
    /// "Candidates"); every agreed one may transfer, and the first exchange ends the device.
    var live: [ExchangeSession] { sessions.live }
    /// A BUSY for our invitation, believed only if the invitee's ACCEPT has not come by its end.
    var heldRefusal: HeldRefusal?
    /// INVITEs we accepted whose CONFIRM has not arrived, side by side (PROTOCOL.md 5).
    var halfOpen: HalfOpenHandshakes { sessions.halfOpen }
    /// Sessions that ended and are still closing or draining; bounded.
    var lingering: [ExchangeSession] { sessions.lingering }
    var closeReason: CloseReason?
    /// Budgets of unsolicited datagrams (PROTOCOL.md section 7).
    var admission: Admission
    /// Devices of another protocol version already reported, oldest first; bounded.
    var incompatiblePeers: [DeviceID] = []
    /// Addresses proven to receive, and the credit that pays for PROBEs to the others
    /// (PROTOCOL.md 5, "Return routability").
    var routability = ReturnRoutability()

    /// Sessions kept closing or draining after they ended.
    static let maxLingering = SessionTable.maxLingering

    /// Creates a device and starts its discovery session at `now`.
    ///
    /// - Parameters:
    ///   - configuration: card, consent policy, static key, timers, limits, proximity settings.
    ///   - random: every random choice (device id, session ids, tokens, ephemeral keys, jitter)
    ///     comes from here, and so does the seed of the measurement noise's own stream, drawn
    ///     right after the device id; it is stored as an existential.
    ///   - now: the start time.
    ///   - localAddress: where our unicast socket listens; its port goes into beacons.
    public init(
        configuration: DeviceConfiguration, random: some RandomSource, now: Instant, localAddress: PeerAddress
    ) {
        var random: any RandomSource = random
        let deviceID = DeviceID(rawValue: random.nextUInt64())
        let measurementNoise = DeterministicRandom(seed: random.nextUInt64())
        self.configuration = configuration
        self.deviceID = deviceID
        self.localAddress = localAddress
        self.overallLimitAt = now + configuration.timeouts.overall
        var context = SessionContext(
            configuration: configuration, deviceID: deviceID, random: random,
            measurementNoise: measurementNoise, now: now,
            pose: Pose(x: 0, y: 0, heading: 0))
        self.discovery = DiscoverySession(deviceID: deviceID, port: localAddress.port, context: &context)
        context.emit(.advertising)
        self.context = context
        self.admission = Admission(
            limits: configuration.limits,
            // The table, the live sessions (the candidates and our invitation), those closing and
            // the proven addresses.
            knownSources: configuration.limits.maxPeers + InvitationArbiter.maxCandidates + 1
                + Self.maxLingering + ReturnRoutability.maxProven)
        runTimers()
    }

    /// Handles one received UDP datagram (multicast or unicast) from `source`.
    ///
    /// Malformed, unauthenticated, replayed or unexpected datagrams are dropped, counted in
    /// ``counters`` and reported as ``DeviceEvent/datagramRejected(reason:)``; they never change
    /// session state. (Our own multicast beacons looping back are counted but not reported.)
    public mutating func handleDatagram(_ bytes: [UInt8], from source: PeerAddress, at time: Instant) {
        advanceClock(to: time)
        context.counters.datagramsReceived += 1
        do {
            try receive(bytes, from: source)
            context.counters.datagramsAccepted += 1
        } catch {
            context.counters.countRejection(error.code)
            if error.code != .ownDatagram { context.emit(.datagramRejected(reason: error)) }
        }
        afterInput()
    }

    /// Runs every timer due at or before `time`. Call it when `time >= nextDeadline`; calling it
    /// early is harmless.
    public mutating func handleTimeout(at time: Instant) {
        advanceClock(to: time)
        runTimers()
        afterInput()
    }

    /// Tells the device where it now is (simulated position in centimetres and heading in
    /// degrees). RANGING frames carry the latest pose, and proximity is measured against it.
    public mutating func updatePose(_ pose: Pose, at time: Instant) {
        advanceClock(to: time)
        context.pose = pose
        discovery.moved(to: pose, context: context)
        afterInput()
    }

    /// The user's answer after ``DeviceEvent/consentRequested(peer:)``, for the one candidate
    /// asked about. With several on screen at once (PROTOCOL.md 5, "Candidates") a decline
    /// declines every one of them, and sharing or receiving is ignored: it must name its
    /// candidate (``decide(_:for:at:)``). Ignored when no request is pending.
    public mutating func decide(_ decision: ConsentDecision, at time: Instant) {
        advanceClock(to: time)
        let asked = live.indices.filter { live[$0].isAskingUser }
        if asked.count == 1, let only = asked.first {
            sessions[live: only].decide(decision, context: &context)
        } else if decision == .decline {
            // Each ends as our decline; the last one ends the device unless another candidate
            // (one still ranging or verifying) is held.
            for index in asked { sessions[live: index].decide(.decline, context: &context) }
        }
        afterInput()
    }

    /// The user's answer about the candidate `peer` (``DeviceEvent/consentRequested(peer:)``),
    /// one of the candidates asked about at once. Sharing or receiving declines every other
    /// candidate asked about, as our decline that does not end the device; declining ends only
    /// that candidate's session, and the device only if it holds no other candidate. Ignored
    /// when no request about `peer` is pending.
    public mutating func decide(_ decision: ConsentDecision, for peer: DeviceID, at time: Instant) {
        advanceClock(to: time)
        if let picked = live.firstIndex(where: { $0.peer == peer && $0.isAskingUser }) {
            sessions[live: picked].decide(decision, context: &context)
            if decision != .decline {
                for index in live.indices where index != picked && live[index].isAskingUser {
                    sessions[live: index].decide(.decline, endsDevice: false, context: &context)
                }
            }
        }
        afterInput()
    }

    /// The peers asked about right now, in the order they were asked: the candidates on screen.
    public var askedPeers: [DeviceID] {
        live.indices.compactMap { live[$0].isAskingUser ? live[$0].peer : nil }
    }

    /// The owner stops the device: a live session is closed as declined by us, with
    /// CLOSE(declined) (and CONSENT(decline) first if we had not decided), so the peer learns it
    /// within a round trip instead of waiting out its timers; a handshake is dropped. The device
    /// then closes with `declined by us`, and its session retransmits its CLOSE and drains as
    /// usual. Ignored once the device closed.
    public mutating func cancel(at time: Instant) {
        advanceClock(to: time)
        stopForOwner()
        afterInput()
    }

    /// The next datagram to send, or nil when there is none.
    public mutating func pollTransmit() -> OutgoingDatagram? {
        guard let datagram = context.outbox.pop() else { return nil }
        context.counters.datagramsSent += 1
        context.counters.bytesSent += datagram.bytes.count
        return datagram
    }

    /// The next event, or nil when there is none.
    public mutating func pollEvent() -> DeviceEvent? {
        context.events.pop()
    }

    /// When ``handleTimeout(at:)`` must be called next; nil once the device is closed and every
    /// session has finished draining.
    public var nextDeadline: Instant? {
        // Asked after every input, so no closure over the running minimum.
        var deadline: Instant?
        for index in live.indices {
            deadline = Instant.earliest(deadline, live[index].nextDeadline)
        }
        if closeReason == nil {
            deadline = Instant.earliest(deadline, discovery.nextDeadline)
            deadline = Instant.earliest(deadline, halfOpen.nextDeadline(now: context.now))
            deadline = Instant.earliest(deadline, heldRefusal?.until)
            // The overall limit ends the device whatever its sessions are doing.
            deadline = Instant.earliest(deadline, overallLimitAt)
            // A fresh half-open handshake holds invitations back; its end is a deadline above.
            if mayInvite {
                deadline = Instant.earliest(deadline, discovery.nextInviteCandidateAt)
            }
        }
        for index in lingering.indices {
            deadline = Instant.earliest(deadline, lingering[index].nextDeadline)
        }
        return deadline
    }

    /// Whether the device has finished. It may still answer a late CLOSE while draining
    /// (``nextDeadline`` stays non-nil until then).
    public var isClosed: Bool { closeReason != nil }

    /// Why the device closed, once it has.
    public var closedReason: CloseReason? { closeReason }

    /// Traffic totals.
    public var counters: DeviceCounters { context.counters }

    /// Our latest pose.
    public var pose: Pose { context.pose }

    /// The time of the latest input.
    public var now: Instant { context.now }

    /// A display snapshot.
    public var snapshot: DeviceSnapshot {
        var snapshot = DeviceSnapshot(
            stage: .discovering, deviceID: deviceID, peer: discovery.ended.lastPeer, distanceCm: nil,
            bearingDeg: nil, sentChunks: 0, totalSendChunks: 0, receivedChunks: 0, totalReceiveChunks: 0,
            peersSeen: discovery.peerCount, closeReason: closeReason)
        if let focus { live[focus].fill(&snapshot) }
        if closeReason != nil { snapshot.stage = .closed }
        return snapshot
    }

    /// The coarse stage, for display.
    public var stage: DeviceStage { snapshot.stage }
}
