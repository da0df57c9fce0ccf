/// A first-in first-out queue with amortised O(1) pops.
struct Queue<Element> {
    private var items: [Element] = []
    private var head = 0

    var isEmpty: Bool { head == items.count }
    var count: Int { items.count - head }

    mutating func push(_ element: Element) { items.append(element) }

    mutating func pop() -> Element? {
        guard head < items.count else { return nil }
        let element = items[head]
        head += 1
        if head > 64 && head * 2 > items.count {
            items.removeFirst(head)
            head = 0
        }
        return element
    }
}
