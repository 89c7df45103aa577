#if canImport(Glibc)
import Glibc
#endif

/// A borrowed, read-only run of bytes inside memory someone else owns: a field name or value of
/// a parsed HTTP/1.1 head (`HeadFields`) or an HTTP/2 header list (`H2HeaderList`), a path
/// segment, a pulled-up evbuffer chain. The one way byte-level code compares what arrived with
/// the literals the sidecar knows: byte for byte (`== "literal"`), ASCII case-insensitively
/// with a lower-case literal (`equalsLowercased`), or by prefix.
///
/// Invariant: a view is valid only while the closure that handed it out runs (or, for one made
/// from a buffer, while that buffer lives and is not mutated). It is never stored beyond that:
/// whatever must outlive it is copied out (`string`, or appended to an owning list).
struct ByteView {
    /// Nil only when `count` is 0.
    let base: UnsafePointer<UInt8>?
    let count: Int

    init(_ buffer: UnsafeBufferPointer<UInt8>) {
        base = buffer.baseAddress
        count = buffer.count
    }

    init(_ raw: UnsafeRawBufferPointer) {
        base = raw.baseAddress?.assumingMemoryBound(to: UInt8.self)
        count = raw.count
    }

    /// A part of a buffer (a path segment, a query parameter).
    init(_ slice: Slice<UnsafeBufferPointer<UInt8>>) {
        self.init(UnsafeBufferPointer(rebasing: slice))
    }

    /// The bytes of a literal (static memory: the view is valid for the whole run).
    init(_ literal: StaticString) {
        base = literal.utf8CodeUnitCount > 0 ? literal.utf8Start : nil
        count = literal.utf8CodeUnitCount
    }

    /// A view of `count` bytes at `start`, for the owning types that know the bytes are there
    /// (`HeadFields`, `H2HeaderList`): no check beyond the count's sign.
    @inline(__always)
    init(start: UnsafePointer<UInt8>, count: Int) {
        precondition(count >= 0, "a byte view has no negative count")
        base = start
        self.count = count
    }

    init(start: UnsafePointer<UInt8>?, count: Int) {
        precondition(count >= 0 && (start != nil || count == 0), "a byte view needs memory for its bytes")
        base = start
        self.count = count
    }

    var isEmpty: Bool { count == 0 }

    /// The first byte, nil when empty.
    var first: UInt8? { count > 0 ? base.unsafelyUnwrapped[0] : nil }

    @inline(__always)
    subscript(index: Int) -> UInt8 {
        precondition(index >= 0 && index < count, "byte view index out of range")
        return base.unsafelyUnwrapped[index]
    }

    /// The bytes in `range` (offsets into this view).
    @inline(__always)
    func slice(_ range: Range<Int>) -> ByteView {
        precondition(range.lowerBound >= 0 && range.upperBound <= count, "byte view slice out of range")
        return ByteView(start: range.isEmpty ? base : base.unsafelyUnwrapped + range.lowerBound, count: range.count)
    }

    var buffer: UnsafeBufferPointer<UInt8> { UnsafeBufferPointer(start: base, count: count) }
    var raw: UnsafeRawBufferPointer { UnsafeRawBufferPointer(start: base, count: count) }

    /// A copy of the bytes as text (invalid UTF-8 is replaced, as `String(decoding:)` does).
    var string: String { String(decoding: buffer, as: UTF8.self) }

    /// Byte-for-byte equality with a literal: one length check and one `memcmp`, not a generic
    /// sequence walk.
    @inline(__always)
    static func == (view: ByteView, literal: StaticString) -> Bool {
        view.count == literal.utf8CodeUnitCount && view.startsWith(literal)
    }

    @inline(__always)
    static func != (view: ByteView, literal: StaticString) -> Bool { !(view == literal) }

    /// Byte-for-byte equality of two views.
    static func == (a: ByteView, b: ByteView) -> Bool {
        a.count == b.count && (a.count == 0 || memcmp(a.base.unsafelyUnwrapped, b.base.unsafelyUnwrapped, a.count) == 0)
    }

    /// True when the bytes begin with `literal`, byte for byte.
    @inline(__always)
    func hasPrefix(_ literal: StaticString) -> Bool {
        count >= literal.utf8CodeUnitCount && startsWith(literal)
    }

    /// ASCII case-insensitive equality with a literal written in lower case (a header name as an
    /// HTTP/1.1 client may spell it, `Content-Length`, against `"content-length"`).
    @inline(__always)
    func equalsLowercased(_ lower: StaticString) -> Bool {
        count == lower.utf8CodeUnitCount
            && Self.foldedEqual(base, lower.utf8Start, count)
    }

    /// ASCII case-insensitive equality of two views (letters compared without case, every other
    /// byte exactly).
    @inline(__always)
    func equalsIgnoringCase(_ other: ByteView) -> Bool {
        count == other.count && Self.foldedEqual(base, other.base, count)
    }

    @inline(__always)
    private func startsWith(_ literal: StaticString) -> Bool {
        let n = literal.utf8CodeUnitCount
        return n == 0 || memcmp(base.unsafelyUnwrapped, literal.utf8Start, n) == 0
    }

    @inline(__always)
    private static func foldedEqual(_ a: UnsafePointer<UInt8>?, _ b: UnsafePointer<UInt8>?, _ count: Int) -> Bool {
        guard count > 0 else { return true }
        let a = a.unsafelyUnwrapped, b = b.unsafelyUnwrapped
        for k in 0..<count {
            let x = a[k], y = b[k]
            if x != y {
                let lx = (x >= 65 && x <= 90) ? x | 0x20 : x
                let ly = (y >= 65 && y <= 90) ? y | 0x20 : y
                if lx != ly { return false }
            }
        }
        return true
    }
}

extension String {
    /// Calls `body` with a view of the string's UTF-8 bytes (contiguous first, if it is not).
    func withByteView<R>(_ body: (ByteView) throws -> R) rethrows -> R {
        var copy = self
        return try copy.withUTF8 { try body(ByteView($0)) }
    }
}
