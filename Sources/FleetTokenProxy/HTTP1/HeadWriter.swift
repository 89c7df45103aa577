/// Writes a message head into memory sized for it in advance: the caller bounds the head's
/// length from its pieces, `HeadWriter.bytes` allocates once, and every piece is one memcpy.
/// Building the head with `Array.append(contentsOf:)` cost about 70 instructions a piece,
/// some 2,000 a proxied call.
struct HeadWriter {
    private let base: UnsafeMutablePointer<UInt8>
    private let capacity: Int
    private(set) var count = 0

    private init(_ buffer: UnsafeMutableBufferPointer<UInt8>) {
        base = buffer.baseAddress!
        capacity = buffer.count
    }

    /// An array of the bytes `body` writes, at most `capacity` of them (more is a bug: it traps).
    static func bytes(capacity: Int, _ body: (inout HeadWriter) -> Void) -> [UInt8] {
        [UInt8](unsafeUninitializedCapacity: max(1, capacity)) { buffer, initialized in
            var writer = HeadWriter(buffer)
            body(&writer)
            initialized = writer.count
        }
    }

    /// Writes into temporary memory (on the stack when it is small enough) and hands the
    /// written bytes to `use`: a head that is sent or copied at once needs no array of its own
    /// (an allocation and a free a head).
    static func withBytes<R>(
        capacity: Int, _ body: (inout HeadWriter) -> Void, use: (UnsafeRawBufferPointer) -> R
    ) -> R {
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: max(1, capacity)) { buffer in
            var writer = HeadWriter(buffer)
            body(&writer)
            return use(UnsafeRawBufferPointer(start: buffer.baseAddress, count: writer.count))
        }
    }

    /// What `decimal` writes at most.
    static let maxDecimalLength = 20

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
        precondition(count < capacity, "message head longer than its measured bound")
        base[count] = b
        count += 1
    }

    /// A non-negative number in decimal.
    mutating func decimal(_ value: Int) {
        precondition(value >= 0)
        var digits = 1
        var rest = value / 10
        while rest > 0 { digits += 1; rest /= 10 }
        precondition(digits <= capacity - count, "message head longer than its measured bound")
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
        precondition(bytes.count <= capacity - count, "message head longer than its measured bound")
        (base + count).initialize(from: source, count: bytes.count)
        count += bytes.count
    }
}
