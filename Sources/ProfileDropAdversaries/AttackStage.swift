import ProfileDropCore
import ProfileDropCrypto
import ProfileDropSimulator

/// How the victims' users answer a consent request.
public enum AttackUsers: String, CaseIterable, Sendable {
    /// Compares every candidate on its screen with the codes on the other victim's: shares with
    /// the one whose code the other screen shows (and, when the victims know each other, only
    /// with a peer shown as known), which declines the others; declines a candidate whose code
    /// the other screen has not shown within ``VictimScreen/comparisonTime`` while showing
    /// others; leaves the rest to the consent timeout.
    case careful
    /// Shares with every request (`--yes`).
    case careless
    /// Nobody at the terminal: the device shares without asking with a peer that proves to be a
    /// known peer (`--yes-known`), and any other request stays unanswered until it declines by
    /// itself at the consent timeout.
    case unattended

    /// Whether the users never give a card or an identity to a device that has not proved to be
    /// a known peer (every kind of user but the careless one), so that anything that reaches the
    /// adversary is a breach.
    var withholdFromStrangers: Bool {
        switch self {
        case .careful, .unattended: true
        case .careless: false
        }
    }
}

/// What one victim's screen showed during a run, and what its user did.
struct VictimScreen {
    let member: Int
    let name: String
    let card: ProfileCard
    let identity: DeviceIdentity
    /// Every code shown by `.verified`, in order.
    var codes: [String] = []
    /// The code on screen: the latest `.verified`.
    var latestCode: String?
    /// Whether the latest `.verified` showed a known peer.
    var latestKnown = false
    /// The candidates asked about, all on screen at once, in the order they were asked: each
    /// with its code, whether it was shown as a known peer, and since when.
    var asked: [(peer: DeviceID, code: String, known: Bool, since: Instant)] = []
    /// The code of the candidate our user picked, shown until its session ends, and its peer.
    var pickedCode: String?
    var pickedPeer: DeviceID?
    /// The codes this screen shows: the candidates asked about and the one picked.
    var shownCodes: [String] { asked.map(\.code) + (pickedCode.map { [$0] } ?? []) }
    /// How long a careful user looks for a candidate's code on the other screen, while that
    /// screen shows other codes, before declining the candidate as a mismatch.
    static let comparisonTime: Duration = .seconds(5)
    var interrupted = 0
    var mismatches = 0
    /// Requests declined by the user, or left unanswered until the consent timeout.
    var declines = 0
    var shares = 0
    /// `.verified` events that showed an adversary's device as a known peer.
    var adversaryShownKnown = 0
    var remembered: [KnownPeer] = []
    /// The cards delivered (`.cardReceived`), in order.
    var receivedCards: [ProfileCard] = []
    var closed: CloseReason?
    /// When the device closed.
    var closedAt: Instant?
    /// When the device was switched on.
    var startedAt: Instant = .zero
    /// The peer of the latest session that started (`.connecting`).
    var currentPeer: DeviceID?
    /// The peer whose card was delivered: the one the exchange that ended the device was with.
    var cardFrom: DeviceID?
    /// Whether that session is still on (no `.sessionEnded`, `.peerBusy` or `.closed` since).
    var sessionOpen = false
    /// Handshakes that completed: with whom, and when.
    var secured: [(peer: DeviceID, at: Instant)] = []
    /// The peers whose code this device showed (both gates had opened with them).
    var verifiedPeers: [DeviceID] = []
    /// Sessions that ended (with `.sessionEnded`, or with `.closed` for the one that ended the
    /// device): the peer, why, and when.
    var ended: [(peer: DeviceID?, reason: CloseReason, at: Instant)] = []

    /// Sessions that ended `identity-proof-failed`.
    var proofFailures: Int {
        ended.filter {
            if case .error(let error) = $0.reason { error.code == .identityProofFailed } else { false }
        }.count
    }
}

