/// The client half of a call, as the upstream half paired with it sees it: where the request
/// comes from and where the answer goes. Protocol-neutral (see `UpstreamExchange`): each client
/// half writes its own request for either upstream protocol (`appendRequestFields`,
/// `writeRequestHead`), the answer's header blocks arrive as `AnswerHead`, bodies cross as
/// `ByteView`s lent for the call that hands them over, and no raw pointer crosses.
///
/// The upstream half reports facts only (a header block arrived, the exchange closed and
/// how); what they mean for the call (an interim head, trailers, a resend, a retry with a fresh
/// token) is the client half's call machine's decision.
protocol UpstreamExchangeDelegate: AnyObject {
    var requestMethod: String { get }
    var requestPath: String { get }
    /// Appends the request's regular fields, as an HTTP/2 upstream sends them (names
    /// lower-case; hop-by-hop, framing, `Host` and `Authorization` fields dropped, a known body
    /// length as `content-length`), to `list`, the head being submitted.
    func appendRequestFields(to list: inout H2HeaderList)
    /// Why the request cannot go as one HTTP/1.1 request, nil when it can (an HTTP/2 client's
    /// head is checked field by field; an HTTP/1.1 client's was parsed strictly already).
    var http1Refusal: ProxyFailure? { get }
    /// The body length the client declared, as an HTTP/1.1 upstream frames it by.
    var requestDeclaredLength: Int? { get }
    /// Writes the request head as an HTTP/1.1 upstream gets it: the request line, `host`, the
    /// end-to-end fields, `framing` and the token.
    func writeRequestHead(host: String, framing: H1MessageTranslation.RequestFraming, to out: inout HeadWriter)
    /// The bearer token to attach.
    var requestToken: String { get }
    /// Request body bytes follow the head (they may not have arrived yet).
    var requestHasBody: Bool { get }

    /// Hands up to `max` request body bytes to `take`, in order and in as many pieces as they
    /// are held in, and counts them as sent; `.bytes` says how many in all.
    func pullRequestBody(upTo max: Int, _ take: (ByteView) -> Void) -> RequestBodyPull

    /// A header block of the answer: its head, an interim head, or its trailers.
    /// Lent for the call only: copy what is kept.
    func upstreamHeaderBlock(_ head: AnswerHead, endStream: Bool)
    /// Response body bytes, lent for the call only: copy what is kept.
    func upstreamData(_ bytes: ByteView)
    /// The answer's body ended (no trailers).
    func upstreamDataEnded()
    /// The exchange is over; nothing more is reported.
    func upstreamClosed(_ end: UpstreamEnd)
}

/// What a pull of request body bytes found.
enum RequestBodyPull {
    /// `count` bytes were copied; `end`: they are the request's last.
    case bytes(Int, end: Bool)
    /// None yet; `UpstreamExchange.resumeRequestBody()` is called when there are.
    case wait
}

/// How an upstream exchange ended: the facts `ReplayPolicy` judges a resend by.
enum UpstreamEnd {
    /// The upstream answered in full and closed cleanly.
    case completed
    /// The upstream cannot have acted on the request: it refused the stream (HTTP/2
    /// REFUSED_STREAM, also for a stream above a GOAWAY's last stream id), or the exchange
    /// was never sent (it waited for a connection that broke).
    case unprocessed(ProxyFailure)
    /// The connection went after the request, or part of it, left: the upstream may have
    /// acted on it (an HTTP/1.1 connection the origin closed before answering, the keep-alive
    /// race; an HTTP/2 connection lost with the stream open).
    case connectionLost(ProxyFailure)
    /// The connection came up without HTTP/2 (ALPN) and REST goes over HTTP/1.1 from now on
    /// (`RESTUpstreamRoute`): nothing of the exchange was sent. A REST call goes again by
    /// HTTP/1.1; any other fails as on `connectionLost`.
    case declined(ProxyFailure)
    /// The exchange failed (reset, timed out, or never opened); never sent again.
    case failed(ProxyFailure)
}
