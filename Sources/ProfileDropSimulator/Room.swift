import ProfileDropCore

/// A participant that speaks raw datagrams instead of running the protocol: an adversary, a
/// scripted peer, a replayer of recorded traffic.
///
/// It is driven like a device: handed datagrams, woken at its deadline, and drained of what it
/// sends after every input.
public protocol DatagramSpeaker {
    /// When ``handleTimeout(at:)`` must be called next; nil when nothing is pending.
    var nextDeadline: Instant? { get }
    /// Hands the speaker one datagram that reached its address.
    mutating func receive(_ bytes: [UInt8], from source: PeerAddress, at time: Instant)
    /// Runs whatever the speaker had planned for `time`.
    mutating func handleTimeout(at time: Instant)
    /// The next datagram to send, or nil when there is none.
    mutating func pollTransmit() -> OutgoingDatagram?
}

/// One copy of a datagram on its way to one participant.
public struct InFlightDatagram: Sendable {
    /// Which send this copy belongs to, counting from zero across the room (injections included).
    public let number: UInt64
    /// The participant that sent it; nil for an injected datagram.
    public let source: Int?
    /// The address the recipient sees it come from.
    public let sourceAddress: PeerAddress
    /// The participant it goes to.
    public let recipient: Int
    /// Whether it was multicast (one copy per other participant) rather than unicast.
    public let multicast: Bool
    /// When it was sent.
    public let sentAt: Instant
    /// The payload.
    public var bytes: [UInt8]
    /// Whether a hook changed the payload on the way.
    public var altered: Bool
}

/// When and how one copy arrives, for a hook that needs full control.
public struct Arrival: Sendable {
    /// When it arrives; never before it was sent.
    public var time: Instant
    /// The payload as it arrives.
    public var bytes: [UInt8]
    /// The source address the recipient sees.
    public var sourceAddress: PeerAddress
    /// Whether the payload differs from what was sent.
    public var altered: Bool

    /// An arrival of `copy` at `time`, with other bytes or another source if given.
    public init(
        _ copy: InFlightDatagram, at time: Instant, bytes: [UInt8]? = nil,
        from sourceAddress: PeerAddress? = nil,
        altered: Bool? = nil
    ) {
        self.time = time
        self.bytes = bytes ?? copy.bytes
        self.sourceAddress = sourceAddress ?? copy.sourceAddress
        self.altered = altered ?? (copy.altered || bytes != nil)
    }
}

/// What a hook decides for one copy as it leaves its sender. The simple cases use the room's
/// ``Room/latency``.
public enum DatagramVerdict: Sendable {
    /// Deliver it unchanged after the latency.
    case deliver
    /// Lose it.
    case drop
    /// Deliver these bytes instead after the latency.
    case alter([UInt8])
    /// Deliver it unchanged after the latency plus this much.
    case delay(Duration)
    /// Deliver it unchanged this many times, all after the latency.
    case duplicate(Int)
    /// Deliver exactly these arrivals, in this order of scheduling (none drops it).
    case arrivals([Arrival])
    /// Deliver exactly this one arrival: `arrivals([arrival])` without allocating the array, for
    /// a hook that decides every copy's arrival itself.
    case arrival(Arrival)
    /// Deliver it unchanged at this time (at once if that is past): `arrival` without copying the
    /// payload, for a hook that decides every copy's arrival time itself.
    case arriveAt(Instant)
}

/// Sees every datagram in flight: the network's fault model, or a test's adversary.
public protocol DatagramHook {
    /// Called once per datagram a participant sends, before its copies are routed.
    mutating func sending(_ datagram: OutgoingDatagram, from source: Int, number: UInt64, at time: Instant)
    /// Decides the fate of one copy as it leaves its sender.
    mutating func route(_ copy: InFlightDatagram) -> DatagramVerdict
    /// Whether a copy whose time has come, `time`, still arrives (a partition may have begun
    /// meanwhile).
    mutating func arrives(_ copy: InFlightDatagram, at time: Instant) -> Bool
}

extension DatagramHook {
    /// Does nothing.
    public mutating func sending(
        _ datagram: OutgoingDatagram, from source: Int, number: UInt64, at time: Instant
    ) {}
    /// Lets every copy arrive.
    public mutating func arrives(_ copy: InFlightDatagram, at time: Instant) -> Bool { true }
}

