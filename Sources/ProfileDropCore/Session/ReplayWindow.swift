/// Accepts each packet number at most once, and none older than the window behind the largest.
///
/// A 128-packet sliding window (RFC 4303 style): bit `i` of the bitmap says `largest - i` was
/// received. Checking and recording are separate so a packet is only recorded after it
/// authenticated: a forged packet number must not move the window.
public struct ReplayWindow: Sendable, Equatable {
    /// How many packet numbers at and below the largest are tracked.
    public static let size: UInt64 = 128

    /// The largest packet number received, if any.
    public private(set) var largest: UInt64?
    private var low: UInt64 = 0  // bits for largest - 0 ... largest - 63
    private var high: UInt64 = 0  // bits for largest - 64 ... largest - 127

    /// An empty window.
    public init() {}

    /// Throws `.replayed` or `.tooOld` when `packetNumber` must be dropped; does not record it.
    public func check(_ packetNumber: UInt64) throws(ProtocolError) {
        guard let largest else { return }
        if packetNumber > largest { return }
        let offset = largest - packetNumber
        guard offset < Self.size else {
            throw ProtocolError(.tooOld, "packet \(packetNumber) is \(offset) behind \(largest)")
        }
        if bit(offset) { throw ProtocolError(.replayed, "packet \(packetNumber) was already received") }
    }

    /// Records `packetNumber` as received. Call only after ``check(_:)`` passed and the packet
    /// authenticated.
    public mutating func record(_ packetNumber: UInt64) {
        guard let current = largest else {
            largest = packetNumber
            low = 1
            high = 0
            return
        }
        if packetNumber > current {
            shift(by: packetNumber - current)
            largest = packetNumber
            low |= 1
        } else {
            let offset = current - packetNumber
            guard offset < Self.size else { return }
            setBit(offset)
        }
    }

    /// Whether `packetNumber` has been recorded (false when it fell out of the window).
    public func contains(_ packetNumber: UInt64) -> Bool {
        guard let largest, packetNumber <= largest else { return false }
        let offset = largest - packetNumber
        return offset < Self.size && bit(offset)
    }

    private func bit(_ offset: UInt64) -> Bool {
        offset < 64 ? (low >> offset) & 1 == 1 : (high >> (offset - 64)) & 1 == 1
    }

    private mutating func setBit(_ offset: UInt64) {
        if offset < 64 { low |= 1 << offset } else { high |= 1 << (offset - 64) }
    }

    private mutating func shift(by distance: UInt64) {
        if distance >= 128 {
            low = 0
            high = 0
        } else if distance >= 64 {
            high = low << (distance - 64)
            low = 0
        } else {
            high = (high << distance) | (low >> (64 - distance))
            low = low << distance
        }
    }
}
