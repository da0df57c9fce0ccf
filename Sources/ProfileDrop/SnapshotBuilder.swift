import ProfileDropCore
import ProfileDropJSON

/// Turns the core's events into ``PairingSnapshot``s: the stage shown moves forward only within a
/// session, figures the core clears at a session's close stay shown, and a snapshot that would
/// repeat the one before (apart from time) is not made.
struct SnapshotBuilder {
    private var stage = PairingSnapshot.Stage.advertising
    /// What verification showed in the current session: with candidates asked about, the first
    /// one's (or the one picked).
    private var verification: Verification?
    /// The newest candidate asked about.
    private var question: ConsentQuestion?
    /// Every candidate asked about, in the order asked, and what its verification showed.
    private var candidates: [(question: ConsentQuestion, verification: Verification)] = []
    /// A verification beside the candidates on screen, for the question that follows it.
    private var pendingVerification: Verification?
    /// The candidate the latest answer named.
    private var answeredCandidate: String?
    /// The last figures of the current session, kept once the core clears them.
    private var remembered: DeviceSnapshot?
    private var lastMembers: JSONValue?

    private mutating func remember(_ snapshot: DeviceSnapshot) -> DeviceSnapshot {
        var merged = snapshot
        if let previous = remembered, snapshot.peer == nil || snapshot.peer == previous.peer {
            merged.peer = snapshot.peer ?? previous.peer
            merged.distanceCm = snapshot.distanceCm ?? previous.distanceCm
            merged.bearingDeg = snapshot.bearingDeg ?? previous.bearingDeg
            if snapshot.totalSendChunks == 0 && snapshot.totalReceiveChunks == 0 {
                merged.sentChunks = previous.sentChunks
                merged.totalSendChunks = previous.totalSendChunks
                merged.receivedChunks = previous.receivedChunks
                merged.totalReceiveChunks = previous.totalReceiveChunks
            }
        }
        remembered = merged
        return merged
    }

    /// Moves forward only: late progress after the acknowledgement must not move the stage back.
    private mutating func advance(to next: PairingSnapshot.Stage) {
        if next.number > stage.number { stage = next }
    }

    /// The first snapshot of a run.
    mutating func started(_ current: DeviceSnapshot) -> PairingSnapshot? {
        emit(.advertising, current)
    }

