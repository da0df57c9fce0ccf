import Testing

@testable import ProfileDropCore

/// The box behind the session's link and its large states: copies share one storage until one of
/// them changes, and a change never shows through another copy.
@Suite struct CopyOnWriteBoxTests {
    @Test func aChangeToOneCopyLeavesTheOtherAsItWas() {
        var original = CopyOnWriteBox([1, 2, 3])
        var copy = original
        copy.value.append(4)
        #expect(original.value == [1, 2, 3])
        #expect(copy.value == [1, 2, 3, 4])
        original.value[0] = 9
        #expect(original.value == [9, 2, 3])
        #expect(copy.value == [1, 2, 3, 4])
    }

    @Test func copiesShareTheStorageUntilOneChanges() throws {
        var original = CopyOnWriteBox(7)
        let copy = original
        #expect(try Self.storage(of: original) == Self.storage(of: copy))
        original.value += 1
        #expect(try Self.storage(of: original) != Self.storage(of: copy))
        #expect(original.value == 8 && copy.value == 7)
    }

    @Test func aBoxNobodySharesIsChangedInPlace() throws {
        var box = CopyOnWriteBox(7)
        let before = try Self.storage(of: box)
        box.value += 1
        #expect(try Self.storage(of: box) == before)
        #expect(ObjectIdentifier(box.uniqueStorage()) == before)
        #expect(box.value == 8)
    }

    /// Which storage `box` holds, without keeping a reference to it (which would make it shared).
    static func storage<Value>(of box: CopyOnWriteBox<Value>) throws -> ObjectIdentifier {
        let storage = Mirror(reflecting: box).children.first { $0.label == "storage" }?.value as AnyObject?
        return ObjectIdentifier(try #require(storage))
    }
}
