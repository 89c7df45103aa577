import CNghttp2
#if canImport(Glibc)
import Glibc
#endif

/// An HTTP/2 header list kept as bytes: every name and value back to back in one array, with
/// their offsets. Fields arrive from nghttp2 as bytes and most are only relayed, so they are
/// never turned into `String`s; the `nghttp2_nv` array for a submit points straight into the
/// storage. Reused across calls with `removeAll()`, it allocates only when it grows.
struct H2HeaderList {
    struct Field {
        var nameStart: Int32
        var nameCount: Int32
        var valueStart: Int32
        var valueCount: Int32
    }

    private(set) var bytes: [UInt8] = []
    private(set) var fields: [Field] = []

    var count: Int { fields.count }
    var isEmpty: Bool { fields.isEmpty }

    mutating func removeAll() {
        bytes.removeAll(keepingCapacity: true)
        fields.removeAll(keepingCapacity: true)
    }

    mutating func append(name: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) {
        // A head is a few hundred bytes in a dozen fields: one allocation each, not a growth
        // series per call.
        if fields.capacity == 0 {
            fields.reserveCapacity(16)
            bytes.reserveCapacity(512)
        }
        let nameStart = bytes.count
        // Typed pointers take the contiguous (memcpy) path; a raw buffer appends byte by byte.
        bytes.append(contentsOf: name.assumingMemoryBound(to: UInt8.self))
        let valueStart = bytes.count
        bytes.append(contentsOf: value.assumingMemoryBound(to: UInt8.self))
        fields.append(Field(nameStart: Int32(nameStart), nameCount: Int32(name.count),
                            valueStart: Int32(valueStart), valueCount: Int32(value.count)))
    }

    /// Appends `name: prefix + value` (an `authorization` field: `Bearer ` and the token)
    /// without building the joined value first.
    mutating func append(name: StaticString, prefix: StaticString, value: String) {
        var value = value
        value.withUTF8 { v in
            let nameStart = bytes.count
            bytes.append(contentsOf: UnsafeBufferPointer(start: name.utf8Start, count: name.utf8CodeUnitCount))
            let valueStart = bytes.count
            bytes.append(contentsOf: UnsafeBufferPointer(start: prefix.utf8Start, count: prefix.utf8CodeUnitCount))
            bytes.append(contentsOf: v)
            fields.append(Field(nameStart: Int32(nameStart), nameCount: Int32(name.utf8CodeUnitCount),
                                valueStart: Int32(valueStart), valueCount: Int32(bytes.count - valueStart)))
        }
    }

    mutating func append(name: StaticString, value: String) {
        var value = value
        value.withUTF8 { v in append(name: UnsafeRawBufferPointer(start: name.utf8Start, count: name.utf8CodeUnitCount), value: UnsafeRawBufferPointer(v)) }
    }

    mutating func append(name: StaticString, value: StaticString) {
        append(name: UnsafeRawBufferPointer(start: name.utf8Start, count: name.utf8CodeUnitCount),
               value: UnsafeRawBufferPointer(start: value.utf8Start, count: value.utf8CodeUnitCount))
    }

    /// Appends field `index` of `other`.
    mutating func append(field index: Int, of other: H2HeaderList) {
        let f = other.fields[index]
        other.bytes.withUnsafeBytes { raw in
            append(name: UnsafeRawBufferPointer(rebasing: raw[Int(f.nameStart)..<Int(f.nameStart + f.nameCount)]),
                   value: UnsafeRawBufferPointer(rebasing: raw[Int(f.valueStart)..<Int(f.valueStart + f.valueCount)]))
        }
    }

    /// Appends every field of `other`, in order.
    mutating func append(contentsOf other: H2HeaderList) {
        let base = Int32(bytes.count)
        bytes.append(contentsOf: other.bytes)
        for f in other.fields {
            fields.append(Field(nameStart: f.nameStart + base, nameCount: f.nameCount,
                                valueStart: f.valueStart + base, valueCount: f.valueCount))
        }
    }

