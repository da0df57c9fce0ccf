import ProfileDropCore
import ProfileDropSimulator

/// A datagram an attacker off the path forged, as every forger hands it to its driver: the address
/// it claims to come from and the room member it is aimed at. The driver puts it in flight with
/// ``AttackStage/inject(_:after:meter:)``, since a participant's own sends always carry its own
/// address.
struct ForgedDatagram {
    let bytes: [UInt8]
    /// The address it claims to come from.
    let source: PeerAddress
    /// The room member it goes to.
    let recipient: Int
}

extension AttackStage {
    /// Puts `forged` in flight from the address it claims, arriving `delay` from now, and counts it
    /// against the attacker in `meter`; returns its datagram number.
    @discardableResult
    mutating func inject(_ forged: ForgedDatagram, after delay: Duration, meter: inout Availability.Meter)
        -> UInt64
    {
        let number = room.inject(forged.bytes, from: forged.source, to: forged.recipient, after: delay)
        meter.countAttack(bytes: forged.bytes.count, at: room.now)
        return number
    }
}
