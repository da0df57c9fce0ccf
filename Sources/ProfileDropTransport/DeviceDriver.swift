import ProfileDropCore

/// A datagram read from a socket, with its source as the core names it.
public struct ReceivedDatagram: Sendable, Equatable {
    /// The UDP payload (one byte longer than the protocol's limit when it was oversized).
    public var bytes: [UInt8]
    /// Where it came from.
    public var source: PeerAddress

    /// Creates a received datagram.
    public init(bytes: [UInt8], source: PeerAddress) {
        self.bytes = bytes
        self.source = source
    }
}

/// What ``DeviceDriver`` needs of a socket layer: a clock, a wait for readability, a receive and a
/// send. ``UDPHost`` is the real one; tests supply an in-memory one.
public protocol DatagramSocketLayer: AnyObject {
    /// The current time, on the clock deadlines are measured on.
    var now: Instant { get }
    /// Waits until a datagram or `descriptor` is readable or `deadline` passes, whichever is first.
    /// - Returns: whether `descriptor` is readable.
    func wait(until deadline: Instant, alsoWatching descriptor: Int32?) throws -> Bool
    /// Every datagram waiting now (possibly none).
    func receiveReady() throws -> [ReceivedDatagram]
    /// Sends one datagram.
    func send(_ datagram: OutgoingDatagram) throws
}

/// Runs a ``SansIODevice`` on a ``DatagramSocketLayer``: the one driver loop of `share`.
///
/// Each ``turn(wakingBy:alsoWatching:onEvent:)`` waits until a datagram arrives or the earlier of
/// the device's deadline and the caller's wake-up time, feeds every datagram that arrived, fires the
/// timeout if it is due, then sends every datagram the device queued and hands over every event.
/// So a reply leaves in the same turn as the datagram that caused it, before the loop waits again.
public struct DeviceDriver<Device: SansIODevice, Sockets: DatagramSocketLayer> {
    /// The device being driven. Inputs the caller gives it directly must be followed by ``flush(onEvent:)``.
    public var device: Device
    /// The socket layer.
    public let sockets: Sockets
    /// Turns taken so far.
    public private(set) var turns = 0

    /// Drives `device` on `sockets`.
    public init(device: Device, sockets: Sockets) {
        self.device = device
        self.sockets = sockets
    }

    /// The current time on the socket layer's clock.
    public var now: Instant { sockets.now }

    /// One turn of the loop. `wake` bounds the wait for the caller's own work (motion, display);
    /// the device's deadline bounds it too.
    /// - Parameters:
    ///   - descriptor: a further descriptor to wait on (standard input), which the caller reads.
    ///   - onEvent: receives each event with the device as it is after the turn's inputs.
    /// - Returns: whether `descriptor` is readable.
    public mutating func turn(
        wakingBy wake: Instant, alsoWatching descriptor: Int32? = nil,
        onEvent: (DeviceEvent, Device) -> Void
    ) throws -> Bool {
        turns += 1
        let deadline = device.nextDeadline.map { min($0, wake) } ?? wake
        let readable = try sockets.wait(until: deadline, alsoWatching: descriptor)
        for datagram in try sockets.receiveReady() {
            device.handleDatagram(datagram.bytes, from: datagram.source, at: sockets.now)
        }
        let now = sockets.now
        if let due = device.nextDeadline, due <= now { device.handleTimeout(at: now) }
        try flush(onEvent: onEvent)
        return readable
    }

    /// Sends every queued datagram, then hands over every queued event.
    public mutating func flush(onEvent: (DeviceEvent, Device) -> Void) throws {
        while let datagram = device.pollTransmit() { try sockets.send(datagram) }
        while let event = device.pollEvent() { onEvent(event, device) }
    }
}
