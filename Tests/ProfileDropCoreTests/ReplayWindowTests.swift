import Testing

@testable import ProfileDropCore

@Suite struct ReplayWindowTests {
    private func accept(_ window: inout ReplayWindow, _ number: UInt64) -> ProtocolError.Code? {
        do {
            try window.check(number)
            window.record(number)
            return nil
        } catch { return error.code }
    }

    @Test func acceptsEachNumberOnce() {
        var window = ReplayWindow()
        #expect(accept(&window, 0) == nil)
        #expect(accept(&window, 0) == .replayed)
        #expect(accept(&window, 5) == nil)
        #expect(accept(&window, 3) == nil)
        #expect(accept(&window, 3) == .replayed)
        #expect(accept(&window, 4) == nil)
        #expect(accept(&window, 5) == .replayed)
        #expect(window.largest == 5)
    }

    @Test func rejectsNumbersBelowTheWindow() {
        var window = ReplayWindow()
        #expect(accept(&window, 200) == nil)
        #expect(accept(&window, 73) == nil)  // 127 behind: the oldest slot
        #expect(accept(&window, 72) == .tooOld)  // 128 behind
        #expect(accept(&window, 0) == .tooOld)
    }

    @Test func slidingKeepsHistoryAcrossBothWords() {
        var window = ReplayWindow()
        for number in stride(from: UInt64(0), through: 300, by: 3) { #expect(accept(&window, number) == nil) }
        for number in UInt64(180)...300 {
            #expect(window.contains(number) == (number % 3 == 0), "\(number)")
        }
        // Jumping far ahead forgets everything older than the window.
        #expect(accept(&window, 10_000) == nil)
        #expect(accept(&window, 9_999) == nil)
        #expect(accept(&window, 300) == .tooOld)
    }

    @Test func checkingDoesNotRecord() throws {
        let window = ReplayWindow()
        try window.check(9)
        try window.check(9)
        #expect(window.largest == nil)
    }

    @Test func matchesAReferenceSetOnRandomOrders() {
        var window = ReplayWindow()
        var seen = Set<UInt64>()
        var largest: UInt64 = 0
        var state: UInt64 = 12345
        for _ in 0..<20_000 {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            let number = (largest + 40) >= (state >> 58) * 4 ? (largest + 40) - (state >> 58) * 4 : 0
            let expected: ProtocolError.Code? =
                !seen.isEmpty && number + 128 <= largest ? .tooOld : (seen.contains(number) ? .replayed : nil)
            #expect(accept(&window, number) == expected)
            if expected == nil {
                seen.insert(number)
                largest = max(largest, number)
            }
        }
    }
}
