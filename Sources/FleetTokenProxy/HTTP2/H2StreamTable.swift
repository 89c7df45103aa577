/// The calls of one HTTP/2 connection by stream id: looked up on every frame, so not a
/// `Dictionary` (whose seeded SipHash costs more than the rest of a lookup). Open addressing
/// with linear probing over a power-of-two table at most half full, a multiplicative hash of
/// the id, and backward-shift deletion (no tombstones).
///
/// A peer picks its stream ids and could make them collide, but a table holds at most the
/// session's concurrent streams (`ServerLimits.maxConcurrentStreams`, `HTTP2UpstreamConnection
/// .maxStreams`), which bounds any probe sequence.
struct H2StreamTable<Value: AnyObject> {
    /// Stream ids (0: empty slot; HTTP/2 never uses stream 0 for a request) and their values.
    private var keys: [Int32] = []
    private var slots: [Value?] = []
    private(set) var count = 0

    var isEmpty: Bool { count == 0 }

    /// Every value, in no particular order.
    var values: [Value] { slots.compactMap { $0 } }

    private var mask: Int { keys.count - 1 }

    private func home(_ stream: Int32) -> Int {
        // Fibonacci hashing: consecutive odd ids spread over the table.
        Int(truncatingIfNeeded: (UInt32(bitPattern: stream) &* 0x9E37_79B1) >> 7) & mask
    }

    /// The slot holding `stream`, or nil.
    private func slot(of stream: Int32) -> Int? {
        guard count > 0 else { return nil }
        var i = home(stream)
        while true {
            let key = keys[i]
            if key == stream { return i }
            if key == 0 { return nil }
            i = (i + 1) & mask
        }
    }

    subscript(stream: Int32) -> Value? {
        get { slot(of: stream).flatMap { slots[$0] } }
        set {
            precondition(stream != 0, "stream 0 is never a call's")
            guard let newValue else {
                removeValue(forKey: stream)
                return
            }
            if let i = slot(of: stream) {
                slots[i] = newValue
                return
            }
            if (count + 1) * 2 > keys.count { grow() }
            var i = home(stream)
            while keys[i] != 0 { i = (i + 1) & mask }
            keys[i] = stream
            slots[i] = newValue
            count += 1
        }
    }

    @discardableResult
    mutating func removeValue(forKey stream: Int32) -> Value? {
        guard var hole = slot(of: stream) else { return nil }
        let removed = slots[hole]
        // Backward shift: later entries of the probe run move into the hole when their home
        // does not lie (cyclically) after it, so every entry stays reachable from its home.
        var i = (hole + 1) & mask
        while keys[i] != 0 {
            let h = home(keys[i])
            let between = hole <= i ? (hole < h && h <= i) : (hole < h || h <= i)
            if !between {
                keys[hole] = keys[i]
                slots[hole] = slots[i]
                hole = i
            }
            i = (i + 1) & mask
        }
        keys[hole] = 0
        slots[hole] = nil
        count -= 1
        return removed
    }

    mutating func removeAll() {
        for i in keys.indices where keys[i] != 0 {
            keys[i] = 0
            slots[i] = nil
        }
        count = 0
    }

    private mutating func grow() {
        let oldKeys = keys, oldSlots = slots
        let capacity = max(16, keys.count * 2)
        keys = [Int32](repeating: 0, count: capacity)
        slots = [Value?](repeating: nil, count: capacity)
        count = 0
        for i in oldKeys.indices where oldKeys[i] != 0 { self[oldKeys[i]] = oldSlots[i] }
    }
}