/// Who may hear whom: the adversary owns the LAN path, so only the datagrams its rules allow get
/// through, and it sees every copy (it counts those between victims that it kept apart).
struct PathHook: DatagramHook {
    /// Datagrams from `from` reach `to`; with `unicastOnly`, multicast does not.
    struct Rule {
        let from: Int
        let to: Int
        let unicastOnly: Bool
    }

    var rules: [Rule] = []
    let victims: [Int]
    /// Copies between victims that the adversary kept from arriving.
    private(set) var intercepted = 0

    init(victims: [Int]) { self.victims = victims }

    /// Lets `first` and `second` hear each other.
    mutating func connect(_ first: Int, _ second: Int) {
        rules.append(Rule(from: first, to: second, unicastOnly: false))
        rules.append(Rule(from: second, to: first, unicastOnly: false))
    }

    /// Cuts `member` off from everyone.
    mutating func isolate(_ member: Int) { rules.removeAll { $0.from == member || $0.to == member } }

    mutating func route(_ copy: InFlightDatagram) -> DatagramVerdict {
        guard let source = copy.source else { return .deliver }
        let allowed = rules.contains {
            $0.from == source && $0.to == copy.recipient && (!$0.unicastOnly || !copy.multicast)
        }
        if allowed { return .deliver }
        if victims.contains(source) && victims.contains(copy.recipient) { intercepted += 1 }
        return .drop
    }
}

/// One room of an attack run: the victims (real core devices with users acting on their screens),
/// the adversary's devices, and the loop that runs them in virtual time.
struct AttackStage {
    var room: Room
    let users: AttackUsers
    /// Whether the victims are known peers of each other (the careful user then also wants `known`).
    let victimsKnown: Bool
    var victims: [VictimScreen] = []
    /// The adversary's participants and their device ids.
    private(set) var adversaryMembers: [Int] = []
    private(set) var adversaryIDs: [DeviceID] = []
    /// Cards the adversary's devices verified.
    private(set) var adversaryCards: [ProfileCard] = []
    /// Known peers the adversary's devices remembered.
    private(set) var adversaryRemembered: [KnownPeer] = []
    /// The adversary's devices' events since the attack driver last looked.
    private(set) var adversaryEvents: [(member: Int, event: DeviceEvent)] = []
    private var cursors: [Int] = []
    /// What the latest step of ``run(until:afterStep:)`` did.
    private(set) var lastStep: RoomStep?
    /// The hall the stage stands in, if any: its bystanders join when the stage first runs.
    private var hall: HallCrowd?
    /// The hall's bystanders, once they joined; empty in a small room.
    var crowd: Range<Int> { room.crowd }
    /// Their IPv4 addresses.
    var crowdAddresses: Range<UInt32> {
        DeviceContext.ipv4(ofNode: crowd.lowerBound)..<DeviceContext.ipv4(ofNode: crowd.upperBound)
    }

    /// The hall of the attack run being run, if it runs in one (``Attacks/run(runs:seed:kinds:hall:)``):
    /// every stage of the run stands in the same hall, drawn from the run's seed.
    @TaskLocal static var runHall: (hall: AttackHall, runSeed: UInt64)?

    init(users: AttackUsers, victimsKnown: Bool, hook: (any DatagramHook)? = nil) {
        room = Room(hook: hook, keepsEventLog: true)
        self.users = users
        self.victimsKnown = victimsKnown
        if let (hall, runSeed) = Self.runHall {
            self.hall = HallCrowd(devices: hall.devices, seed: runSeed, duration: Self.timeouts.overall)
        }
    }

    /// The member the next participant added will be once the stage runs: after the hall's
    /// bystanders, who join when it first runs.
    var nextMember: Int { room.count + (hall?.devices.count ?? 0) }

    /// The timers of every device in attack runs: the swarm's (60 s overall, 10 s consent).
    static var timeouts: Timeouts { Swarm.timeouts }