    /// Calls `body` with each field's name and value, in order (valid only during the call).
    func forEach(_ body: (_ name: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer) -> Void) {
        bytes.withUnsafeBytes { raw in
            for f in fields {
                body(UnsafeRawBufferPointer(rebasing: raw[Int(f.nameStart)..<Int(f.nameStart + f.nameCount)]),
                     UnsafeRawBufferPointer(rebasing: raw[Int(f.valueStart)..<Int(f.valueStart + f.valueCount)]))
            }
        }
    }

    /// True when field `index`'s name is `name` (HTTP/2 names are lower-case on the wire).
    func name(at index: Int, is name: StaticString) -> Bool {
        let f = fields[index]
        return bytes.withUnsafeBytes { Self.equal(UnsafeRawBufferPointer(rebasing: $0[Int(f.nameStart)..<Int(f.nameStart + f.nameCount)]), name) }
    }

    /// True when field `index`'s value is `value`.
    func value(at index: Int, is value: StaticString) -> Bool {
        let f = fields[index]
        return bytes.withUnsafeBytes { Self.equal(UnsafeRawBufferPointer(rebasing: $0[Int(f.valueStart)..<Int(f.valueStart + f.valueCount)]), value) }
    }

    /// True when `test` holds for field `index`'s name (as bytes, valid only during the call).
    func name(at index: Int, matches test: (UnsafeRawBufferPointer) -> Bool) -> Bool {
        let f = fields[index]
        return bytes.withUnsafeBytes { test(UnsafeRawBufferPointer(rebasing: $0[Int(f.nameStart)..<Int(f.nameStart + f.nameCount)])) }
    }

    /// Field `index`'s name as a `String` (for checks that take names, off the relay path).
    func name(at index: Int) -> String {
        let f = fields[index]
        return String(decoding: bytes[Int(f.nameStart)..<Int(f.nameStart + f.nameCount)], as: UTF8.self)
    }

    /// Field `index`'s value as a `String`.
    func value(at index: Int) -> String {
        let f = fields[index]
        return String(decoding: bytes[Int(f.valueStart)..<Int(f.valueStart + f.valueCount)], as: UTF8.self)
    }

    /// The value of the first field named `name`.
    func first(_ name: StaticString) -> String? {
        for i in fields.indices where self.name(at: i, is: name) { return value(at: i) }
        return nil
    }

    /// Calls `body` with an `nghttp2_nv` array over the storage, valid only during the call
    /// (nghttp2 copies names and values while submitting). The array is on the stack: nothing
    /// is allocated per submit.
    func withNV<R>(_ body: (UnsafePointer<nghttp2_nv>, Int) -> R) -> R {
        bytes.withUnsafeBufferPointer { raw in
            // A pointer nghttp2 never reads through when its length is 0 (an empty list).
            let base = UnsafeMutablePointer(mutating: raw.baseAddress ?? UnsafePointer(bitPattern: 1)!)
            return fields.withUnsafeBufferPointer { fields in
                withUnsafeTemporaryAllocation(of: nghttp2_nv.self, capacity: max(fields.count, 1)) { nva in
                    for (i, f) in fields.enumerated() {
                        (nva.baseAddress! + i).initialize(to: nghttp2_nv(
                            name: base + Int(f.nameStart), value: base + Int(f.valueStart),
                            namelen: Int(f.nameCount), valuelen: Int(f.valueCount),
                            flags: UInt8(NGHTTP2_NV_FLAG_NONE.rawValue)))
                    }
                    // nghttp2_nv is a trivial C struct: nothing to deinitialize.
                    return body(UnsafePointer(nva.baseAddress!), fields.count)
                }
            }
        }
    }

    static func equal(_ bytes: UnsafeRawBufferPointer, _ text: StaticString) -> Bool {
        guard bytes.count == text.utf8CodeUnitCount else { return false }
        return bytes.count == 0 || memcmp(bytes.baseAddress!, text.utf8Start, bytes.count) == 0
    }
}
