/// Discovery's multicast voice (PROTOCOL.md section 4): our BEACON on its doubling schedule, an
/// extra one when we moved, QUERYs on their own schedule, and a delayed BEACON in answer to a
/// QUERY, with mDNS-like etiquette. It knows where we are, and nothing of the peers but the ids a
/// QUERY lists as already known.
struct Announcer {
    private let deviceID: DeviceID
    private let port: UInt16
    private var announceAt: Instant
    private var announceCount = 0
    private var queryAt: Instant
    private var queryCount = 0
    /// A BEACON due in answer to a QUERY.
    private(set) var answerAt: Instant?
    private var lastBeaconAt: Instant?
    /// The sequence number of our next beacon.
    private var sequence: UInt32
    /// Where we are, as the device last told us.
    private(set) var pose: Pose
    /// How far an asker may be, by its position, and still be answered: the far-abort distance.
    private let reach: Double
    /// The position our latest beacon gave.
    private var announcedPosition: PositionHint?
    /// An extra beacon, due because we moved since the latest one.
    private(set) var motionAnnounceAt: Instant?

    /// How far we move from the position our latest beacon gave before we announce again, and how
    /// soon after a beacon such an extra one may go: a peer's hint is never staler than this
    /// distance for longer than this time (PROTOCOL.md section 4).
    static let motionStep: Double = 5
    static let motionAnnounceGap: Duration = .milliseconds(500)
    /// The least time between two of our BEACONs: two sent closer together can arrive in the other
    /// order, and the older one's lower sequence number would make every receiver take our address
    /// for contested (PROTOCOL.md section 4).
    static let minimumBeaconGap: Duration = .milliseconds(100)

    /// An announcer whose first BEACON is due at `announceAt` and first QUERY at `queryAt`, and
    /// whose BEACONs count from `sequence`. The caller draws the three, in the order the device's
    /// random stream fixes.
    init(
        deviceID: DeviceID, port: UInt16, announceAt: Instant, queryAt: Instant, sequence: UInt32, pose: Pose,
        reach: Double
    ) {
        self.deviceID = deviceID
        self.port = port
        self.announceAt = announceAt
        self.queryAt = queryAt
        self.sequence = sequence
        self.pose = pose
        self.reach = reach
    }

    /// Notes that we moved. Once we are ``motionStep`` from the position our latest beacon gave,
    /// an extra beacon goes out (if `announcing`), at most one per ``motionAnnounceGap``, so that
    /// peers do not judge our reach on a stale position.
    mutating func moved(to newPose: Pose, announcing: Bool, context: SessionContext) {
        pose = newPose
        guard announcing, motionAnnounceAt == nil, let announced = announcedPosition,
            announced.distance(to: newPose) >= Self.motionStep
        else { return }
        motionAnnounceAt = max(context.now, (lastBeaconAt ?? context.now) + Self.motionAnnounceGap)
    }

    /// The earliest of our BEACON, QUERY and answer timers.
    @inline(__always)
    var nextDeadline: Instant {
        var deadline = min(announceAt, queryAt)
        if let answerAt { deadline = min(deadline, answerAt) }
        if let motionAnnounceAt { deadline = min(deadline, motionAnnounceAt) }
        return deadline
    }

    /// Stops answering: a closed discovery sends nothing more.
    mutating func close() { answerAt = nil }

    /// Sends what is due: the scheduled BEACON, the extra one after a move, a delayed answer, and
    /// the QUERY, which lists `knownAnswers()` (asked only when a QUERY goes out). BEACONs say
    /// whether the device is `busy` (it takes nobody else); a device holding a session (`quiet`)
    /// sends no QUERY.
    mutating func runTimers(
        busy: Bool, quiet: Bool, knownAnswers: () -> [DeviceID], context: inout SessionContext
    ) {
        let now = context.now
        if now >= announceAt {
            // Skipped right after another BEACON (an extra one after a move), which said the same;
            // the schedule goes on.
            if !sentBeaconRecently(now) { sendBeacon(busy: busy, context: &context) }
            let interval = context.timeouts.announceInitial.doubled(
                announceCount, cap: context.timeouts.announceCap)
            announceCount += 1
            announceAt = now + context.jittered(interval)
        }
        if let due = motionAnnounceAt, now >= due {
            motionAnnounceAt = nil
            // Right after another BEACON, which gave a position at most that old, it is moot.
            if !sentBeaconRecently(now) { sendBeacon(busy: busy, context: &context) }
        }
        if let due = answerAt, now >= due {
            answerAt = nil
            // Suppressed if a beacon went out meanwhile (the asker heard it).
            if lastBeaconAt.map({ now - $0 >= context.timeouts.answerSuppression }) ?? true {
                sendBeacon(busy: busy, context: &context)
            }
        }
        if now >= queryAt {
            // A device holding a session asks for no answers: the BEACONs it hears keep its table
            // fresh, and a peer it has not heard yet announces itself within its own schedule. The
            // schedule runs on meanwhile.
            if !quiet {
                context.send(
                    .query(
                        Query(deviceID: deviceID, position: PositionHint(pose), knownAnswers: knownAnswers())),
                    to: .multicast)
            }
            let interval = context.timeouts.queryInitial.doubled(queryCount, cap: context.timeouts.queryCap)
            queryCount += 1
            queryAt = now + context.jittered(interval)
        }
    }

    private func sentBeaconRecently(_ now: Instant) -> Bool {
        lastBeaconAt.map { now - $0 < Self.minimumBeaconGap } ?? false
    }

    private mutating func sendBeacon(busy: Bool, context: inout SessionContext) {
        let position = PositionHint(pose)
        context.send(
            .beacon(
                Beacon(deviceID: deviceID, port: port, busy: busy, sequence: sequence, position: position)),
            to: .multicast)
        announcedPosition = position
        motionAnnounceAt = nil
        // Drawn below 2^31 and one more per beacon: 2^31 beacons, decades of them, before it wraps.
        sequence &+= 1
        lastBeaconAt = context.now
    }

    /// Schedules a delayed beacon in answer to a query that does not already list us.
    mutating func receive(_ query: Query, context: inout SessionContext) {
        guard answerAt == nil, !query.knownAnswers.contains(deviceID) else { return }
        // Only a device that could pair with the asker answers: in a full room the rest would be a
        // storm, and the asker hears them at their next beacon anyway.
        if let position = query.position, position.distance(to: pose) > reach { return }
        if let last = lastBeaconAt, context.now - last < context.timeouts.answerSuppression { return }
        answerAt = context.now + context.randomDuration(in: context.timeouts.queryResponseDelay)
    }
}
