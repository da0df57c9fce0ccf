import ProfileDropCore

/// What a replayed capture shows of one session, arranged for a picture: the datagrams between the
/// devices (and whether each arrived), each device's distance and bearing estimates against the
/// proximity gate's band, the spans its gate was open, its card transfer's progress and
/// retransmissions, and how each device closed.
///
/// Build one from the entries of ``Replay/run(_:staticKey:onEntry:)`` with a ``Builder``, or
/// from a whole capture with ``init(capture:title:)``; ``TimelineSVG`` draws it. Everything is kept
/// in arrays in the order things happened, so the same capture always gives the same timeline.
public struct SessionTimeline: Equatable, Sendable {
    /// A lifeline: a captured device, or an address the capture only saw datagrams from or to.
    public struct Lane: Equatable, Sendable {
        /// The device's name, or the address of a device that was not captured.
        public var name: String
        /// The device's address.
        public var address: PeerAddress?
        /// Whether the capture holds this device's records (false for a peer seen from outside).
        public var isCaptured: Bool
    }

    /// What became of a datagram. Its raw value is the class the picture gives its arrow.
    public enum Fate: String, Equatable, Sendable {
        /// A captured device received it as sent.
        case delivered
        /// No captured device received it (lost on the way, or sent after the receiver stopped).
        case notReceived = "not-received"
        /// It arrived with other bytes than were sent (changed on the way).
        case altered
        /// Its receiver was not captured, so the capture cannot tell.
        case unknown
    }

    /// One datagram, drawn as one arrow.
    public struct Datagram: Equatable, Sendable {
        /// The lane of the sender.
        public var sender: Int
        /// The lane of the receiver, or nil for a multicast datagram nobody captured received.
        public var receiver: Int?
        /// When it was sent (for a datagram from an uncaptured peer, when it was received).
        public var sentAt: Instant
        /// When the receiver first handled it.
        public var receivedAt: Instant?
        /// The message type: BEACON, QUERY, INVITE, ACCEPT, CONFIRM, BUSY, SECURE, INVALID.
        public var type: String
        /// The names of the frames inside a SECURE datagram, when replay could decrypt them.
        public var frames: [String]
        /// What became of it.
        public var fate: Fate
        /// How many times the receiver handled it (more than 1 when the network duplicated it).
        public var copies: Int
        /// Why the receiver dropped it (`authentication-failed`, …), when it did.
        public var rejection: String?
        /// Whether it is bulk card transfer: a SECURE datagram whose frames are card chunks and
        /// SACKs (with receipts) and nothing else. A picture may fold long runs of these.
        public var isTransfer = false
    }

    /// A filtered distance and bearing estimate of the peer, as a device reported it.
    public struct Sample: Equatable, Sendable {
        /// When.
        public var time: Instant
        /// Centimetres.
        public var distance: Double
        /// Degrees off straight ahead.
        public var bearing: Double
        /// Whether it begins a new line (a new session, or after a gap in the estimates).
        public var startsLine: Bool
    }

    /// A time span; `end` is nil while it lasts to the end of the timeline.
    public struct Span: Equatable, Sendable {
        /// When it began.
        public var start: Instant
        /// When it ended.
        public var end: Instant?
    }

    /// Card transfer progress: `acknowledged` of `total` chunks of the device's card.
    public struct Progress: Equatable, Sendable {
        /// When the device reported it.
        public var time: Instant
        /// Chunks the peer acknowledged.
        public var acknowledged: Int
        /// Chunks of the card.
        public var total: Int
    }

    /// A CARD_CHUNK sent again.
    public struct Retransmission: Equatable, Sendable {
        /// When.
        public var time: Instant
        /// The chunk's index.
        public var chunk: Int
    }

    /// Something a device reported or was told, shown on its lifeline.
    public struct Mark: Equatable, Sendable {
        /// The kinds of mark, for their colour.
        public enum Kind: Equatable, Sendable {
            /// Progress: secured, in range, verified, card received, …
            case progress
            /// A decision by the device's user.
            case decision
            /// A session ended, a pairing was interrupted, the device closed without exchanging.
            case failure
            /// The device closed having exchanged.
            case success
        }

        /// The lane.
        public var lane: Int
        /// When.
        public var time: Instant
        /// The words shown.
        public var text: String
        /// The kind.
        public var kind: Kind
    }

