/// Every session a device holds, each with its role, indexed by session id and by peer address
/// (as QUIC endpoints keep their connections), so that one lookup tells which session a datagram
/// belongs to.
///
/// Sessions keep the order they came in within their role, and the device walks them in that
/// order (deadlines, timers, outcomes, events), so the index only speeds up finding one: it never
/// changes which one is found or in what order they act. Positions change only through the
/// table's own methods, which keep the index in step; a session's id and address never change.
///
/// Session ids are chosen at random by initiators, and an INVITE of an id the table holds is routed
/// to that session rather than starting another, so an id names one session. Should two share one
/// all the same (our own random draw meeting a peer's), ``route(sessionID:)`` prefers a live
/// session, then a half-open handshake, then one closing, each the oldest first.
struct SessionTable {
    /// What a session is to the device.
    enum Role: Equatable {
        /// Its outcome is not yet decided: our invitation awaiting ACCEPT or a candidate
        /// (PROTOCOL.md 5, "Candidates").
        case live
        /// An INVITE we accepted whose CONFIRM has not arrived (PROTOCOL.md 5, "Half-open handshakes").
        case halfOpen
        /// Ended, and still closing or draining.
        case lingering
    }

    /// Where a session is: its role and its position among the sessions of that role.
    struct Entry: Equatable {
        let role: Role
        let index: Int
    }

    /// Sessions kept closing or draining after they ended.
    static let maxLingering = 4

    /// The live sessions, in the order they became live: at most one invitation of ours awaiting
    /// ACCEPT (``invitationIndex``), and the candidates.
    private(set) var live: [ExchangeSession] = []
    /// The half-open handshakes, oldest first, and the cookies asked of inviters while any is open.
    private(set) var halfOpen = HalfOpenHandshakes()
    /// Sessions that ended and still close or drain, oldest first; bounded by ``pruneLingering()``.
    private(set) var lingering: [ExchangeSession] = []
    /// Where our invitation awaiting ACCEPT is among ``live``.
    private(set) var invitationIndex: Int?
    /// Every session of an id, in the order ``route(sessionID:)`` prefers them.
    private var bySessionID: [UInt64: [Entry]] = [:]
    /// Every session with a peer address, in the same order.
    private var byAddress: [PeerAddress: [Entry]] = [:]

    // MARK: - Lookups

    /// The session a datagram of `sessionID` goes to, if the table holds one.
    func route(sessionID: UInt64) -> Entry? { bySessionID[sessionID]?.first }

    /// The position of session `sessionID` among the sessions of `role`.
    func index(of sessionID: UInt64, in role: Role) -> Int? {
        bySessionID[sessionID]?.first { $0.role == role }?.index
    }

    /// The sessions with the peer at `address`, live first, then half-open, then lingering.
    func sessions(at address: PeerAddress) -> [Entry] { byAddress[address] ?? [] }

    /// Whether `address` is a live or lingering session's peer: its datagrams are charged to a
    /// known source's budget (PROTOCOL.md 7). A half-open handshake's sender proved nothing, so it
    /// is not one.
    func isKnownSource(_ address: PeerAddress) -> Bool {
        byAddress[address]?.contains { $0.role != .halfOpen } ?? false
    }

    /// The session at `entry`.
    func session(at entry: Entry) -> ExchangeSession {
        switch entry.role {
        case .live: live[entry.index]
        case .halfOpen: halfOpen.sessions[entry.index]
        case .lingering: lingering[entry.index]
        }
    }

    /// The peer address of the session at `entry`, read in place.
    func peerAddress(at entry: Entry) -> PeerAddress {
        switch entry.role {
        case .live: live[entry.index].peerAddress
        case .halfOpen: halfOpen.sessions[entry.index].peerAddress
        case .lingering: lingering[entry.index].peerAddress
        }
    }

    /// Whether the table holds no session at all.
    var isEmpty: Bool { live.isEmpty && halfOpen.sessions.isEmpty && lingering.isEmpty }

    // MARK: - Sessions in place

    /// The live session at `index`, mutated in place; our invitation stops being one once it no
    /// longer awaits ACCEPT.
    subscript(live index: Int) -> ExchangeSession {
        get { live[index] }
        _modify {
            defer {
                // Only our invitation awaits ACCEPT, and a session never comes back to it.
                if index == invitationIndex, !live[index].isAwaitingAccept {
                    invitationIndex = live.firstIndex { $0.isAwaitingAccept }
                }
            }
            yield &live[index]
        }
    }