    /// The address of the next participant.
    var nextAddress: PeerAddress { Simulation.address(ofNode: room.count) }

    /// Adds a victim: a real core device asking its user, with `identity` and `knownPeers`. Its
    /// static key is drawn from `staticKeySeedMaterial` when given (a key kept across runs, as
    /// version 1 did), else from its own seed material.
    @discardableResult
    mutating func addVictim(
        name: String, card: ProfileCard, identity: DeviceIdentity, knownPeers: [KnownPeer], pose: Pose,
        seedMaterial: [UInt8], staticKeySeedMaterial: [UInt8]? = nil
    ) -> Int {
        let device = coreDevice(
            card: card, consent: users == .unattended ? .shareWithKnownPeers : .askUser, identity: identity,
            knownPeers: knownPeers, seedMaterial: seedMaterial, staticKeySeedMaterial: staticKeySeedMaterial)
        let member = add(device, pose: pose)
        var screen = VictimScreen(member: member, name: name, card: card, identity: identity)
        screen.startedAt = room.now
        victims.append(screen)
        return member
    }

    /// Adds one of the adversary's own core devices, seen through `policy`; with `claimedID`, it
    /// claims that id (a victim's) instead of drawing its own.
    @discardableResult
    mutating func addAdversary(
        card: ProfileCard, consent: ConsentPolicy, identity: DeviceIdentity?, knownPeers: [KnownPeer] = [],
        pose: Pose, seedMaterial: [UInt8], policy: TapPolicy, claimedID: DeviceID? = nil
    ) -> Int {
        var keyRandom = DeterministicRandom(seedMaterial: seedMaterial + Array("/static-key".utf8))
        let configuration = DeviceConfiguration(
            card: card, consent: consent, staticKey: X25519.PrivateKey(using: &keyRandom), identity: identity,
            knownPeers: knownPeers, timeouts: Self.timeouts)
        var device = TappedDevice(
            configuration: configuration, seedMaterial: seedMaterial, now: room.now,
            localAddress: nextAddress,
            policy: policy, claimedID: claimedID)
        device.crowd = crowdAddresses
        adversaryIDs.append(device.deviceID)
        let member = add(device, pose: pose)
        adversaryMembers.append(member)
        return member
    }

    /// Adds an honest core device that is neither a victim nor the adversary's: a phone elsewhere on
    /// the LAN, which shares with whoever proves to be its known peer (nobody here) and asks no one.
    @discardableResult
    mutating func addBystander(card: ProfileCard, pose: Pose, seedMaterial: [UInt8]) -> Int {
        add(
            coreDevice(
                card: card, consent: .shareWithKnownPeers, identity: nil, knownPeers: [],
                seedMaterial: seedMaterial),
            pose: pose)
    }

    /// An honest core device for the next place: its draws from `seedMaterial`, its static key from
    /// `staticKeySeedMaterial` when given, else from `seedMaterial` with a fixed suffix.
    private func coreDevice(
        card: ProfileCard, consent: ConsentPolicy, identity: DeviceIdentity?, knownPeers: [KnownPeer],
        seedMaterial: [UInt8], staticKeySeedMaterial: [UInt8]? = nil
    ) -> Device {
        var keyRandom = DeterministicRandom(
            seedMaterial: staticKeySeedMaterial ?? seedMaterial + Array("/static-key".utf8))
        let configuration = DeviceConfiguration(
            card: card, consent: consent, staticKey: X25519.PrivateKey(using: &keyRandom), identity: identity,
            knownPeers: knownPeers, timeouts: Self.timeouts)
        return Device(
            configuration: configuration, random: DeterministicRandom(seedMaterial: seedMaterial),
            now: room.now, localAddress: nextAddress)
    }

    /// Adds a raw speaker (an attacker that is no core device); returns its member index.
    @discardableResult
    mutating func addSpeaker(_ speaker: any DatagramSpeaker) -> Int {
        let member = room.add(speaker: speaker, at: nextAddress)
        cursors.append(0)
        adversaryMembers.append(member)
        return member
    }

