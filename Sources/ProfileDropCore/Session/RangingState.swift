/// Secured; measuring proximity.
struct RangingState {
    var link: Link
    var gate: ProximityGate
    /// When ranging began.
    let startedAt: Instant
    /// Consecutive raw measurements beyond ``Limits/farAbortDistance``.
    var consecutiveFar = 0
    /// The ranging window ends here: ``Timeouts/rangingWindow`` after the first RANGING from the
    /// peer (or after the handshake, if none arrives), so a slow link does not eat into it.
    var deadline: Instant
    /// Whether the window was already restarted at the first peer RANGING.
    var heardPeer = false
    /// The next RANGING frame and measurement.
    var sampleAt: Instant
}

extension ExchangeSession {
    /// Raw measurements in a row beyond the far distance that end ranging early.
    static let farSamples = 2

    /// Whether the peer is clearly too far to come into range soon: ``farSamples`` raw
    /// measurements in a row beyond the far distance, after the far-abort delay. (The gate's
    /// filtered estimate needs more samples; this only decides to stop trying, never to open.)
    func isFar(_ ranging: RangingState, context: SessionContext) -> Bool {
        context.now >= ranging.startedAt + context.timeouts.rangingFarAbort && !ranging.link.localInRange
            && ranging.consecutiveFar >= Self.farSamples
    }

    /// Sends RANGING with our pose and takes one proximity measurement of the peer.
    func rangingTick(_ ranging: inout RangingState, context: inout SessionContext) {
        let interval = context.configuration.measurement.sampleInterval
        ranging.link.rangingSequence &+= 1
        if !ranging.heardPeer, ranging.link.peerPose != nil {
            ranging.heardPeer = true
            ranging.deadline = max(ranging.deadline, context.now + context.timeouts.rangingWindow)
        }
        var sample: RangingSample?
        if let peerPose = ranging.link.peerPose, let heardAt = ranging.link.peerPoseAt,
            context.now - heardAt <= interval * 3
        {
            sample = context.configuration.measurement.sample(
                truePose: context.pose, peerPose: peerPose, random: &context.random)
        }
        ranging.gate.add(sample, at: context.now)
        if let sample {
            ranging.consecutiveFar =
                sample.distance > context.limits.farAbortDistance ? ranging.consecutiveFar + 1 : 0
        }
        if sample != nil, let estimate = ranging.gate.estimate {
            ranging.link.estimate = estimate
            context.emit(.ranging(distanceCm: estimate.distance, bearingDeg: estimate.bearing))
        }
        if ranging.gate.isOpen && !ranging.link.localInRange {
            ranging.link.localInRange = true
            context.emit(.inRange)
        }
        let frame = Frame.ranging(
            RangingFrame(
                sequence: ranging.link.rangingSequence, pose: context.pose, token: ranging.link.localToken))
        // Control frames first: the peer checks RANGING against the TOKEN in front of it.
        ranging.link.send(ranging.link.controlFrames() + [frame], context: &context)
        ranging.sampleAt = context.now + interval
        ranging.link.controlAt = ranging.sampleAt
    }
}
