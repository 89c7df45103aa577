import CNghttp2
#if canImport(Glibc)
import Glibc
#endif

/// An HTTP/2 header list kept as bytes: every name and value back to back in one buffer, with
/// their offsets. Fields arrive from nghttp2 as bytes and most are only relayed, so they are
/// never turned into `String`s; the `nghttp2_nv` array for a submit points straight into the
/// storage. Reused across calls with `removeAll()`, it allocates only when it grows.
///
/// A value type, copied on write: copies share one `Storage` and the first mutation of a shared
/// one copies it. The storage is two raw buffers rather than two `Array`s: a head is a dozen
/// fields appended one by one on every call, several times over (received, forwarded,
/// relayed), and an array append costs several times the copy of the bytes themselves.
///
/// Invariant: the first `count` fields of the storage are initialized and every one of them
/// lies within the first `byteCount` bytes; storage shared with a copy is never written (a
/// mutation first makes it unique). The views `forEach` and `withNV` hand out point into the
/// storage and live only for their closure.
struct H2HeaderList {
    struct Field {
        var nameStart: Int32
        var nameCount: Int32
        var valueStart: Int32
        var valueCount: Int32
    }

    /// The buffers, immutable once made (their capacities are `let`): growing makes a new one.
    /// The struct's counts say how much of them is this list's.
    private final class Storage {
        let bytes: UnsafeMutablePointer<UInt8>
        let byteCapacity: Int
        let fields: UnsafeMutablePointer<Field>
        let fieldCapacity: Int

        init(byteCapacity: Int, fieldCapacity: Int) {
            self.byteCapacity = byteCapacity
            self.fieldCapacity = fieldCapacity
            // malloc itself: `allocate(capacity:)` goes through the runtime's aligned allocation
            // (posix_memalign), about twice malloc's cost, and malloc's alignment suits both.
            bytes = malloc(byteCapacity)!.bindMemory(to: UInt8.self, capacity: byteCapacity)
            fields = malloc(fieldCapacity * MemoryLayout<Field>.stride)!.bindMemory(to: Field.self, capacity: fieldCapacity)
        }

        deinit {
            free(bytes)
            free(fields)
        }
    }

    private var storage: Storage?
    /// Bytes and fields in use (the storage may be shared with copies that use more or fewer).
    private var byteCount = 0
    private(set) var count = 0

    /// A head is a few hundred bytes in a dozen fields: one allocation of each, not a growth
    /// series per call.
    private static let initialBytes = 512
    private static let initialFields = 16

    var isEmpty: Bool { count == 0 }

    mutating func removeAll() {
        byteCount = 0
        count = 0
    }

    /// Makes the storage this list's own, with room for `bytes` more bytes and one more field.
    @inline(__always)
    private mutating func reserve(bytes more: Int) {
        // Uniqueness first: a local binding of the storage would be a second reference.
        if isKnownUniquelyReferenced(&storage), byteCount + more <= storage.unsafelyUnwrapped.byteCapacity,
           count < storage.unsafelyUnwrapped.fieldCapacity {
            return
        }
        grow(bytes: more)
    }

    @inline(never)
    private mutating func grow(bytes more: Int) {
        var byteCapacity = max(storage?.byteCapacity ?? 0, Self.initialBytes)
        while byteCapacity < byteCount + more { byteCapacity *= 2 }
        var fieldCapacity = max(storage?.fieldCapacity ?? 0, Self.initialFields)
        if count >= fieldCapacity { fieldCapacity *= 2 }
        let grown = Storage(byteCapacity: byteCapacity, fieldCapacity: fieldCapacity)
        if let storage {
            grown.bytes.update(from: storage.bytes, count: byteCount)
            grown.fields.update(from: storage.fields, count: count)
        }
        storage = grown
    }

    /// Appends one field: `name`, and `value` followed by `more` as its value.
    private mutating func append(name: ByteView, value: ByteView, more: ByteView) {
        let valueCount = value.count + more.count
        reserve(bytes: name.count + valueCount)
        let bytes = storage.unsafelyUnwrapped.bytes
        let nameStart = byteCount
        var end = Self.copy(name, to: bytes, at: byteCount)
        end = Self.copy(value, to: bytes, at: end)
        byteCount = Self.copy(more, to: bytes, at: end)
        (storage.unsafelyUnwrapped.fields + count).initialize(to: Field(
            nameStart: Int32(nameStart), nameCount: Int32(name.count),
            valueStart: Int32(nameStart + name.count), valueCount: Int32(valueCount)))
        count += 1
    }

    /// Copies `part` to `bytes + offset`; returns the offset after it.
    private static func copy(_ part: ByteView, to bytes: UnsafeMutablePointer<UInt8>, at offset: Int) -> Int {
        guard part.count > 0 else { return offset }
        (bytes + offset).update(from: part.base.unsafelyUnwrapped, count: part.count)
        return offset + part.count
    }

    mutating func append(name: ByteView, value: ByteView) {
        append(name: name, value: value, more: ByteView(start: nil, count: 0))
    }

    /// Appends `name: value` with the name's ASCII letters lower-cased as they are stored (an
    /// HTTP/1.1 field going to HTTP/2, RFC 9113 §8.2.1): no lower-cased copy made first.
    mutating func append(lowerCasing name: ByteView, value: ByteView) {
        append(name: name, value: value)
        // The storage is this list's own after the append (`reserve`), and the name was
        // copied to the last field's name range.
        let storage = storage.unsafelyUnwrapped
        let field = storage.fields[count - 1]
        let stored = storage.bytes + Int(field.nameStart)
        for i in 0..<Int(field.nameCount) {
            let b = stored[i]
            stored[i] = b | (b &- 0x41 < 26 ? 0x20 : 0)
        }
    }

