/// The head of an HTTP/1.x request, as `HTTP1Parser.parseRequest` accepted it (RFC 9112 §3).
public struct RequestHead: Sendable {
    /// The method token as sent; methods are case-sensitive.
    public var method: String
    /// The target in origin form (absolute path and optional `?query`), exactly as sent.
    public var target: String
    /// 0 for HTTP/1.0, 1 for HTTP/1.1.
    public var minorVersion: Int
    /// Every field line in arrival order, values without leading or trailing whitespace.
    public var headers: HTTPHeaders
    /// How the body is delimited: `.none`, `.contentLength` or `.chunked`, never `.untilClose`.
    public var framing: BodyFraming
    /// Whether the client lets the connection carry another request: HTTP/1.1 unless
    /// `Connection: close`, HTTP/1.0 only with `Connection: keep-alive`.
    public var keepAlive: Bool
    /// The client sent `Expect: 100-continue` in an HTTP/1.1 request and may wait for a
    /// `100 Continue` before the body (RFC 9110 §10.1.1; ignored for HTTP/1.0).
    public var expectsContinue: Bool

    public init(
        method: String, target: String, minorVersion: Int = 1, headers: HTTPHeaders = HTTPHeaders(),
        framing: BodyFraming = .none, keepAlive: Bool = true, expectsContinue: Bool = false
    ) {
        self.method = method
        self.target = target
        self.minorVersion = minorVersion
        self.headers = headers
        self.framing = framing
        self.keepAlive = keepAlive
        self.expectsContinue = expectsContinue
    }
}
