#if canImport(Glibc)
    import Glibc
#endif

/// A key the interactive `share` session reacts to.
enum KeyPress: Equatable {
    case up, down, left, right
    case quit
    /// A letter key, lower-cased: the answers to a consent prompt.
    case letter(Character)
    /// A digit key: which candidate of a list an answer is about.
    case digit(Int)
    /// Return or Enter: ends an answer about every candidate (`d`, then Enter).
    case enter
}

/// Decodes key presses from raw terminal bytes, keeping an incomplete escape sequence for the next read.
struct KeyDecoder {
    private var pending: [UInt8] = []

    mutating func feed(_ bytes: [UInt8]) -> [KeyPress] {
        pending += bytes
        var keys: [KeyPress] = []
        while let first = pending.first {
            if first == 0x1b {
                // ESC [ A..D (or ESC O A..D in application cursor mode) are the arrow keys; wait for
                // the rest of a sequence that is still arriving.
                let introducers = [UInt8(ascii: "["), UInt8(ascii: "O")]
                guard pending.count >= 3 else {
                    if pending.count == 2 && !introducers.contains(pending[1]) { pending.removeFirst() }
                    break
                }
                if introducers.contains(pending[1]) {
                    switch pending[2] {
                    case UInt8(ascii: "A"): keys.append(.up)
                    case UInt8(ascii: "B"): keys.append(.down)
                    case UInt8(ascii: "C"): keys.append(.right)
                    case UInt8(ascii: "D"): keys.append(.left)
                    default: break
                    }
                    pending.removeFirst(3)
                } else {
                    pending.removeFirst()
                }
            } else {
                if first == UInt8(ascii: "q") || first == 0x03 {
                    keys.append(.quit)
                } else if (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(first | 0x20) {
                    keys.append(.letter(Character(Unicode.Scalar(first | 0x20))))
                } else if (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(first) {
                    keys.append(.digit(Int(first - UInt8(ascii: "0"))))
                } else if first == UInt8(ascii: "\r") || first == UInt8(ascii: "\n") {
                    keys.append(.enter)
                }
                pending.removeFirst()
            }
        }
        return keys
    }
}

/// Puts standard input into raw mode for key presses and restores it on every exit path: the
/// signals that end a run are caught (``EndingSignal``), so the run ends through `restore()` too.
final class RawTerminal {
    private var original = termios()
    private var active = false

    /// Whether the session draws a live line and reads keys: standard input and output are both
    /// terminals, and the terminal can move the cursor (`TERM` is set and not `dumb`).
    static var isInteractive: Bool {
        guard isatty(STDIN_FILENO) == 1 && isatty(STDOUT_FILENO) == 1 else { return false }
        let term = getenv("TERM").map { String(cString: $0) } ?? ""
        return !term.isEmpty && term != "dumb"
    }

    /// Enters raw mode (no echo, no line buffering, signals still delivered).
    func enable() {
        guard tcgetattr(STDIN_FILENO, &original) == 0 else { return }
        var raw = original
        raw.c_lflag &= ~tcflag_t(ICANON | ECHO)
        withUnsafeMutableBytes(of: &raw.c_cc) { controls in
            controls[Int(VMIN)] = 0
            controls[Int(VTIME)] = 0
        }
        if tcsetattr(STDIN_FILENO, TCSANOW, &raw) == 0 { active = true }
    }

    /// Leaves raw mode.
    func restore() {
        guard active else { return }
        tcsetattr(STDIN_FILENO, TCSANOW, &original)
        active = false
    }

    deinit { restore() }

    /// The terminal's width in columns, or nil when standard output is no terminal.
    static var columns: Int? {
        var size = winsize()
        guard ioctl(STDOUT_FILENO, UInt(TIOCGWINSZ), &size) == 0, size.ws_col > 0 else { return nil }
        return Int(size.ws_col)
    }
}

/// The signals that end a `share` run early: SIGINT (Ctrl-C), SIGTERM and SIGHUP. They are caught
/// and only noted, so the run loop ends the session itself: it restores the terminal, declines a
/// pending request (which tells the peer at once), and writes its final line.
enum EndingSignal {
    /// Catches the signals from now on.
    static func install() {
        var unblocked = sigset_t()
        sigemptyset(&unblocked)
        for number in [SIGINT, SIGTERM, SIGHUP] {
            signal(number) { caught in EndingSignal.caught = caught }
            sigaddset(&unblocked, number)
        }
        // A parent may have started us with them blocked (as some process launchers do).
        sigprocmask(SIG_UNBLOCK, &unblocked, nil)
    }

    /// The signal caught so far, if any.
    static var received: Int32? { caught == 0 ? nil : caught }

    /// The signal's usual name.
    static func name(_ number: Int32) -> String {
        switch number {
        case SIGINT: "SIGINT"
        case SIGTERM: "SIGTERM"
        case SIGHUP: "SIGHUP"
        default: "signal \(number)"
        }
    }

    // Written only by the handler, which cannot capture context; read by the run loop.
    nonisolated(unsafe) private static var caught: Int32 = 0
}

/// Redraws one status line in place, like a lock-screen live activity, cut to the terminal's width
/// so that it never wraps (a wrapped line cannot be redrawn in place).
struct StatusLine {
    private var last = ""
    /// The width to cut to; nil reads the terminal's at every redraw, as windows get resized.
    var width: Int? = nil

    mutating func show(_ text: String) {
        let shown = Self.cut(text, to: width ?? RawTerminal.columns ?? 80)
        guard shown != last else { return }
        last = shown
        // Carriage return, the text, then erase whatever a longer previous line left behind.
        _ = writeAll(STDOUT_FILENO, "\r" + shown + "\u{1b}[K")
    }

    /// `text` cut to leave the last column free (a character there would wrap on some terminals),
    /// ending in `…` when cut.
    static func cut(_ text: String, to columns: Int) -> String {
        let room = max(columns - 1, 1)
        guard text.count > room else { return text }
        return String(text.prefix(room - 1)) + "…"
    }

    /// Erases the live line, so that a line printed now takes its place and the live line is drawn
    /// again below it: one live row, never a stale copy above the messages.
    mutating func clear() {
        if !last.isEmpty { _ = writeAll(STDOUT_FILENO, "\r\u{1b}[K") }
        last = ""
    }

    /// Ends the live line so that later output starts on a fresh line.
    mutating func finish() {
        if !last.isEmpty { _ = writeAll(STDOUT_FILENO, "\n") }
        last = ""
    }
}