    /// The snapshot for a core event, or nil when it shows nothing new.
    mutating func event(_ event: DeviceEvent, _ current: DeviceSnapshot) -> PairingSnapshot? {
        switch event {
        case .advertising:
            guard stage != .advertising else { return nil }
            stage = .advertising
            return emit(.advertising, current)
        case .peerFound(let peer):
            // Devices found while a session is under way are no step of this one.
            guard stage.number <= PairingSnapshot.Stage.peerFound.number else { return nil }
            advance(to: .peerFound)
            return emit(.peerFound(peer: peer.description), current)
        case .peerBusy:
            return emit(.peerBusy, current)
        case .connecting(let peer, _):
            advance(to: .peerFound)
            return emit(.connecting(peer: peer.description), current)
        case .secured(let peer):
            advance(to: .secured)
            return emit(.secured(peer: peer.description), current)
        case .verified(let verification):
            // Another session's code never shows under the question on screen (PROTOCOL.md 5,
            // "Candidates"): it comes with its own question, added to the list.
            if !candidates.isEmpty, self.verification?.peer != verification.peer {
                pendingVerification = verification
                return nil
            }
            self.verification = verification
            return emit(.verified(interruptedBefore: verification.interruptedBefore), current)
        case .pairingInterrupted(let peer, let code, let reason):
            return emit(
                .pairingInterrupted(
                    peer: peer.description, code: code, reason: Self.reasonCode(reason),
                    detail: reason.description),
                current)
        case .knownPeerMismatch(let name):
            return emit(.knownPeerMismatch(name: name), current)
        case .incompatiblePeer(let peer, let version):
            return emit(.incompatiblePeer(peer: peer.description, version: Int(version)), current)
        case .ranging:
            advance(to: .ranging)
            return emit(.ranging, current)
        case .inRange:
            advance(to: .inRange)
            return emit(.inRange, current)
        case .exchanging:
            guard stage.number <= PairingSnapshot.Stage.exchanging.number else { return nil }
            advance(to: .exchanging)
            return emit(.exchanging, current)
        case .cardReceived:
            return emit(.cardReceived, current)
        case .acknowledged:
            advance(to: .acknowledged)
            var snapshot = remember(current)
            // The acknowledgement covers every chunk, whatever the last progress event said.
            snapshot.sentChunks = snapshot.totalSendChunks
            remembered = snapshot
            return emit(.acknowledged, snapshot)
        case .sessionEnded(let peer, let reason):
            let wasCandidate = candidates.contains { $0.verification.peer == peer }
            candidates.removeAll { $0.verification.peer == peer }
            question = candidates.last?.question
            if !candidates.isEmpty {
                // The other candidates stay on screen; the one that ended leaves the list.
                guard wasCandidate else { return nil }
                if verification?.peer == peer { verification = candidates.first?.verification }
                return emit(
                    .sessionEnded(reason: Self.reasonCode(reason), detail: reason.description), current)
            }
            // A session beside the one shown ended: what is shown stays.
            if !wasCandidate, let shown = verification?.peer ?? remembered?.peer, shown != peer { return nil }
            stage = .advertising
            verification = nil
            question = nil
            remembered = nil
            return emit(.sessionEnded(reason: Self.reasonCode(reason), detail: reason.description), current)
        case .consentRequested, .peerRemembered, .closed, .datagramRejected, .cardVerified:
            // The run reports the first two with what only it knows; the end comes with the
            // outcome; rejections are counted; a verified card is shown once it is delivered.
            return nil
        }
    }

    /// The question about `peer`, after the verification it follows: added to the candidates on
    /// screen.
    mutating func asked(
        peer: DeviceID, timeoutSeconds: Int, offersCard: Bool, _ current: DeviceSnapshot
    ) -> PairingSnapshot? {
        let found = [pendingVerification, verification].compactMap { $0 }.first { $0.peer == peer }
        guard let found else { return nil }
        pendingVerification = nil
        let asked = ConsentQuestion(
            peer: found.peer.description, code: found.code, knownPeerName: found.knownPeer?.name,
            interruptedBefore: found.interruptedBefore, timeoutSeconds: timeoutSeconds, offersCard: offersCard
        )
        candidates.removeAll { $0.verification.peer == peer }
        candidates.append((asked, found))
        if candidates.count == 1 { verification = found }
        question = asked
        answeredCandidate = nil
        return emit(.consent, current)
    }

    /// The program's answer was handed to the device: about `candidate` (a peer asked about), or
    /// with nil about the one candidate shown, or declining them all.
    mutating func answered(_ answer: ConsentAnswer, candidate: String?, _ current: DeviceSnapshot)
        -> PairingSnapshot?
    {
        if let candidate, answer == .decline {
            candidates.removeAll { $0.question.peer == candidate }
        } else {
            // Picking one declines the others; an unnamed answer is about the one shown, or all.
            if let candidate, let picked = candidates.first(where: { $0.question.peer == candidate }) {
                verification = picked.verification
            }
            candidates.removeAll()
        }
        if let first = candidates.first,
            !candidates.contains(where: { $0.verification.peer == verification?.peer })
        {
            verification = first.verification
        }
        question = candidates.last?.question
        answeredCandidate = candidate
        return emit(.decision(answer), current)
    }

    /// The questions were declined for want of an answer, or the run ended with them.
    mutating func unanswered() {
        question = nil
        candidates.removeAll()
    }

