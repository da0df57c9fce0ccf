import ProfileDropCore
import ProfileDropCrypto

/// The device fuzz target: the real ``Device`` against a ``ScriptedPeer`` in virtual time, driven
/// by a fuzzer-chosen sequence of events: the peer's datagrams are handed to the device, and the
/// device's unicasts to the peer's address reach the peer at once, in the order sent (its
/// multicasts reach nobody). The harness drives the device itself rather than through a simulated
/// room: every input is a handful of calls, and a room's routing and bookkeeping cost more than
/// the device's own work.
///
/// An input starts from one of many honest prefixes (the device under test in discovery, in the
/// handshake, ranging, consenting, transferring or closing, under each consent policy) and then
/// applies actions: honest peer rounds, raw datagrams, corrupted, truncated, extended, spliced,
/// duplicated, dropped or reordered peer datagrams, arbitrary frames sealed with the real session
/// key, forged cleartext packets, timer expiries, poses and decisions. After every action the
/// device's outputs and counters are checked, and at the end the device, left alone, must finish.
public struct DeviceFuzz {
    /// Where the device under test listens.
    public static let deviceAddress = PeerAddress(10, 0, 0, 1, port: 5001)
    /// Most datagrams or events one input may produce (chunk window plus control traffic).
    public static let maxOutputsPerInput = 256
    /// Actions per input.
    public static let maxActions = 96

    /// The device under test.
    var device: Device
    /// The virtual time every input happens at; the fuzzer moves it forward itself.
    var now: Instant = .zero
    /// What the device's last input made it send and report.
    var lastSent: [OutgoingDatagram] = []
    var lastEvents: [DeviceEvent] = []
    /// The device's configuration, kept here so that reading it does not copy the device.
    let configuration: DeviceConfiguration
    var peer: ScriptedPeer
    var nextPeerTick: Instant
    var closedReason: CloseReason?
    var sentByDevice: [[UInt8]] = []
    var findings = FuzzFindings()

    /// The device's next deadline.
    var deadline: Instant? { device.nextDeadline }

    /// The device's next deadline after its last input, as `takeOutput` reports it. Asking the
    /// device again would compute it again over every session and table, once more per timer call.
    var lastDeadline: Instant?

    /// Runs one input of the device at `now` and takes what it sent and reported into
    /// ``lastSent`` and ``lastEvents``, and its next deadline into ``lastDeadline``.
    mutating func drive(_ give: (inout Device, Instant) -> Void) {
        lastSent.removeAll(keepingCapacity: true)
        lastEvents.removeAll(keepingCapacity: true)
        give(&device, now)
        lastDeadline = device.takeOutput(datagrams: &lastSent, events: &lastEvents).nextDeadline
    }

    /// The policies the prefixes cover; the first input byte picks one.
    static let policies: [ConsentPolicy] = [.share, .askUser, .receiveOnly, .decline]

    static func card(_ name: String, photoBytes: Int) -> ProfileCard {
        var random = DeterministicRandom(seed: UInt64(photoBytes))
        let photo = try? ProfileCard.Photo(data: [0xFF, 0xD8, 0xFF, 0xE0] + random.bytes(photoBytes - 4))
        guard
            let card = try? ProfileCard(
                name: name, age: 4, sex: .male, neutered: false, size: .medium, keywords: ["fetch"],
                owner: "owner", photo: photo)
        else { preconditionFailure("the fixture card is valid") }
        return card
    }