    private mutating func add(_ device: any SansIODevice, pose: Pose) -> Int {
        let member = room.add(device, at: nextAddress)
        cursors.append(0)
        room.updatePose(pose, of: member)
        return member
    }

    /// Abandons adversary device `member`: silent from now on.
    mutating func retire(_ member: Int) {
        room.withDevice(member) { device, _ in
            guard var tapped = device as? TappedDevice else { return }
            tapped.retire()
            device = tapped
        }
    }

    /// The coarse stage of device `member`.
    func stage(of member: Int) -> DeviceStage? { (room.device(member) as? Device)?.stage }

    /// Whether every victim's device closed.
    var victimsClosed: Bool { victims.allSatisfy { $0.closed != nil } }

    /// How long the room runs on after every victim closed, so that the adversary's devices finish
    /// what the victims finished (an exchange completes on one side a little before the other).
    static let settling: Duration = .seconds(3)

    /// Runs until `afterStep` says the attack is over, every victim closed (and ``settling`` passed),
    /// or `limit`. After every step the victims' and the adversary's new events are read, the users
    /// answer what they can, and `afterStep` lets the adversary act; it returns true when nothing
    /// more will happen.
    mutating func run(until limit: Instant, afterStep: (inout AttackStage) -> Bool) {
        if let hall {
            let crowd = hall.join(&room)
            cursors += Array(repeating: 0, count: crowd.count)
            self.hall = nil
            // The adversary's own devices leave the bystanders alone: they are no target here.
            let addresses = crowdAddresses
            for member in adversaryMembers where room.device(member) is TappedDevice {
                room.withDevice(member) { device, _ in
                    guard var tapped = device as? TappedDevice else { return }
                    tapped.crowd = addresses
                    device = tapped
                }
            }
        }
        readEvents()
        var end = limit
        while let step = room.step(notAfter: end) {
            lastStep = step
            readEvents()
            answerRequests()
            let over = afterStep(&self)
            adversaryEvents.removeAll(keepingCapacity: true)
            if over { break }
            if victimsClosed && end == limit { end = min(limit, room.now + Self.settling) }
        }
    }

    // MARK: - Screens

    private mutating func readEvents() {
        // The hall's bystanders are nobody's to watch (the room keeps no log of theirs).
        for member in 0..<room.crowd.lowerBound { readEvents(of: member) }
        for member in room.crowd.upperBound..<room.count { readEvents(of: member) }
    }

    private mutating func readEvents(of member: Int) {
        let log = room.eventLog[member]
        guard cursors[member] < log.count else { return }
        for event in log[cursors[member]...] {
            if let victim = victims.firstIndex(where: { $0.member == member }) {
                show(event, to: victim)
            } else {
                noteAdversary(event, member: member)
            }
        }
        cursors[member] = log.count
    }

