import ProfileDropCore
import ProfileDropSimulator

/// What an observer on an open network (an open Wi-Fi network, a mirrored switch port) has of the
/// victims' unicast: a copy of every datagram a victim sends to an address, as it leaves. It is
/// not on the path: every datagram still reaches its recipient unchanged.
///
/// A class, shared by the room's ``TapHook`` (which fills it) and the attack driver (which takes
/// the copies after every step).
final class UnicastTap {
    /// One datagram a victim sent.
    struct Copy {
        /// The victim that sent it.
        let source: Int
        let bytes: [UInt8]
        /// The address it went to.
        let destination: PeerAddress
    }

    /// The participants whose unicast is copied.
    let victims: [Int]
    /// The adversary's participants that send as someone else: their unicast arrives from that
    /// address, ``spoofedDelay`` after it left; their multicast, and multicast to them, is dropped
    /// (an impersonator announces nothing and hears only what the tap gives it).
    var impersonators: [(member: Int, address: PeerAddress)] = []
    /// How long an impersonator's datagram takes to arrive.
    var spoofedDelay: Duration = .zero
    /// Whether the victims' ACCEPTs are dropped on the way: an observer that is also on the path, so
    /// that refusals it forges are believed (for tests of what a believed refusal does).
    var withholdsAccepts = false
    private var copies: [Copy] = []

    init(victims: [Int]) { self.victims = victims }

    /// Notes what participant `source` sent.
    func saw(_ datagram: OutgoingDatagram, from source: Int) {
        guard case .unicast(let address) = datagram.destination, victims.contains(source) else { return }
        copies.append(Copy(source: source, bytes: datagram.bytes, destination: address))
    }

    /// The copies since the last call, in the order they were sent.
    func take() -> [Copy] {
        defer { copies.removeAll(keepingCapacity: true) }
        return copies
    }

    /// The address participant `member` sends as, if it impersonates someone.
    func impersonated(by member: Int) -> PeerAddress? {
        impersonators.first { $0.member == member }?.address
    }
}

/// The room's hook for a ``UnicastTap``: it copies the victims' unicast, and sends impersonators'
/// datagrams from the address they claim. Everything else is delivered as without a hook.
struct TapHook: DatagramHook {
    let tap: UnicastTap

    mutating func sending(_ datagram: OutgoingDatagram, from source: Int, number: UInt64, at time: Instant) {
        tap.saw(datagram, from: source)
    }

    mutating func route(_ copy: InFlightDatagram) -> DatagramVerdict {
        if tap.withholdsAccepts, let source = copy.source, tap.victims.contains(source),
            case .accept? = try? Packet(datagram: copy.bytes)
        {
            return .drop
        }
        guard !tap.impersonators.isEmpty else { return .deliver }
        if let source = copy.source, let address = tap.impersonated(by: source) {
            if copy.multicast { return .drop }
            return .arrival(Arrival(copy, at: copy.sentAt + tap.spoofedDelay, from: address))
        }
        if copy.multicast && tap.impersonated(by: copy.recipient) != nil { return .drop }
        return .deliver
    }
}
