/// A first-in first-out queue with amortised O(1) pops.
struct Queue<Element> {
    // Optional, so that a pop moves its element out and leaves nil behind: no retain for the
    // element handed out and no release when the slot is dropped later. (Datagrams and events pass
    // through here on every input.)
    private var items: [Element?] = []
    private var head = 0

    var isEmpty: Bool { head == items.count }
    var count: Int { items.count - head }

    /// Takes `element` over: a borrowed one would be copied into the storage and released here.
    mutating func push(_ element: consuming Element) { items.append(element) }

    mutating func pop() -> Element? {
        guard head < items.count else { return nil }
        let element = items[head].take()
        head += 1
        if head > 64 && head * 2 > items.count {
            items.removeFirst(head)
            head = 0
        }
        return element
    }
}