    /// A fresh device under `policy` and a peer about to invite it.
    static func start(policy: ConsentPolicy) -> DeviceFuzz {
        var keyRandom = DeterministicRandom(seed: 0xD0D0)
        var timeouts = Timeouts()
        // Short enough that the device's own limit can end a live session within an input (a few
        // long waits between honest rounds), and that a device left alone finishes soon.
        timeouts.overall = .seconds(12)
        let configuration = DeviceConfiguration(
            card: card("Bori", photoBytes: 2500), consent: policy,
            staticKey: X25519.PrivateKey(using: &keyRandom),
            timeouts: timeouts)
        let device = Device(
            configuration: configuration, random: DeterministicRandom(seed: 0xF022), now: .zero,
            localAddress: deviceAddress)
        let peer = ScriptedPeer(target: device.deviceID, card: card("Kong", photoBytes: 1500), seed: 0x9EE2)
        var fuzz = DeviceFuzz(
            device: device, configuration: configuration, peer: peer, nextPeerTick: .zero + .milliseconds(40))
        fuzz.drive { $0.updatePose(Pose(x: 0, y: 0, heading: 0), at: $1) }
        fuzz.collect()
        return fuzz
    }

    /// Honest prefixes, one per peer round, for every policy; computed once. Read-only after that
    /// and only ever copied, so sharing it between threads is safe.
    nonisolated(unsafe) static let prefixes: [[DeviceFuzz]] = policies.map { policy in
        var fuzz = start(policy: policy)
        var states = [fuzz]
        fuzz.peer.invite()
        fuzz.deliverAll()
        for _ in 0..<120 {
            fuzz.honestRound()
            fuzz.findings = FuzzFindings()
            states.append(fuzz)
            if fuzz.deadline == nil { break }
        }
        return states
    }

    /// Every datagram the honest prefixes exchanged, both directions, for seeding corpora.
    public static func honestDatagrams() -> [[UInt8]] {
        prefixes.flatMap { chain in (chain.last.map { $0.peerHistory + $0.sentByDevice }) ?? [] }
    }

    /// Seed inputs: each policy, from several points of its honest prefix, followed by honest
    /// rounds (action 0), so the fuzzer starts from runs that reach every phase.
    public static func seedInputs() -> [[UInt8]] {
        var seeds: [[UInt8]] = []
        for policy in prefixes.indices {
            for start in stride(from: 0, to: prefixes[policy].count, by: 8) {
                seeds.append([UInt8(policy), UInt8(start)] + Array(repeating: 0, count: 24))
            }
        }
        return seeds
    }

    /// Runs one input.
    public static func run(_ bytes: [UInt8]) -> FuzzFindings {
        var input = FuzzBytes(bytes)
        let chain = prefixes[Int(input.byte()) % prefixes.count]
        var fuzz = chain[Int(input.byte()) % chain.count]
        var actions = 0
        while !input.isExhausted && actions < maxActions {
            actions += 1
            fuzz.act(&input)
        }
        fuzz.finish()
        return fuzz.findings
    }

    // MARK: - Actions

    mutating func act(_ input: inout FuzzBytes) {
        let action = input.byte()
        switch action % 20 {
        case 0, 1:
            honestRound()
        case 2:
            deliverAll()
        case 3:
            deliver(input.take(Int(input.uint16() % 1300)), from: sourceAddress(&input))
        case 4:
            dropPending(&input)
        case 5:
            corruptPending(&input)
        case 6:
            truncatePending(&input)
        case 7:
            extendPending(&input)
        case 8:
            reorderPending(&input)
        case 9:
            duplicateRecorded(&input)
        case 10:
            spliceRecorded(&input)
        case 11:
            sealRaw(&input)
        case 12:
            sealFrames(&input)
        case 13:
            forgeCleartext(&input)
        case 14:
            advance(by: .milliseconds(Int64(input.uint16())))
        case 15:
            if let deadline = self.deadline { advance(to: deadline) }
        case 16:
            let pose = Pose(
                x: Double(Int16(bitPattern: input.uint16())) / 16,
                y: Double(Int16(bitPattern: input.uint16())) / 16,
                heading: Double(input.uint16() % 7200) / 10 - 360)
            drive { $0.updatePose(pose, at: $1) }
            collect()
        case 17:
            let decisions: [ConsentDecision] = [.share, .receiveOnly, .decline]
            let decision = decisions[Int(input.byte()) % decisions.count]
            drive { $0.decide(decision, at: $1) }
            collect()
        case 18:
            peer.pose = Pose(
                x: Double(input.byte()) / 4, y: Double(Int8(bitPattern: input.byte())) / 4,
                heading: Double(input.uint16() % 36000) / 100)
        default:
            peer.tick()
        }
    }

