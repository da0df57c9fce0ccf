import ProfileDropCrypto

/// Running totals a device keeps about its traffic, for tests, the simulator and the command line.
public struct DeviceCounters: Sendable, Equatable {
    /// Datagrams handed to ``Device/handleDatagram(_:from:at:)``.
    public var datagramsReceived = 0
    /// Datagrams accepted (parsed, authenticated where applicable, and acted upon or ignored as
    /// harmless duplicates).
    public var datagramsAccepted = 0
    /// Datagrams returned by ``Device/pollTransmit()``.
    public var datagramsSent = 0
    /// Bytes returned by ``Device/pollTransmit()``.
    public var bytesSent = 0
    /// Card chunks sent again after being declared lost.
    public var chunkRetransmissions = 0
    /// Handshake messages sent again.
    public var handshakeRetransmissions = 0
    /// PROBEs sent, first or again, for an invitation or ahead of one (PROTOCOL.md 5, "Return
    /// routability" and "Probing ahead").
    public var probesSent = 0
    /// PROBEs due (for an invitation or ahead of one) but not sent because the address's host had
    /// not sent us enough bytes lately.
    public var probesWithoutCredit = 0
    /// Pairings that ended after verification began and before both users decided
    /// (``DeviceEvent/pairingInterrupted(peer:code:reason:)``).
    public var interruptedPairings = 0
    /// Dropped datagrams by error code, indexed by ``ProtocolError/Code`` raw value.
    public private(set) var rejectedByCode: [Int] = Array(filling: 0, count: 32)

    /// Creates zeroed counters.
    public init() {}

    /// Total dropped datagrams.
    public var datagramsRejected: Int { rejectedByCode.reduce(0, +) }

    /// Dropped datagrams with `code`.
    public func rejected(_ code: ProtocolError.Code) -> Int {
        let index = Int(code.rawValue)
        return index < rejectedByCode.count ? rejectedByCode[index] : 0
    }

    mutating func countRejection(_ code: ProtocolError.Code) {
        let index = Int(code.rawValue)
        if index < rejectedByCode.count { rejectedByCode[index] += 1 }
    }
}
