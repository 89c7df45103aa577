/// The head of an HTTP/1.x response, as `HTTP1Parser.parseResponse` accepted it (RFC 9112 §4).
package struct ResponseHead: Sendable {
    /// 0 for HTTP/1.0, 1 for HTTP/1.1.
    package var minorVersion: Int
    /// The three-digit status code, 100...999.
    package var status: Int
    /// The reason phrase, possibly empty; it carries no meaning (RFC 9112 §4).
    package var reason: String
    /// Every field line in arrival order, values without leading or trailing whitespace, as
    /// bytes: what the proxy path reads.
    package var fields: HeadFields
    /// `fields` as strings, for code off the proxy path.
    package var headers: HTTPHeaders {
        get { fields.headers }
        set { fields = HeadFields(newValue) }
    }
    /// Whether the connection may carry another request after this response: HTTP/1.1 unless
    /// `Connection: close`, HTTP/1.0 only with `Connection: keep-alive`; and never when both
    /// Transfer-Encoding and Content-Length were sent, or when a status that has a body came
    /// without a length (that body can only end at close; for a HEAD request this is
    /// conservative).
    package var keepAlive: Bool
    /// The framing the header fields declare, before the request method and status are taken
    /// into account: `.chunked`, `.contentLength` or `.untilClose`. Worked out once by the
    /// parser from the fields as received; later edits to `headers` do not change it.
    let declaredFraming: BodyFraming

    init(minorVersion: Int, status: Int, reason: String, fields: HeadFields, keepAlive: Bool,
         declaredFraming: BodyFraming) {
        self.minorVersion = minorVersion
        self.status = status
        self.reason = reason
        self.fields = fields
        self.keepAlive = keepAlive
        self.declaredFraming = declaredFraming
    }

    /// Body framing given the request method (RFC 9112 §6.3): a response to HEAD and a 1xx,
    /// 204 or 304 response have no body; otherwise chunked when Transfer-Encoding ends in
    /// chunked, the Content-Length when there is one, else `.untilClose` (and then
    /// `keepAlive` is false).
    package func framing(requestMethod: String) -> BodyFraming {
        if status < 200 || status == 204 || status == 304 || requestMethod == "HEAD" { return .none }
        return declaredFraming
    }
}