    private func sourceAddress(_ input: inout FuzzBytes) -> PeerAddress {
        let octet = input.byte()
        return octet < 128 ? peer.address : PeerAddress(10, 0, 1, octet, port: 5000 + UInt16(octet))
    }

    private func pendingIndex(_ input: inout FuzzBytes) -> Int? {
        peer.outbox.isEmpty ? nil : Int(input.byte()) % peer.outbox.count
    }

    mutating func dropPending(_ input: inout FuzzBytes) {
        if let index = pendingIndex(&input) { peer.outbox.remove(at: index) }
    }

    mutating func corruptPending(_ input: inout FuzzBytes) {
        guard let index = pendingIndex(&input), !peer.outbox[index].isEmpty else { return }
        for _ in 0..<(1 + Int(input.byte() % 3)) {
            let position = Int(input.uint16()) % peer.outbox[index].count
            peer.outbox[index][position] ^= 1 << (input.byte() % 8)
        }
    }

    mutating func truncatePending(_ input: inout FuzzBytes) {
        guard let index = pendingIndex(&input) else { return }
        peer.outbox[index] = Array(
            peer.outbox[index].prefix(Int(input.uint16()) % (peer.outbox[index].count + 1)))
    }

    mutating func extendPending(_ input: inout FuzzBytes) {
        guard let index = pendingIndex(&input) else { return }
        peer.outbox[index] += input.take(1 + Int(input.byte()))
    }

    mutating func reorderPending(_ input: inout FuzzBytes) {
        guard let index = pendingIndex(&input) else { return }
        peer.outbox.append(peer.outbox.remove(at: index))
    }

    /// Re-sends something the peer or the device sent earlier (a replay or a reflection).
    mutating func duplicateRecorded(_ input: inout FuzzBytes) {
        let pool = input.byte() & 1 == 0 ? peerHistory : sentByDevice
        guard !pool.isEmpty else { return }
        deliver(pool[Int(input.uint16()) % pool.count], from: peer.address)
    }

    mutating func spliceRecorded(_ input: inout FuzzBytes) {
        let pool = peerHistory + sentByDevice
        guard !pool.isEmpty else { return }
        let first = pool[Int(input.uint16()) % pool.count]
        let second = pool[Int(input.uint16()) % pool.count]
        let cut = Int(input.uint16()) % (first.count + 1)
        let resume = Int(input.uint16()) % (second.count + 1)
        deliver(Array(first.prefix(cut)) + Array(second.suffix(from: resume)), from: peer.address)
    }

    /// Arbitrary plaintext, authenticated with the real key, at the next or a chosen packet number.
    mutating func sealRaw(_ input: inout FuzzBytes) {
        let plaintext = input.take(Int(input.uint16() % 1200))
        let number: UInt64? = input.byte() < 200 ? nil : UInt64(input.uint16())
        if let datagram = peer.seal(plaintext, packetNumber: number) {
            peer.isMisled = true
            peer.outbox.append(datagram)
        }
    }

    /// A few well-formed frames with fuzzer-chosen fields.
    mutating func sealFrames(_ input: inout FuzzBytes) {
        var frames: [Frame] = []
        for _ in 0..<(1 + Int(input.byte() % 4)) {
            frames.append(frame(&input))
        }
        if Frame.encode(frames).count <= WireConstants.maxFramePayload {
            peer.isMisled = peer.isMisled || peer.isSecured
            peer.send(frames)
        }
    }

    private func digest(_ input: inout FuzzBytes) -> [UInt8] {
        switch input.byte() % 3 {
        case 0: return peer.session.offer.digest
        case 1: return BLAKE2b.hash(configuration.card?.encoded() ?? [], outputLength: 32)
        default: return input.take(32)
        }
    }