    /// What one captured device measured and did.
    public struct Track: Equatable, Sendable {
        /// Its lane.
        public var lane: Int
        /// Its estimates of the peer, in order.
        public var samples: [Sample]
        /// When its proximity gate was open: from its in-range event until an estimate left the
        /// band widened by the hysteresis margins, or the session ended.
        public var gateOpen: [Span]
        /// Its card transfer progress, in order.
        public var progress: [Progress]
        /// Chunks of its card it sent again.
        public var retransmissions: [Retransmission]
        /// Why it closed, in the words of the text timeline; nil when the capture ends before.
        public var closeReason: String?
        /// Whether it closed having exchanged.
        public var exchanged: Bool
    }

    /// The distance band, maximum bearing and hysteresis margins of the proximity gate.
    public struct Band: Equatable, Sendable {
        /// Centimetres.
        public var distance: ClosedRange<Double>
        /// Degrees.
        public var maximumBearing: Double
        /// Centimetres either side of the band while the gate is open.
        public var distanceHysteresis: Double
        /// Degrees beyond the maximum bearing while the gate is open.
        public var bearingHysteresis: Double

        /// The gate's band.
        public init(_ gate: ProximityGate.Configuration) {
            distance = gate.distanceBand
            maximumBearing = gate.maximumBearing
            distanceHysteresis = gate.distanceHysteresis
            bearingHysteresis = gate.bearingHysteresis
        }
    }

    /// The headline: what the picture is of.
    public var title: String
    /// The lifelines, captured devices first in capture order.
    public var lanes: [Lane]
    /// Every datagram, in the order sent.
    public var datagrams: [Datagram]
    /// Every mark, in time order.
    public var marks: [Mark]
    /// One track per captured device, in lane order.
    public var tracks: [Track]
    /// The first captured device's gate band (every device of a run shares it).
    public var band: Band
    /// The earliest time in the timeline; pictures count from it.
    public var start: Instant
    /// The latest time in the timeline.
    public var end: Instant

    /// How many addresses seen only from outside get a lifeline of their own; the others share
    /// one, `other addresses`.
    public static let maximumUncapturedLanes = 3

    /// One line per device: `alice: exchanged`, `bob: declined by peer`, `carol: did not close`.
    public var outcome: String {
        tracks.map { "\(lanes[$0.lane].name): \($0.closeReason ?? "did not close")" }
            .joined(separator: " · ")
    }

    /// Why the session went as it did, as short facts (gates that never opened, with what the
    /// devices measured against the band; datagrams not received or dropped): empty when every
    /// device exchanged.
    public var diagnosis: [String] {
        guard !tracks.allSatisfy(\.exchanged) else { return [] }
        var facts: [String] = []
        var measured: [String] = []
        var neverOpened = 0
        for track in tracks {
            let name = lanes[track.lane].name
            if track.samples.isEmpty {
                facts.append("\(name) measured no distance")
            } else if let closing = track.gateOpen.last?.end,
                let sample = track.samples.last(where: { $0.time == closing && isOutsideWidenedBand($0) })
            {
                let seconds = Double((closing - start).nanosecondsClamped) / 1e9
                facts.append(
                    "\(name)'s gate closed at \(Self.number(seconds)) s: the peer was estimated at "
                        + "\(Self.number(sample.distance)) cm, \(Self.number(sample.bearing))°")
            } else if track.gateOpen.isEmpty {
                neverOpened += 1
                let distances = track.samples.map(\.distance)
                let bearings = track.samples.map(\.bearing)
                measured.append(
                    "\(name) measured \(Self.number(distances.min() ?? 0))–\(Self.number(distances.max() ?? 0)) cm "
                        + "at up to \(Self.number(bearings.max() ?? 0))°")
            }
        }
        if neverOpened > 0 {
            let who =
                neverOpened < tracks.count
                ? "\(neverOpened == 1 ? "a gate" : "some gates") never opened"
                : tracks.count == 1
                    ? "the gate never opened" : tracks.count == 2 ? "neither gate opened" : "no gate opened"
            let band =
                "\(Self.number(band.distance.lowerBound))–\(Self.number(band.distance.upperBound)) cm, "
                + "≤ \(Self.number(band.maximumBearing))°"
            facts.insert(
                "\(who): "
                    + measured.joined(separator: ", ") + " (band \(band))", at: 0)
        }
        for mark in marks where mark.kind == .decision && mark.text.hasSuffix("decline") {
            facts.insert("\(lanes[mark.lane].name)'s user declined", at: 0)
        }
        let lost = datagrams.filter { $0.fate == .notReceived }.count
        if lost > 0 { facts.append("\(lost) datagram\(lost == 1 ? "" : "s") not received") }
        let altered = datagrams.filter { $0.fate == .altered }.count
        if altered > 0 { facts.append("\(altered) altered on the way") }
        let rejected = datagrams.filter { $0.rejection != nil }.count
        if rejected > 0 { facts.append("\(rejected) dropped by the receiver") }
        return facts
    }

