/// Receives one response from an `HTTP1UpstreamConnection`, in order: a head, zero or more body
/// pieces, then exactly one of `responseEnded` or `responseFailed`.
protocol ResponseSink: AnyObject {
    func responseHead(_ head: ResponseHead, from connection: HTTP1UpstreamConnection)
    /// Body bytes, de-chunked, in order (one call a contiguous piece): lent for the call only,
    /// copied by the sink if kept; the connection drops them from its input afterwards.
    func responseBody(_ bytes: ByteView, from connection: HTTP1UpstreamConnection)
    /// The body is complete. The connection is already back in its pool (or closed).
    func responseEnded(from connection: HTTP1UpstreamConnection)
    /// The exchange broke. `retryable` says the request can be sent again safely (a reused
    /// connection that the peer closed before answering).
    func responseFailed(_ failure: ProxyFailure, retryable: Bool)
    /// The request side's output drained (write backpressure released).
    func connectionDrained(_ connection: HTTP1UpstreamConnection)
    /// Whether the whole request was written: a connection whose request was cut short is
    /// never reused. Asked when the answer ends.
    var requestFullySent: Bool { get }
}
