/// The client half of a call, as the upstream half paired with it sees it: where the request
/// comes from and where the answer goes. Protocol-neutral (see `UpstreamExchange`); field lists
/// are `H2HeaderList`s, names lower-case.
///
/// The upstream half reports facts only (a header block arrived, the exchange closed and
/// how); what they mean for the call (an interim head, trailers, a resend, a retry with a fresh
/// token) is the client half's call machine's decision.
protocol UpstreamExchangeDelegate: AnyObject {
    var requestMethod: String { get }
    var requestPath: String { get }
    /// The request's regular fields to forward, hop-by-hop fields already dropped.
    var requestFields: H2HeaderList { get }
    /// Appends `requestFields` to `list`, the head being submitted: a client half whose
    /// fields are not an `H2HeaderList` already writes them there, with no list of its own
    /// made per send.
    func appendRequestFields(to list: inout H2HeaderList)
    /// The bearer token to attach.
    var requestToken: String { get }
    /// Request body bytes follow the head (they may not have arrived yet).
    var requestHasBody: Bool { get }

    /// Copies up to `buffer.count` request body bytes out for the upstream.
    func pullRequestBody(into buffer: UnsafeMutableRawBufferPointer) -> RequestBodyPull

    /// A header block of the answer: its head, an interim head, or its trailers.
    /// `fields` is lent for the call only: copy what is kept.
    func upstreamHeaderBlock(_ fields: H2HeaderList, endStream: Bool)
    /// Response body bytes; lent for the call only.
    func upstreamData(_ bytes: UnsafeRawBufferPointer)
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
