import Foundation
import ProfileDrop

#if canImport(Glibc)
    import Glibc
#endif

/// One run of `share`, a client of the ProfileDrop library: the run's snapshots become the live
/// line, plain lines or JSON lines; keys and answer lines become calls on the run; a signal or `q`
/// stops it; the outcome becomes the exit code.
final class ShareSession {
    /// Interactive steps: one arrow press moves 1 cm or turns 5 degrees.
    static let keyStep = (distance: 1.0, degrees: 5.0)
    /// How often the loop looks for a caught signal while it waits.
    static let signalCheck: Duration = .milliseconds(20)

    private let options: ShareOptions
    private let console: Console
    private var display: ShareDisplay
    /// Where the arrow keys have moved the device (`--pose` without `--still` or `--motion`).
    private var pose: Pose?
    private var keyDecoder = KeyDecoder()
    private var lineSplitter = LineSplitter()
    /// Whether the last snapshot carried a question waiting for the user.
    private var questionShown = false
    /// The candidates the last snapshot listed, numbered from 1 on screen.
    private var candidates: [ConsentQuestion] = []
    /// A letter pressed while several candidates are listed, waiting for the candidate's number
    /// (or, after `d`, Enter for all of them).
    private var pendingLetter: Character?

    init(options: ShareOptions, console: Console) throws {
        self.options = options
        self.console = console
        display = ShareDisplay(mode: options.output, console: console, consent: options.consent)
        if case .interactive(let start) = options.motion { pose = start }
    }

    func run() throws -> ExitCode {
        // Checked before anything is exchanged: a card must never arrive with nowhere to go.
        if let directory = options.saveDirectory {
            try Self.commandError { () throws(PairingError) in try CardFiles.checkDirectory(directory) }
        }
        let configuration = options.configuration
        let pairing = try Self.commandError { () throws(PairingError) in try PairingRun(configuration) }
        display.started(
            device: pairing.deviceID, interfaces: pairing.interfaceNames,
            listening: pairing.listeningDescription)

        let inbox = Inbox()
        let consumer = Task {
            do {
                for try await snapshot in pairing { inbox.put(.snapshot(snapshot)) }
                inbox.put(.ended(nil))
            } catch {
                inbox.put(.ended(error))
            }
        }
        defer { consumer.cancel() }

        let terminal = RawTerminal()
        let readsKeys = options.output == .terminal
        EndingSignal.install()
        if readsKeys { terminal.enable() }
        defer { terminal.restore() }
        if readsKeys || options.consent != .always { Self.readStandardInput(into: inbox) }

        var stopped = false
        var last: PairingSnapshot?
        while true {
            let item = inbox.take(waitingAtMost: Self.signalCheck)
            if let signal = EndingSignal.received, !stopped {
                // The device is cancelled: a live session sends CLOSE(declined) (with CONSENT(decline)
                // if a question was pending) and the peer hears at once. Once it closed, this only
                // cuts the close short.
                stopped = true
                pairing.stop(.interrupted, detail: "interrupted (\(EndingSignal.name(signal)))")
            }
            switch item {
            case nil:
                continue
            case .snapshot(let snapshot):
                if snapshot.event == .closed {
                    last = snapshot
                } else {
                    questionShown = snapshot.question != nil
                    candidates = snapshot.candidates
                    if candidates.count < 2 { pendingLetter = nil }
                    display.show(snapshot)
                }
            case .input(let bytes):
                if handleInput(bytes, pairing) == .quit, !stopped {
                    stopped = true
                    pairing.stop(.quit, detail: nil)
                }
            case .inputEnded:
                // The end of input: no answer will come, and an unanswered request declines by itself.
                if options.output != .terminal, let line = lineSplitter.finish(),
                    answer(line, pairing) == .quit,
                    !stopped
                {
                    stopped = true
                    pairing.stop(.quit, detail: nil)
                }
            case .ended(let error):
                if let error { throw error }
                guard let last else { return .runtimeError }
                return finish(last)
            }
        }
    }

