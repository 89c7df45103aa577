/// The field lines of an HTTP/1.x head as byte ranges into one copy of the head's bytes.
///
/// The proxy path reads a head's fields only to check names (method overrides, credentials,
/// hop-by-hop) and to copy them into the head it writes: keeping them as bytes costs one copy
/// and two allocations a head, where a `String` per name and value cost about 8,500
/// instructions a proxied call (building and freeing them). `headers` still gives the fields
/// as `HTTPHeaders` for code off that path (the buffered servers, tests, invariants).
public struct HeadFields: Sendable {
    /// One field line: where its name and its value (without outer whitespace) are in `storage`.
    struct Line: Sendable {
        var name: Range<Int>
        var value: Range<Int>
    }

    /// The bytes the ranges point into: a copy of the parsed head, or the field lines
    /// `init(_:)` wrote from `HTTPHeaders`.
    let storage: [UInt8]
    /// The field lines in arrival order.
    let lines: [Line]

    init(storage: [UInt8], lines: [Line]) {
        self.storage = storage
        self.lines = lines
    }

    public init() {
        storage = []
        lines = []
    }

    /// The fields of `headers`, written out as `name: value\r\n` lines.
    public init(_ headers: HTTPHeaders) {
        var bytes: [UInt8] = []
        var lines: [Line] = []
        for field in headers.fields {
            let nameStart = bytes.count
            bytes += field.name.utf8
            let valueStart = bytes.count + 2
            bytes += ": ".utf8
            bytes += field.value.utf8
            lines.append(Line(name: nameStart..<valueStart - 2, value: valueStart..<bytes.count))
            bytes += "\r\n".utf8
        }
        storage = bytes
        self.lines = lines
    }

    public var count: Int { lines.count }

    /// The fields as strings. Builds a `String` per name and value: not for the proxy path.
    public var headers: HTTPHeaders {
        withBytes { bytes in
            HTTPHeaders(lines.map { line in
                (name: String(decoding: UnsafeBufferPointer(rebasing: bytes[line.name]), as: UTF8.self),
                 value: String(decoding: UnsafeBufferPointer(rebasing: bytes[line.value]), as: UTF8.self))
            })
        }
    }

    /// A bound on the bytes the fields take written as `name: value\r\n`: each line of
    /// `storage` already holds its name, a colon, its value and a CRLF, so at most one more.
    var writtenBound: Int { storage.count + lines.count }

    /// Runs `body` with the bytes the ranges point into.
    @inline(__always)
    func withBytes<R>(_ body: (UnsafeBufferPointer<UInt8>) throws -> R) rethrows -> R {
        try storage.withUnsafeBufferPointer(body)
    }

    /// Calls `body` with each field's name and value, in arrival order, until it returns false.
    @inline(__always)
    func forEach(_ body: (_ name: UnsafeBufferPointer<UInt8>, _ value: UnsafeBufferPointer<UInt8>) -> Bool) {
        withBytes { bytes in
            for line in lines {
                guard body(UnsafeBufferPointer(rebasing: bytes[line.name]),
                           UnsafeBufferPointer(rebasing: bytes[line.value])) else { return }
            }
        }
    }
}

/// ASCII case-insensitive equality of a field name or value with a lower-case literal.
@inline(__always)
func asciiEqualsLowercased(_ bytes: UnsafeBufferPointer<UInt8>, _ lower: StaticString) -> Bool {
    bytes.count == lower.utf8CodeUnitCount
        && asciiFoldedEqual(bytes, UnsafeBufferPointer(start: lower.utf8Start, count: lower.utf8CodeUnitCount))
}
