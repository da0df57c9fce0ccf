import ProfileDropCore
import ProfileDropCrypto
import Testing

@testable import ProfileDropSimulator

@Suite struct EventQueueTests {
    @Test func popsInTimeOrder() {
        var queue = EventQueue<String>()
        queue.schedule("c", at: Instant(nanoseconds: 30))
        queue.schedule("a", at: Instant(nanoseconds: 10))
        queue.schedule("b", at: Instant(nanoseconds: 20))
        #expect(queue.count == 3)
        #expect(queue.nextTime == Instant(nanoseconds: 10))
        var popped: [String] = []
        while let entry = queue.pop() { popped.append(entry.payload) }
        #expect(popped == ["a", "b", "c"])
        #expect(queue.isEmpty)
    }

    @Test func equalTimesPopInSchedulingOrder() {
        var queue = EventQueue<Int>()
        let time = Instant(nanoseconds: 5)
        // Interleave with other times so that the heap really has to reshuffle the ties.
        for value in 0..<200 {
            queue.schedule(value, at: value % 3 == 0 ? Instant(nanoseconds: 1) : time)
        }
        var popped: [(Instant, Int)] = []
        while let entry = queue.pop() { popped.append((entry.time, entry.payload)) }
        let early = popped.filter { $0.0 == Instant(nanoseconds: 1) }.map(\.1)
        let late = popped.filter { $0.0 == time }.map(\.1)
        #expect(early == (0..<200).filter { $0 % 3 == 0 })
        #expect(late == (0..<200).filter { $0 % 3 != 0 })
        #expect(popped.prefix(early.count).allSatisfy { $0.0 == Instant(nanoseconds: 1) })
    }

    @Test func randomScheduleMatchesStableSort() {
        var random = DeterministicRandom(seed: 99)
        var queue = EventQueue<Int>()
        var expected: [(UInt64, Int)] = []
        for index in 0..<1000 {
            let time = random.uniform(below: 50)
            queue.schedule(index, at: Instant(nanoseconds: time))
            expected.append((time, index))
        }
        // A stable sort by time is exactly the (time, sequence) order.
        let sorted = expected.enumerated().sorted { lhs, rhs in
            lhs.element.0 != rhs.element.0 ? lhs.element.0 < rhs.element.0 : lhs.offset < rhs.offset
        }.map(\.element.1)
        var popped: [Int] = []
        while let entry = queue.pop() { popped.append(entry.payload) }
        #expect(popped == sorted)
    }

    @Test func popNotAfterLeavesLaterEvents() {
        var queue = EventQueue<String>()
        queue.schedule("late", at: Instant(nanoseconds: 100))
        queue.schedule("early", at: Instant(nanoseconds: 10))
        #expect(queue.pop(notAfter: Instant(nanoseconds: 50))?.payload == "early")
        #expect(queue.pop(notAfter: Instant(nanoseconds: 50)) == nil)
        #expect(queue.pop(notAfter: Instant(nanoseconds: 100))?.payload == "late")
    }

    /// Random updates and removals against a plain array of deadlines: the queue's first entry is
    /// always the earliest (lowest participant among equal times), and the lowest participant due
    /// by a time is the one a scan finds.
    @Test func deadlinesAgreeWithAScan() {
        var random = DeterministicRandom(seed: 11)
        var queue = DeadlineQueue()
        var plain: [Instant?] = []
        for _ in 0..<40 {
            queue.addMember()
            plain.append(nil)
        }
        for _ in 0..<5000 {
            let member = Int(random.uniform(below: 40))
            let time = random.uniform(below: 5) == 0 ? nil : Instant(nanoseconds: random.uniform(below: 50))
            queue.update(member, to: time)
            plain[member] = time
            let expected = plain.indices.compactMap { index in plain[index].map { (member: index, time: $0) }
            }
            .min { $0.time != $1.time ? $0.time < $1.time : $0.member < $1.member }
            #expect(queue.first?.member == expected?.member && queue.first?.time == expected?.time)
            let limit = Instant(nanoseconds: random.uniform(below: 50))
            let due = plain.indices.first { plain[$0].map { $0 <= limit } ?? false }
            #expect(queue.lowestMember(dueBy: limit) == due)
        }
    }
}