    /// Whether an estimate lies outside the band widened by the hysteresis margins, where an open
    /// gate closes.
    public func isOutsideWidenedBand(_ sample: Sample) -> Bool {
        sample.distance < band.distance.lowerBound - band.distanceHysteresis
            || sample.distance > band.distance.upperBound + band.distanceHysteresis
            || sample.bearing > band.maximumBearing + band.bearingHysteresis
    }

    /// A quantity to one decimal, without a trailing `.0`.
    static func number(_ value: Double) -> String { Describe.number(value) }
}

extension SessionTimeline {
    /// Replays every device of `capture` and builds its timeline.
    /// - Throws: ``CaptureError`` when a device cannot be replayed (no keylog, a missing static key),
    ///   and with code `malformed` when the replay diverges from the capture.
    public init(capture: CaptureFile, title: String) throws(CaptureError) {
        var builder = Builder(title: title)
        for device in capture.devices {
            let result = try Replay.run(device) { builder.add($0) }
            if case .diverged(let divergence) = result {
                throw CaptureError(.malformed, "the replay diverged: \(divergence)")
            }
        }
        self = builder.timeline()
    }

    /// Collects replay entries, device after device or interleaved, and arranges them.
    public struct Builder: Sendable {
        private struct Received {
            var lane: Int
            var time: Instant
            var bytes: [UInt8]
            var source: PeerAddress
            var rejection: String?
            var used = false
        }

        private struct Sent {
            var lane: Int
            var time: Instant
            var bytes: [UInt8]
            var destination: Destination
            var frames: [Frame]?
        }

        /// Receipts of the same bytes from the same address by the same lane.
        private struct ReceiptKey: Hashable {
            var source: PeerAddress
            var bytes: [UInt8]
            var lane: Int
        }

        /// Indices into `received`, in order, and the first that may still match a send.
        private struct ReceiptList {
            var indices: [Int] = []
            var next = 0
        }

        /// Sends of the same bytes by the same lane.
        private struct SentKey: Hashable {
            var lane: Int
            var bytes: [UInt8]
        }

        private struct DeviceState {
            var lane: Int
            var track: Track
            var band: Band
            /// The index in `received` of the device's latest datagram input.
            var lastReceived: Int?
            var sentChunks: [Int] = []
            /// The next estimate begins a new line: a session ended since the last one.
            var breaksLine = false
        }

        private let title: String
        private var lanes: [Lane] = []
        private var devices: [DeviceState] = []
        private var sent: [Sent] = []
        private var received: [Received] = []
        private var marks: [Mark] = []
        private var times: [Instant] = []

        /// Starts an empty timeline headed `title`.
        public init(title: String) { self.title = title }

