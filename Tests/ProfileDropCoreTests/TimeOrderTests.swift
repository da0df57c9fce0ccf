import ProfileDropCrypto
import Testing

@testable import ProfileDropCore

/// The order of a bounded table's keys by time, then key: what a full admission budget or credit
/// table gives up first.
@Suite struct TimeOrderTests {
    static func at(_ nanoseconds: UInt64) -> Instant { Instant(nanoseconds: nanoseconds) }

    @Test func theEarliestComesFirstAndTiesGoByKey() {
        var order = TimeOrder<UInt32>()
        order.insert(7, at: Self.at(20))
        order.insert(9, at: Self.at(10))
        order.insert(3, at: Self.at(10))
        order.insert(5, at: Self.at(30))
        #expect(order.count == 4)
        var keys: [UInt32] = []
        while let key = order.removeFirst() { keys.append(key) }
        #expect(keys == [3, 9, 7, 5])
        #expect(order.count == 0 && order.first == nil)
    }

    @Test func aMovedKeyTakesItsNewPlaceEitherWay() {
        var order = TimeOrder<UInt32>()
        for key: UInt32 in 1...5 { order.insert(key, at: Self.at(UInt64(key) * 10)) }
        order.move(2, from: Self.at(20), to: Self.at(60))
        order.move(5, from: Self.at(50), to: Self.at(5))
        order.move(4, from: Self.at(40), to: Self.at(30))
        #expect(order.first?.key == 5 && order.first?.time == Self.at(5))
        var keys: [UInt32] = []
        while let key = order.removeFirst() { keys.append(key) }
        #expect(keys == [5, 1, 3, 4, 2])
    }

    /// Against a plain sorted list, through many removals from the front (which the order drops
    /// by moving its start, and compacts now and then) and moves.
    @Test func agreesWithASortedListThroughAnyOperations() {
        var random = DeterministicRandom(seed: 11)
        var order = TimeOrder<UInt32>()
        var reference: [(time: Instant, key: UInt32)] = []
        var nextKey: UInt32 = 0
        for _ in 0..<5_000 {
            let time = Self.at(random.uniform(below: 50))
            switch random.uniform(below: 3) {
            case 0 where !reference.isEmpty:
                #expect(order.removeFirst() == reference.removeFirst().key)
            case 1 where !reference.isEmpty:
                let index = Int(random.uniform(below: UInt64(reference.count)))
                let entry = reference.remove(at: index)
                order.move(entry.key, from: entry.time, to: time)
                reference.append((time, entry.key))
            default:
                order.insert(nextKey, at: time)
                reference.append((time, nextKey))
                nextKey += 1
            }
            reference.sort { ($0.time, $0.key) < ($1.time, $1.key) }
            #expect(order.count == reference.count)
            #expect(order.first?.key == reference.first?.key)
        }
    }
}
