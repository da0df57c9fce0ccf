import Foundation
import ProfileDropCore
import ProfileDropTransport

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// One run of a device on the network, from advertising to closed, as an `AsyncSequence` of
/// ``PairingSnapshot``s.
///
/// Creating a run reads the identity and the known peers and opens the sockets; iterating it
/// starts the device, on a thread of its own. Each element is the full state; the last one is
/// ``PairingSnapshot/Event/closed`` with the ``PairingSnapshot/outcome``, after the close was
/// carried out with the peer. Answers to a question are method calls (``answer(_:)``).
///
/// Cancelling the task that iterates the run ends it as `profiledrop share` ends on Ctrl-C: a
/// live session sends CLOSE(declined) (and declines a pending question), so the peer hears at
/// once; the iteration goes on until the last snapshot, closed with
/// ``PairingOutcome/Reason/interrupted``.
///
/// A run is iterated once, by one task. Runs share nothing: two can pair with each other in one
/// process.
public final class PairingRun: AsyncSequence, Sendable {
    /// The longest a closed device keeps its session to finish the close before the run ends.
    public static let exitLinger: Duration = .milliseconds(700)
    /// How often a scripted, approaching or sampled pose is updated.
    public static let motionTick: Duration = .milliseconds(50)
    /// How long past the configured timeout a run may last in any state.
    public static let deadlineGrace: Duration = .seconds(1)

    /// This device's identifier for the run.
    public let deviceID: String
    /// The names of the interfaces in use.
    public let interfaceNames: [String]
    /// Where the device listens: the IPv4 address and port, and IPv6 link-local addresses.
    public let listeningDescription: String
    /// The configuration the run was made with.
    public let configuration: PairingConfiguration

    private let engine: PairingEngine

    /// Prepares a run: reads the identity and the known peers, checks that they and the capture
    /// can be written, selects the interfaces and opens the sockets. Nothing is sent until the run
    /// is iterated.
    /// - Throws: ``PairingError``, with the message `share` prints.
    public init(_ configuration: PairingConfiguration) throws(PairingError) {
        self.configuration = configuration
        engine = try PairingEngine(configuration)
        deviceID = engine.deviceID
        interfaceNames = engine.interfaceNames
        listeningDescription = engine.listeningDescription
    }

    /// Answers the pending question, when exactly one candidate is asked about
    /// (``PairingSnapshot/candidates``). With several, only ``ConsentAnswer/decline`` is taken,
    /// and declines them all; sharing or receiving must name its candidate
    /// (``answer(_:candidate:)``). Returns false, and does nothing, when the answer is not taken
    /// (no question is pending: none was asked, it was answered, or its time ran out; or it is
    /// ambiguous).
    @discardableResult
    public func answer(_ answer: ConsentAnswer) -> Bool { engine.post(.answer(answer, candidate: nil)) }

    /// Answers about one of the candidates asked about at once, named by its
    /// ``ConsentQuestion/peer``. Sharing or receiving only declines every other candidate (their
    /// sessions end as our decline; the run goes on with the one picked); declining ends only
    /// that candidate's session, and the run only if no other candidate is held. Returns false,
    /// and does nothing, when `candidate` is not asked about.
    @discardableResult
    public func answer(_ answer: ConsentAnswer, candidate: String) -> Bool {
        engine.post(.answer(answer, candidate: candidate))
    }

    /// Answers the pending question, the one candidate shown: share our card and receive theirs.
    @discardableResult
    public func share() -> Bool { answer(.share) }

    /// Answers the pending question, the one candidate shown: receive their card, send none.
    @discardableResult
    public func receiveOnly() -> Bool { answer(.receiveOnly) }

    /// Answers the pending question: decline (every candidate asked about, when several are).
    @discardableResult
    public func decline() -> Bool { answer(.decline) }

    /// Shares with `candidate` (a ``ConsentQuestion/peer`` of ``PairingSnapshot/candidates``),
    /// the one whose code the other screen shows; the other candidates are declined.
    @discardableResult
    public func share(candidate: String) -> Bool { answer(.share, candidate: candidate) }

