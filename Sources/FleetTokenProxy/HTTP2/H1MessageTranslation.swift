/// A REST call's messages between an HTTP/2 client and the HTTP/1.1 upstream (docs/CONTRACT.md
/// §6): the client stream's head as one HTTP/1.1 request head, and the HTTP/1.1 answer's head
/// as the HTTP/2 field list relayed. The sidecar writes the framing both ways from what it
/// knows of the body, never from a field the client sent, so a stream becomes exactly one
/// HTTP/1.1 request (docs/CONTRACT.md §7).
package enum H1MessageTranslation {
    /// How the request body is framed upstream.
    enum RequestFraming: Equatable {
        /// No body, and no framing field.
        case none
        case contentLength(Int)
        /// The length is not known when the head leaves: the body goes chunked.
        case chunked
    }

    /// Why the stream's head cannot go as one HTTP/1.1 request head, nil when it can: a method
    /// that is not a token, a `:path` that is not an origin-form target of visible ASCII, a field
    /// name that is not a token, a value with a control byte other than HTAB (CR, LF and NUL
    /// included) or bytes over 0x7F that are not UTF-8 (the rule of the sidecar's own HTTP/1.1
    /// parser), a `transfer-encoding` field (RFC 9113 §8.2.2), or `content-length` fields that
    /// are not all the same decimal.
    static func refusal(method: String, path: String, fields: H2HeaderList) -> ProxyFailure? {
        var method = method, path = path
        let methodValid = method.withUTF8 { !$0.isEmpty && $0.allSatisfy(ASCII.isTokenByte) }
        guard methodValid else { return .malformedRequest("the request method is not a token") }
        let pathValid = path.withUTF8 { $0.first == UInt8(ascii: "/") && $0.allSatisfy(ASCII.isVisible) }
        guard pathValid else { return .malformedRequest("the request :path is not an origin-form target of visible ASCII") }
        var length: Int??
        return fields.firstNonNil { name, value in
            // Upper case is malformed in HTTP/2 (RFC 9113 §8.2.1), and the translation matches
            // names (cookie, framing) in lower case.
            guard name.count > 0, name.buffer.allSatisfy({ ASCII.isTokenByte($0) && !(0x41...0x5A).contains($0) }) else {
                return .malformedRequest("a request field name is not a lower-case token")
            }
            switch H2MessageTranslation.fieldValueFault(value.buffer) {
            case .controlByte?:
                return .malformedRequest("the \(name.string) field holds a control byte")
            case .outerWhitespace?:
                // RFC 9113 §8.2.1 calls such a value malformed too.
                return .malformedRequest("the \(name.string) field has leading or trailing whitespace")
            case .notUTF8?:
                return .malformedRequest("the \(name.string) field holds bytes over 0x7F that are not UTF-8")
            case nil:
                break
            }
            if name == "transfer-encoding" {
                return .malformedRequest("transfer-encoding is not allowed in an HTTP/2 request")
            }
            guard name == "content-length" else { return nil }
            let n = H2MessageTranslation.decimal(value)
            if n == nil || (length != nil && length! != n) {
                return .malformedRequest("the request's content-length fields are not one decimal length")
            }
            length = n
            return nil
        }
    }

    /// The body length the client declared (its `content-length`, as `refusal` checked it).
    static func declaredLength(_ fields: H2HeaderList) -> Int? {
        fields.firstNonNil { name, value in name == "content-length" ? H2MessageTranslation.decimal(value) : nil }
    }

    /// How the body goes: by its length when the whole body is known (`wholeBody`: it was all
    /// pulled before the head left, 0 when there is none) or the client declared one, else
    /// chunked. A whole body whose length is not the declared one is refused.
    static func framing(wholeBody: Int?, declaredLength: Int?) -> Result<RequestFraming, ProxyFailure> {
        guard let wholeBody else { return .success(declaredLength.map { .contentLength($0) } ?? .chunked) }
        if let declaredLength, declaredLength != wholeBody {
            return .failure(.malformedRequest("the request body is not as long as its content-length"))
        }
        return .success(wholeBody > 0 || declaredLength != nil ? .contentLength(wholeBody) : .none)
    }

    /// Writes the request head as it goes upstream, for a head `refusal` accepted: the request
    /// line, the upstream's own `Host`, the end-to-end fields (hop-by-hop, framing, `Host` and
    /// `Authorization` dropped, as `HopByHop.dropFromRequest` says for HTTP/1.1 clients), the
    /// `cookie` fields joined into one (RFC 9113 §8.2.3), the sidecar's framing and the token.
    static func writeRequestHead(
        method: String, path: String, fields: H2HeaderList, host: String, token: String, framing: RequestFraming,
        quotaProject: String? = nil, to out: inout HeadWriter
    ) {
        out.write(method)
        out.byte(ASCII.sp)
        out.write(path)
        out.write(literal: " HTTP/1.1\r\nHost: ")
        out.write(host)
        out.write(literal: "\r\n")
        var cookies = 0
        fields.forEach { name, value in
            if name == "cookie" {
                // An empty crumb carries nothing, and joined last it would leave "; " at the
                // end of the line, which an HTTP/1.1 parser trims (the fuzz target's third find).
                if value.count > 0 { cookies += 1 }
                return true
            }
            guard !HopByHop.dropFromRequest(name), quotaProject == nil || !QuotaProjectField.isOne(name) else { return true }
            out.write(name.buffer)
            out.write(literal: ": ")
            out.write(value.buffer)
            out.write(literal: "\r\n")
            return true
        }
        if cookies > 0 {
            out.write(literal: "cookie: ")
            var written = 0
            fields.forEach { name, value in
                guard name == "cookie", value.count > 0 else { return true }
                if written > 0 { out.write(literal: "; ") }
                out.write(value.buffer)
                written += 1
                return true
            }
            out.write(literal: "\r\n")
        }
        if let quotaProject { QuotaProjectField.write(quotaProject, to: &out) }
        writeFramingAndAuthorization(framing, token: token, to: &out)
    }

    /// The end of every request head the sidecar sends an HTTP/1.1 upstream, whichever
    /// protocol its client spoke: the framing field of its own parse (docs/CONTRACT.md §7),
    /// the one `Authorization`, the blank line.
    static func writeFramingAndAuthorization(_ framing: RequestFraming, token: String, to out: inout HeadWriter) {
        switch framing {
        case .none:
            break
        case .contentLength(let n):
            out.write(literal: "Content-Length: ")
            out.decimal(n)
            out.write(literal: "\r\n")
        case .chunked:
            out.write(literal: "Transfer-Encoding: chunked\r\n")
        }
        out.write(literal: "Authorization: Bearer ")
        out.write(token)
        out.write(literal: "\r\n\r\n")
    }

    /// The request head for a stream's head given as byte arrays (`:method` and `:path` among
    /// them, else POST and `/v1/x`), its body's length unknown, nil when `refusal` refuses it
    /// (for the fuzz target's invariant).
    package static func requestHead(fields: [(name: [UInt8], value: [UInt8])], host: String, token: String) -> [UInt8]? {
        let pseudo = { (name: String) in fields.first { $0.name == Array(name.utf8) }.map { String(decoding: $0.value, as: UTF8.self) } }
        let method = pseudo(":method") ?? "POST", path = pseudo(":path") ?? "/v1/x"
        let list = H2HeaderList(fields.filter { $0.name.first != UInt8(ascii: ":") })
        guard refusal(method: method, path: path, fields: list) == nil,
              case .success(let framing) = framing(wholeBody: nil, declaredLength: declaredLength(list)) else { return nil }
        return HeadWriter.bytes {
            writeRequestHead(method: method, path: path, fields: list, host: host, token: token, framing: framing, to: &$0)
        }
    }

    /// The HTTP/2 head for an HTTP/1.1 answer whose body is framed as `framing`: `:status`, the
    /// end-to-end fields lower-cased (hop-by-hop and framing fields, `te`, and the ones
    /// `Connection` lists, dropped: an HTTP/2 client rejects a head with any of them, RFC 9113
    /// §8.2.2), and a `content-length` when the body's length is known.
    static func responseFields(_ head: ResponseHead, framing: BodyFraming) -> H2HeaderList {
        var list = H2HeaderList()
        list.append(name: ":status", value: String(head.status))
        HopByHop.appendEndToEndFields(of: head.fields, dropping: { HopByHop.dropFromResponse($0) || $0.equalsLowercased("te") },
                                      lowerCasedTo: &list)
        if case .contentLength(let n) = framing { list.append(name: "content-length", value: String(n)) }
        return list
    }
}
