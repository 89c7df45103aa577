/// The upstream half of one call: its stream on an `HTTP2UpstreamConnection` to Fleet Engine,
/// and the answer's flow-control accounting. Made by `HTTP2UpstreamPool.start(_:)` for one
/// exchange (a resend or a retry is a new one); written only by the connection that carries
/// it. The client half drives it through `UpstreamExchange`,
/// it reports to the client half through `UpstreamExchangeDelegate`.
///
/// `delegate` is strong and dropped when the exchange is cancelled or reports its close (the
/// client half drops its own reference to this one when it finishes); `connection` stays
/// until then, since the connection that carried the answer is owed credit for it.
final class H2UpstreamStream: UpstreamExchange {
    enum Place {
        /// In the pool's queue: every connection is full.
        case queued
        /// On a connection that is not ready yet.
        case pending
        /// An open stream (`streamID`) of `connection`.
        case open
        /// Cancelled, or its close was reported.
        case ended
    }

    private(set) var delegate: UpstreamExchangeDelegate?
    /// The connection carrying (or about to carry) the exchange.
    var connection: HTTP2UpstreamConnection?
    var place = Place.queued
    /// The stream, once opened; kept after it closes, for late credit.
    var streamID: Int32 = -1
    /// The upstream ended its answer (END_STREAM): a clean close then completes the exchange.
    var answerEnded = false

    /// Response bytes received from the upstream, taken by the client, and given back to the
    /// upstream as stream credit.
    var responseBytesReceived = 0
    var responseBytesTaken = 0
    var responseBytesCredited = 0

    init(delegate: UpstreamExchangeDelegate) {
        self.delegate = delegate
    }

    var isEnded: Bool { if case .ended = place { return true } else { return false } }

    /// Reports the exchange's end, once; nothing is reported after it.
    func end(_ end: UpstreamEnd) {
        guard let delegate else { return }
        place = .ended
        self.delegate = nil
        delegate.upstreamClosed(end)
    }

    // MARK: UpstreamExchange

    func resumeRequestBody() {
        connection?.resume(self)
    }

    func responseTaken(count: Int) {
        responseBytesTaken += count
        connection?.creditResponse(self)
    }

    func cancel(_ why: UpstreamCancel) {
        delegate = nil
        if let connection {
            connection.cancel(self, why)
        } else {
            place = .ended
        }
    }
}