    /// Receives from `candidate` only, sending no card; the other candidates are declined.
    @discardableResult
    public func receiveOnly(candidate: String) -> Bool { answer(.receiveOnly, candidate: candidate) }

    /// Declines `candidate` alone; the others stay asked about.
    @discardableResult
    public func decline(candidate: String) -> Bool { answer(.decline, candidate: candidate) }

    /// Moves the device to `pose` now (for ``PairingConfiguration/Motion/fixed(_:)``, an arrow
    /// key's step; with other motions the next update of the motion wins).
    public func move(to pose: Pose) { _ = engine.post(.move(pose)) }

    /// Ends the run as ``PairingRun`` says cancellation does; the last snapshot's reason is `reason`
    /// (``PairingOutcome/Reason/interrupted`` or ``PairingOutcome/Reason/quit``) with `detail`.
    /// Once the device closed by itself, this only cuts its close short.
    public func stop(_ reason: PairingOutcome.Reason = .interrupted, detail: String? = "interrupted") {
        _ = engine.post(.stop(reason, detail: detail))
    }

    /// The iterator of the run's snapshots. Dropping it before the last snapshot (leaving the
    /// `for` loop early) stops the run as cancellation does.
    public struct AsyncIterator: AsyncIteratorProtocol {
        let engine: PairingEngine
        let lifetime: IteratorLifetime

        /// The next snapshot, or nil after the last. Cancelling the task stops the run and keeps
        /// returning its snapshots up to the closed one.
        /// - Throws: ``PairingError`` when the sockets fail mid-run.
        public mutating func next() async throws -> PairingSnapshot? {
            let engine = self.engine
            let result = await withTaskCancellationHandler {
                await engine.channel.receive()
            } onCancel: {
                _ = engine.post(.stop(.interrupted, detail: "interrupted"))
            }
            return try result.get()
        }
    }

    /// Starts the run (the first time) and returns the iterator of its snapshots.
    public func makeAsyncIterator() -> AsyncIterator {
        engine.start()
        return AsyncIterator(engine: engine, lifetime: IteratorLifetime(engine))
    }
}

/// Stops the run when its iterator is dropped: nobody would see the rest of it.
final class IteratorLifetime: Sendable {
    private let engine: PairingEngine

    init(_ engine: PairingEngine) { self.engine = engine }

    deinit { _ = engine.post(.stop(.interrupted, detail: "interrupted")) }
}

/// The snapshots on their way from the run's thread to the iterating task.
final class SnapshotChannel: @unchecked Sendable {
    private let lock = NSLock()
    private var buffer: [PairingSnapshot] = []
    private var end: Result<PairingSnapshot?, PairingError>?
    private var waiter: CheckedContinuation<Result<PairingSnapshot?, PairingError>, Never>?

    func send(_ snapshot: PairingSnapshot) {
        let waiting: CheckedContinuation<Result<PairingSnapshot?, PairingError>, Never>? = lock.withLock {
            guard let waiter else {
                buffer.append(snapshot)
                return nil
            }
            self.waiter = nil
            return waiter
        }
        waiting?.resume(returning: .success(snapshot))
    }

    func finish(_ error: PairingError? = nil) {
        let waiting: CheckedContinuation<Result<PairingSnapshot?, PairingError>, Never>? = lock.withLock {
            // An error handed to a waiting task now is reported once: after it the sequence is over.
            end = waiter == nil ? (error.map { .failure($0) } ?? .success(nil)) : .success(nil)
            defer { waiter = nil }
            return waiter
        }
        waiting?.resume(returning: error.map { .failure($0) } ?? .success(nil))
    }

    func receive() async -> Result<PairingSnapshot?, PairingError> {
        await withCheckedContinuation { continuation in
            let ready: Result<PairingSnapshot?, PairingError>? = lock.withLock {
                if !buffer.isEmpty { return .success(buffer.removeFirst()) }
                if let end {
                    // An error is reported once; after it the sequence is over.
                    self.end = .success(nil)
                    return end
                }
                // One task iterates a run; a second iterator at the same time ends at once rather
                // than take the first one's place and leave it waiting for ever.
                guard waiter == nil else { return .success(nil) }
                waiter = continuation
                return nil
            }
            if let ready { continuation.resume(returning: ready) }
        }
    }
}