    private func frame(_ input: inout FuzzBytes) -> Frame {
        func token(_ input: inout FuzzBytes) -> DiscoveryToken {
            input.byte() < 192
                ? peer.token : DiscoveryToken((input.take(16) + Array(repeating: 0, count: 16)).prefix(16))
        }
        switch input.pick(FrameType.self) {
        case .token:
            return .token(token(&input))
        case .ranging:
            let pose = Pose(
                x: Double(Int8(bitPattern: input.byte())), y: Double(Int8(bitPattern: input.byte())),
                heading: Double(input.uint16() % 36000) / 100)
            return .ranging(RangingFrame(sequence: UInt32(input.uint16()), pose: pose, token: token(&input)))
        case .inRange:
            return .inRange(input.byte() & 1 == 1)
        case .consent:
            // The byte values keep the stored regression inputs meaning what they meant.
            switch input.byte() % 4 {
            case 0: return .consent(.decline, nil)
            case 1: return .consent(.receiveOnly, nil)
            case 2: return .consent(.share, peer.session.offer)
            default:
                let length = UInt32(input.uint16()) << UInt32(input.byte() % 16) | 1
                let chunkSize = 1 + input.uint16() % 1157
                var offer = CardOffer(length: length, chunkSize: chunkSize, digest: peer.session.offer.digest)
                if offer.chunkCount > Int(UInt16.max) { offer.chunkSize = 1157 }
                return .consent(.share, offer)
            }
        case .cardChunk:
            let index = input.uint16()
            let data = input.take(1 + Int(input.uint16() % 1150))
            return .cardChunk(index: index, data: data.isEmpty ? [0] : data[...])
        case .cardSack:
            let bitmap = input.take(Int(input.byte() % 33))
            return .cardSack(CardSack(cumulative: input.uint16(), bitmap: bitmap))
        case .cardAck:
            let digest = self.digest(&input)
            return .cardAck(digest: Array((digest + Array(repeating: 0, count: 32)).prefix(32)))
        case .close:
            return .close(CloseFrame(code: input.pick(CloseCode.self), errorCode: input.uint16()))
        case .closeAck:
            return .closeAck
        case .receipt:
            return .receipt(Receipts(rawValue: input.byte() & Receipts.all.rawValue))
        case .ident:
            return .ident(peer.pairingField(.ident, &input))
        case .proof:
            return .proof(peer.pairingField(.proof, &input))
        case .commit:
            return .commit(peer.pairingField(.commit, &input))
        case .nonce:
            return .nonce(peer.pairingField(.nonce, &input))
        case .reveal:
            return .reveal(peer.pairingField(.reveal, &input))
        case .bond:
            return .bond(resolvingKey: peer.pairingField(.bond, &input), share: input.take32())
        }
    }

