/// The next timer deadline of each of the token cache's entities, earliest first: an indexed
/// binary min-heap over slot indices, so the cache runs every entity's refresh, probe and
/// idle-drop timer from one scheduler timer armed for the earliest deadline.
///
/// One libevent event and one `Timer` per entity cost about 300 bytes each (the event, the
/// timer object, the closure capturing the key); here an entity costs a heap item (16 bytes)
/// and its position (4 bytes). Setting, moving and removing a deadline are O(log n).
struct RefreshDeadlines {
    private struct Item {
        var due: Double
        var slot: Int32
    }

    private static let absent: Int32 = -1

    private var items: [Item] = []
    /// Where each slot's item is in `items`, or `absent`; indexed by slot.
    private var positions: [Int32] = []

    var isEmpty: Bool { items.isEmpty }
    var count: Int { items.count }

    /// The earliest deadline, if any.
    var earliest: Double? { items.first?.due }

    /// The deadline of `slot`, if it has one.
    func deadline(of slot: Int) -> Double? {
        guard slot < positions.count, positions[slot] != Self.absent else { return nil }
        return items[Int(positions[slot])].due
    }

    /// Gives `slot` the deadline `due`, replacing the one it had.
    mutating func set(_ slot: Int, due: Double) {
        precondition(slot >= 0 && slot <= Int(Int32.max), "slot index out of range")
        while positions.count <= slot { positions.append(Self.absent) }
        let position = Int(positions[slot])
        if position == Int(Self.absent) {
            items.append(Item(due: due, slot: Int32(slot)))
            positions[slot] = Int32(items.count - 1)
            siftUp(items.count - 1)
            return
        }
        let earlier = due < items[position].due
        items[position].due = due
        if earlier { siftUp(position) } else { siftDown(position) }
    }

    /// Takes away the deadline of `slot`, if it has one.
    mutating func remove(_ slot: Int) {
        guard slot < positions.count else { return }
        let position = Int(positions[slot])
        guard position != Int(Self.absent) else { return }
        positions[slot] = Self.absent
        let last = items.removeLast()
        guard position < items.count else { return }
        // The last item fills the hole and moves whichever way restores the order.
        items[position] = last
        positions[Int(last.slot)] = Int32(position)
        siftUp(position)
        siftDown(Int(positions[Int(last.slot)]))
    }

    /// Takes away and returns the slot with the earliest deadline if that deadline is at or
    /// before `now`.
    mutating func popDue(at now: Double) -> Int? {
        guard let first = items.first, first.due <= now else { return nil }
        let slot = Int(first.slot)
        remove(slot)
        return slot
    }

    private mutating func siftUp(_ start: Int) {
        var child = start
        while child > 0 {
            let parent = (child - 1) / 2
            guard items[child].due < items[parent].due else { return }
            swapAt(child, parent)
            child = parent
        }
    }

    private mutating func siftDown(_ start: Int) {
        var parent = start
        while true {
            let left = 2 * parent + 1
            guard left < items.count else { return }
            let right = left + 1
            let smaller = right < items.count && items[right].due < items[left].due ? right : left
            guard items[smaller].due < items[parent].due else { return }
            swapAt(parent, smaller)
            parent = smaller
        }
    }

    private mutating func swapAt(_ a: Int, _ b: Int) {
        items.swapAt(a, b)
        positions[Int(items[a].slot)] = Int32(a)
        positions[Int(items[b].slot)] = Int32(b)
    }
}