    /// The final line, after the received card was saved (`--save`), and the exit code.
    private func finish(_ closed: PairingSnapshot) -> ExitCode {
        guard var outcome = closed.outcome else { return .runtimeError }
        var snapshot = closed
        var saveFailed = false
        if let card = outcome.card, let directory = options.saveDirectory {
            // A card that cannot be written is still shown in full: only the exit code says the
            // save failed.
            do {
                outcome.savedPath = try CardFiles.save(card, in: directory)
            } catch {
                saveFailed = true
                console.error("profiledrop share: \(error)")
            }
        }
        if let problem = outcome.captureError { console.error("profiledrop share: \(problem)") }
        snapshot.outcome = outcome
        display.finish(snapshot)
        if options.verbose { console.error(outcome.traffic) }
        if saveFailed || outcome.captureError != nil { return .runtimeError }
        switch outcome.reason {
        case .nothingExchanged, .quit:
            return .declined
        case .interrupted:
            return EndingSignal.received.map(Self.exitCode(forSignal:)) ?? .interrupted
        case .exchanged, .declined, .outOfRange, .timeout, .error:
            return Self.exitCode(for: outcome.closeReason ?? .timeout(.noExchange))
        }
    }

    static func exitCode(forSignal signal: Int32) -> ExitCode {
        switch signal {
        case SIGHUP: .hangUp
        case SIGTERM: .terminated
        default: .interrupted
        }
    }

    /// The exit code of a run that ended with `reason`, as docs/share.md lists them. It follows the
    /// coarse `reason` of `--json` (``ShareDisplay/reasonCode(_:)``): a request nobody answered
    /// declines (4), as it does on the wire; a peer that broke the protocol is an error (6).
    static func exitCode(for reason: CloseReason) -> ExitCode {
        switch reason {
        case .exchanged: return .success
        case .timeout(.consent): return .declined
        case .timeout: return .timeout
        case .declined: return .declined
        case .outOfRange: return .outOfRange
        case .error: return .runtimeError
        }
    }

    /// Runs `body`, turning the library's configuration errors into usage errors (exit 2); other
    /// errors keep their one-line message (exit 6).
    private static func commandError<T>(_ body: () throws(PairingError) -> T) throws -> T {
        do {
            return try body()
        } catch {
            guard error.code == .configuration else { throw error }
            throw UsageError(error.diagnostic)
        }
    }

    /// What reaches the session's loop: the run's snapshots and its end, and standard input.
    enum Item {
        case snapshot(PairingSnapshot)
        case ended((any Error)?)
        case input([UInt8])
        case inputEnded
    }

    /// The loop's queue, filled by the task that iterates the run and the thread that reads input.
    final class Inbox: @unchecked Sendable {  // `items` is guarded by `condition`.
        private let condition = NSCondition()
        private var items: [Item] = []

        func put(_ item: Item) {
            condition.lock()
            items.append(item)
            condition.signal()
            condition.unlock()
        }

        /// The next item, or nil when none came within `timeout`.
        func take(waitingAtMost timeout: Duration) -> Item? {
            condition.lock()
            defer { condition.unlock() }
            if items.isEmpty {
                let seconds =
                    Double(timeout.components.attoseconds) / 1e18 + Double(timeout.components.seconds)
                _ = condition.wait(until: Date(timeIntervalSinceNow: seconds))
            }
            return items.isEmpty ? nil : items.removeFirst()
        }
    }

    /// Reads standard input on a thread of its own until it ends: a closed one is always readable.
    private static func readStandardInput(into inbox: Inbox) {
        let thread = Thread {
            var buffer = [UInt8](repeating: 0, count: 512)
            while true {
                var watch = pollfd(fd: STDIN_FILENO, events: Int16(POLLIN), revents: 0)
                guard poll(&watch, 1, -1) >= 0 || errno == EINTR else { break }
                guard watch.revents != 0 else { continue }
                let count = buffer.withUnsafeMutableBytes { read(STDIN_FILENO, $0.baseAddress, $0.count) }
                if count < 0 {
                    if errno == EINTR || errno == EAGAIN { continue }
                    break
                }
                if count == 0 { break }
                inbox.put(.input(Array(buffer[0..<count])))
            }
            inbox.put(.inputEnded)
        }
        thread.start()
    }