        /// Adds one replay entry. A device's entries start with its `.start` entry.
        public mutating func add(_ entry: ReplayEntry) {
            times.append(entry.time)
            if case .start(let record, _) = entry.kind {
                let lane = lanes.count
                lanes.append(Lane(name: record.name, address: record.localAddress, isCaptured: true))
                devices.append(
                    DeviceState(
                        lane: lane,
                        track: Track(
                            lane: lane, samples: [], gateOpen: [], progress: [], retransmissions: [],
                            closeReason: nil, exchanged: false),
                        band: Band(record.gate)))
                return
            }
            guard let index = devices.lastIndex(where: { lanes[$0.lane].name == entry.device }) else {
                return
            }
            let lane = devices[index].lane
            switch entry.kind {
            case .start:
                break
            case .input(let input):
                switch input {
                case .datagram(let bytes, let source):
                    devices[index].lastReceived = received.count
                    received.append(Received(lane: lane, time: entry.time, bytes: bytes, source: source))
                case .decision(let decision):
                    marks.append(
                        Mark(
                            lane: lane, time: entry.time, text: "user: \(Describe.decision(decision))",
                            kind: .decision))
                case .candidateDecision(let decision, let peer):
                    marks.append(
                        Mark(
                            lane: lane, time: entry.time,
                            text: "user: \(Describe.decision(decision)) \(peer)", kind: .decision))
                case .cancel:
                    marks.append(Mark(lane: lane, time: entry.time, text: "user: stop", kind: .decision))
                case .timeout, .pose:
                    break
                }
            case .sent(let datagram):
                sent.append(
                    Sent(
                        lane: lane, time: entry.time, bytes: datagram.bytes,
                        destination: datagram.destination,
                        frames: entry.frames))
                for frame in entry.frames ?? [] {
                    guard case .cardChunk(let chunk, _) = frame else { continue }
                    if devices[index].sentChunks.contains(Int(chunk)) {
                        devices[index].track.retransmissions.append(
                            Retransmission(time: entry.time, chunk: Int(chunk)))
                    } else {
                        devices[index].sentChunks.append(Int(chunk))
                    }
                }
            case .event(let event):
                absorb(event, at: entry.time, device: index)
            }
        }

        private mutating func absorb(_ event: DeviceEvent, at time: Instant, device index: Int) {
            let lane = devices[index].lane
            func mark(_ text: String, _ kind: Mark.Kind) {
                marks.append(Mark(lane: lane, time: time, text: text, kind: kind))
            }
            func closeGate() {
                if let last = devices[index].track.gateOpen.indices.last,
                    devices[index].track.gateOpen[last].end == nil
                {
                    devices[index].track.gateOpen[last].end = time
                }
            }
            switch event {
            case .secured:
                mark("secured", .progress)
            case .ranging(let distance, let bearing):
                let previous = devices[index].track.samples.last
                let startsLine =
                    devices[index].breaksLine || previous.map { time - $0.time > .milliseconds(600) } ?? true
                devices[index].breaksLine = false
                devices[index].track.samples.append(
                    Sample(time: time, distance: distance, bearing: bearing, startsLine: startsLine))
                let band = devices[index].band
                let outside =
                    distance < band.distance.lowerBound - band.distanceHysteresis
                    || distance > band.distance.upperBound + band.distanceHysteresis
                    || bearing > band.maximumBearing + band.bearingHysteresis
                if outside { closeGate() }
            case .inRange:
                closeGate()
                devices[index].track.gateOpen.append(Span(start: time, end: nil))
                mark("gate open", .progress)
            case .verified(let verification):
                mark("code \(verification.code)", .progress)
            case .exchanging(let sent, let total):
                devices[index].track.progress.append(Progress(time: time, acknowledged: sent, total: total))
            case .cardReceived:
                mark("card received", .success)
            case .sessionEnded(_, let reason):
                closeGate()
                devices[index].breaksLine = true
                mark("session ended: \(reason.description)", .failure)
            case .pairingInterrupted(_, _, let reason):
                mark("pairing interrupted: \(reason.description)", .failure)
            case .knownPeerMismatch(let name):
                mark("not \(name)", .failure)
            case .closed(let reason):
                closeGate()
                devices[index].track.closeReason = reason.description
                var exchanged = false
                if case .exchanged = reason { exchanged = true }
                devices[index].track.exchanged = exchanged
                mark("closed: \(reason.description)", exchanged ? .success : .failure)
            case .datagramRejected(let error):
                if let last = devices[index].lastReceived, received[last].time == time,
                    received[last].rejection == nil
                {
                    received[last].rejection = error.code.name
                }
            case .advertising, .peerFound, .peerBusy, .connecting, .peerRemembered,
                .incompatiblePeer, .consentRequested, .cardVerified, .acknowledged:
                break
            }
        }

