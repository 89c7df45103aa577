#if canImport(Glibc)
import Glibc
#endif

/// Writes a message head into memory that grows as it is written, so no caller bounds a head
/// in advance and no head, however many lines it has, can overrun it. It starts in
/// `stackCapacity` bytes of temporary memory (on the stack: the runtime places a temporary
/// allocation of at most 1 KiB there without asking how much stack is left, a check that costs
/// about 400 instructions) and moves to the heap, doubling, only when a head outgrows that.
/// Every piece is one memcpy: building the head with `Array.append(contentsOf:)` cost about 70
/// instructions a piece, some 2,000 a proxied call.
///
/// Invariant: `base` points at `capacity` writable bytes of which the first `count` are
/// written; they are the temporary buffer `withBytes` lends until `onHeap` is set, from then
/// memory this writer allocated, which `withBytes` frees when the body and `use` are done. A
/// writer exists only inside `withBytes` (its initialiser is private), so neither pointer
/// outlives its memory.
struct HeadWriter {
    private var base: UnsafeMutablePointer<UInt8>
    private var capacity: Int
    private var onHeap = false
    private(set) var count = 0

    /// The temporary buffer a head starts in.
    static let stackCapacity = 1024

    private init(_ buffer: UnsafeMutableBufferPointer<UInt8>) {
        base = buffer.baseAddress!
        capacity = buffer.count
    }

    /// Hands the bytes `body` writes to `use`, without an array of their own (an allocation and
    /// a free a head): a head that is sent or copied at once needs none.
    static func withBytes<R>(_ body: (inout HeadWriter) -> Void, use: (UnsafeRawBufferPointer) -> R) -> R {
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: stackCapacity) { buffer in
            var writer = HeadWriter(buffer)
            body(&writer)
            defer { if writer.onHeap { free(writer.base) } }
            return use(UnsafeRawBufferPointer(start: writer.base, count: writer.count))
        }
    }

    /// An array of the bytes `body` writes.
    static func bytes(_ body: (inout HeadWriter) -> Void) -> [UInt8] {
        withBytes(body, use: { [UInt8]($0) })
    }

    @inline(__always)
    mutating func write(_ text: String) {
        let copied: Void? = text.utf8.withContiguousStorageIfAvailable { copy($0) }
        if copied == nil { for b in text.utf8 { byte(b) } }
    }

    /// A literal: copied straight from the binary's bytes (a `String` goes through its storage
    /// checks first, about 40 instructions a piece).
    @inline(__always)
    mutating func write(literal text: StaticString) {
        copy(UnsafeBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
    }

    mutating func write(_ bytes: [UInt8]) {
        bytes.withUnsafeBufferPointer { copy($0) }
    }

    @inline(__always)
    mutating func write(_ bytes: UnsafeBufferPointer<UInt8>) { copy(bytes) }

    mutating func byte(_ b: UInt8) {
        if count == capacity { grow(toFit: 1) }
        base[count] = b
        count += 1
    }

    /// A non-negative number in decimal.
    mutating func decimal(_ value: Int) {
        precondition(value >= 0)
        var digits = 1
        var rest = value / 10
        while rest > 0 { digits += 1; rest /= 10 }
        if digits > capacity - count { grow(toFit: digits) }
        var v = value
        for k in stride(from: digits - 1, through: 0, by: -1) {
            base[count + k] = UInt8(48 + v % 10)
            v /= 10
        }
        count += digits
    }

    @inline(__always)
    private mutating func copy(_ bytes: UnsafeBufferPointer<UInt8>) {
        guard let source = bytes.baseAddress, bytes.count > 0 else { return }
        if bytes.count > capacity - count { grow(toFit: bytes.count) }
        (base + count).initialize(from: source, count: bytes.count)
        count += bytes.count
    }

    /// Moves the written bytes to heap memory with room for `more` after them (at least
    /// double the current room, so a long head costs few moves).
    @inline(never)
    private mutating func grow(toFit more: Int) {
        let (needed, overflow) = count.addingReportingOverflow(more)
        precondition(!overflow, "message head too long to address")
        let newCapacity = max(needed, capacity * 2)
        guard let grown = malloc(newCapacity)?.assumingMemoryBound(to: UInt8.self) else {
            fatalError("out of memory writing a message head of \(newCapacity) bytes")
        }
        grown.initialize(from: base, count: count)
        if onHeap { free(base) }
        base = grown
        capacity = newCapacity
        onHeap = true
    }
}
