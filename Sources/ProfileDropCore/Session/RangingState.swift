/// Secured; measuring proximity until both gates open. (Measuring goes on afterwards: the gate and
/// the ranging timer live in ``Link``.)
struct RangingState {
    /// When ranging began.
    let startedAt: Instant
    /// The ranging window's length (``Timeouts/rangingWindow``).
    let window: Duration
    /// Consecutive raw measurements beyond ``Limits/farAbortDistance``.
    var consecutiveFar = 0
    /// The ranging window ends here: ``Timeouts/rangingWindow`` after the first RANGING from the
    /// peer (or after the handshake, if none arrives), so a slow link does not eat into it.
    var deadline: Instant
    /// Whether the window was already restarted at the first peer RANGING.
    var heardPeer = false
}

extension RangingState: LiveState {
    /// Raw measurements in a row beyond the far distance that end ranging early. Three, not two:
    /// a reflection can read 50 cm at 7 cm, and two in a row ended about one meeting in 10,000 of
    /// a pair held together (MeasurementModelTests); a far peer is dropped 125 ms later instead.
    static let farSamples = 3

    /// Whether the peer is clearly too far to come into range soon: ``farSamples`` raw
    /// measurements in a row beyond the far distance, after the far-abort delay. (The gate's
    /// filtered estimate needs more samples; this only decides to stop trying, never to open.)
    @inline(__always)  // read in place: a call copied the 352-byte context for every round
    func isFar(link: Link, context: SessionContext) -> Bool {
        context.now >= startedAt + context.timeouts.rangingFarAbort && !link.localInRange
            && consecutiveFar >= Self.farSamples
    }

    /// Out of range once the window ends, unless our gate is open now: then only the peer's
    /// IN_RANGE is missing, and we wait for it up to one more window. The peer's own window bounds
    /// that wait too (it sends CLOSE(out of range) when it ends without its gate open), and so does
    /// our gate, which closes when the peer leaves or falls silent. Without this, a side whose gate
    /// opened early ended a session whose peer's gate opened late in its window, when that IN_RANGE
    /// was lost, though both stood in range (PROTOCOL.md 6.4).
    @inline(__always)  // read in place: a call copied the 920-byte link for every timer
    func expiry(link: Link, context: SessionContext) -> Transition? {
        if isFar(link: link, context: context) { return .outOfRange }
        return context.now >= windowEnd(link: link) ? .outOfRange : nil
    }

    /// When the window ends: its deadline, or one window later while our gate is open.
    private func windowEnd(link: Link) -> Instant {
        link.gate.isOpen ? deadline + window : deadline
    }

    /// A ranging round before both gates opened: RANGING goes out with the control frames. Until
    /// the responder is heard, the initiator sends CONFIRM again in front of them: the responder
    /// cannot open SECURE packets without it, and its ACCEPT retransmissions (which also prompt
    /// CONFIRM) back off to seconds while the ranging window runs.
    mutating func rangingRound(link: inout Link, context: inout SessionContext) {
        if let confirm = link.confirmDatagram, !link.heardFromPeer {
            context.outbox.push(
                OutgoingDatagram(destination: .unicast(link.channel.peerAddress), bytes: confirm))
        }
        if !heardPeer, link.peerPose != nil {
            heardPeer = true
            deadline = max(deadline, context.now + window)
        }
        if let sample = link.measure(context: &context) {
            consecutiveFar = sample.distance > context.limits.farAbortDistance ? consecutiveFar + 1 : 0
        }
        // Control frames first (``Link/flush(context:)``): the peer checks RANGING against the
        // TOKEN in front of it.
        link.pending.control = true
        link.pending.ranging = true
        link.peerSentFact = false
        link.controlAt = link.rangingAt
    }

    func handleTimeout(link: inout Link, context: inout SessionContext) -> Transition { .stay }

    func nextDeadline(link: Link) -> Instant { windowEnd(link: link) }

    /// Both gates open: on to consent.
    func advance(link: Link) -> Transition {
        link.localInRange && link.peerInRange ? .consent : .stay
    }
}

extension Link {
    /// One ranging round: takes a measurement of the peer from our true pose and the peer's latest
    /// pose (if heard within three ranging intervals), feeds the gate, latches IN_RANGE when the
    /// gate opens, and schedules the next round.
    /// - Returns: the raw measurement, or nil for a failed round.
    @discardableResult
    mutating func measure(context: inout SessionContext) -> RangingSample? {
        let interval = context.configuration.measurement.sampleInterval
        rangingSequence &+= 1
        var sample: RangingSample?
        // Three intervals, added: `Duration * Int` goes through the generic 128-bit multiplication.
        if let peerPose, let peerPoseAt, context.now - peerPoseAt <= interval + interval + interval {
            sample = context.configuration.measurement.sample(
                truePose: context.pose, peerPose: peerPose, random: &context.measurementNoise)
        }
        gate.add(sample, at: context.now)
        if let sample {
            measuredAt = context.now
            consecutiveOutside = gate.isOutsideLeavingBand(sample) ? consecutiveOutside + 1 : 0
        }
        if sample != nil, let estimate = gate.estimate {
            self.estimate = estimate
            context.emit(.ranging(distanceCm: estimate.distance, bearingDeg: estimate.bearing))
        }
        if gate.isOpen && !localInRange {
            localInRange = true
            context.emit(.inRange)
        }
        rangingAt = context.now + interval
        return sample
    }

    /// A ranging round once both gates opened (consenting, transferring): RANGING goes out behind
    /// the control frames when the peer sent a fact since our last ones, or when it still lacks one
    /// of ours that went out at least a round trip ago; otherwise alone. The control packets keep
    /// their own back-off. The round goes out anyway, and leaving the facts to that back-off (up
    /// to 1 s) cost a pair at 30 % loss its ranging window: the peer, still ranging, waited for
    /// our IN_RANGE.
    mutating func watchProximity(context: inout SessionContext) {
        measure(context: &context)
        pending.ranging = true
        guard !pending.control else { return }
        // A fact sent less than a round trip ago cannot have been acknowledged yet.
        let sinceControl = controlSentAt.map { context.now - $0 }
        let unanswered =
            sinceControl.map { $0 > .zero && $0.secondsDouble >= (roundTrip.smoothed ?? 0) } ?? true
        if peerSentFact || unanswered && !hasOnlyReceipt(context: &context) {
            pending.control = true
            peerSentFact = false
        }
    }

    /// RANGING with the current sequence number, our pose and our token.
    func rangingFrame(pose: Pose) -> Frame {
        .ranging(RangingFrame(sequence: rangingSequence, pose: pose, token: localToken))
    }

    /// Whether our measurements show that the peer left after our gate opened: the gate closed and
    /// the last ``ProximityGate/leavingSamples`` measurements all lie outside its leaving band. A
    /// gate that closed for want of samples (a lossy link, a partition) is no evidence either way:
    /// failed rounds neither count nor break the run.
    var peerLeft: Bool {
        localInRange && !gate.isOpen && consecutiveOutside >= ProximityGate.leavingSamples
    }
}
