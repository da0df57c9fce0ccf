import ProfileDropCore

/// A device switched on at ``start`` (``Scenario/DeviceSpec/start``): until then it hears nothing,
/// sends nothing and asks only to be woken at ``start``; the last pose it was told meanwhile is
/// passed on when it comes on. The wrapped device is built with its clock at ``start``, so that its
/// timers count from then.
struct LateDevice<Inner: SansIODevice>: SansIODevice {
    /// The device once on.
    private(set) var inner: Inner
    /// When it comes on.
    let start: Instant
    /// Whether it is on.
    private var isOn = false
    /// The pose it was told while off.
    private var pendingPose: Pose?

    init(_ inner: Inner, start: Instant) {
        self.inner = inner
        self.start = start
    }

    var deviceID: DeviceID { inner.deviceID }
    var nextDeadline: Instant? { isOn ? inner.nextDeadline : start }
    var isClosed: Bool { isOn && inner.isClosed }

    /// Comes on if `time` is its start or later.
    private mutating func switchOn(at time: Instant) {
        guard !isOn, time >= start else { return }
        isOn = true
        if let pose = pendingPose { inner.updatePose(pose, at: time) }
        pendingPose = nil
    }

    mutating func handleDatagram(_ bytes: [UInt8], from source: PeerAddress, at time: Instant) {
        switchOn(at: time)
        if isOn { inner.handleDatagram(bytes, from: source, at: time) }
    }

    mutating func handleTimeout(at time: Instant) {
        switchOn(at: time)
        if isOn { inner.handleTimeout(at: time) }
    }

    mutating func updatePose(_ pose: Pose, at time: Instant) {
        switchOn(at: time)
        if isOn { inner.updatePose(pose, at: time) } else { pendingPose = pose }
    }

    mutating func decide(_ decision: ConsentDecision, at time: Instant) {
        switchOn(at: time)
        if isOn { inner.decide(decision, at: time) }
    }

    mutating func decide(_ decision: ConsentDecision, for peer: DeviceID, at time: Instant) {
        switchOn(at: time)
        if isOn { inner.decide(decision, for: peer, at: time) }
    }

    mutating func cancel(at time: Instant) {
        // An owner who quits before switching on still ends the run: the device comes on to close.
        switchOn(at: max(time, start))
        inner.cancel(at: max(time, start))
    }

    mutating func pollTransmit() -> OutgoingDatagram? { isOn ? inner.pollTransmit() : nil }
    mutating func pollEvent() -> DeviceEvent? { isOn ? inner.pollEvent() : nil }

    mutating func takeOutput(datagrams: inout [OutgoingDatagram], events: inout [DeviceEvent])
        -> DeviceStatus
    {
        guard isOn else { return DeviceStatus(nextDeadline: start, isClosed: false) }
        return inner.takeOutput(datagrams: &datagrams, events: &events)
    }
}

extension LateDevice where Inner == Device {
    /// The device's traffic counters.
    var counters: DeviceCounters { inner.counters }
}

/// `device` as it runs in the room: wrapped to come on at `start` when that is after time zero.
/// Taken over, not borrowed: returned as it is, its box is not copied (a whole ``Device``).
func switchedOn(_ device: consuming any SansIODevice, at start: Instant) -> any SansIODevice {
    guard start > .zero else { return device }
    func late(_ device: some SansIODevice) -> any SansIODevice { LateDevice(device, start: start) }
    return late(device)
}

/// The counters of a simulated core device, late or not; nil for any other kind of device.
func coreCounters(_ device: any SansIODevice) -> DeviceCounters? {
    // A bare device is read in place: a cast would copy it whole.
    if let counters = device.withCoreDevice({ $0.counters }) { return counters }
    if let late = device as? LateDevice<Device> { return late.counters }
    return nil
}
