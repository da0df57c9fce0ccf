import ProfileDropCrypto

/// What every session needs from its device: configuration, time, randomness, pose, and the
/// queues its outputs go to.
struct SessionContext {
    let configuration: DeviceConfiguration
    let deviceID: DeviceID
    var random: any RandomSource
    /// The simulated ranging sensor's noise (``MeasurementModel``): a stream of its own, seeded
    /// from `random` as the device starts, so that what the protocol draws (ids, keys, jitter)
    /// never shifts it. Two runs of one seed that differ only in the protocol's draws (an
    /// attacker's sessions before the partner's, a changed rule) measure the same noise, round
    /// for round.
    var measurementNoise: DeterministicRandom
    var now: Instant
    var pose: Pose
    var outbox = Queue<OutgoingDatagram>()
    var events = Queue<DeviceEvent>()
    var counters = DeviceCounters()
    /// Session outcomes as they are decided, for the device to act on.
    var outcomes = Queue<SessionOutcome>()
    /// One frame list for every packet opened or built, lent out by ``withFrameList(_:)`` (use
    /// that, not this): an array per packet was one in eight of an exchange's allocations.
    var frameList: [Frame] = []

    var timeouts: Timeouts { configuration.timeouts }
    var limits: Limits { configuration.limits }

    mutating func send(_ packet: Packet, to destination: Destination) {
        outbox.push(OutgoingDatagram(destination: destination, bytes: packet.encoded()))
    }

    /// Sends a PROBE with `challenge` to `address` and counts it (PROTOCOL.md 5, "Return
    /// routability"): an invitation's, again or ahead of one.
    mutating func sendProbe(_ challenge: UInt64, to address: PeerAddress) {
        send(.probe(Probe(challenge: challenge)), to: .unicast(address))
        counters.probesSent += 1
    }

    mutating func emit(_ event: DeviceEvent) { events.push(event) }

    /// Lends `body` the reusable frame list, empty, with the context; the list is emptied again
    /// afterwards, keeping its capacity.
    mutating func withFrameList<Result, Failure: Error>(
        _ body: (inout [Frame], inout SessionContext) throws(Failure) -> Result
    ) throws(Failure) -> Result {
        var frames: [Frame] = []
        swap(&frames, &frameList)
        defer {
            frames.removeAllKeepingStorage()
            swap(&frames, &frameList)
        }
        return try body(&frames, &self)
    }

    /// A uniformly random duration in `range`.
    mutating func randomDuration(in range: ClosedRange<Duration>) -> Duration {
        let low = range.lowerBound.nanosecondsClamped
        let high = range.upperBound.nanosecondsClamped
        guard high > low else { return range.lowerBound }
        let span = high - low
        let offset = span == .max ? random.nextUInt64() : random.uniform(below: span + 1)
        return .nanoseconds(Int64(clamping: low + offset))
    }

    /// `base` scaled by a random factor in `[1 - spread, 1 + spread]`.
    mutating func jittered(_ base: Duration, spread: Double = 0.1) -> Duration {
        let factor = 1 - spread + 2 * spread * random.unitDouble()
        let scaled = min(Double(base.nanosecondsClamped) * factor, Double(Int64.max / 2))
        return .nanoseconds(Int64(max(scaled, 0)))
    }
}

extension Duration {
    /// `self * 2^exponent`, saturating at `cap`.
    func doubled(_ exponent: Int, cap: Duration) -> Duration {
        var value = self
        for _ in 0..<max(exponent, 0) {
            value = value + value  // Not `* 2`: the generic 128-bit multiplication costs more.
            if value >= cap { return cap }
        }
        return min(value, cap)
    }
}
