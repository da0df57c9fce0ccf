#if canImport(Glibc)
    import Glibc
#endif

/// A key the interactive `share` session reacts to.
enum KeyPress: Equatable {
    case up, down, left, right
    case quit
    /// A letter key, lower-cased: the answers to a consent prompt.
    case letter(Character)
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
                }
                pending.removeFirst()
            }
        }
        return keys
    }
}

/// Puts standard input into raw mode for key presses and restores it on every exit path.
final class RawTerminal {
    private var original = termios()
    private var active = false

    /// Whether standard input and output are both terminals: only then is the session interactive.
    static var isInteractive: Bool { isatty(STDIN_FILENO) == 1 && isatty(STDOUT_FILENO) == 1 }

    /// Enters raw mode (no echo, no line buffering, signals still delivered).
    func enable() {
        guard tcgetattr(STDIN_FILENO, &original) == 0 else { return }
        var raw = original
        raw.c_lflag &= ~tcflag_t(ICANON | ECHO)
        withUnsafeMutableBytes(of: &raw.c_cc) { controls in
            controls[Int(VMIN)] = 0
            controls[Int(VTIME)] = 0
        }
        if tcsetattr(STDIN_FILENO, TCSANOW, &raw) == 0 {
            active = true
            RawTerminal.saved = original
            // Restore the terminal even when the user presses Ctrl-C.
            signal(SIGINT) { _ in
                if var saved = RawTerminal.saved { tcsetattr(STDIN_FILENO, TCSANOW, &saved) }
                writeAll(STDOUT_FILENO, "\n")
                _exit(130)
            }
        }
    }

    /// Leaves raw mode.
    func restore() {
        guard active else { return }
        tcsetattr(STDIN_FILENO, TCSANOW, &original)
        active = false
        RawTerminal.saved = nil
    }

    deinit { restore() }

    // Read only by the SIGINT handler, which cannot capture context.
    nonisolated(unsafe) private static var saved: termios?
}

/// Redraws one status line in place, like a lock-screen live activity.
struct StatusLine {
    private var last = ""

    mutating func show(_ text: String) {
        guard text != last else { return }
        last = text
        // Carriage return, the text, then erase whatever a longer previous line left behind.
        writeAll(STDOUT_FILENO, "\r" + text + "\u{1b}[K")
    }

    /// Ends the live line so that later output starts on a fresh line.
    mutating func finish() {
        if !last.isEmpty { writeAll(STDOUT_FILENO, "\n") }
        last = ""
    }
}
