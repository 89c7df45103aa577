/// The field lines of an HTTP/1.x head as byte ranges into one copy of the head's bytes.
///
/// The proxy path reads a head's fields only to check names (method overrides, credentials,
/// hop-by-hop) and to copy them into the head it writes: keeping them as bytes costs one copy
/// and one allocation a head, where a `String` per name and value cost about 8,500
/// instructions a proxied call (building and freeing them). `headers` still gives the fields
/// as `HTTPHeaders` for code off that path (the buffered servers, tests, invariants).
///
/// Invariant: `storage` is never mutated after the initializer; the pointers `withView` and
/// `forEach` hand out point into it and live only for their closure.
package struct HeadFields: Sendable {
    /// One field line: where its name and its value (without outer whitespace) are.
    struct Line: Sendable {
        var name: Range<Int>
        var value: Range<Int>
    }

    /// The head's bytes (the first `linesStart`), then each field line as four `UInt32`
    /// offsets into them (name start and end, value start and end): bytes and lines in one
    /// allocation.
    let storage: [UInt8]
    private let linesStart: Int
    /// The number of field lines.
    package let count: Int

    /// Copies `bytes` and `lines` (ranges into `bytes`).
    init(bytes: UnsafeBufferPointer<UInt8>, lines: UnsafeBufferPointer<Line>) {
        let start = bytes.count
        linesStart = start
        count = lines.count
        // Laid out in temporary memory (on the stack when small), then copied into the array in
        // one go: an initializer that lets a closure fill the array takes an unspecialized path
        // with a runtime metadata lookup (about 330 instructions); copying a buffer does not.
        let total = start + lines.count * 16
        storage = withUnsafeTemporaryAllocation(of: UInt8.self, capacity: max(1, total)) { buffer in
            let base = UnsafeMutableRawPointer(buffer.baseAddress!)
            if let source = bytes.baseAddress, start > 0 { base.copyMemory(from: source, byteCount: start) }
            var offset = start
            func store(_ bound: Int) {
                base.storeBytes(of: UInt32(truncatingIfNeeded: bound), toByteOffset: offset, as: UInt32.self)
                offset += 4
            }
            for line in lines {
                store(line.name.lowerBound)
                store(line.name.upperBound)
                store(line.value.lowerBound)
                store(line.value.upperBound)
            }
            return [UInt8](UnsafeBufferPointer(rebasing: buffer[..<total]))
        }
    }

    package init() {
        storage = []
        linesStart = 0
        count = 0
    }

    /// The fields of `headers`, written out as `name: value\r\n` lines.
    package init(_ headers: HTTPHeaders) {
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
        self = bytes.withUnsafeBufferPointer { b in lines.withUnsafeBufferPointer { HeadFields(bytes: b, lines: $0) } }
    }

    /// The fields as strings. Builds a `String` per name and value: not for the proxy path.
    package var headers: HTTPHeaders {
        withView { view in
            HTTPHeaders((0..<view.count).map { i in
                (name: view.name(i).string, value: view.value(i).string)
            })
        }
    }

    /// The head's bytes and its lines, for the length of `withView`.
    ///
    /// Invariant: `bytes` and `lines` point into `storage`, which `withView` keeps alive and
    /// unchanged while the view exists; every offset stored in the lines is within `bytes`
    /// (the initializer takes them from ranges into the bytes it copies).
    struct View {
        /// The head's bytes: every range points into them.
        let bytes: ByteView
        let count: Int
        private let lines: UnsafeRawPointer

        fileprivate init(bytes: ByteView, count: Int, lines: UnsafeRawPointer) {
            self.bytes = bytes
            self.count = count
            self.lines = lines
        }

        @inline(__always)
        private func offset(_ i: Int, _ k: Int) -> Int {
            Int(lines.loadUnaligned(fromByteOffset: i * 16 + k * 4, as: UInt32.self))
        }

        @inline(__always)
        subscript(i: Int) -> Line {
            Line(name: offset(i, 0)..<offset(i, 1), value: offset(i, 2)..<offset(i, 3))
        }

        @inline(__always)
        func slice(_ range: Range<Int>) -> ByteView { bytes.slice(range) }

        /// The bytes from offset `lower` to `upper`, which the invariant keeps within `bytes`.
        @inline(__always)
        private func field(_ lower: Int, _ upper: Int) -> ByteView {
            ByteView(start: bytes.base.unsafelyUnwrapped + lower, count: upper - lower)
        }

        @inline(__always)
        func name(_ i: Int) -> ByteView { field(offset(i, 0), offset(i, 1)) }

        @inline(__always)
        func value(_ i: Int) -> ByteView { field(offset(i, 2), offset(i, 3)) }
    }

    @inline(__always)
    func withView<R>(_ body: (View) throws -> R) rethrows -> R {
        try storage.withUnsafeBufferPointer { all in
            guard let base = all.baseAddress else {
                return try body(View(bytes: ByteView(start: nil, count: 0), count: 0,
                                     lines: UnsafeRawPointer(bitPattern: 1)!))
            }
            return try body(View(bytes: ByteView(start: base, count: linesStart), count: count,
                                 lines: UnsafeRawPointer(base + linesStart)))
        }
    }
}

extension HeadFields: HeaderFieldBytes {
    /// Calls `body` with each field's name and value, in arrival order, until it returns false.
    @inline(__always)
    func forEach(_ body: (_ name: ByteView, _ value: ByteView) -> Bool) {
        withView { view in
            for i in 0..<view.count {
                guard body(view.name(i), view.value(i)) else { return }
            }
        }
    }
}