    /// Cleartext packets with fuzzer-chosen ids that collide with the live ones on purpose.
    mutating func forgeCleartext(_ input: inout FuzzBytes) {
        func id(_ input: inout FuzzBytes) -> DeviceID {
            switch input.byte() % 4 {
            case 0: return peer.deviceID
            case 1: return device.deviceID
            case 2: return DeviceID(rawValue: UInt64(input.byte()))
            default: return DeviceID(rawValue: input.uint64())
            }
        }
        // A session byte from 240 answers the device's own latest invitation (to a peer it learned
        // from a forged BEACON or QUERY): its session, from its invitee's id and address, so that
        // the device's side as initiator (ACCEPT, BUSY of every reason, BUSY(retry) and its
        // cookie) is reached too. Below 160 the peer's session; otherwise any.
        let sessionByte = input.byte()
        let answering = sessionByte >= 240 ? deviceInvitation : nil
        let session = sessionByte < 160 ? peer.sessionID : answering?.sessionID ?? input.uint64()
        var packet: Packet
        // A BEACON names its source's port half the time: the device takes only such BEACONs into
        // its table, and a 16-bit match is too rare for the fuzzer to find on its own.
        var beaconNamesItsPort = false
        // SECURE is forged elsewhere, sealed under the live keys; every other type is picked here.
        let cleartextTypes = PacketType.allCases.filter { $0 != .secure }
        switch cleartextTypes[Int(input.byte()) % cleartextTypes.count] {
        case .secure:
            preconditionFailure("SECURE is not a cleartext type")
        case .beacon:
            beaconNamesItsPort = input.byte() & 1 == 0
            packet = .beacon(
                Beacon(
                    deviceID: id(&input), port: 1 + input.uint16() % 65535, busy: input.byte() & 1 == 1,
                    sequence: UInt32(truncatingIfNeeded: input.uint64())))
        case .query:
            let known = (0..<Int(input.byte() % 40)).map { _ in id(&input) }
            packet = .query(Query(deviceID: id(&input), knownAnswers: known))
        case .invite:
            let cookie = input.byte() & 1 == 0 ? [] : input.take(WireConstants.cookieLength)
            packet = .invite(
                HandshakePacket(
                    sessionID: session, sender: id(&input), receiver: id(&input),
                    noiseMessage: input.take(Int(input.byte())),
                    cookie: cookie.count == WireConstants.cookieLength ? cookie : []))
        case .accept:
            packet = .accept(
                HandshakePacket(
                    sessionID: session, sender: id(&input), receiver: id(&input),
                    noiseMessage: input.take(Int(input.byte()))))
        case .confirm:
            packet = .confirm(
                HandshakePacket(
                    sessionID: session, sender: id(&input), receiver: id(&input),
                    noiseMessage: input.take(Int(input.byte()))))
        case .busy:
            let reasons: [BusyReason] = [.inSession, .unavailable, .retry]
            let reason = reasons[Int(input.byte()) % reasons.count]
            var cookie = reason == .retry ? input.take(WireConstants.cookieLength) : []
            if reason == .retry {
                cookie += Array(repeating: 0, count: WireConstants.cookieLength - cookie.count)
            }
            packet = .busy(
                Busy(
                    sessionID: session, sender: id(&input), receiver: id(&input), reason: reason,
                    cookie: cookie))
        case .probe:
            packet = .probe(Probe(challenge: input.uint64()))
        case .probeAck:
            packet = .probeAck(Probe(challenge: input.uint64()))
        }
        var source = sourceAddress(&input)
        if beaconNamesItsPort, case .beacon(var beacon) = packet {
            beacon.port = source.port
            packet = .beacon(beacon)
        }
        switch packet {
        case .invite(let forged), .accept(let forged), .confirm(let forged):
            // A handshake packet of the peer's own session from its address: the device cannot tell
            // it from the peer's (a real forger would have to guess the 64-bit session before the
            // peer sends it), and may answer the peer with the forged handshake's messages.
            if forged.sessionID == peer.sessionID && source == peer.address { peer.isMisled = true }
        case .beacon, .query, .invite, .accept, .confirm, .busy, .secure, .probe, .probeAck:
            break
        }
        if let answering {
            source = answering.address
            switch packet {
            case .accept(var accept), .confirm(var accept):
                (accept.sender, accept.receiver) = (answering.invitee, device.deviceID)
                packet = packet.type == .accept ? .accept(accept) : .confirm(accept)
            case .busy(var busy):
                (busy.sender, busy.receiver) = (answering.invitee, device.deviceID)
                packet = .busy(busy)
            case .beacon, .query, .invite, .secure, .probe, .probeAck:
                break
            }
        }
        deliver(packet.encoded(), from: source)
    }

    /// The device's latest INVITE: its session, whom it invited and where.
    var deviceInvitation: (sessionID: UInt64, invitee: DeviceID, address: PeerAddress)?

    /// Whether the datagram being delivered is our echo of the device's PROBE to an address the
    /// fuzzer made up: it proves that address receives, so the device's INVITE that answers it is
    /// no amplification.
    var echoing = false
    /// Made-up addresses whose echo of the device's PROBE we delivered: they proved that they
    /// receive, so the device may send them more than they sent (PROTOCOL.md 5, "Return
    /// routability"), a BUSY(retry)'s INVITE with its cookie, say.
    var provenAddresses: Set<PeerAddress> = []