/// A hook made of a closure, for tests: `ClosureHook { copy in copy.multicast ? .deliver : .drop }`.
public struct ClosureHook: DatagramHook {
    /// The decision for each copy.
    public var decide: (InFlightDatagram) -> DatagramVerdict

    /// Wraps `decide`.
    public init(_ decide: @escaping (InFlightDatagram) -> DatagramVerdict) { self.decide = decide }

    public mutating func route(_ copy: InFlightDatagram) -> DatagramVerdict { decide(copy) }
}

/// A datagram a participant sent during the last step or input.
public struct SentDatagram: Sendable {
    /// Its number (``InFlightDatagram/number``).
    public let number: UInt64
    /// The sender.
    public let source: Int
    /// The payload as sent.
    public let bytes: [UInt8]
    /// Where it was addressed.
    public let destination: Destination
    /// For a unicast, the participant holding the address; nil if nobody does (the datagram
    /// vanishes, as on a real LAN).
    public let recipient: Int?
}

/// What one ``Room/step(notAfter:)`` did.
public enum RoomStep: Sendable {
    /// A copy reached `recipient`, which handled it.
    case delivered(InFlightDatagram)
    /// A copy's time came but the hook refused its arrival.
    case lost(InFlightDatagram)
    /// An alarm the driver set went off, with the tag it was set with; the driver acts on it.
    case alarm(Int)
    /// Participant `member` handled its deadline.
    case timeout(member: Int)
}

/// Participants in one room, in virtual time: devices and raw datagram speakers, addressed by
/// ``PeerAddress``, with every datagram in flight passing a ``DatagramHook``.
///
/// One clock and one order: at equal times copies arrive first (in the order they were
/// scheduled), then the driver's alarms (in the order set), then deadlines (lowest participant
/// first), so that a deadline sees everything that arrived at the same instant. A deadline already
/// past fires now. Multicast reaches every other participant in index order; unicast reaches the
/// participant holding the address. Nothing iterates a hashed collection, so the same inputs
/// always give the same run.
///
/// After every input the participant is drained: what it sent goes in flight (and into
/// ``lastSent``), what a device reported goes into ``lastEvents`` and, when ``keepsEventLog``,
/// into ``eventLog``.
public struct Room {
    private enum Slot {
        case device(Int)
        case speaker(Int)
    }

    /// The current virtual time.
    public private(set) var now: Instant
    /// Delay of a copy the hook delivers without saying when.
    public var latency: Duration
    /// The hook every copy passes; nil delivers everything after ``latency``.
    public var hook: (any DatagramHook)? {
        get { faultHook.map { $0 } ?? otherHook }
        set {
            if let faults = newValue as? NetworkFaultHook {
                faultHook = faults
                otherHook = nil
            } else {
                faultHook = nil
                otherHook = newValue
            }
        }
    }
    /// The hook when it is the simulator's fault model, kept as itself: called directly, rather than
    /// through an existential opened for mutation three times per copy.
    private var faultHook: NetworkFaultHook?
    /// Any other hook.
    private var otherHook: (any DatagramHook)?
    /// Whether device events are also kept, per participant, in ``eventLog``.
    public var keepsEventLog: Bool
    /// Every event each device reported, when ``keepsEventLog``; empty for speakers.
    public private(set) var eventLog: [[DeviceEvent]] = []
    /// What the last step or input made its participant send.
    public private(set) var lastSent: [SentDatagram] = []
    /// What the last step or input made its device report.
    public private(set) var lastEvents: [DeviceEvent] = []
    /// Copies delivered so far.
    public private(set) var deliveredCount = 0

    private var slots: [Slot] = []
    private var devices: [any SansIODevice] = []
    private var speakers: [any DatagramSpeaker] = []
    private var addresses = AddressBook()
    private var flights = FlightQueue()
    private var alarms = EventQueue<Int>()
    private var datagramCount: UInt64 = 0
    /// What the participant being drained sent, kept between drains for its capacity.
    private var draining: [OutgoingDatagram] = []
    /// Every participant's deadline as of its last input: only an input changes a participant, so
    /// nobody else need be asked after one.
    private var deadlines = DeadlineQueue()
    /// Whether each participant is a closed device, as of its last input; speakers count as closed.
    private var closed: [Bool] = []
    /// Devices not closed yet.
    public private(set) var openDeviceCount = 0
    /// Participants that stand around the room's own without being watched (a hall's bystanders
    /// around an attack run, ``HallCrowd``): a copy sent by or to one of them takes
    /// ``crowdNetwork``'s route instead of ``hook``'s, which owns only the path between the others,
    /// and arrives as routed; their events stay out of ``eventLog``. Empty unless a crowd joined.
    package private(set) var crowd: Range<Int> = 0..<0
    /// The network of copies to and from the ``crowd``.
    package var crowdNetwork: CrowdNetwork?

