/// Header fields in arrival order; names compare case-insensitively (RFC 9110 §5.1).
package struct HTTPHeaders: Sendable, Sequence, ExpressibleByDictionaryLiteral {
    package private(set) var fields: [(name: String, value: String)] = []

    package init() {}
    package init(_ fields: [(name: String, value: String)]) { self.fields = fields }
    package init(dictionaryLiteral elements: (String, String)...) {
        fields = elements.map { (name: $0.0, value: $0.1) }
    }

    /// The first value of `name`, if any.
    package subscript(name: String) -> String? {
        for field in fields where field.name.asciiCaseInsensitiveEquals(name) { return field.value }
        return nil
    }

    package func values(_ name: String) -> [String] {
        fields.filter { $0.name.asciiCaseInsensitiveEquals(name) }.map(\.value)
    }

    package mutating func add(_ name: String, _ value: String) { fields.append((name: name, value: value)) }

    mutating func remove(_ name: String) { fields.removeAll { $0.name.asciiCaseInsensitiveEquals(name) } }

    package func makeIterator() -> IndexingIterator<[(name: String, value: String)]> { fields.makeIterator() }
}

/// A whole HTTP request, as a buffered server hands it to a handler.
package struct HTTPRequest: Sendable {
    package var method: String
    /// The request target as sent (origin form: path plus optional query).
    package var target: String
    package var headers: HTTPHeaders
    package var body: [UInt8]
    /// Over TLS, the certificate the client presented (DER), for a stand-in that asks for one.
    package var clientCertificate: [UInt8]?

    package init(method: String, target: String, headers: HTTPHeaders = HTTPHeaders(), body: [UInt8] = []) {
        self.method = method
        self.target = target
        self.headers = headers
        self.body = body
    }

    /// The path part of the target, before the first `?` byte (by byte, as the router splits:
    /// by `Character`, a combining mark after the `?` would hide it).
    package var path: Substring {
        guard let question = target.utf8.firstIndex(of: UInt8(ascii: "?")) else { return target[...] }
        return Substring(target.unicodeScalars[..<question])
    }
}

/// A whole HTTP response. `Content-Length` is added by whoever serializes it.
package struct HTTPResponse: Sendable {
    package var status: Int
    package var headers: HTTPHeaders
    package var body: [UInt8]

    package init(status: Int, headers: HTTPHeaders = HTTPHeaders(), body: [UInt8] = []) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// A JSON response from already-serialized JSON text.
    package static func json(_ status: Int, _ json: String) -> HTTPResponse {
        HTTPResponse(status: status, headers: ["Content-Type": "application/json"], body: Array(json.utf8))
    }
}

/// A buffered request handler: call `respond` exactly once, now or later on the same loop.
package typealias HTTPHandler = (_ request: HTTPRequest, _ respond: @escaping (HTTPResponse) -> Void) -> Void

extension StringProtocol {
    /// ASCII case-insensitive comparison, enough for header names and tokens.
    package func asciiCaseInsensitiveEquals<T: StringProtocol>(_ other: T) -> Bool {
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