    // MARK: - Time and delivery

    var peerHistory: [[UInt8]] = []

    /// Delivers everything the peer has queued, in order, then lets it react to the replies.
    mutating func deliverAll() {
        var rounds = 0
        while !peer.outbox.isEmpty && rounds < 16 {
            rounds += 1
            let batch = peer.outbox
            peer.outbox = []
            for datagram in batch { deliver(datagram, from: peer.address) }
        }
    }

    /// One honest step: time moves to the device's next deadline or the peer's next tick, whichever
    /// is first, and everything due happens.
    mutating func honestRound() {
        let deadline = self.deadline
        let next = deadline.map { min($0, nextPeerTick) } ?? nextPeerTick
        if next > now { now = next }
        if let deadline, deadline <= now { timeout() }
        if nextPeerTick <= now {
            if !peer.isSecured && peer.outbox.isEmpty { peer.invite() }
            peer.tick()
            nextPeerTick = now + configuration.measurement.sampleInterval
        }
        deliverAll()
    }

    mutating func advance(by duration: Duration) {
        advance(to: now + duration)
    }

    /// Moves time to `time`, running every device deadline on the way.
    mutating func advance(to time: Instant) {
        var steps = 0
        var next = self.deadline
        while let deadline = next, deadline <= time, steps < 4096 {
            steps += 1
            if deadline > now { now = deadline }
            next = timeout()
        }
        if time > now { now = time }
    }

    /// Runs the device's timers at `now`; afterwards the next deadline must be in the future, or a
    /// driver that sleeps until it would call again at once (and spin, if it never moves). Returns
    /// that deadline, so that loops over deadlines do not ask the device for it again.
    @discardableResult
    mutating func timeout() -> Instant? {
        var next: Instant?
        for _ in 0..<Self.maxTimeoutCallsPerInstant {
            drive { $0.handleTimeout(at: $1) }
            // What the device reported with its output; checking the output does not change it.
            collect()
            next = lastDeadline
            guard let deadline = next, deadline <= now else { return next }
        }
        findings.fail(
            "deadline \(next.map { "\($0)" } ?? "none") still due after "
                + "\(Self.maxTimeoutCallsPerInstant) timeout calls at \(now)")
        return next
    }

    /// Timeout calls at one instant after which the next deadline must be in the future.
    static let maxTimeoutCallsPerInstant = 1

    mutating func deliver(_ bytes: [UInt8], from source: PeerAddress) {
        if source == peer.address { peerHistory.append(bytes) }
        if peerHistory.count > 512 { peerHistory.removeFirst(256) }
        let countersBefore = device.counters
        drive { $0.handleDatagram(bytes, from: source, at: $1) }
        let counters = device.counters
        findings.check(
            counters.datagramsReceived == countersBefore.datagramsReceived + 1,
            "a datagram was not counted")
        let rejected = counters.datagramsRejected - countersBefore.datagramsRejected
        let accepted = counters.datagramsAccepted - countersBefore.datagramsAccepted
        findings.check(
            rejected + accepted == 1, "a datagram counted \(accepted) accepted, \(rejected) rejected")
        if source != peer.address, !echoing, !provenAddresses.contains(source) {
            // A forged source that never echoed a PROBE has not proved it receives at its address:
            // at most one answer, no larger than what came from it (PROTOCOL.md 5, "Amplification").
            let answers = lastSent.filter { $0.destination == .unicast(source) }
            findings.check(
                answers.count <= 1 && answers.allSatisfy { $0.bytes.count <= bytes.count },
                "\(answers.count) answers (\(answers.map(\.bytes.count)) bytes) to \(bytes.count) bytes "
                    + "from an unverified source")
        }
        let events = collect()
        let rejections = events.compactMap { event -> ProtocolError? in
            if case .datagramRejected(let error) = event { error } else { nil }
        }
        findings.check(rejections.count <= rejected, "rejection reported for an accepted datagram")
        if let error = rejections.first {
            findings.check(
                counters.rejected(error.code) > countersBefore.rejected(error.code), "rejection not counted")
        }
        do {
            _ = try Packet(datagram: bytes)
        } catch {
            findings.check(rejected == 1, "the device accepted an undecodable datagram")
            findings.check(
                rejections.first?.code == error.code,
                "undecodable datagram rejected as \(rejections.first?.code.name ?? "nothing"), "
                    + "not \(error.code.name)")
        }
    }

