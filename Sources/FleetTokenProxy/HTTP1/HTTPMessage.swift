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
            b.withContiguousStorageIfAvailable { y in ByteView(x).equalsIgnoringCase(ByteView(y)) }
        }), let equal {
            return equal
        }
        // Anything else (a bridged string) is copied once into native strings.
        return String(self).withByteView { x in String(other).withByteView { y in x.equalsIgnoringCase(y) } }
    }
}
