/// The header block an `H2Session` is receiving: its fields so far and their header-list size
/// (name + value + 32 bytes each, RFC 9113 §6.5.2), checked against the session's bounds as
/// each field is decoded, before anything is kept of it.
///
/// One value with one mutating step per field: the session's callback makes one access to it
/// per field (a class's stored property is checked for exclusive access at run time on every
/// mutation, and a field used to cost three).
struct H2HeaderBlock {
    private(set) var fields = H2HeaderList()
    private var bytes = 0

    /// A new block begins; the storage of the last one is reused.
    mutating func begin() {
        fields.removeAll()
        bytes = 0
    }

    /// Counts the field and keeps it; false, keeping nothing, once the block passes `maxBytes`
    /// or already holds `maxCount` fields.
    mutating func take(name: ByteView, value: ByteView, maxBytes: Int, maxCount: Int) -> Bool {
        bytes += name.count + value.count + 32
        guard bytes <= maxBytes, fields.count < maxCount else { return false }
        fields.append(name: name, value: value)
        return true
    }
}
