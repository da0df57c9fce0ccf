import ProfileDropCrypto
import Testing

@testable import ProfileDropCore

/// Every wait ends, and says which wait it was.
@Suite struct TimeoutPathTests {
    /// Two facing devices 7 cm apart, with timers shortened where a test needs it.
    func room(timeouts: Timeouts = Timeouts(), photoBytes: Int = 0) -> VirtualRoom {
        var room = VirtualRoom()
        let (first, second) = Fixtures.facingPair(distance: 7)
        room.add(
            Fixtures.configuration("Bori", seed: 1, photoBytes: photoBytes, timeouts: timeouts), pose: first,
            seed: 1)
        room.add(
            Fixtures.configuration("Kong", seed: 2, photoBytes: photoBytes, timeouts: timeouts), pose: second,
            seed: 2)
        return room
    }

    func endedSessions(_ room: VirtualRoom, _ index: Int) -> [CloseReason] {
        room.events[index].compactMap { if case .sessionEnded(_, let reason) = $0 { reason } else { nil } }
    }

    @Test func handshakeWithNoAnswerEndsAsHandshakeTimeout() {
        var room = room()
        // The packet type is the fourth byte of every header; 4 is ACCEPT.
        room.tamper = { _, _, bytes in bytes.count > 3 && bytes[3] == 4 ? nil : bytes }
        room.run(until: .zero + .seconds(20))
        let ended = endedSessions(room, 0) + endedSessions(room, 1)
        #expect(ended.contains(.timeout(.handshake)), "\(ended)")
        #expect(room.cards(0).isEmpty && room.cards(1).isEmpty)
    }

    @Test func aPeerThatFallsSilentMidTransferEndsAsPeerSilent() {
        var room = room(photoBytes: 262_144)
        // Run until the cards are moving, then lose everything device 1 sends.
        for _ in 0..<2_000
        where !room.events[0].contains(where: { if case .exchanging = $0 { true } else { false } }) {
            room.run(until: room.now + .milliseconds(5))
        }
        #expect(room.events[0].contains { if case .exchanging = $0 { true } else { false } })
        room.tamper = { from, _, bytes in from == 1 ? nil : bytes }
        room.run(until: room.now + .seconds(30))
        let ended = endedSessions(room, 0) + [room.closeReason(0)].compactMap { $0 }
        #expect(ended.contains(.timeout(.peerSilent)), "\(ended)")
        #expect(room.cards(0).isEmpty)
    }

    @Test func aTransferThatCannotFinishInTimeEndsAsTransferTimeout() {
        var timeouts = Timeouts()
        // 256 KiB in 2 ms-paced chunks needs about half a second; allow a tenth of that.
        timeouts.transfer = .milliseconds(50)
        var room = room(timeouts: timeouts, photoBytes: 262_144)
        room.run(until: .zero + .seconds(20))
        let ended =
            endedSessions(room, 0) + endedSessions(room, 1)
            + [room.closeReason(0), room.closeReason(1)].compactMap { $0 }
        #expect(ended.contains(.timeout(.transfer)), "\(ended)")
        #expect(room.cards(0).isEmpty && room.cards(1).isEmpty)
    }

    @Test func aDeviceAloneClosesAtTheOverallLimitWithNoExchange() {
        var timeouts = Timeouts()
        timeouts.overall = .seconds(5)
        var room = VirtualRoom()
        room.add(
            Fixtures.configuration("Bori", seed: 1, timeouts: timeouts), pose: Pose(x: 0, y: 0, heading: 0),
            seed: 1)
        room.run(until: .zero + .seconds(30))
        #expect(room.closeReason(0) == .timeout(.noExchange))
        #expect(room.devices[0].nextDeadline == nil)
    }
}