    private mutating func show(_ event: DeviceEvent, to index: Int) {
        switch event {
        case .verified(let verification):
            victims[index].codes.append(verification.code)
            victims[index].verifiedPeers.append(verification.peer)
            victims[index].latestCode = verification.code
            victims[index].latestKnown = verification.knownPeer != nil
            if verification.knownPeer != nil && adversaryIDs.contains(verification.peer) {
                victims[index].adversaryShownKnown += 1
            }
        case .consentRequested(let peer):
            // The code came with this peer's `.verified`, just before.
            if victims[index].verifiedPeers.last == peer, let code = victims[index].latestCode {
                victims[index].asked.append(
                    (peer: peer, code: code, known: victims[index].latestKnown, since: room.now))
            }
        case .connecting(let peer, _):
            victims[index].currentPeer = peer
            victims[index].sessionOpen = true
        case .peerBusy:
            victims[index].sessionOpen = false
        case .secured(let peer):
            victims[index].secured.append((peer, room.now))
        case .pairingInterrupted(let peer, _, _):
            victims[index].interrupted += 1
            victims[index].asked.removeAll { $0.peer == peer }
        case .knownPeerMismatch:
            victims[index].mismatches += 1
        case .peerRemembered(let peer):
            victims[index].remembered.append(peer)
        case .cardReceived(let card, let peer):
            victims[index].receivedCards.append(card)
            victims[index].cardFrom = peer
        case .sessionEnded(let peer, let reason):
            victims[index].asked.removeAll { $0.peer == peer }
            if victims[index].pickedPeer == peer { victims[index].pickedCode = nil }
            victims[index].sessionOpen = false
            victims[index].ended.append((peer, reason, room.now))
        case .closed(let reason):
            victims[index].closed = reason
            victims[index].closedAt = room.now
            // The session that ended the device, if one did (an exchange or a decline); an exchange
            // is the delivered card's peer, since several sessions may be open beside it.
            if victims[index].sessionOpen || reason == .exchanged {
                victims[index].sessionOpen = false
                let peer =
                    reason == .exchanged
                    ? victims[index].cardFrom ?? victims[index].currentPeer : victims[index].currentPeer
                victims[index].ended.append((peer, reason, room.now))
            }
            victims[index].asked.removeAll()
            if reason == .timeout(.consent) { victims[index].declines += 1 }
        case .advertising, .peerFound, .incompatiblePeer, .ranging,
            .inRange,
            .exchanging, .cardVerified, .acknowledged, .datagramRejected:
            break
        }
    }

    private mutating func noteAdversary(_ event: DeviceEvent, member: Int) {
        switch event {
        case .cardVerified(let card, _):
            adversaryCards.append(card)
        case .peerRemembered(let peer):
            adversaryRemembered.append(peer)
        case .verified, .consentRequested, .closed, .sessionEnded:
            break
        case .advertising, .peerFound, .peerBusy, .connecting, .secured, .pairingInterrupted,
            .knownPeerMismatch,
            .incompatiblePeer, .ranging, .inRange, .exchanging, .cardReceived, .acknowledged,
            .datagramRejected:
            return
        }
        adversaryEvents.append((member, event))
    }

    /// Each user answers the candidates on its screen if it can: the careless one shares at once
    /// (with one candidate, as `--yes` would; with several, with the first), the careful one
    /// compares them with the other victim's screen (a careful user alone with a stranger has
    /// nothing to compare and declines), the unattended one never answers.
    private mutating func answerRequests() {
        for index in victims.indices where !victims[index].asked.isEmpty {
            let member = victims[index].member
            switch users {
            case .unattended:
                continue
            case .careless:
                let first = victims[index].asked[0]
                answer(.share, about: first.peer, code: first.code, victim: index)
            case .careful:
                guard victims.count == 2 else {
                    victims[index].declines += victims[index].asked.count
                    victims[index].asked.removeAll()
                    room.decide(.decline, for: member)
                    readEvents()
                    continue
                }
                let other = victims[1 - index].shownCodes
                if let match = victims[index].asked.first(where: { candidate in
                    other.contains(candidate.code) && (!victimsKnown || candidate.known)
                }) {
                    answer(.share, about: match.peer, code: match.code, victim: index)
                } else if !other.isEmpty,
                    let stale = victims[index].asked.first(where: {
                        room.now >= $0.since + VictimScreen.comparisonTime
                    })
                {
                    answer(.decline, about: stale.peer, code: stale.code, victim: index)
                }
            }
        }
    }

    /// Victim `index`'s user answers about one candidate; sharing declines the others on screen.
    private mutating func answer(
        _ decision: ConsentDecision, about peer: DeviceID, code: String, victim index: Int
    ) {
        if decision == .decline {
            victims[index].declines += 1
            victims[index].asked.removeAll { $0.peer == peer }
        } else {
            victims[index].shares += 1
            victims[index].declines += victims[index].asked.count - 1
            victims[index].asked.removeAll()
            victims[index].pickedCode = code
            victims[index].pickedPeer = peer
        }
        room.decide(decision, about: peer, for: victims[index].member)
        readEvents()
    }
}