    /// Creates an empty room at `now`.
    public init(
        now: Instant = .zero, latency: Duration = .milliseconds(2), hook: (any DatagramHook)? = nil,
        keepsEventLog: Bool = false
    ) {
        self.now = now
        self.latency = latency
        self.keepsEventLog = keepsEventLog
        self.hook = hook
    }

    // MARK: - Participants

    /// The number of participants.
    public var count: Int { slots.count }

    /// The address of participant `member`.
    public func address(of member: Int) -> PeerAddress { addresses.address(of: member) }

    /// The participant holding `address`, if any.
    public func member(at address: PeerAddress) -> Int? { addresses.member(at: address) }

    /// The number the next datagram sent or injected will get.
    public var nextDatagramNumber: UInt64 { datagramCount }

    /// The number of copies in flight.
    public var inFlight: Int { flights.count }

    /// Adds a device at `address`; returns its index. It is drained after its first input, so
    /// that what it sends on creation reaches participants added after it.
    ///
    /// Its state is read before it joins, not through the room's mutable access: while the caller
    /// still holds the device, that access would copy the whole device out of their shared box.
    @discardableResult
    public mutating func add(_ device: any SansIODevice, at address: PeerAddress) -> Int {
        let member = register(address, slot: .device(devices.count))
        let state = DeviceStatus(nextDeadline: device.nextDeadline, isClosed: device.isClosed)
        devices.append(device)
        note(state, ofDevice: member)
        return member
    }

    /// Adds a raw speaker at `address`; returns its index. It is drained after its first input.
    @discardableResult
    public mutating func add(speaker: any DatagramSpeaker, at address: PeerAddress) -> Int {
        let member = register(address, slot: .speaker(speakers.count))
        speakers.append(speaker)
        noteState(of: member)
        return member
    }

    /// Drains participant `member` without an input (after it was added, say).
    public mutating func flush(_ member: Int) {
        clearLast()
        drain(member)
    }

    /// Adds `devices` as the room's crowd, the first at ``count`` and each at the address of its
    /// member number, with `network` routing their copies; returns their members. A room has one
    /// crowd at most.
    package mutating func addCrowd(
        _ devices: [any SansIODevice], address: (Int) -> PeerAddress, network: CrowdNetwork
    ) -> Range<Int> {
        precondition(crowd.isEmpty, "a room has one crowd at most")
        let first = count
        for device in devices { add(device, at: address(count)) }
        crowd = first..<count
        crowdNetwork = network
        return crowd
    }

    /// Whether a copy from `source` to `recipient` is the crowd's.
    private func isCrowdCopy(_ source: Int?, _ recipient: Int) -> Bool {
        crowd.contains(recipient) || source.map(crowd.contains) == true
    }

    private mutating func register(_ address: PeerAddress, slot: Slot) -> Int {
        precondition(addresses.member(at: address) == nil, "two participants at \(address)")
        let member = slots.count
        slots.append(slot)
        addresses.append(address)
        eventLog.append([])
        deadlines.addMember()
        switch slot {
        case .device:
            closed.append(false)
            openDeviceCount += 1
        case .speaker: closed.append(true)
        }
        return member
    }

    /// Whether participant `member` is a closed device or a speaker, without copying it out.
    public func isClosed(_ member: Int) -> Bool { closed[member] }

    /// The device that is participant `member`; nil for a speaker.
    public func device(_ member: Int) -> (any SansIODevice)? {
        switch slots[member] {
        case .device(let slot): return devices[slot]
        case .speaker: return nil
        }
    }

    /// The speaker that is participant `member`; nil for a device.
    public func speaker(_ member: Int) -> (any DatagramSpeaker)? {
        switch slots[member] {
        case .device: return nil
        case .speaker(let slot): return speakers[slot]
        }
    }

    /// Gives device `member` an input (a pose, a decision) at ``now``, then drains it.
    public mutating func withDevice<Result>(
        _ member: Int, _ body: (inout any SansIODevice, Instant) -> Result
    ) -> Result {
        let slot = slot(of: member, isDevice: true)
        return input(to: member) { room, now in body(&room.devices[slot], now) }
    }

