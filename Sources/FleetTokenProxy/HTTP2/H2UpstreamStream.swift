/// The upstream half of one call: its stream on an `HTTP2UpstreamConnection` to Fleet Engine,
/// and the answer's flow-control accounting. Made by `HTTP2UpstreamPool.start(_:)` for one
/// exchange (a resend or a retry is a new one) and moved along only by the connection that
/// carries it. The client half drives it through `UpstreamExchange`; it reports to the client
/// half through `UpstreamExchangeDelegate`.
///
/// `delegate` is strong and dropped when the exchange is cancelled or reports its end (the
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
        /// Cancelled, or its end was reported.
        case ended
    }

    private(set) var delegate: UpstreamExchangeDelegate?
    /// The connection carrying (or about to carry) the exchange.
    private(set) var connection: HTTP2UpstreamConnection?
    private(set) var place = Place.queued
    /// The stream, once opened; kept after it closes, for late credit.
    private(set) var streamID: Int32 = -1
    /// The upstream ended its answer (END_STREAM): a clean close then completes the exchange.
    private(set) var answerEnded = false
    /// The request's HEADERS frame went out: from then on Fleet Engine may be acting on it.
    private(set) var requestHeadSent = false

    /// Response bytes received from the upstream, taken by the client, and given back to the
    /// upstream as stream credit.
    private var responseBytesReceived = 0
    private var responseBytesTaken = 0
    private var responseBytesCredited = 0
    /// Answer progress (header blocks and bytes) the last sweep saw, and when a sweep last saw
    /// it move (`answerStalled`): no clock read per frame.
    private var headerBlocks = 0
    private var sweptProgress = -1
    private var movedAt: Double = 0

    init(delegate: UpstreamExchangeDelegate) {
        self.delegate = delegate
    }

    var isEnded: Bool { if case .ended = place { return true } else { return false } }

    // MARK: Moved along by its connection

    /// Waits on `connection` until it is ready.
    func wait(on connection: HTTP2UpstreamConnection) {
        self.connection = connection
        place = .pending
    }

    func opened(_ stream: Int32, on connection: HTTP2UpstreamConnection) {
        self.connection = connection
        place = .open
        streamID = stream
    }

    /// Where it was before it ended (cancelled: nothing more is reported).
    func markEnded() -> Place {
        defer { place = .ended }
        return place
    }

    func answerDidEnd() {
        answerEnded = true
    }

    func headSent() {
        requestHeadSent = true
    }

    /// How the exchange ends when its connection goes with it still there (a connection
    /// error, a broken socket): `unprocessed` when Fleet Engine cannot have acted on it — it
    /// waited for the connection, its HEADERS never left, or its stream is above the last one
    /// the peer's GOAWAY named (RFC 9113 §6.8) — else `connectionLost`. `ReplayPolicy` then
    /// decides whether the call goes again (docs/CONTRACT.md §7).
    func endOnLostConnection(_ failure: ProxyFailure, peerLastStreamID: Int32?) -> UpstreamEnd {
        let processed = Self.mayHaveBeenProcessed(headSent: place == .open && requestHeadSent, stream: streamID,
                                                  peerLastStreamID: peerLastStreamID)
        return processed ? .connectionLost(failure) : .unprocessed(failure)
    }

    /// Whether Fleet Engine may have acted on a stream whose connection went: only if its
    /// HEADERS left and it is not above the last stream the peer's GOAWAY named.
    static func mayHaveBeenProcessed(headSent: Bool, stream: Int32, peerLastStreamID: Int32?) -> Bool {
        headSent && stream <= peerLastStreamID ?? .max
    }

    func headerBlockReceived() {
        headerBlocks += 1
    }

    /// Swept by its connection at `now`: true when the upstream's answer has not started, or
    /// has not moved, for `timeout` seconds (docs/CONTRACT.md §7), counted from the first sweep
    /// that saw the stream or saw it move, so never early, and late by one sweep period at most.
    /// An answer that waits because the client has not taken `bound` bytes of it is the
    /// client's to time out, not the upstream's.
    func answerStalled(now: Double, timeout: Double, bound: Int) -> Bool {
        let progress = headerBlocks + responseBytesReceived
        if progress != sweptProgress || answerEnded || responseBytesReceived - responseBytesTaken >= bound {
            sweptProgress = progress
            movedAt = now
            return false
        }
        return now - movedAt >= timeout
    }

    func received(count: Int) {
        responseBytesReceived += count
    }

    /// Stream credit now due, so that at most `bound` bytes the client has not taken are held
    /// (plus the stream window in flight); counted as given.
    func creditDue(bound: Int) -> Int {
        let target = min(responseBytesReceived, responseBytesTaken + bound)
        guard target > responseBytesCredited else { return 0 }
        defer { responseBytesCredited = target }
        return target - responseBytesCredited
    }

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