    /// A peer kept (or not: `stored`) as a known peer.
    mutating func remembered(
        _ peer: KnownPeer, fingerprint: String, storeError: String?, _ current: DeviceSnapshot
    ) -> PairingSnapshot? {
        var snapshot = emit(
            .peerRemembered(name: peer.name, fingerprint: fingerprint, stored: storeError == nil), current)
        snapshot?.storeError = storeError
        return snapshot
    }

    /// The program moved the device.
    mutating func moved(_ current: DeviceSnapshot) -> PairingSnapshot? { emit(.pose, current) }

    /// The last snapshot, with the outcome.
    mutating func closed(_ outcome: PairingOutcome, _ current: DeviceSnapshot) -> PairingSnapshot {
        stage = .closed
        question = nil
        candidates.removeAll()
        var snapshot = make(.closed, remember(current))
        snapshot.outcome = outcome
        return snapshot
    }

    private mutating func emit(_ event: PairingSnapshot.Event, _ current: DeviceSnapshot) -> PairingSnapshot?
    {
        let snapshot = make(event, remember(current))
        let members = JSONValue.object(snapshot.jsonMembers)
        guard members != lastMembers else { return nil }
        lastMembers = members
        return snapshot
    }

    private func make(_ event: PairingSnapshot.Event, _ snapshot: DeviceSnapshot) -> PairingSnapshot {
        PairingSnapshot(
            event: event, stage: stage, device: snapshot.deviceID.description,
            peer: snapshot.peer?.description, code: verification?.code,
            isKnownPeer: verification.map { $0.knownPeer != nil },
            knownPeerName: verification?.knownPeer?.name,
            distanceCm: snapshot.distanceCm.map(Self.oneDecimal),
            bearingDeg: snapshot.bearingDeg.map(Self.oneDecimal),
            progress: .init(
                sent: snapshot.sentChunks, sendTotal: snapshot.totalSendChunks,
                received: snapshot.receivedChunks,
                receiveTotal: snapshot.totalReceiveChunks),
            question: question, outcome: nil, peersSeen: snapshot.peersSeen,
            candidates: candidates.map(\.question),
            answeredCandidate: event.isDecision ? answeredCandidate : nil)
    }

    /// One decimal is what is shown; more would only be noise.
    static func oneDecimal(_ value: Double) -> Double { value.isFinite ? (value * 10).rounded() / 10 : value }

    /// The coarse reason (PROTOCOL.md section 9): a request nobody answered was declined.
    static func reasonCode(_ reason: CloseReason) -> String {
        outcomeReason(reason).rawValue
    }

    static func outcomeReason(_ reason: CloseReason) -> PairingOutcome.Reason {
        switch reason {
        case .exchanged: .exchanged
        case .declined, .timeout(.consent): .declined
        case .outOfRange: .outOfRange
        case .timeout: .timeout
        case .error: .error
        }
    }

    /// What to try next after `reason`, when there is something.
    static func hint(for reason: CloseReason, snapshot: PairingSnapshot, peersSeen: Int) -> String? {
        switch reason {
        case .outOfRange:
            let band = "hold the devices 5–10 cm apart, facing each other"
            guard let distance = snapshot.distanceCm, let bearing = snapshot.bearingDeg else { return band }
            return "last seen at \(Self.decimalText(distance)) cm, \(Self.decimalText(bearing))°: \(band)"
        case .timeout(.noExchange) where peersSeen == 0 && snapshot.peer == nil:
            return "no peer was seen: the same --port on both? a firewall dropping UDP multicast? "
                + "See README, Troubleshooting discovery"
        case .exchanged, .declined, .timeout, .error:
            return nil
        }
    }

    /// A figure to one decimal, without `.0`.
    static func decimalText(_ value: Double) -> String {
        let rounded = (value * 10).rounded() / 10
        return rounded == rounded.rounded() ? String(Int(rounded)) : String(rounded)
    }
}