    /// Gives speaker `member` an input at ``now`` (a scripted send), then drains it.
    public mutating func withSpeaker<Result>(
        _ member: Int, _ body: (inout any DatagramSpeaker, Instant) -> Result
    ) -> Result {
        let slot = slot(of: member, isDevice: false)
        return input(to: member) { room, now in body(&room.speakers[slot], now) }
    }

    /// Where participant `member` is in ``devices`` or in ``speakers``; asking for the other kind
    /// than it is, is the caller's bug.
    private func slot(of member: Int, isDevice: Bool) -> Int {
        switch slots[member] {
        case .device(let slot) where isDevice, .speaker(let slot) where !isDevice: return slot
        case .device, .speaker:
            preconditionFailure("participant \(member) is no \(isDevice ? "device" : "speaker")")
        }
    }

    /// One input from outside the room to `member`: whatever it sends and reports afterwards is
    /// what ``lastSent`` and ``lastEvents`` show, and its deadline may have moved.
    private mutating func input<Result>(to member: Int, _ give: (inout Room, Instant) -> Result) -> Result {
        clearLast()
        let result = give(&self, now)
        drain(member)
        return result
    }

    /// Tells device `member` its pose.
    public mutating func updatePose(_ pose: Pose, of member: Int) {
        withDevice(member) { $0.updatePose(pose, at: $1) }
    }

    /// Passes on device `member`'s owner's decision.
    public mutating func decide(_ decision: ConsentDecision, for member: Int) {
        withDevice(member) { $0.decide(decision, at: $1) }
    }

    /// Passes on device `member`'s owner's decision about the candidate `peer`, one of several
    /// asked about at once.
    public mutating func decide(_ decision: ConsentDecision, about peer: DeviceID, for member: Int) {
        withDevice(member) { $0.decide(decision, for: peer, at: $1) }
    }

    // MARK: - Flight

    /// Puts a datagram in flight from any address (a spoofed one included) to participant
    /// `recipient`, arriving `delay` from now; it skips the hook. Returns its number.
    @discardableResult
    public mutating func inject(
        _ bytes: [UInt8], from sourceAddress: PeerAddress, to recipient: Int, after delay: Duration = .zero
    ) -> UInt64 {
        precondition(slots.indices.contains(recipient), "injection to an unknown participant")
        let number = datagramCount
        datagramCount += 1
        let copy = InFlightDatagram(
            number: number, source: addresses.member(at: sourceAddress), sourceAddress: sourceAddress,
            recipient: recipient,
            multicast: false, sentAt: now, bytes: bytes, altered: false)
        flights.schedule(copy, at: now + max(delay, .zero))
        return number
    }

    /// Moves the clock forward to `time` without running anything due before it, for a driver that
    /// orders every input itself (a fuzzer); whatever was due then happens at `time`.
    public mutating func advanceClock(to time: Instant) {
        if time > now { now = time }
    }

    /// Sets an alarm that ``step(notAfter:)`` returns, with `tag`, at `time` (now, if `time` is
    /// past). The tag is the driver's to interpret.
    public mutating func setAlarm(_ tag: Int, at time: Instant) {
        alarms.schedule(tag, at: max(time, now))
    }

    // MARK: - Running

    /// The time of the next thing to happen: a copy arriving, an alarm or a deadline.
    public var nextEventTime: Instant? {
        Instant.earliest(Instant.earliest(flights.nextTime, alarms.nextTime), earliestDeadline()?.time)
    }

    /// The time of the next thing to happen, like ``nextEventTime``.
    public mutating func nextTime() -> Instant? { nextEventTime }

    /// Does the next thing due at or before `limit`, moving the clock to it; nil if nothing is.
    public mutating func step(notAfter limit: Instant = Instant(nanoseconds: .max)) -> RoomStep? {
        clearLast()
        // A copy due now goes first whatever else is due (deadlines are never before now), so the
        // participants' deadlines need not be asked: in a crowded room most steps are such copies.
        if let due = flights.nextTime, due <= now, due <= limit {
            return deliverNextFlight()
        }
        let deadline = earliestDeadline()
        guard
            let next = Instant.earliest(Instant.earliest(flights.nextTime, alarms.nextTime), deadline?.time),
            next <= limit
        else { return nil }
        if next > now { now = next }
        if flights.nextTime == now { return deliverNextFlight() }
        if alarms.nextTime == now, let entry = alarms.pop() { return .alarm(entry.payload) }
        guard let deadline else { preconditionFailure("a time with nothing due") }
        switch slots[deadline.member] {
        case .device(let slot): devices[slot].handleTimeout(at: now)
        case .speaker(let slot): speakers[slot].handleTimeout(at: now)
        }
        drain(deadline.member)
        return .timeout(member: deadline.member)
    }

