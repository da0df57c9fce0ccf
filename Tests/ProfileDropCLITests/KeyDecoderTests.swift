import Testing

@testable import ProfileDropCLI

@Suite struct KeyDecoderTests {
    @Test func arrowKeysAndQuit() {
        var decoder = KeyDecoder()
        let keys = decoder.feed([
            0x1b, 0x5b, 0x41, 0x1b, 0x5b, 0x42, 0x1b, 0x5b, 0x43, 0x1b, 0x5b, 0x44, 0x71,
        ])
        #expect(keys == [.up, .down, .right, .left, .quit])
    }

    @Test func anEscapeSequenceSplitAcrossReadsIsKept() {
        var decoder = KeyDecoder()
        #expect(decoder.feed([0x1b]) == [])
        #expect(decoder.feed([0x5b]) == [])
        #expect(decoder.feed([0x44]) == [.left])
    }

    @Test func lettersAreReportedLowerCased() {
        var decoder = KeyDecoder()
        #expect(decoder.feed(Array("sR".utf8)) == [.letter("s"), .letter("r")])
    }

    /// A candidate's number, and Enter after `d` (declining every candidate listed).
    @Test func digitsAndEnterAnswerAboutCandidates() {
        var decoder = KeyDecoder()
        #expect(decoder.feed(Array("s2".utf8)) == [.letter("s"), .digit(2)])
        #expect(decoder.feed([UInt8(ascii: "d"), 0x0d]) == [.letter("d"), .enter])
    }

    @Test func otherBytesAreIgnored() {
        var decoder = KeyDecoder()
        #expect(decoder.feed([0x21, 0x7f]) == [])
        // Shift-Tab (ESC [ Z) is a sequence, not a letter; ESC O A is the up arrow in application mode.
        #expect(decoder.feed([0x1b, 0x5b, 0x5a]) == [])
        #expect(decoder.feed([0x1b, 0x4f, 0x41]) == [.up])
        #expect(decoder.feed([0x03]) == [.quit])
    }
}