    /// The lingering session at `index`, mutated in place.
    subscript(lingering index: Int) -> ExchangeSession {
        get { lingering[index] }
        _modify { yield &lingering[index] }
    }

    // MARK: - Changes

    /// Adds a live session: our invitation (a session awaiting ACCEPT) or a candidate.
    mutating func insertLive(_ session: ExchangeSession) {
        live.append(session)
        reindex()
    }

    /// Takes out the live session at `index`: its outcome was decided, or our invitation ended.
    @discardableResult
    mutating func removeLive(at index: Int) -> ExchangeSession {
        let session = live.remove(at: index)
        reindex()
        return session
    }

    /// Keeps `session`, which ended, while it closes or drains.
    mutating func insertLingering(_ session: ExchangeSession) {
        lingering.append(session)
        reindex()
    }

    /// Drops lingering sessions that finished, then the oldest beyond ``maxLingering``.
    mutating func pruneLingering() {
        guard !lingering.isEmpty else { return }
        let count = lingering.count
        lingering.removeAll { $0.nextDeadline == nil }
        if lingering.count > Self.maxLingering { lingering.removeFirst(lingering.count - Self.maxLingering) }
        if lingering.count != count { reindex() }
    }

    /// Keeps `session`, an INVITE just accepted, as a half-open handshake
    /// (``HalfOpenHandshakes/admit(_:context:)``: it replaces one from the same address, and
    /// evicts the oldest beyond the capacity).
    mutating func insertHalfOpen(_ session: ExchangeSession, context: SessionContext) {
        halfOpen.admit(session, context: context)
        reindex()
    }

    /// Stores back the half-open handshake at `index` after it handled a datagram and is still
    /// half-open.
    mutating func updateHalfOpen(_ session: ExchangeSession, at index: Int) {
        halfOpen.update(session, at: index)
    }

    /// Takes out the half-open handshake at `index`, whose CONFIRM verified.
    mutating func removeHalfOpen(at index: Int) {
        halfOpen.remove(at: index)
        reindex()
    }

    /// Drops the half-open handshakes at `offsets` of the half-open ones.
    mutating func removeHalfOpen(atOffsets offsets: [Int]) {
        halfOpen.remove(atOffsets: offsets)
        reindex()
    }

    /// Drops every half-open handshake (the device closed).
    mutating func removeAllHalfOpen() {
        let count = halfOpen.sessions.count
        halfOpen.removeAll()
        if count != 0 { reindex() }
    }

    /// Runs the half-open handshakes' timers; those whose time is up end silently.
    mutating func runHalfOpenTimers(context: inout SessionContext) {
        let count = halfOpen.sessions.count
        halfOpen.runTimers(context: &context)
        if halfOpen.sessions.count != count { reindex() }
    }

    /// The cookie a BUSY(retry) hands the sender of `invite` (PROTOCOL.md 5, "Cookies").
    mutating func cookie(
        for invite: HandshakePacket, from source: PeerAddress, context: inout SessionContext
    ) -> [UInt8] {
        halfOpen.cookie(for: invite, from: source, context: &context)
    }

    /// Rebuilds the index after sessions came, went or moved: every role's sessions in their order,
    /// live first, so that each list is in the order ``route(sessionID:)`` prefers.
    private mutating func reindex() {
        bySessionID.removeAll(keepingCapacity: true)
        byAddress.removeAll(keepingCapacity: true)
        invitationIndex = nil
        for index in live.indices {
            add(Entry(role: .live, index: index), live[index].sessionID, live[index].peerAddress)
            if invitationIndex == nil, live[index].isAwaitingAccept { invitationIndex = index }
        }
        for index in halfOpen.sessions.indices {
            let session = halfOpen.sessions[index]
            add(Entry(role: .halfOpen, index: index), session.sessionID, session.peerAddress)
        }
        for index in lingering.indices {
            add(
                Entry(role: .lingering, index: index), lingering[index].sessionID,
                lingering[index].peerAddress)
        }
    }

    private mutating func add(_ entry: Entry, _ sessionID: UInt64, _ address: PeerAddress) {
        bySessionID[sessionID, default: []].append(entry)
        byAddress[address, default: []].append(entry)
    }
}