    /// What standard input brought: key presses on a terminal, answer lines otherwise.
    private func handleInput(_ bytes: [UInt8], _ pairing: PairingRun) -> KeyPress? {
        guard options.output == .terminal else {
            for line in lineSplitter.feed(bytes) where answer(line, pairing) == .quit { return .quit }
            return nil
        }
        for key in keyDecoder.feed(bytes) {
            switch key {
            case .quit:
                return .quit
            case .letter(let letter):
                guard questionShown, let answer = Self.answer(for: letter) else {
                    pendingLetter = nil
                    continue
                }
                if candidates.count > 1 {
                    // Several listed: the letter waits for the candidate's number.
                    pendingLetter = letter
                } else if pairing.answer(answer) {
                    questionShown = false
                }
            case .digit(let number):
                defer { pendingLetter = nil }
                guard let letter = pendingLetter, let answer = Self.answer(for: letter),
                    candidates.indices.contains(number - 1)
                else { continue }
                _ = pairing.answer(answer, candidate: candidates[number - 1].peer)
            case .enter:
                defer { pendingLetter = nil }
                // `d` and Enter: decline them all.
                if pendingLetter == "d" { _ = pairing.answer(.decline) }
            case .up, .down, .left, .right:
                guard let current = pose else { continue }
                let moved: Pose
                switch key {
                case .up: moved = current.moved(forward: Self.keyStep.distance)
                case .down: moved = current.moved(forward: -Self.keyStep.distance)
                case .left: moved = current.turned(by: Self.keyStep.degrees)
                case .right: moved = current.turned(by: -Self.keyStep.degrees)
                case .quit, .letter, .digit, .enter: continue
                }
                // The room's edge stops the device, as the flags' limit does.
                guard moved.isInsideRoom else { continue }
                pose = moved
                pairing.move(to: moved)
                display.poseChanged(moved)
            }
        }
        return nil
    }

    /// One line of input in lines or `--json` mode: an answer, `q` (lines mode), or an input error
    /// that is reported and otherwise ignored.
    private func answer(_ line: LineSplitter.Line, _ pairing: PairingRun) -> KeyPress? {
        let input: ConsentInput
        switch line {
        case .tooLong:
            input = .invalid("line longer than \(LineSplitter.maximumLineBytes) bytes")
        case .text(let text):
            input = options.output == .json ? ConsentInput.parseJSON(text) : ConsentInput.parseLine(text)
        }
        switch input {
        case .blank:
            break
        case .quit:
            return .quit
        case .invalid(let detail):
            display.inputError(detail)
        case .decision(let decision, let candidate):
            switch candidate {
            case nil:
                if pairing.answer(decision) {
                    questionShown = false
                } else if candidates.count > 1 {
                    display.inputError(
                        "\(candidates.count) candidates are listed: name one (s1, r2, d1) or decline all (d)")
                } else {
                    display.inputError("no consent request is pending")
                }
            case .number(let number):
                guard candidates.indices.contains(number - 1) else {
                    display.inputError("no candidate \(number) is listed")
                    break
                }
                if !pairing.answer(decision, candidate: candidates[number - 1].peer) {
                    display.inputError("candidate \(number) is no longer asked about")
                }
            case .peer(let peer):
                if !pairing.answer(decision, candidate: peer) {
                    display.inputError("no consent request about \(peer) is pending")
                }
            }
        }
        return nil
    }

    /// The answer a letter key gives: `s`, `r` or `d`.
    private static func answer(for letter: Character) -> ConsentAnswer? {
        switch letter {
        case "s": .share
        case "r": .receiveOnly
        case "d": .decline
        default: nil
        }
    }
}
