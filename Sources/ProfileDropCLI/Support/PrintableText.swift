extension String {
    /// The text with each control character (Unicode Cc) replaced by U+FFFD: what the tool prints
    /// of text from outside (a peer's name, a vector file's protocol name), which could otherwise
    /// move the cursor or rewrite the user's terminal.
    var printable: String {
        String(
            String.UnicodeScalarView(
                unicodeScalars.map { $0.properties.generalCategory == .control ? "\u{FFFD}" : $0 }))
    }
}