    /// Appends `name: prefix + value` (an `authorization` field: `Bearer ` and the token)
    /// without building the joined value first.
    mutating func append(name: StaticString, prefix: StaticString, value: String) {
        value.withByteView { append(name: ByteView(name), value: ByteView(prefix), more: $0) }
    }

    mutating func append(name: StaticString, value: String) {
        value.withByteView { append(name: ByteView(name), value: $0) }
    }

    mutating func append(name: StaticString, value: StaticString) {
        append(name: ByteView(name), value: ByteView(value))
    }

    /// Appends field `index` of `other`.
    mutating func append(field index: Int, of other: H2HeaderList) {
        append(name: other.nameBytes(at: index), value: other.valueBytes(at: index))
    }

    /// Appends every field of `other`, in order.
    mutating func append(contentsOf other: H2HeaderList) {
        for i in 0..<other.count { append(field: i, of: other) }
    }

    /// Field `index`'s name bytes (valid while the list is neither mutated nor freed).
    private func nameBytes(at index: Int) -> ByteView {
        precondition(index >= 0 && index < count, "header field index out of range")
        let storage = storage.unsafelyUnwrapped
        let f = storage.fields[index]
        return ByteView(start: storage.bytes + Int(f.nameStart), count: Int(f.nameCount))
    }

    /// Field `index`'s value bytes (valid while the list is neither mutated nor freed).
    private func valueBytes(at index: Int) -> ByteView {
        precondition(index >= 0 && index < count, "header field index out of range")
        let storage = storage.unsafelyUnwrapped
        let f = storage.fields[index]
        return ByteView(start: storage.bytes + Int(f.valueStart), count: Int(f.valueCount))
    }

    /// True when field `index`'s name is `name` (HTTP/2 names are lower-case on the wire).
    func name(at index: Int, is name: StaticString) -> Bool {
        withExtendedLifetime(storage) { nameBytes(at: index) == name }
    }

    /// True when field `index`'s value is `value`.
    func value(at index: Int, is value: StaticString) -> Bool {
        withExtendedLifetime(storage) { valueBytes(at: index) == value }
    }

    /// Field `index`'s name as a `String` (for checks that take names, off the relay path).
    func name(at index: Int) -> String {
        withExtendedLifetime(storage) { nameBytes(at: index).string }
    }

    /// Field `index`'s value as a `String`.
    func value(at index: Int) -> String {
        withExtendedLifetime(storage) { valueBytes(at: index).string }
    }

    /// The value of the first field named `name`.
    func first(_ name: StaticString) -> String? {
        for i in 0..<count where self.name(at: i, is: name) { return value(at: i) }
        return nil
    }

    /// Calls `body` with an `nghttp2_nv` array over the storage, valid only during the call
    /// (nghttp2 copies names and values while submitting). The array is on the stack: nothing
    /// is allocated per submit.
    func withNV<R>(_ body: (UnsafePointer<nghttp2_nv>, Int) -> R) -> R {
        withNV(leading: { _ in false }, dropping: { _ in false }, body)
    }

    /// `withNV` over the fields whose names `leading` picks, then the others whose names
    /// `dropping` does not, each in their order: a relayed head is submitted straight from
    /// the list it arrived in, reordered and filtered, not copied into another list first.
    func withNV<R>(leading: (ByteView) -> Bool, dropping: (ByteView) -> Bool,
                   _ body: (UnsafePointer<nghttp2_nv>, Int) -> R) -> R {
        withExtendedLifetime(storage) {
            withUnsafeTemporaryAllocation(of: nghttp2_nv.self, capacity: max(count, 1)) { nva in
                var used = 0
                for i in 0..<count where leading(nameBytes(at: i)) {
                    (nva.baseAddress! + used).initialize(to: nv(i))
                    used += 1
                }
                for i in 0..<count {
                    let name = nameBytes(at: i)
                    guard !leading(name) && !dropping(name) else { continue }
                    (nva.baseAddress! + used).initialize(to: nv(i))
                    used += 1
                }
                // nghttp2_nv is a trivial C struct: nothing to deinitialize.
                return body(UnsafePointer(nva.baseAddress!), used)
            }
        }
    }

    /// Field `index` as an `nghttp2_nv` pointing into the storage.
    private func nv(_ index: Int) -> nghttp2_nv {
        let name = nameBytes(at: index), value = valueBytes(at: index)
        // A pointer nghttp2 never reads through when its length is 0.
        let none = UnsafeMutablePointer<UInt8>(bitPattern: 1)!
        return nghttp2_nv(
            name: UnsafeMutablePointer(mutating: name.base) ?? none,
            value: UnsafeMutablePointer(mutating: value.base) ?? none,
            namelen: name.count, valuelen: value.count, flags: UInt8(NGHTTP2_NV_FLAG_NONE.rawValue))
    }
}

extension H2HeaderList: HeaderFieldBytes {
    /// Calls `body` with each field's name and value, in order, until it returns false.
    @inline(__always)
    func forEach(_ body: (_ name: ByteView, _ value: ByteView) -> Bool) {
        withExtendedLifetime(storage) {
            for i in 0..<count {
                guard body(nameBytes(at: i), valueBytes(at: i)) else { return }
            }
        }
    }
}

extension H2HeaderList {
    /// A list of `fields` as given, any bytes at all (for the fuzz targets' invariants and tests).
    init(_ fields: [(name: [UInt8], value: [UInt8])]) {
        self.init()
        for field in fields {
            field.name.withUnsafeBufferPointer { name in
                field.value.withUnsafeBufferPointer { value in append(name: ByteView(name), value: ByteView(value)) }
            }
        }
    }
}