        /// The timeline of everything added.
        public func timeline() -> SessionTimeline {
            var lanes = self.lanes
            var received = self.received
            let captured = lanes.count
            func laneOf(_ address: PeerAddress) -> Int? {
                lanes.indices.first { lanes[$0].address == address }
            }
            // Addresses seen from outside get a lane each, up to a few; the rest (a busy network's
            // other devices) share one, so that the picture keeps its width.
            var others: Int?
            func lane(for address: PeerAddress) -> Int {
                if let lane = laneOf(address) { return lane }
                guard lanes.count - captured >= SessionTimeline.maximumUncapturedLanes else {
                    lanes.append(Lane(name: address.description, address: address, isCaptured: false))
                    return lanes.count - 1
                }
                if let others { return others }
                lanes.append(Lane(name: "other addresses", address: nil, isCaptured: false))
                others = lanes.count - 1
                return lanes.count - 1
            }
            var datagrams: [Datagram] = []
            // Receipts by what they carry, from where, to which lane, each list in the order added:
            // a device's inputs are in time order, so each list is too. Matching a send looks in
            // the lists of its bytes alone, which keeps a long capture's timeline linear in its
            // datagrams (comparing every send with every receipt took seconds for two hours).
            var receiptsByKey: [ReceiptKey: ReceiptList] = [:]
            for index in received.indices {
                let receipt = received[index]
                receiptsByKey[
                    ReceiptKey(source: receipt.source, bytes: receipt.bytes, lane: receipt.lane),
                    default: ReceiptList()
                ].indices.append(index)
            }
            // For each send, the time the same device next sent the same bytes, if it did.
            var sentAgainAt = [Instant?](repeating: nil, count: sent.count)
            var latestSend: [SentKey: Instant] = [:]
            for position in sent.indices.reversed() {
                let key = SentKey(lane: sent[position].lane, bytes: sent[position].bytes)
                sentAgainAt[position] = latestSend[key]
                latestSend[key] = sent[position].time
            }
            // Exact copies first: the earliest unused receipt of the same bytes from the sender's
            // address at or after the send, by the addressee (any device for multicast).
            for (position, item) in sent.enumerated() {
                var addressee: Int?
                if case .unicast(let address) = item.destination { addressee = lane(for: address) }
                // The same bytes sent again (a QUERY repeated as it was) claim the receipts from then on.
                let again = sentAgainAt[position]
                // Per lane that may have received it, its unused receipts at or after the send and
                // before the same bytes went again. The earliest added of them received it, with
                // the others of its lane as duplicates; with none before the repeat, a receipt at
                // the same instant as the repeat is this send's.
                var first: (lane: Int, copies: [Int])?
                var firstAtRepeat: (lane: Int, index: Int)?
                if let source = lanes[item.lane].address {
                    for lane in 0..<captured
                    where lane != item.lane && (addressee == nil || addressee == lane) {
                        let key = ReceiptKey(source: source, bytes: item.bytes, lane: lane)
                        guard var list = receiptsByKey[key] else { continue }
                        // Used receipts, and those before this send, match no later send of the
                        // same bytes either: those are later still.
                        while list.next < list.indices.count,
                            received[list.indices[list.next]].used
                                || received[list.indices[list.next]].time < item.time
                        {
                            list.next += 1
                        }
                        receiptsByKey[key] = list
                        guard list.next < list.indices.count else { continue }
                        let earliest = list.indices[list.next]
                        if firstAtRepeat.map({ earliest < $0.index }) ?? true {
                            firstAtRepeat = (lane, earliest)
                        }
                        var copies: [Int] = []
                        for index in list.indices[list.next...]
                        where !received[index].used && received[index].time >= item.time {
                            if let again, received[index].time >= again { break }
                            copies.append(index)
                        }
                        guard let head = copies.first else { continue }
                        if let current = first, current.copies[0] < head { continue }
                        first = (lane, copies)
                    }
                }
                if first == nil, again == item.time, let firstAtRepeat {
                    first = (firstAtRepeat.lane, [firstAtRepeat.index])
                }
                let sameReceiver = first?.copies ?? []
                for index in sameReceiver { received[index].used = true }
                let receipt = first.map { received[$0.copies[0]] }
                let fate: Fate
                if first != nil {
                    fate = .delivered
                } else if let addressee, addressee >= captured {
                    fate = .unknown
                } else if addressee == nil && captured == 1 {
                    fate = .unknown
                } else {
                    fate = .notReceived
                }
                // A multicast datagram between two devices was meant for the other one.
                let audience = captured == 2 && addressee == nil ? 1 - item.lane : addressee
                datagrams.append(
                    Datagram(
                        sender: item.lane, receiver: first?.lane ?? audience, sentAt: item.time,
                        receivedAt: receipt?.time, type: Describe.datagram(item.bytes).type,
                        frames: item.frames.map { $0.map(Self.frameName) } ?? [], fate: fate,
                        copies: sameReceiver.count, rejection: receipt?.rejection,
                        isTransfer: item.frames.map(Self.isTransfer) ?? false))
            }
            // Then receipts of bytes nobody sent: changed on the way (matched to a datagram of the
            // same length and type from the same sender that did not arrive), or from uncaptured
            // peers.
            for index in received.indices where !received[index].used {
                let receipt = received[index]
                if let sender = laneOf(receipt.source), sender < captured,
                    let match = sent.indices.first(where: { candidate in
                        let datagram = datagrams[candidate]
                        let bytes = sent[candidate].bytes
                        return datagram.sender == sender && datagram.fate == .notReceived
                            && datagram.sentAt <= receipt.time && bytes.count == receipt.bytes.count
                            && bytes.first == receipt.bytes.first
                            && bytes.dropFirst().first == receipt.bytes.dropFirst().first
                            && (datagram.receiver == nil || datagram.receiver == receipt.lane)
                    })
                {
                    datagrams[match].fate = .altered
                    datagrams[match].receiver = receipt.lane
                    datagrams[match].receivedAt = receipt.time
                    datagrams[match].copies = 1
                    datagrams[match].rejection = receipt.rejection
                    received[index].used = true
                    continue
                }
                datagrams.append(
                    Datagram(
                        sender: lane(for: receipt.source), receiver: receipt.lane, sentAt: receipt.time,
                        receivedAt: receipt.time, type: Describe.datagram(receipt.bytes).type, frames: [],
                        fate: .delivered, copies: 1, rejection: receipt.rejection))
                received[index].used = true
            }
            // Stable: datagrams sent at the same time keep the order they were sent in, after what
            // arrived from outside at that time (the device answers what it received).
            let ordered = datagrams.indices.sorted { a, b in
                guard datagrams[a].sentAt == datagrams[b].sentAt else {
                    return datagrams[a].sentAt < datagrams[b].sentAt
                }
                let outsideA = datagrams[a].sender >= captured
                let outsideB = datagrams[b].sender >= captured
                return outsideA != outsideB ? outsideA : a < b
            }.map { datagrams[$0] }
            let orderedMarks = marks.indices.sorted { a, b in
                marks[a].time != marks[b].time ? marks[a].time < marks[b].time : a < b
            }.map { marks[$0] }
            let start = times.min() ?? .zero
            let end = max(times.max() ?? .zero, start)
            return SessionTimeline(
                title: title, lanes: lanes, datagrams: ordered, marks: orderedMarks,
                tracks: devices.map(\.track),
                band: devices.first?.band ?? Band(ProximityGate.Configuration.default), start: start, end: end
            )
        }

