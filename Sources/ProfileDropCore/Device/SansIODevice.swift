/// The one interface every driver uses to run a device: the share loop on real sockets, the
/// simulator in virtual time, and the capture and test wrappers that compose over it.
///
/// ``Device`` conforms; a wrapper does its own work on the way (recording for a capture, altering
/// datagrams for a test) and forwards the rest, through ``WrappingDevice`` where it changes little.
/// A driver feeds inputs, each stamped with the current time, then drains ``pollTransmit()`` and
/// ``pollEvent()`` (or takes everything at once with ``takeOutput(datagrams:events:)``) before it
/// waits again, and wakes the device at ``nextDeadline`` with ``handleTimeout(at:)``.
public protocol SansIODevice {
    /// The per-run identifier the device announces, by which peers' events name it.
    var deviceID: DeviceID { get }
    /// When ``handleTimeout(at:)`` must be called next; nil when nothing is pending.
    var nextDeadline: Instant? { get }
    /// Whether the device reached its terminal state. A closed device may still need datagrams and
    /// deadlines for a while, to answer a late close from its peer.
    var isClosed: Bool { get }

    /// Hands the device one received datagram from `source`.
    mutating func handleDatagram(_ bytes: [UInt8], from source: PeerAddress, at time: Instant)
    /// Runs every timer due at or before `time`.
    mutating func handleTimeout(at time: Instant)
    /// Tells the device where it now is.
    mutating func updatePose(_ pose: Pose, at time: Instant)
    /// Passes on the owner's answer to a consent request.
    mutating func decide(_ decision: ConsentDecision, at time: Instant)
    /// Passes on the owner's answer about one of the candidates asked about at once.
    mutating func decide(_ decision: ConsentDecision, for peer: DeviceID, at time: Instant)
    /// The owner stops the device (quits, or the process is interrupted): a live session tells
    /// the peer at once, and the device closes.
    mutating func cancel(at time: Instant)
    /// The next datagram to send, or nil when there is none.
    mutating func pollTransmit() -> OutgoingDatagram?
    /// The next event, or nil when there is none.
    mutating func pollEvent() -> DeviceEvent?
    /// Appends every pending datagram to `datagrams` and every pending event to `events`, in the
    /// order ``pollTransmit()`` and ``pollEvent()`` would give them, and returns what the driver
    /// reads next: ``nextDeadline`` and ``isClosed``.
    ///
    /// A driver that runs many devices behind `any SansIODevice` reads a device's whole output in
    /// one call rather than one call per item. The default implementation is built from the
    /// methods above, so a wrapper that forwards them is drained correctly without its own.
    mutating func takeOutput(datagrams: inout [OutgoingDatagram], events: inout [DeviceEvent])
        -> DeviceStatus

    /// What `body` reads from this device if it is a bare ``Device``, read where it lies; nil for
    /// any other device (the default, wrappers included).
    ///
    /// A driver holding `any SansIODevice` reads a core device's state (its counters, the peers it
    /// asks about) this way rather than by a cast, which copies the whole device out of its box.
    func withCoreDevice<Result>(_ body: (borrowing Device) -> Result) -> Result?
}

/// What a driver reads from a device after draining it, besides its datagrams and events.
public struct DeviceStatus: Sendable, Equatable {
    /// When ``SansIODevice/handleTimeout(at:)`` must be called next; nil when nothing is pending.
    public var nextDeadline: Instant?
    /// Whether the device reached its terminal state (``SansIODevice/isClosed``).
    public var isClosed: Bool

    /// Creates a status.
    public init(nextDeadline: Instant?, isClosed: Bool) {
        self.nextDeadline = nextDeadline
        self.isClosed = isClosed
    }
}

extension SansIODevice {
    /// Drains ``pollTransmit()`` and then ``pollEvent()``, then reads ``nextDeadline`` and
    /// ``isClosed``.
    public mutating func takeOutput(datagrams: inout [OutgoingDatagram], events: inout [DeviceEvent])
        -> DeviceStatus
    {
        while let datagram = pollTransmit() { datagrams.append(datagram) }
        while let event = pollEvent() { events.append(event) }
        return DeviceStatus(nextDeadline: nextDeadline, isClosed: isClosed)
    }
}

extension SansIODevice {
    /// Nil: not a bare ``Device``.
    public func withCoreDevice<Result>(_ body: (borrowing Device) -> Result) -> Result? { nil }
}

extension Device: SansIODevice {
    /// `body` applied to this device.
    public func withCoreDevice<Result>(_ body: (borrowing Device) -> Result) -> Result? { body(self) }
}

/// A wrapper that changes part of what the device it wraps does (what it hears, where it stands,
/// what it sends) and passes every other call on unchanged.
///
/// A conforming type implements only what it changes. ``SansIODevice/takeOutput(datagrams:events:)``
/// is deliberately not forwarded: the default builds it from ``SansIODevice/pollTransmit()`` and
/// ``SansIODevice/pollEvent()``, so a wrapper that alters what it polls is drained through its own
/// code rather than around it. Nor is ``SansIODevice/withCoreDevice(_:)``: a wrapper is not a bare
/// ``Device``.
public protocol WrappingDevice: SansIODevice {
    /// The type of the wrapped device.
    associatedtype Inner: SansIODevice
    /// The wrapped device.
    var inner: Inner { get set }
}

extension WrappingDevice {
    public var deviceID: DeviceID { inner.deviceID }
    public var nextDeadline: Instant? { inner.nextDeadline }
    public var isClosed: Bool { inner.isClosed }

    public mutating func handleDatagram(_ bytes: [UInt8], from source: PeerAddress, at time: Instant) {
        inner.handleDatagram(bytes, from: source, at: time)
    }
    public mutating func handleTimeout(at time: Instant) { inner.handleTimeout(at: time) }
    public mutating func updatePose(_ pose: Pose, at time: Instant) { inner.updatePose(pose, at: time) }
    public mutating func decide(_ decision: ConsentDecision, at time: Instant) {
        inner.decide(decision, at: time)
    }
    public mutating func decide(_ decision: ConsentDecision, for peer: DeviceID, at time: Instant) {
        inner.decide(decision, for: peer, at: time)
    }
    public mutating func cancel(at time: Instant) { inner.cancel(at: time) }
    public mutating func pollTransmit() -> OutgoingDatagram? { inner.pollTransmit() }
    public mutating func pollEvent() -> DeviceEvent? { inner.pollEvent() }
}
