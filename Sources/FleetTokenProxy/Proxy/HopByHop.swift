/// Header fields that describe one connection, not the message, and so are never relayed
/// (RFC 9110 §7.6.1), plus the ones the sidecar sets itself.
///
/// Framing (`Content-Length`, `Transfer-Encoding`, `Trailer`), `Host` and `Authorization` are
/// never copied over HTTP/1.1: the sidecar writes them from its own parse of the message, so
/// no field, and no `Connection` list naming them, can remove or duplicate them (docs/CONTRACT.md §7).
enum HopByHop {
    /// True for fields dropped from a request before it goes upstream.
    static func dropFromRequest(_ name: ByteView) -> Bool {
        switch name.count {
        case 2: return name.equalsLowercased("te")
        case 4: return name.equalsLowercased("host")
        case 6: return name.equalsLowercased("expect")
        case 7: return name.equalsLowercased("upgrade") || name.equalsLowercased("trailer")
        case 10: return name.equalsLowercased("connection") || name.equalsLowercased("keep-alive")
        case 13: return name.equalsLowercased("authorization")
        case 14: return name.equalsLowercased("content-length")
        case 16: return name.equalsLowercased("proxy-connection")
        case 17: return name.equalsLowercased("transfer-encoding")
        case 19: return name.equalsLowercased("proxy-authorization")
        default: return false
        }
    }

    /// True for fields dropped from a response before it goes to the client.
    static func dropFromResponse(_ name: ByteView) -> Bool {
        switch name.count {
        case 7: return name.equalsLowercased("upgrade")
        case 10: return name.equalsLowercased("connection") || name.equalsLowercased("keep-alive")
        case 14: return name.equalsLowercased("content-length")
        case 16: return name.equalsLowercased("proxy-connection")
        case 17: return name.equalsLowercased("transfer-encoding")
        default: return false
        }
    }

    /// Fields a `Connection` list may never remove: the ones that frame the message or say
    /// where and as whom it goes. The sidecar writes them itself; a client naming them in
    /// `Connection` must not make them disappear (request smuggling, docs/CONTRACT.md §7).
    static func isProtected(_ name: ByteView) -> Bool {
        switch name.count {
        case 4: return name.equalsLowercased("host")
        case 7: return name.equalsLowercased("trailer")
        case 13: return name.equalsLowercased("authorization")
        case 14: return name.equalsLowercased("content-length")
        case 17: return name.equalsLowercased("transfer-encoding")
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
    static func dropFromH2Request(_ name: ByteView) -> Bool {
        h2RequestDropped.contains { name == $0 }
    }

    /// True for an HTTP/2 response field not relayed.
    static func dropFromH2Response(_ name: ByteView) -> Bool {
        h2ResponseDropped.contains { name == $0 }
    }

    /// Appends `Name: value\r\n` for every field that is neither dropped by `drop` nor named
    /// in a `Connection` header: the end-to-end part of an HTTP/1.1 head, request or response.
    static func appendEndToEndFields(
        of fields: HeadFields, dropping drop: (ByteView) -> Bool, to out: inout [UInt8]
    ) {
        out += HeadWriter.bytes {
            writeEndToEndFields(of: fields, dropping: drop, to: &$0)
        }
    }

    /// `appendEndToEndFields` into a head being written.
    static func writeEndToEndFields(
        of fields: HeadFields, dropping drop: (ByteView) -> Bool, to out: inout HeadWriter
    ) {
        fields.withView { view in
            let listed = connectionTokens(in: view)
            for i in 0..<view.count {
                let name = view.name(i)
                if drop(name) { continue }
                if !listed.isEmpty && listed.contains(where: { token in
                    view.slice(token).equalsIgnoringCase(name)
                }) { continue }
                out.write(name.buffer)
                out.byte(UInt8(ascii: ":"))
                out.byte(UInt8(ascii: " "))
                out.write(view.value(i).buffer)
                out.byte(ASCII.cr)
                out.byte(ASCII.lf)
            }
        }
    }

    /// The end-to-end fields of an HTTP/1.1 head (as `writeEndToEndFields` picks them) appended
    /// to an HTTP/2 field list, names lower-cased as HTTP/2 requires (RFC 9113 §8.2.1).
    static func appendEndToEndFields(
        of fields: HeadFields, dropping drop: (ByteView) -> Bool, lowerCasedTo list: inout H2HeaderList
    ) {
        let listed = connectionTokens(fields)
        fields.withView { view in
            for i in 0..<view.count {
                let name = view.name(i)
                if drop(name) { continue }
                if listed.contains(where: { view.slice($0).equalsIgnoringCase(name) }) { continue }
                list.append(lowerCasing: name, value: view.value(i))
            }
        }
    }

    /// Where the extra field names a `Connection` header lists as hop-by-hop are in
    /// `fields.storage`, without the protected ones (`isProtected`).
    static func connectionTokens(_ fields: HeadFields) -> [Range<Int>] {
        fields.withView { connectionTokens(in: $0) }
    }

    private static func connectionTokens(in view: HeadFields.View) -> [Range<Int>] {
        let bytes = view.bytes
        // The usual heads have no Connection field, or one whose value names no other field:
        // those are answered without building the list.
        var count = 0
        var only = 0..<0
        for i in 0..<view.count where view.name(i).equalsLowercased("connection") {
            count += 1
            only = view[i].value
        }
        if count == 0 { return [] }
        if count == 1 {
            let value = view.slice(only)
            if value.equalsLowercased("keep-alive") || value.equalsLowercased("close") { return [] }
        }
        var tokens: [Range<Int>] = []
        for i in 0..<view.count where view.name(i).equalsLowercased("connection") {
            let line = view[i]
            var start = line.value.lowerBound
            while start < line.value.upperBound {
                var end = start
                while end < line.value.upperBound, bytes[end] != ASCII.comma { end += 1 }
                var lower = start, upper = end
                while lower < upper, ASCII.isWhitespace(bytes[lower]) { lower += 1 }
                while upper > lower, ASCII.isWhitespace(bytes[upper - 1]) { upper -= 1 }
                if lower < upper && !isProtected(view.slice(lower..<upper)) {
                    tokens.append(lower..<upper)
                }
                start = end + 1
            }
        }
        return tokens
    }
}
