/// The life of one HTTP/1.1 client connection, one call at a time: a value with events in and
/// actions out, no sockets, no clock of its own (times are passed in), so every transition is
/// unit-tested. `HTTP1ClientConnection` is the I/O shell that feeds it and carries out what it
/// returns; every flag the call's progress needs lives here and nowhere else.
///
///     readingHead(deadline) ─head─▶ readingBody ─body in─▶ awaitingToken ─token─▶ awaitingUpstream
///          ▲                     (chunked only)              ▲                         │ connection
///          │                                                 │ 401: fresh token        ▼
///          ├──────────── call done, keep-alive ◀──────── forwarding ──▶ retrying ──────┘
///          │                                                 │ keep-alive race (idempotent / unsent)
///          └─ refused, keep-alive ◀─ (any call phase) ─▶ closingAfterFlush ─written─▶ closed
///
/// An event that is not legal in the current phase (a late token, a stale timer, an answer
/// for a call already refused) changes nothing and returns no action.
struct HTTP1Exchange: Equatable {
    enum Phase: Equatable {
        /// Waiting for a whole request head. Past `deadline` with bytes buffered the connection
        /// is closed (whole-head deadline); nil while idle with nothing buffered after a
        /// deadline passed (the idle timeout governs; the first byte starts a new deadline).
        case readingHead(deadline: Double?)
        /// A chunked request body is read and decoded whole before the call goes on: the sidecar
        /// forwards it in its own framing (`Content-Length`).
        case readingBody
        case awaitingToken
        case awaitingUpstream
        case forwarding
        /// Fleet Engine answered 401 to the first try: that answer is dropped as it arrives and
        /// the call is sent once more with a freshly fetched token.
        case retrying
        /// A final answer is queued; the connection closes once it is written.
        case closingAfterFlush
        case closed
    }

    /// What the current call has done so far.
    struct Call: Equatable {
        var method: String
        /// The client allows another request on the connection (and the sidecar too).
        var keepAlive: Bool
        /// The whole request has been written to the upstream connection.
        var requestSent = false
        /// The answer has been relayed whole.
        var responseDone = false
        /// Part of the answer has been relayed to the client.
        var responseStarted = false
        /// Sends to Fleet Engine so far (a keep-alive resend or a 401 retry counts).
        var attempts = 0
        /// The sidecar holds the whole request (head and body) and can send it again.
        var replayable = false

        /// RFC 9110 §9.2.2: may be sent twice without a different outcome.
        var isIdempotent: Bool { ["GET", "HEAD", "PUT", "DELETE", "OPTIONS"].contains(method) }
    }

    enum Action: Equatable {
        /// Arm (or re-arm) the whole-head timer for this monotonic time.
        case armHeadDeadline(Double)
        /// Read the chunked body to its end before going on.
        case readBody
        /// Ask the token cache for the call's token.
        case lookUpToken
        /// Drop the cached token Fleet Engine refused, then ask for a fresh one.
        case refetchToken
        /// Borrow an upstream connection.
        case acquireUpstream
        /// Write the request (head built with the current token, then the body) upstream.
        case sendRequest
        /// Relay this answer's head (and then its body) to the client.
        case relayResponse
        /// The call ended: write its record; then, if keep-alive, parse the next buffered
        /// request.
        case finishCall(keepAlive: Bool)
        /// Answer the call with this failure; then keep reading requests or close after flush.
        case refuse(ProxyFailure, keepAlive: Bool)
        /// Flush what is queued to the client, then close.
        case closeAfterFlush
        /// Close now.
        case close(reason: String)
    }

    /// What one event asks of the connection. Every transition yields no action or one, so
    /// this is a value holding at most one: returning an array cost a heap allocation per
    /// event, several per call. Tests may still write `[]` and `[.someAction]`.
    struct Actions: Equatable, Sequence, ExpressibleByArrayLiteral {
        let action: Action?

        static let nothing = Actions(nil)
        static func one(_ action: Action) -> Actions { Actions(action) }

        private init(_ action: Action?) { self.action = action }

        init(arrayLiteral elements: Action...) {
            precondition(elements.count <= 1, "a transition yields at most one action")
            action = elements.first
        }

        struct Iterator: IteratorProtocol {
            fileprivate var pending: Action?
            mutating func next() -> Action? {
                defer { pending = nil }
                return pending
            }
        }

        func makeIterator() -> Iterator { Iterator(pending: action) }
    }

    private(set) var phase: Phase
    private(set) var call: Call?
    private(set) var draining = false
    let headTimeout: Double

    /// A connection accepted at `now`: its first head must be in by `now + headTimeout`.
    init(now: Double, headTimeout: Double) {
        self.headTimeout = headTimeout
        phase = .readingHead(deadline: now + headTimeout)
    }

    var isClosed: Bool { phase == .closed }

    // MARK: Reading heads

    /// Bytes arrived while no head is being waited for against a deadline: start one.
    mutating func bytesArrived(now: Double) -> Actions {
        guard case .readingHead(nil) = phase else { return .nothing }
        phase = .readingHead(deadline: now + headTimeout)
        return .one(.armHeadDeadline(now + headTimeout))
    }

    /// The head timer fired. `buffered`: request bytes waiting in the input.
    mutating func headDeadlinePassed(now: Double, buffered: Int) -> Actions {
        guard case .readingHead(let deadline?) = phase, now >= deadline else { return .nothing }
        if buffered == 0 {
            phase = .readingHead(deadline: nil)
            return .nothing
        }
        phase = .closed
        return .one(.close(reason: "request head not complete within \(headTimeout) s"))
    }