        /// A frame's name as the picture shows it: `RANGING`, `CARD_CHUNK 3`, `CLOSE(declined)`.
        /// Card chunks and SACKs, with receipts, and nothing else.
        static func isTransfer(_ frames: [Frame]) -> Bool {
            var carriesTransfer = false
            for frame in frames {
                switch frame {
                case .cardChunk, .cardSack: carriesTransfer = true
                case .receipt: continue
                case .token, .ranging, .ident, .proof, .commit, .nonce, .reveal, .bond, .cardAck, .consent,
                    .close, .inRange, .closeAck:
                    return false
                }
            }
            return carriesTransfer
        }

        static func frameName(_ frame: Frame) -> String {
            switch frame {
            case .cardChunk(let index, _): return "CARD_CHUNK \(index)"
            case .consent(let decision, _): return "CONSENT(\(Describe.decision(decision)))"
            case .receipt(let receipts) where receipts.isEmpty: return "RECEIPT"
            case .close, .inRange, .closeAck, .receipt: return Describe.frame(frame)
            case .token, .ranging, .ident, .proof, .commit, .nonce, .reveal, .bond, .cardSack, .cardAck:
                let text = Describe.frame(frame)
                return text.firstIndex(of: "(").map { String(text[..<$0]) } ?? text
            }
        }
    }
}
