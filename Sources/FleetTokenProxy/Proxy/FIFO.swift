/// A first-in, first-out queue with O(1) push and pop.
struct FIFO<Element> {
    private var items: [Element?] = []
    private var head = 0

    var count: Int { items.count - head }
    var isEmpty: Bool { count == 0 }

    mutating func push(_ item: Element) { items.append(item) }

    mutating func pop() -> Element? {
        guard head < items.count else { return nil }
        let item = items[head]
        items[head] = nil
        head += 1
        if head > 64 && head * 2 > items.count {
            items.removeFirst(head)
            head = 0
        }
        return item
    }

    /// Drops every element `shouldRemove` picks, keeping the order of the rest. O(count).
    mutating func removeAll(where shouldRemove: (Element) -> Bool) {
        items = items[head...].compactMap { $0 }.filter { !shouldRemove($0) }
        head = 0
    }
}
