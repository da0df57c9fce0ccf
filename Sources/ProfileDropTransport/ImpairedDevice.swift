import ProfileDropCore
import ProfileDropCrypto

/// Drops and duplicates outgoing datagrams on purpose (`share --impair-loss`), for tests on loopback
/// where netem is not available. Decisions come from a seeded generator so that a failing run can be
/// repeated.
public struct SendImpairment: Sendable, Equatable {
    /// Probability that an outgoing datagram is not sent.
    public var loss: Double = 0
    /// Probability that an outgoing datagram is sent twice.
    public var duplication: Double = 0
    /// Seed of the generator behind the decisions.
    public var seed: UInt64 = 1

    /// Creates an impairment; the defaults impair nothing.
    public init(loss: Double = 0, duplication: Double = 0, seed: UInt64 = 1) {
        self.loss = loss
        self.duplication = duplication
        self.seed = seed
    }

    /// Whether any impairment is configured.
    public var isActive: Bool { loss > 0 || duplication > 0 }
}

/// Composes a ``SendImpairment`` over any device: datagrams it polls from the wrapped device are
/// dropped or handed out twice, before any socket sees them. Wrap it outside a capturing device, so
/// that the capture still holds every datagram the device produced.
public struct ImpairedDevice<Inner: SansIODevice>: WrappingDevice {
    /// The wrapped device.
    public var inner: Inner
    /// The impairment in force.
    public let impairment: SendImpairment
    /// Datagrams dropped on purpose so far.
    public private(set) var droppedDatagrams = 0
    // Its own stream, so that impairing a run does not change what the device draws.
    private var random: DeterministicRandom
    private var duplicate: OutgoingDatagram?

    /// Wraps `inner`; an inactive impairment passes everything through and draws nothing.
    public init(_ inner: Inner, impairment: SendImpairment) {
        self.inner = inner
        self.impairment = impairment
        random = DeterministicRandom(seed: impairment.seed)
    }

    /// The wrapped device's next datagram, unless the impairment drops it; a duplicated one comes
    /// out twice in a row.
    public mutating func pollTransmit() -> OutgoingDatagram? {
        if let copy = duplicate {
            duplicate = nil
            return copy
        }
        while let datagram = inner.pollTransmit() {
            guard impairment.isActive else { return datagram }
            if random.unitDouble() < impairment.loss {
                droppedDatagrams += 1
                continue
            }
            if random.unitDouble() < impairment.duplication { duplicate = datagram }
            return datagram
        }
        return nil
    }

}
