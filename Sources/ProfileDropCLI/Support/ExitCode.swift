/// The process exit codes of `profiledrop`, documented in the README.
public enum ExitCode: Int32, Sendable, CaseIterable {
    /// The command did what it was asked: cards exchanged, vectors passed, replay identical.
    case success = 0
    /// The command ran and found a failure: a vector mismatch, a simulation violation, a replay divergence.
    case failure = 1
    /// Usage or input error: unknown flag, missing or malformed file. Nothing was attempted.
    case usage = 2
    /// `share`: a wait timed out (no peer, the handshake, the code, the peer's decision, a transfer
    /// that stalled, or `--timeout` during any of them).
    case timeout = 3
    /// `share`: the exchange was declined, locally (a consent request nobody answered included) or
    /// by the peer.
    case declined = 4
    /// `share`: the devices never held the 5–10 cm, facing-each-other pose long enough.
    case outOfRange = 5
    /// A runtime error outside the protocol's control (socket setup, permissions, I/O), or for
    /// `share` a peer that broke the protocol (`error: …`).
    case runtimeError = 6
    /// `share`: ended by SIGHUP (128 + 1, the shell's convention); a pending request was declined.
    case hangUp = 129
    /// `share`: ended by SIGINT, Ctrl-C (128 + 2); a pending request was declined.
    case interrupted = 130
    /// `share`: ended by SIGTERM (128 + 15); a pending request was declined.
    case terminated = 143
}

extension ExitCode {
    /// The meaning as help, the man page and the README show it, e.g. `out of range`.
    var label: String {
        switch self {
        case .success: return "success"
        case .failure: return "a check failed (a vector, a violation, a divergence)"
        case .usage: return "usage or input error (unknown flag, missing or malformed file)"
        case .timeout: return "timeout"
        case .declined: return "declined"
        case .outOfRange: return "out of range"
        case .runtimeError:
            return "runtime error (sockets, permissions, I/O; for share, a peer that broke the protocol)"
        case .hangUp: return "share ended by SIGHUP (a pending request declined)"
        case .interrupted: return "share ended by Ctrl-C, SIGINT (a pending request declined)"
        case .terminated: return "share ended by SIGTERM (a pending request declined)"
        }
    }

    /// `5  out of range`: the code and `meaning`, as help lists them.
    static func line(_ code: ExitCode, _ meaning: String) -> String {
        "\(code.rawValue)  \(meaning)"
    }
}
