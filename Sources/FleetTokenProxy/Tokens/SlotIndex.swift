/// The token cache's slot numbers by entity key: an open-addressing hash table (linear
/// probing, deletion by backward shift) whose buckets hold a slot number and 32 bits of the
/// key's hash, 8 bytes each; the keys themselves stay in the cache's slots.
///
/// A `Dictionary<EntityKey, Int>` would keep a second copy of every key (40 bytes) and an
/// `Int` per bucket: about 90 bytes per entity at its load factor, against 11 to 21 here.
struct SlotIndex {
    /// 0 is an empty bucket; otherwise the hash's low 32 bits above, the slot number + 1 below.
    private var buckets: [UInt64] = []
    private(set) var count = 0

    /// The hash the table files `key` under (the key's `hashValue`, so seeded per process).
    static func hash(_ key: EntityKey) -> UInt32 {
        UInt32(truncatingIfNeeded: key.hashValue)
    }

    /// The slot whose key has `hash` and for which `isKey` holds.
    func find(hash: UInt32, isKey: (Int) -> Bool) -> Int? {
        guard !buckets.isEmpty else { return nil }
        let mask = buckets.count - 1
        var position = Int(hash) & mask
        while true {
            let bucket = buckets[position]
            if bucket == 0 { return nil }
            if UInt32(truncatingIfNeeded: bucket >> 32) == hash {
                let slot = Int(truncatingIfNeeded: bucket & 0xFFFF_FFFF) - 1
                if isKey(slot) { return slot }
            }
            position = (position + 1) & mask
        }
    }

    /// Files `slot` under `hash`; the caller knows no slot with this key is filed.
    mutating func insert(_ slot: Int, hash: UInt32) {
        precondition(slot >= 0 && slot < Int(UInt32.max), "slot number out of range")
        // At most three quarters full, so probes stay short and always end at an empty bucket.
        if (count + 1) * 4 > buckets.count * 3 { grow() }
        place(UInt64(hash) << 32 | UInt64(slot + 1))
        count += 1
    }

    /// Takes `slot`, filed under `hash`, out of the table.
    mutating func remove(_ slot: Int, hash: UInt32) {
        guard !buckets.isEmpty else { return }
        let mask = buckets.count - 1
        let wanted = UInt64(hash) << 32 | UInt64(slot + 1)
        var hole = Int(hash) & mask
        while buckets[hole] != wanted {
            if buckets[hole] == 0 { return }
            hole = (hole + 1) & mask
        }
        buckets[hole] = 0
        count -= 1
        // Backward shift: move later members of the run into the hole when their home bucket
        // is not between the hole and where they are, so no lookup meets an empty bucket
        // before its key.
        var next = hole
        while true {
            next = (next + 1) & mask
            let bucket = buckets[next]
            if bucket == 0 { return }
            let home = Int(truncatingIfNeeded: bucket >> 32) & mask
            let stays = hole <= next ? (hole < home && home <= next) : (hole < home || home <= next)
            if stays { continue }
            buckets[hole] = bucket
            buckets[next] = 0
            hole = next
        }
    }

    private mutating func place(_ bucket: UInt64) {
        let mask = buckets.count - 1
        var position = Int(truncatingIfNeeded: bucket >> 32) & mask
        while buckets[position] != 0 { position = (position + 1) & mask }
        buckets[position] = bucket
    }

    private mutating func grow() {
        let old = buckets
        buckets = [UInt64](repeating: 0, count: max(16, old.count * 2))
        for bucket in old where bucket != 0 { place(bucket) }
    }
}
