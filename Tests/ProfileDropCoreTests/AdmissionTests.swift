import Testing

@testable import ProfileDropCore

/// The budgets of unsolicited datagrams (PROTOCOL.md 7, "Rate limits"), on `Admission` alone: the
/// global budget of unknown sources follows the rate of sources that behave like announcing
/// devices, from the configured 200 a second up to five times that, and a flood from fresh or
/// fast-repeating spoofed addresses does not move it.
@Suite struct AdmissionTests {
    static let limits = Limits()

    /// Admits datagrams from `addresses` in turn, `perSecond` of them a second in all, for
    /// `seconds`, from `start`; returns how many were admitted and the time after the last.
    static func offer(
        _ admission: inout Admission, addresses: [UInt32], perSecond: Int, seconds: Int,
        from start: Instant = .zero
    ) -> (admitted: Int, end: Instant) {
        let count = perSecond * seconds
        let gap = Duration.nanoseconds(1_000_000_000 / Int64(perSecond))
        var admitted = 0
        var time = start
        for index in 0..<count {
            let source = PeerAddress(ipv4: addresses[index % addresses.count], port: 4000)
            if admission.admit(source, known: false, now: time) == nil { admitted += 1 }
            time = time + gap
        }
        return (admitted, time)
    }

    static func addresses(_ count: Int, base: UInt32 = 0x0A00_0000) -> [UInt32] {
        (0..<count).map { base | UInt32($0) }
    }

    /// A hall of a thousand devices, each announcing about once every three seconds (330 a second
    /// in all), is over the configured 200: the first window sheds some, and once the rate of
    /// addresses heard before is measured the budget rises to twice it and nothing is shed.
    @Test func aHallOfAnnouncingDevicesRaisesTheBudgetAndIsNotShed() {
        var admission = Admission(limits: Self.limits, knownSources: 40)
        let hall = Self.addresses(1000)
        let first = Self.offer(&admission, addresses: hall, perSecond: 330, seconds: 12)
        #expect(first.admitted < 330 * 12)
        #expect(admission.globalPerSecond > 600 && admission.globalPerSecond <= 660)
        let later = Self.offer(&admission, addresses: hall, perSecond: 330, seconds: 20, from: first.end)
        #expect(later.admitted == 330 * 20)
    }

    /// Traffic that must leave the budget at the configured 200 a second, and so be cut to it after
    /// the burst of 400: a small room, whose settled rate stays under half of it; a flood of 5,000
    /// a second from a fresh address each time, which never counts; 1,000 spoofed addresses at two
    /// a second each, faster than once a second, which never count; and 20,000 addresses each
    /// once every 2 s, a pool much larger than what the device remembers, forgotten before they
    /// come back.
    @Test(arguments: [
        (addresses: 30, perSecond: 10, seconds: 30),
        (addresses: 1 << 20, perSecond: 5000, seconds: 10),
        (addresses: 1000, perSecond: 2000, seconds: 20),
        (addresses: 20_000, perSecond: 10_000, seconds: 20),
    ])
    func trafficThatDoesNotBehaveLikeAHallKeepsTheConfiguredBudget(
        addresses: Int, perSecond: Int, seconds: Int
    ) {
        var admission = Admission(limits: Self.limits, knownSources: 40)
        let offered = Self.offer(
            &admission, addresses: Self.addresses(addresses), perSecond: perSecond, seconds: seconds)
        let floor = Self.limits.globalUnsolicitedPerSecond
        #expect(admission.globalPerSecond == floor)
        #expect(offered.admitted <= min(perSecond * seconds, 2 * floor + floor * seconds + 1))
        #expect(offered.admitted >= min(perSecond * seconds, floor * seconds))
    }

    /// The worst a spoofer can do is to repeat as many addresses as the device remembers, each once
    /// a second: the budget then stops at five times the configured one, so a device parses at
    /// most 1,000 unsolicited datagrams a second from unknown sources, whatever the flood.
    @Test func aFloodThatBehavesIsCutAtTheCeiling() {
        var admission = Admission(limits: Self.limits, knownSources: 40)
        let ceiling = Self.limits.globalUnsolicitedPerSecond * Admission.ceilingFactor
        // 1,000 addresses, each once a second: every datagram counts.
        let flood = Self.offer(&admission, addresses: Self.addresses(1000), perSecond: 1000, seconds: 20)
        #expect(admission.globalPerSecond == ceiling)
        #expect(flood.admitted <= 2 * ceiling + ceiling * 20 + 1)
        // From the second window on, nothing is shed.
        #expect(flood.admitted > 1000 * 15)
    }

    /// The budget falls back once the room empties: a window with nothing counted brings it back
    /// to the configured one.
    @Test func theBudgetFallsBackWhenTheRoomEmpties() {
        var admission = Admission(limits: Self.limits, knownSources: 40)
        let hall = Self.addresses(1000)
        let busy = Self.offer(&admission, addresses: hall, perSecond: 330, seconds: 15)
        #expect(admission.globalPerSecond > Self.limits.globalUnsolicitedPerSecond)
        // One stranger, then silence for longer than two windows, then the stranger again.
        let lone = Self.addresses(1, base: 0x0B00_0000)
        _ = Self.offer(&admission, addresses: lone, perSecond: 1, seconds: 1, from: busy.end + .seconds(11))
        #expect(admission.globalPerSecond == Self.limits.globalUnsolicitedPerSecond)
    }

    /// Known sources stay on their own budgets whatever the global one does: a known peer is
    /// admitted while unknown sources are refused.
    @Test func knownSourcesAreChargedApart() {
        var admission = Admission(limits: Self.limits, knownSources: 40)
        _ = Self.offer(&admission, addresses: Self.addresses(1 << 20), perSecond: 5000, seconds: 2)
        let peer = PeerAddress(10, 9, 9, 9, port: 4000)
        let time = Instant.zero + .seconds(2)
        // The refill since the flood's last datagram may let one more stranger through, not ten.
        let strangers = (0..<10).filter { index in
            admission.admit(PeerAddress(ipv4: 0x0C00_0000 | UInt32(index), port: 1), known: false, now: time)
                == nil
        }
        #expect(strangers.count <= 1)
        #expect(admission.admit(peer, known: true, now: time) == nil)
    }
}