    /// Runs every step due at or before `limit` (alarms are popped and ignored), then moves the
    /// clock to `limit`.
    public mutating func run(until limit: Instant) {
        while step(notAfter: limit) != nil {}
        if limit > now { now = limit }
    }

    /// Runs until nothing is in flight, no alarm is set and no participant has a deadline, or
    /// `maximumSteps` steps; returns whether the room went idle.
    @discardableResult
    public mutating func runUntilIdle(maximumSteps: Int = 1_000_000) -> Bool {
        for _ in 0..<maximumSteps where step() == nil { return true }
        return nextEventTime == nil
    }

    /// Hands the copy at the head of the queue, due now, to its recipient unless the hook refuses it.
    private mutating func deliverNextFlight() -> RoomStep? {
        let copy = flights.removeFirst()
        if !arrives(copy) { return .lost(copy) }
        deliveredCount += 1
        switch slots[copy.recipient] {
        case .device(let slot):
            devices[slot].handleDatagram(copy.bytes, from: copy.sourceAddress, at: now)
        case .speaker(let slot): speakers[slot].receive(copy.bytes, from: copy.sourceAddress, at: now)
        }
        drain(copy.recipient)
        return .delivered(copy)
    }

    private mutating func arrives(_ copy: InFlightDatagram) -> Bool {
        if !crowd.isEmpty && isCrowdCopy(copy.source, copy.recipient) { return true }
        return faultHook?.arrives(copy, at: now) ?? otherHook?.arrives(copy, at: now) ?? true
    }

    /// The participant whose deadline comes first, and when; a deadline already past counts as
    /// now, the lowest participant first among those due.
    private func earliestDeadline() -> (member: Int, time: Instant)? {
        guard let first = deadlines.first else { return nil }
        if first.time >= now { return first }
        guard let member = deadlines.lowestMember(dueBy: now) else { return nil }
        return (member, now)
    }

    /// Reads participant `member`'s deadline and whether it closed, after an input.
    private mutating func noteState(of member: Int) {
        switch slots[member] {
        case .device(let slot): note(Self.state(of: &devices[slot]), ofDevice: member)
        case .speaker(let slot): deadlines.update(member, to: Self.deadline(of: &speakers[slot]))
        }
    }

    private mutating func note(_ state: DeviceStatus, ofDevice member: Int) {
        deadlines.update(member, to: state.nextDeadline)
        if !closed[member] && state.isClosed {
            closed[member] = true
            openDeviceCount -= 1
        }
    }

    // Read through inout, so that the existential is opened in place rather than copied out of the
    // array for each property.
    private static func state(of device: inout some SansIODevice) -> DeviceStatus {
        DeviceStatus(nextDeadline: device.nextDeadline, isClosed: device.isClosed)
    }

    private static func deadline(of speaker: inout any DatagramSpeaker) -> Instant? {
        speaker.nextDeadline
    }

    /// Moves what the last step or input made its device report into `events`, which must be
    /// empty, and leaves ``lastEvents`` empty: a driver that consumes the events takes them without
    /// copying each one (a card is several strings and arrays).
    public mutating func takeLastEvents(into events: inout [DeviceEvent]) {
        precondition(events.isEmpty, "the events taken before are not handled yet")
        swap(&events, &lastEvents)
    }

    private mutating func clearLast() {
        lastSent.removeAllKeepingStorage()
        lastEvents.removeAllKeepingStorage()
    }

    /// Moves what `member` produced into flight and into ``lastSent`` and ``lastEvents``.
    private mutating func drain(_ member: Int) {
        switch slots[member] {
        case .device(let slot):
            // Output and state are taken in one call through the device's existential, then sent:
            // sending does not touch the device.
            let known = lastEvents.count
            let state = devices[slot].takeOutput(datagrams: &draining, events: &lastEvents)
            if keepsEventLog && !crowd.contains(member) {
                eventLog[member].append(contentsOf: lastEvents[known...])
            }
            for datagram in draining { send(datagram, from: member) }
            draining.removeAllKeepingStorage()
            note(state, ofDevice: member)
        case .speaker(let slot):
            while let datagram = speakers[slot].pollTransmit() { send(datagram, from: member) }
            noteState(of: member)
        }
    }

