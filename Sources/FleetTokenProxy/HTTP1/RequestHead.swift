/// The head of an HTTP/1.x request, as `HTTP1Parser.parseRequest` accepted it (RFC 9112 §3).
package struct RequestHead: Sendable {
    /// Where the target is: as the parser found it in the head's bytes (`fields.storage`), or a
    /// `String` it was set to.
    private enum Target: Sendable {
        case bytes(Range<Int>)
        case text(String)
    }

    /// The method token as sent; methods are case-sensitive.
    package var method: String
    private var targetSource: Target
    /// The target in origin form (absolute path and optional `?query`), exactly as sent.
    /// Kept as bytes of the head: the proxy path reads them (`withTarget`) and builds no
    /// `String` (an allocation a call for any target over 15 bytes).
    package var target: String {
        get {
            switch targetSource {
            case .text(let text): return text
            case .bytes(let range): return fields.withView { $0.slice(range).string }
            }
        }
        set { targetSource = .text(newValue) }
    }
    /// 0 for HTTP/1.0, 1 for HTTP/1.1.
    package var minorVersion: Int
    /// Every field line in arrival order, values without leading or trailing whitespace, as
    /// bytes: what the proxy path reads.
    package var fields: HeadFields {
        willSet {
            // The target's bytes live in the old storage: keep it as text.
            if case .bytes = targetSource { targetSource = .text(target) }
        }
    }
    /// `fields` as strings, for code off the proxy path.
    package var headers: HTTPHeaders {
        get { fields.headers }
        set { fields = HeadFields(newValue) }
    }
    /// How the body is delimited: `.none`, `.contentLength` or `.chunked`, never `.untilClose`.
    package var framing: BodyFraming
    /// Whether the client lets the connection carry another request: HTTP/1.1 unless
    /// `Connection: close`, HTTP/1.0 only with `Connection: keep-alive`.
    package var keepAlive: Bool
    /// The client sent `Expect: 100-continue` in an HTTP/1.1 request and may wait for a
    /// `100 Continue` before the body (RFC 9110 §10.1.1; ignored for HTTP/1.0).
    package var expectsContinue: Bool

    package init(
        method: String, target: String, minorVersion: Int = 1, headers: HTTPHeaders = HTTPHeaders(),
        framing: BodyFraming = .none, keepAlive: Bool = true, expectsContinue: Bool = false
    ) {
        self.method = method
        targetSource = .text(target)
        self.minorVersion = minorVersion
        fields = HeadFields(headers)
        self.framing = framing
        self.keepAlive = keepAlive
        self.expectsContinue = expectsContinue
    }

    /// A head whose target is the bytes at `target` in `fields.storage`.
    init(
        method: String, target: Range<Int>, minorVersion: Int, fields: HeadFields,
        framing: BodyFraming, keepAlive: Bool, expectsContinue: Bool
    ) {
        self.method = method
        targetSource = .bytes(target)
        self.minorVersion = minorVersion
        self.fields = fields
        self.framing = framing
        self.keepAlive = keepAlive
        self.expectsContinue = expectsContinue
    }

    /// Runs `body` with the target's UTF-8 bytes.
    func withTarget<R>(_ body: (UnsafeBufferPointer<UInt8>) -> R) -> R {
        switch targetSource {
        case .bytes(let range):
            return fields.withView { body($0.slice(range).buffer) }
        case .text(let text):
            var text = text
            return text.withUTF8(body)
        }
    }
}
