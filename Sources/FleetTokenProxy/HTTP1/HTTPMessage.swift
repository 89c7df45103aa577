/// Header fields in arrival order; names compare case-insensitively (RFC 9110 §5.1).
public struct HTTPHeaders: Sendable, Sequence, ExpressibleByDictionaryLiteral {
    public private(set) var fields: [(name: String, value: String)] = []

    public init() {}
    public init(_ fields: [(name: String, value: String)]) { self.fields = fields }
    public init(dictionaryLiteral elements: (String, String)...) {
        fields = elements.map { (name: $0.0, value: $0.1) }
    }

    /// The first value of `name`, if any.
    public subscript(name: String) -> String? {
        for field in fields where field.name.asciiCaseInsensitiveEquals(name) { return field.value }
        return nil
    }

    public func values(_ name: String) -> [String] {
        fields.filter { $0.name.asciiCaseInsensitiveEquals(name) }.map(\.value)
    }

    public mutating func add(_ name: String, _ value: String) { fields.append((name: name, value: value)) }

    public mutating func remove(_ name: String) { fields.removeAll { $0.name.asciiCaseInsensitiveEquals(name) } }

    public mutating func replace(_ name: String, _ value: String) {
        remove(name)
        add(name, value)
    }

    public func makeIterator() -> IndexingIterator<[(name: String, value: String)]> { fields.makeIterator() }
}

/// A whole HTTP request, as a buffered server hands it to a handler.
public struct HTTPRequest: Sendable {
    public var method: String
    /// The request target as sent (origin form: path plus optional query).
    public var target: String
    public var headers: HTTPHeaders
    public var body: [UInt8]

    public init(method: String, target: String, headers: HTTPHeaders = HTTPHeaders(), body: [UInt8] = []) {
        self.method = method
        self.target = target
        self.headers = headers
        self.body = body
    }

    /// The path part of the target, before the first `?` byte (by byte, as the router splits:
    /// by `Character`, a combining mark after the `?` would hide it).
    public var path: Substring {
        guard let question = target.utf8.firstIndex(of: UInt8(ascii: "?")) else { return target[...] }
        return Substring(target.unicodeScalars[..<question])
    }
}

/// A whole HTTP response. `Content-Length` is added by whoever serializes it.
public struct HTTPResponse: Sendable {
    public var status: Int
    public var headers: HTTPHeaders
    public var body: [UInt8]

    public init(status: Int, headers: HTTPHeaders = HTTPHeaders(), body: [UInt8] = []) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// A JSON response from already-serialized JSON text.
    public static func json(_ status: Int, _ json: String) -> HTTPResponse {
        HTTPResponse(status: status, headers: ["Content-Type": "application/json"], body: Array(json.utf8))
    }
}

/// A buffered request handler: call `respond` exactly once, now or later on the same loop.
public typealias HTTPHandler = (_ request: HTTPRequest, _ respond: @escaping (HTTPResponse) -> Void) -> Void

extension StringProtocol {
    /// ASCII case-insensitive comparison, enough for header names and tokens.
    public func asciiCaseInsensitiveEquals<T: StringProtocol>(_ other: T) -> Bool {
        let a = utf8, b = other.utf8
        guard a.count == b.count else { return false }
        // Native strings and their substrings are contiguous: compare through pointers instead
        // of stepping two string indices (this runs for every header field several times a call).
        if let equal = a.withContiguousStorageIfAvailable({ x in
            b.withContiguousStorageIfAvailable { y in asciiFoldedEqual(x, y) }
        }), let equal {
            return equal
        }
        var i = a.startIndex, j = b.startIndex
        while i != a.endIndex {
            let x = a[i], y = b[j]
            if x != y {
                let lx = (x >= 65 && x <= 90) ? x | 0x20 : x
                let ly = (y >= 65 && y <= 90) ? y | 0x20 : y
                if lx != ly { return false }
            }
            a.formIndex(after: &i)
            b.formIndex(after: &j)
        }
        return true
    }
}

/// Byte-wise equality of two equally long buffers, ASCII letters compared without case: header
/// names as Strings (`asciiCaseInsensitiveEquals`) and as bytes (`RESTRoute.headerRefusal`).
@inline(__always)
func asciiFoldedEqual(_ a: UnsafeBufferPointer<UInt8>, _ b: UnsafeBufferPointer<UInt8>) -> Bool {
    for k in 0..<a.count {
        let x = a[k], y = b[k]
        if x != y {
            let lx = (x >= 65 && x <= 90) ? x | 0x20 : x
            let ly = (y >= 65 && y <= 90) ? y | 0x20 : y
            if lx != ly { return false }
        }
    }
    return true
}

/// ASCII case-insensitive equality of bytes (a field name or value) with a lower-case literal.
@inline(__always)
func asciiEqualsLowercased(_ bytes: UnsafeBufferPointer<UInt8>, _ lower: StaticString) -> Bool {
    bytes.count == lower.utf8CodeUnitCount
        && asciiFoldedEqual(bytes, UnsafeBufferPointer(start: lower.utf8Start, count: lower.utf8CodeUnitCount))
}

/// Byte-for-byte (case-sensitive) equality of bytes with a literal, by pointer: the generic
/// `elementsEqual` over a slice cost about 170 instructions.
@inline(__always)
func bytesEqual(_ bytes: UnsafeBufferPointer<UInt8>, _ literal: StaticString) -> Bool {
    guard bytes.count == literal.utf8CodeUnitCount else { return false }
    let lit = literal.utf8Start
    for k in 0..<bytes.count where bytes[k] != lit[k] { return false }
    return true
}