/// What the adversary learned as the endpoint of its own devices' sessions: every identifier and
/// secret-looking value a victim sent it, labelled, and whether a user gave it by agreeing to share.
class AdversaryBrain: TapPolicy {
    /// One value learned.
    struct Learned {
        /// What it was (`IDENT`, `static key`, ...).
        let label: String
        let bytes: [UInt8]
        /// Sent only because the victim's user agreed to share: the card, its digest, the BOND.
        let given: Bool
    }

    private(set) var learned: [Learned] = []
    /// BOND frames received: the resolving keys of whoever agreed to share with us.
    private(set) var resolvingKeys: [[UInt8]] = []

    func learn(_ label: String, _ bytes: [UInt8], given: Bool = false) {
        learned.append(Learned(label: label, bytes: bytes, given: given))
    }

    override func keepsIncoming(
        _ packet: Packet, from source: PeerAddress, device: DeviceID, at time: Instant
    )
        -> Bool
    {
        switch packet {
        case .beacon(let beacon):
            learn("device id", Self.bytes(beacon.deviceID.rawValue))
        case .query(let query):
            learn("device id", Self.bytes(query.deviceID.rawValue))
        case .invite(let message), .accept(let message):
            learn("device id", Self.bytes(message.sender.rawValue))
            learn("ephemeral key", Array(message.noiseMessage.prefix(X25519.keyLength)))
        case .confirm(let message):
            learn("device id", Self.bytes(message.sender.rawValue))
        case .busy(let busy):
            learn("device id", Self.bytes(busy.sender.rawValue))
        case .secure, .probe, .probeAck:
            break
        }
        return true
    }

    override func secured(_ session: TapSession, device: DeviceID, at time: Instant) {
        if let key = session.peerStaticKey { learn("static key", key) }
    }

    override func received(_ frames: [Frame], in session: TapSession, device: DeviceID, at time: Instant) {
        for frame in frames {
            switch frame {
            case .token(let token): learn("TOKEN", token.bytes)
            case .ident(let ident): learn("IDENT", ident)
            case .proof(let proof): learn("PROOF", proof)
            case .commit(let commitment): learn("COMMIT", commitment)
            case .nonce(let nonce): learn("NONCE", nonce)
            case .reveal(let nonce): learn("REVEAL", nonce)
            case .consent(_, let offer):
                if let offer { learn("card digest", offer.digest, given: true) }
            case .cardChunk(_, let data): learn("card", Array(data), given: true)
            case .bond(let resolvingKey, let share):
                learn("resolving key", resolvingKey, given: true)
                learn("bond share", share, given: true)
                resolvingKeys.append(resolvingKey)
            // Poses, our own digest echoed, receipts and closes identify nobody.
            case .ranging, .inRange, .cardSack, .cardAck, .close, .closeAck, .receipt:
                break
            }
        }
    }

    /// Whether `secret` appears in anything learned.
    func holds(_ secret: [UInt8]) -> Bool {
        learned.contains { Self.contains($0.bytes, secret) }
    }

    static func contains(_ haystack: [UInt8], _ needle: [UInt8]) -> Bool {
        guard !needle.isEmpty, haystack.count >= needle.count else { return false }
        if haystack.count == needle.count { return haystack == needle }
        for start in 0...(haystack.count - needle.count) where haystack[start] == needle[0] {
            if haystack[start..<(start + needle.count)].elementsEqual(needle) { return true }
        }
        return false
    }

    static func bytes(_ value: UInt64) -> [UInt8] {
        stride(from: 56, through: 0, by: -8).map { UInt8(truncatingIfNeeded: value >> UInt64($0)) }
    }
}