    /// Checks what the device's last input made it send and report, hands its unicasts to the peer,
    /// and checks the device's bounds.
    @discardableResult
    mutating func collect() -> [DeviceEvent] {
        let events = lastEvents
        if events.count > Self.maxOutputsPerInput {
            findings.fail("more than \(Self.maxOutputsPerInput) events from one input")
        }
        var sent = 0
        var probes: [(bytes: [UInt8], address: PeerAddress)] = []
        for datagram in lastSent {
            sent += 1
            if sent > Self.maxOutputsPerInput {
                findings.fail("more than \(Self.maxOutputsPerInput) datagrams from one input")
                break
            }
            findings.check(datagram.bytes.count <= WireConstants.maxDatagramSize, "oversized datagram sent")
            sentByDevice.append(datagram.bytes)
            if sentByDevice.count > 512 { sentByDevice.removeFirst(256) }
            switch datagram.destination {
            case .multicast:
                findings.check((try? Packet(datagram: datagram.bytes)) != nil, "undecodable multicast sent")
            case .unicast(let address):
                if datagram.bytes.count > 3, datagram.bytes[3] == PacketType.invite.rawValue,
                    case .invite(let invite)? = try? Packet(datagram: datagram.bytes)
                {
                    deviceInvitation = (invite.sessionID, invite.receiver, address)
                }
                if address != peer.address, datagram.bytes.count > 3,
                    datagram.bytes[3] == PacketType.probe.rawValue
                {
                    probes.append((datagram.bytes, address))
                }
                // Datagrams to the peer reach it now, in the order sent (the peer checks that they
                // decode); the rest vanish.
                if address == peer.address {
                    peer.receive(datagram.bytes, &findings)
                } else {
                    findings.check((try? Packet(datagram: datagram.bytes)) != nil, "undecodable unicast sent")
                }
            }
        }
        let counters = device.counters
        findings.check(
            counters.datagramsReceived == counters.datagramsAccepted + counters.datagramsRejected,
            "counters do not add up")
        findings.check(
            device.snapshot.peersSeen <= configuration.limits.maxPeers, "peer table over its limit")
        if let closedReason {
            findings.check(device.closedReason == closedReason, "close reason changed")
        }
        closedReason = device.closedReason
        findings.check(device.isClosed == (device.closedReason != nil), "isClosed disagrees with the reason")
        // Every made-up address receives: the device's PROBE is echoed from there at once, so that
        // its INVITE (and the initiator's side after it) is reached. Not for an echo's own output.
        if !echoing {
            for probe in probes {
                guard case .probe(let challenge)? = try? Packet(datagram: probe.bytes) else { continue }
                echoing = true
                provenAddresses.insert(probe.address)
                deliver(Packet.probeAck(challenge).encoded(), from: probe.address)
                echoing = false
            }
        }
        return events
    }

    /// Leaves the device alone; it must close and finish draining within its overall timeout plus
    /// the longest close and drain, never spinning on a deadline.
    mutating func finish() {
        let limit = max(now, Instant.zero + configuration.timeouts.overall) + .seconds(60)
        var steps = 0
        var next = self.deadline
        while let deadline = next {
            steps += 1
            guard steps < 10_000, deadline <= limit else {
                findings.fail("device still has deadline \(deadline) past \(limit) after \(steps) steps")
                return
            }
            if deadline > now { now = deadline }
            next = timeout()
        }
        findings.check(device.isClosed, "device finished without closing")
    }
}