    private mutating func send(_ datagram: OutgoingDatagram, from source: Int) {
        let number = datagramCount
        datagramCount += 1
        var recipient: Int?
        if case .unicast(let address) = datagram.destination { recipient = addresses.member(at: address) }
        lastSent.append(
            SentDatagram(
                number: number, source: source, bytes: datagram.bytes, destination: datagram.destination,
                recipient: recipient))
        if !crowd.contains(source) {
            faultHook?.sending(datagram, from: source, number: number, at: now)
            otherHook?.sending(datagram, from: source, number: number, at: now)
        }
        switch datagram.destination {
        case .multicast:
            // The copies go in flight as one batch, sorted once (``FlightQueue``).
            flights.beginBatch()
            for target in slots.indices where target != source {
                route(datagram.bytes, number: number, from: source, to: target, multicast: true)
            }
            flights.endBatch()
        case .unicast:
            if let recipient {
                route(datagram.bytes, number: number, from: source, to: recipient, multicast: false)
            }
        }
    }

    private mutating func route(
        _ bytes: [UInt8], number: UInt64, from source: Int, to recipient: Int, multicast: Bool
    ) {
        let copy = InFlightDatagram(
            number: number, source: source, sourceAddress: addresses.address(of: source),
            recipient: recipient,
            multicast: multicast, sentAt: now, bytes: bytes, altered: false)
        let verdict: DatagramVerdict
        if !crowd.isEmpty && isCrowdCopy(source, recipient) {
            verdict = crowdNetwork?.route(copy) ?? .deliver
        } else {
            verdict = faultHook?.route(copy) ?? otherHook?.route(copy) ?? .deliver
        }
        switch verdict {
        case .deliver:
            flights.schedule(copy, at: now + latency)
        case .drop:
            break
        case .alter(let altered):
            var changed = copy
            changed.bytes = altered
            changed.altered = true
            flights.schedule(changed, at: now + latency)
        case .delay(let extra):
            flights.schedule(copy, at: now + latency + max(extra, .zero))
        case .duplicate(let times):
            for _ in 0..<max(times, 0) { flights.schedule(copy, at: now + latency) }
        case .arrivals(let arrivals):
            for arrival in arrivals { schedule(arrival, of: copy) }
        case .arrival(let arrival):
            schedule(arrival, of: copy)
        case .arriveAt(let time):
            flights.schedule(copy, at: max(time, now))
        }
    }

    /// Schedules `arrival` of `copy`, from the source address the arrival names.
    private mutating func schedule(_ arrival: Arrival, of copy: InFlightDatagram) {
        var changed = copy
        changed.bytes = arrival.bytes
        changed.altered = arrival.altered
        if arrival.sourceAddress != copy.sourceAddress {
            changed = InFlightDatagram(
                number: copy.number, source: addresses.member(at: arrival.sourceAddress),
                sourceAddress: arrival.sourceAddress,
                recipient: copy.recipient, multicast: copy.multicast, sentAt: now, bytes: arrival.bytes,
                altered: arrival.altered)
        }
        flights.schedule(changed, at: max(arrival.time, now))
    }
}

/// The participants' addresses, by index and by address.
private struct AddressBook {
    /// The most participants whose addresses ``member(at:)`` compares one by one: a few addresses
    /// are compared faster than one is hashed.
    private static let largestScannedCount = 8

    private var addresses: [PeerAddress] = []
    /// Filled only once there are more than ``largestScannedCount`` participants.
    private var members: [PeerAddress: Int] = [:]

    /// The address of participant `member`.
    func address(of member: Int) -> PeerAddress { addresses[member] }

    /// The participant holding `address`, if any.
    func member(at address: PeerAddress) -> Int? {
        guard addresses.count > Self.largestScannedCount else { return addresses.firstIndex(of: address) }
        return members[address]
    }

    /// Adds the next participant's address.
    mutating func append(_ address: PeerAddress) {
        addresses.append(address)
        if addresses.count == Self.largestScannedCount + 1 {
            for (member, known) in addresses.enumerated() { members[known] = member }
        } else if addresses.count > Self.largestScannedCount + 1 {
            members[address] = addresses.count - 1
        }
    }
}
