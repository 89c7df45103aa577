/// Header fields that describe one connection, not the message, and so are never relayed
/// (RFC 9110 §7.6.1), plus the ones the sidecar sets itself.
///
/// Framing (`Content-Length`, `Transfer-Encoding`, `Trailer`), `Host` and `Authorization` are
/// never copied over HTTP/1.1: the sidecar writes them from its own parse of the message, so
/// no field, and no `Connection` list naming them, can remove or duplicate them (SPEC §7).
enum HopByHop {
    /// True for fields dropped from a request before it goes upstream.
    static func dropFromRequest(_ name: String) -> Bool {
        switch name.utf8.count {
        case 2: return name.asciiCaseInsensitiveEquals("te")
        case 4: return name.asciiCaseInsensitiveEquals("host")
        case 6: return name.asciiCaseInsensitiveEquals("expect")
        case 7: return name.asciiCaseInsensitiveEquals("upgrade") || name.asciiCaseInsensitiveEquals("trailer")
        case 10: return name.asciiCaseInsensitiveEquals("connection") || name.asciiCaseInsensitiveEquals("keep-alive")
        case 13: return name.asciiCaseInsensitiveEquals("authorization")
        case 14: return name.asciiCaseInsensitiveEquals("content-length")
        case 16: return name.asciiCaseInsensitiveEquals("proxy-connection")
        case 17: return name.asciiCaseInsensitiveEquals("transfer-encoding")
        case 19: return name.asciiCaseInsensitiveEquals("proxy-authorization")
        default: return false
        }
    }

    /// True for fields dropped from a response before it goes to the client.
    static func dropFromResponse(_ name: String) -> Bool {
        switch name.utf8.count {
        case 7: return name.asciiCaseInsensitiveEquals("upgrade")
        case 10: return name.asciiCaseInsensitiveEquals("connection") || name.asciiCaseInsensitiveEquals("keep-alive")
        case 14: return name.asciiCaseInsensitiveEquals("content-length")
        case 16: return name.asciiCaseInsensitiveEquals("proxy-connection")
        case 17: return name.asciiCaseInsensitiveEquals("transfer-encoding")
        default: return false
        }
    }

    /// Fields a `Connection` list may never remove: the ones that frame the message or say
    /// where and as whom it goes. The sidecar writes them itself; a client naming them in
    /// `Connection` must not make them disappear (request smuggling, SPEC §7).
    static func isProtected(_ name: Substring) -> Bool {
        switch name.utf8.count {
        case 4: return name.asciiCaseInsensitiveEquals("host")
        case 7: return name.asciiCaseInsensitiveEquals("trailer")
        case 13: return name.asciiCaseInsensitiveEquals("authorization")
        case 14: return name.asciiCaseInsensitiveEquals("content-length")
        case 17: return name.asciiCaseInsensitiveEquals("transfer-encoding")
        default: return false
        }
    }

    /// HTTP/2 request fields not forwarded: connection-specific ones (RFC 9113 §8.2.2;
    /// `te: trailers` is kept, gRPC needs it) and the ones the sidecar sets itself.
    static let h2RequestDropped: [StaticString] = [
        "connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade", "host",
        "authorization", "proxy-authorization",
    ]

    /// HTTP/2 response fields not relayed (connection-specific).
    static let h2ResponseDropped: [StaticString] = [
        "connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade",
    ]

    /// True for an HTTP/2 request field not forwarded. Compared as the bytes nghttp2 hands
    /// over (HTTP/2 names are lower-case; nghttp2 refuses others), no `String` per field.
    static func dropFromH2Request(_ name: UnsafeRawBufferPointer) -> Bool {
        h2RequestDropped.contains { H2HeaderList.equal(name, $0) }
    }

    /// True for an HTTP/2 response field not relayed.
    static func dropFromH2Response(_ name: UnsafeRawBufferPointer) -> Bool {
        h2ResponseDropped.contains { H2HeaderList.equal(name, $0) }
    }

    /// Appends `Name: value\r\n` for every field that is neither dropped by `drop` nor named
    /// in a `Connection` header: the end-to-end part of an HTTP/1.1 head, request or response.
    static func appendEndToEndFields(of headers: HTTPHeaders, dropping drop: (String) -> Bool, to out: inout [UInt8]) {
        out += HeadWriter.bytes(capacity: fieldLinesBound(headers)) {
            writeEndToEndFields(of: headers, dropping: drop, to: &$0)
        }
    }

    /// `appendEndToEndFields` into a head being written.
    static func writeEndToEndFields(of headers: HTTPHeaders, dropping drop: (String) -> Bool, to out: inout HeadWriter) {
        let listed = connectionTokens(headers)
        for field in headers.fields where !drop(field.name) {
            if !listed.isEmpty && listed.contains(where: { $0.asciiCaseInsensitiveEquals(field.name) }) { continue }
            out.write(field.name)
            out.write(": ")
            out.write(field.value)
            out.write("\r\n")
        }
    }

    /// The bytes every field of `headers` takes as `Name: value\r\n`: a bound on what
    /// `writeEndToEndFields` writes.
    static func fieldLinesBound(_ headers: HTTPHeaders) -> Int {
        var total = 0
        for field in headers.fields { total += field.name.utf8.count + field.value.utf8.count + 4 }
        return total
    }

    /// The extra field names a `Connection` header lists as hop-by-hop, without the protected
    /// ones (`isProtected`).
    static func connectionTokens(_ headers: HTTPHeaders) -> [Substring] {
        // The usual heads have no Connection field, or one whose value names no other field:
        // those are answered without building the list of values.
        var count = 0
        var only = ""
        for field in headers.fields where field.name.asciiCaseInsensitiveEquals("connection") {
            count += 1
            only = field.value
        }
        if count == 0 { return [] }
        if count == 1, only.asciiCaseInsensitiveEquals("keep-alive") || only.asciiCaseInsensitiveEquals("close") {
            return []
        }
        var tokens: [Substring] = []
        for value in headers.values("connection") {
            for part in value.split(separator: ",") {
                let t = part.trimmingSpaces
                if !t.isEmpty && !isProtected(t) { tokens.append(t) }
            }
        }
        return tokens
    }
}

extension Substring {
    var trimmingSpaces: Substring {
        var s = self
        while let f = s.first, f == " " || f == "\t" { s.removeFirst() }
        while let l = s.last, l == " " || l == "\t" { s.removeLast() }
        return s
    }
}
