/// A host (an IPv4 address, whatever its ports) whose peer broke a rule or stalled a session.
/// Device ids and static keys are fresh every run, so only the address links a peer that comes
/// back under a new id; and the host completed a handshake there, so it can receive there.
struct FaultyHost {
    let ipv4: UInt32
    /// Sessions from this host that ended by the peer's fault.
    var faults: Int
    /// Until then its invitations are refused and its peers are not invited.
    var until: Instant
}

/// Failed sessions with peers at one host (IPv4 address), whatever their ids: a peer that comes
/// back under a fresh id after each failed session brings its host's count with it.
struct FailedHost {
    let ipv4: UInt32
    var failures: Int
}

/// What discovery holds against hosts, whatever the ids their peers use (PROTOCOL.md section 5,
/// "Faulty hosts"): a back-off from a host whose peer broke a rule or stalled a session, and the
/// count of failed sessions with peers at each host. Both tables are bounded by
/// ``Limits/maxFaultyHosts``.
struct HostReputation {
    /// At most ``Limits/maxFaultyHosts``, in the order they were first blamed.
    private(set) var faultyHosts: [FaultyHost] = []
    /// At most ``Limits/maxFaultyHosts`` hosts whose peers' sessions with us failed after a
    /// completed handshake; when full, the host with the fewest failures is forgotten.
    private(set) var failedHosts: [FailedHost] = []

    /// Whether a peer at host `ipv4` broke a rule or stalled a session recently enough that we still
    /// back off from the host.
    func isBackingOff(fromHost ipv4: UInt32, now: Instant) -> Bool {
        faultyHosts.contains { $0.ipv4 == ipv4 && $0.until > now }
    }

    /// When our back-off from host `ipv4` ends (`.zero` when there is none).
    func backoffEnd(_ ipv4: UInt32) -> Instant {
        faultyHosts.first { $0.ipv4 == ipv4 }?.until ?? .zero
    }

    /// Backs off from the host of `address` after a session its peer ended by its fault: from
    /// ``Timeouts/retryBackoff``, doubled per fault, up to ``Timeouts/retryBackoffCap``: an honest
    /// peer on a lossy link is never held off longer by its host than by its id. A full table
    /// forgets the host whose back-off ends first.
    mutating func peerFaulted(at address: PeerAddress, context: inout SessionContext) {
        let index: Int
        if let found = faultyHosts.firstIndex(where: { $0.ipv4 == address.ipv4 }) {
            index = found
            faultyHosts[index].faults =
                faultyHosts[index].faults < Int.max ? faultyHosts[index].faults + 1 : Int.max
        } else {
            if faultyHosts.count >= max(context.limits.maxFaultyHosts, 1),
                let soonest = faultyHosts.indices.min(by: { faultyHosts[$0].until < faultyHosts[$1].until })
            {
                faultyHosts.remove(at: soonest)
            }
            faultyHosts.append(FaultyHost(ipv4: address.ipv4, faults: 1, until: context.now))
            index = faultyHosts.endIndex - 1
        }
        let backoff = context.timeouts.retryBackoff.doubled(
            faultyHosts[index].faults - 1, cap: context.timeouts.retryBackoffCap)
        faultyHosts[index].until = context.now + context.jittered(backoff, spread: 0.2)
    }

    /// Failed sessions after a completed handshake with peers at host `ipv4`, under any id.
    func failedSessions(atHost ipv4: UInt32) -> Int {
        failedHosts.first { $0.ipv4 == ipv4 }?.failures ?? 0
    }

    /// A peer's failed sessions as the refusal rule counts them: the more of its id's
    /// (`idFailures`) and its host's.
    func countedFailures(_ idFailures: Int, atHost ipv4: UInt32) -> Int {
        max(idFailures, failedSessions(atHost: ipv4))
    }

    /// Counts a session with a peer at `address` that ended without an exchange after its handshake
    /// completed: the peer receives there, so the count cannot be pinned on a host by a forged
    /// BEACON. A full table forgets the host with the fewest failures.
    mutating func hostSessionFailed(at address: PeerAddress, context: SessionContext) {
        if let index = failedHosts.firstIndex(where: { $0.ipv4 == address.ipv4 }) {
            failedHosts[index].failures =
                failedHosts[index].failures < Int.max ? failedHosts[index].failures + 1 : Int.max
            return
        }
        if failedHosts.count >= max(context.limits.maxFaultyHosts, 1),
            let fewest = failedHosts.indices.min(by: { failedHosts[$0].failures < failedHosts[$1].failures })
        {
            failedHosts.remove(at: fewest)
        }
        failedHosts.append(FailedHost(ipv4: address.ipv4, failures: 1))
    }
}