    /// A whole head was parsed and routed; `chunked` if its body comes chunked.
    mutating func headParsed(method: String, keepAlive: Bool, chunked: Bool) -> Actions {
        guard case .readingHead = phase else { return .nothing }
        call = Call(method: method, keepAlive: keepAlive && !draining)
        if chunked {
            phase = .readingBody
            return .one(.readBody)
        }
        phase = .awaitingToken
        return .one(.lookUpToken)
    }

    /// The whole (chunked) body is in, decoded and held.
    mutating func bodyRead() -> Actions {
        guard phase == .readingBody, call != nil else { return .nothing }
        call?.replayable = true
        phase = .awaitingToken
        return .one(.lookUpToken)
    }

    /// The request is held whole by the sidecar (a small body that arrived with its head).
    mutating func requestHeld() {
        guard call != nil else { return }
        call?.replayable = true
    }

    // MARK: Token and upstream

    mutating func tokenReady() -> Actions {
        guard phase == .awaitingToken else { return .nothing }
        phase = .awaitingUpstream
        return .one(.acquireUpstream)
    }

    mutating func upstreamReady() -> Actions {
        guard phase == .awaitingUpstream, call != nil else { return .nothing }
        call?.attempts += 1
        call?.requestSent = false
        call?.responseDone = false
        phase = .forwarding
        return .one(.sendRequest)
    }

    /// The last request byte was handed to the upstream connection.
    mutating func requestSent() -> Actions {
        guard phase == .forwarding || phase == .retrying, call != nil else { return .nothing }
        call?.requestSent = true
        return finishIfDone()
    }

    // MARK: The answer

    mutating func responseHead(status: Int) -> Actions {
        guard phase == .forwarding, let call else { return .nothing }
        if status == 401 && call.attempts == 1 && call.replayable {
            phase = .retrying
            return .nothing
        }
        self.call?.responseStarted = true
        return .one(.relayResponse)
    }

    mutating func responseEnded() -> Actions {
        switch phase {
        case .retrying:
            phase = .awaitingToken
            return .one(.refetchToken)
        case .forwarding:
            call?.responseDone = true
            return finishIfDone()
        default:
            return .nothing
        }
    }

    /// The upstream exchange broke. `retryable`: a reused connection closed before any byte
    /// of an answer (the keep-alive race).
    mutating func responseFailed(_ failure: ProxyFailure, retryable: Bool) -> Actions {
        guard phase == .forwarding || phase == .retrying, let call else { return .nothing }
        if call.responseStarted {
            // Part of the answer is already with the client: closing is the only honest signal.
            self.call = nil
            phase = .closingAfterFlush
            return .one(.closeAfterFlush)
        }
        // Sent again only when that cannot run it twice: an idempotent method (RFC 9110
        // §9.2.2), held whole, and once.
        if retryable && call.replayable && call.isIdempotent && call.attempts < 2 && phase == .forwarding {
            phase = .awaitingUpstream
            return .one(.acquireUpstream)
        }
        return refuse(failure, bodyConsumed: call.requestSent)
    }

    // MARK: Ending

    /// The sidecar answers the call itself. `bodyConsumed`: the request's body has been read
    /// (or skipped), so the connection can carry another request.
    mutating func refuse(_ failure: ProxyFailure, bodyConsumed: Bool) -> Actions {
        switch phase {
        case .closingAfterFlush, .closed:
            return .nothing
        default:
            break
        }
        let keepAlive = bodyConsumed && (call?.keepAlive ?? false) && !draining
        call = nil
        phase = keepAlive ? .readingHead(deadline: nil) : .closingAfterFlush
        return .one(.refuse(failure, keepAlive: keepAlive))
    }

    /// A request refused before its call began (bad head, unknown route, method override).
    /// `keepAlive`: the client allows it and the body was skipped (never for a head the parser
    /// refused: its framing is unknown).
    mutating func headRefused(_ failure: ProxyFailure, keepAlive: Bool) -> Actions {
        guard case .readingHead = phase else { return .nothing }
        let keep = keepAlive && !draining
        phase = keep ? .readingHead(deadline: nil) : .closingAfterFlush
        return .one(.refuse(failure, keepAlive: keep))
    }

    /// The connection is back to reading heads after a call; the next head's deadline starts
    /// now (`finishCall` / `refuse` with keep-alive left it unset).
    mutating func readingNextHead(now: Double) -> Actions {
        guard case .readingHead(nil) = phase else { return .nothing }
        phase = .readingHead(deadline: now + headTimeout)
        return .one(.armHeadDeadline(now + headTimeout))
    }

    /// Everything queued for the client has been written.
    mutating func outputFlushed() -> Actions {
        guard phase == .closingAfterFlush else { return .nothing }
        phase = .closed
        return .one(.close(reason: "answered, not keep-alive"))
    }

    /// Stop taking new requests. `buffered`: request bytes waiting in the input.
    mutating func drain(buffered: Int) -> Actions {
        draining = true
        call?.keepAlive = false
        guard case .readingHead = phase, buffered == 0 else { return .nothing }
        phase = .closed
        return .one(.close(reason: "draining"))
    }

    /// The socket broke or the server closed the connection.
    mutating func closed() {
        phase = .closed
        call = nil
    }

    private mutating func finishIfDone() -> Actions {
        guard phase == .forwarding, let call, call.requestSent, call.responseDone else { return .nothing }
        let keepAlive = call.keepAlive && !draining
        self.call = nil
        phase = keepAlive ? .readingHead(deadline: nil) : .closingAfterFlush
        return .one(.finishCall(keepAlive: keepAlive))
    }

    /// The answer's framing forced the connection to close after it (no length, HTTP/1.0 client).
    mutating func closeAfterAnswer() {
        call?.keepAlive = false
    }
}
