/// A REST call's messages between an HTTP/1.1 client and the HTTP/2 upstream
/// (`--upstream-protocol h2`, docs/CONTRACT.md §6): the request's fields as an HTTP/2 field
/// list, and the answer's HTTP/2 head as the HTTP/1.1 head the sidecar relays.
package enum H2MessageTranslation {
    /// The request's end-to-end fields, names lower-cased (RFC 9113 §8.2.1), appended to `list`
    /// (the head the upstream connection submits): hop-by-hop, framing, Host and Authorization
    /// fields and the ones a `Connection` field lists are dropped (`HopByHop.dropFromRequest`);
    /// the upstream connection adds the pseudo-fields and the one `authorization`, and
    /// `bodyLength` becomes the one `content-length`. With a `quotaProject`, the client's
    /// `x-goog-user-project` gives way to it (docs/CONTRACT.md §4a).
    static func appendRequestFields(of fields: HeadFields, bodyLength: Int?, quotaProject: String? = nil, to list: inout H2HeaderList) {
        if let quotaProject {
            HopByHop.appendEndToEndFields(of: fields, dropping: { HopByHop.dropFromRequest($0) || QuotaProjectField.isOne($0) },
                                          lowerCasedTo: &list)
            list.append(name: QuotaProjectField.name, value: quotaProject)
        } else {
            HopByHop.appendEndToEndFields(of: fields, dropping: HopByHop.dropFromRequest, lowerCasedTo: &list)
        }
        if let bodyLength { list.append(name: "content-length", value: String(bodyLength)) }
    }

    /// The HTTP/1.1 response head for an HTTP/2 answer's head `fields`, nil unless it has exactly
    /// one `:status`, and a valid one (three digits, 100–999). The rule for fields: pseudo-fields, the
    /// connection-specific ones (RFC 9113 §8.2.2) and `trailer` are dropped, and so is any field
    /// whose name is not a token or whose value holds a byte HTTP/1.1 forbids (a control byte
    /// other than HTAB: no CR, LF or NUL can reach the client), starts or ends with whitespace,
    /// or has bytes over 0x7F that are not UTF-8 (the rule the sidecar's own HTTP/1.1 parser
    /// applies) — the answer itself is still relayed. The framing is the sidecar's: `Content-Length` when the upstream gave a valid
    /// `content-length`, else `Transfer-Encoding: chunked` (which the relay turns into a
    /// close-delimited body for an HTTP/1.0 client).
    static func http1Head(_ fields: H2HeaderList) -> [UInt8]? {
        // RFC 9113 §8.3.2: exactly one :status; a head with two is malformed, not relayed.
        guard let status = AnswerHead.http2(fields).facts.status else { return nil }
        let contentLength = fields.firstNonNil { name, value in name == "content-length" ? decimal(value) : nil }
        return HeadWriter.bytes { out in
            out.write(literal: "HTTP/1.1 ")
            out.decimal(status)
            out.byte(ASCII.sp)
            writeReasonAndFields(of: fields, status: status, to: &out)
            if let contentLength {
                out.write(literal: "Content-Length: ")
                out.decimal(contentLength)
                out.write(literal: "\r\n")
            } else {
                out.write(literal: "Transfer-Encoding: chunked\r\n")
            }
            out.write(literal: "\r\n")
        }
    }

    /// What follows `HTTP/1.x NNN ` in the HTTP/1.1 head written for an HTTP/2 answer's head:
    /// the reason phrase, then the fields `isRelayed` lets through, each a line; the framing is
    /// the writer's. The one writer of both `http1Head` and the HTTP/1.1 client's relay
    /// (`HTTP1ClientConnection.cork`), so the fuzz target's invariant holds for the relay.
    static func writeReasonAndFields(of fields: H2HeaderList, status: Int, to out: inout HeadWriter) {
        out.write(HTTPStatus.reasonPhrase(status))
        out.write(literal: "\r\n")
        fields.forEach { name, value in
            guard isRelayed(name: name, value: value) else { return true }
            out.write(name.buffer)
            out.write(literal: ": ")
            out.write(value.buffer)
            out.write(literal: "\r\n")
            return true
        }
    }

    /// `http1Head` over a field list given as byte arrays (for the fuzz target's invariant).
    package static func http1Head(fields: [(name: [UInt8], value: [UInt8])]) -> [UInt8]? {
        http1Head(H2HeaderList(fields))
    }

    /// Whether a field of the answer's head is copied into the HTTP/1.1 head (see `http1Head`).
    static func isRelayed(name: ByteView, value: ByteView) -> Bool {
        guard name.count > 0, name.buffer[0] != UInt8(ascii: ":") else { return false }
        if HopByHop.dropFromResponse(name) || name == "trailer" { return false }
        guard name.buffer.allSatisfy(ASCII.isTokenByte) else { return false }
        return fieldValueFault(value.buffer) == nil
    }

    /// Why a field value cannot go into an HTTP/1.1 head as it is, in either direction.
    enum FieldValueFault {
        /// A control byte other than HTAB: CR, LF and NUL above all.
        case controlByte
        /// Leading or trailing whitespace, which an HTTP/1.1 parser trims: the value read
        /// would not be the value given.
        case outerWhitespace
        /// Bytes over 0x7F that are not UTF-8 (the rule of the sidecar's own HTTP/1.1 parser).
        case notUTF8
    }

    /// The first rule `bytes` breaks as an HTTP/1.1 field value, nil when it breaks none: the
    /// one check behind the answer fields relayed to an HTTP/1.1 client (`isRelayed`) and the
    /// request fields an HTTP/2 client sends to an HTTP/1.1 upstream
    /// (`H1MessageTranslation.refusal`).
    static func fieldValueFault(_ bytes: UnsafeBufferPointer<UInt8>) -> FieldValueFault? {
        guard bytes.allSatisfy(ASCII.isFieldValueByte) else { return .controlByte }
        if let first = bytes.first, let last = bytes.last, ASCII.isWhitespace(first) || ASCII.isWhitespace(last) {
            return .outerWhitespace
        }
        guard bytes.allSatisfy({ $0 < 0x80 }) || isUTF8(bytes) else { return .notUTF8 }
        return nil
    }

    static func isUTF8(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        var decoder = UTF8()
        var input = bytes.makeIterator()
        while true {
            switch decoder.decode(&input) {
            case .scalarValue: continue
            case .emptyInput: return true
            case .error: return false
            }
        }
    }

    /// A decimal of at most 15 digits (a length no body reaches), nil otherwise.
    static func decimal(_ value: ByteView) -> Int? {
        guard value.count > 0, value.count <= 15 else { return nil }
        var n = 0
        for b in value.buffer {
            guard b >= ASCII.zero && b <= ASCII.nine else { return nil }
            n = n * 10 + Int(b - ASCII.zero)
        }
        return n
    }
}
