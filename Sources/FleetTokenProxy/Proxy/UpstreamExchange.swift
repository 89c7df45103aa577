/// The upstream half of a call, as the client half that drives it sees it: a stream on an
/// HTTP/2 connection to Fleet Engine (`H2UpstreamStream`) or a request on a pooled HTTP/1.1
/// one (`H1UpstreamExchange`). Protocol-neutral: a client half of either protocol (an
/// `H1ClientCall`, an `H2ClientCall`) is paired with an upstream half of either protocol, and
/// the two meet only through this interface and `UpstreamExchangeDelegate`.
///
/// The upstream half reports to its delegate until it is cancelled or reports
/// `upstreamClosed`; it still takes `responseTaken` after that, so the credit for bytes the
/// client takes late goes back to the connection that carried them.
protocol UpstreamExchange: AnyObject {
    /// Request body bytes (or the request's end) are there to pull again, after a pull that
    /// found none.
    func resumeRequestBody()
    /// The client took `count` response bytes: the upstream may send that many more.
    func responseTaken(count: Int)
    /// Ends the exchange on the client half's behalf; nothing more is reported.
    func cancel(_ why: UpstreamCancel)
}

/// Why a client half ends its upstream exchange.
enum UpstreamCancel {
    /// The client left, or the call was answered or timed out: the upstream's work is wasted.
    case abandoned
    /// The call is sent again (with a fresh token): this exchange's answer is not wanted, and
    /// nothing is wrong with it.
    case superseded
}
