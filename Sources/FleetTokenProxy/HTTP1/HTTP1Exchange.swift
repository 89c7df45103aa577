/// The life of one HTTP/1.1 client connection, one call at a time: a value with events in and
/// actions out, no sockets, no clock of its own (times are passed in), so every transition is
/// unit-tested. `HTTP1ClientConnection` is the I/O shell that feeds it and carries out what it
/// returns: each event is one mutating method with its own action enum, switched at its one
/// call site, and nil when there is nothing to do. Every fact about the connection's progress
/// lives here and nowhere else.
///
///     readingHead(deadline) ─head─▶ readingBody ─body in─▶ awaitingToken ─token─▶ awaitingUpstream
///          ▲                   (a held body)                 ▲                         │ connection
///          │                                                 │ 401: fresh token        ▼
///          ├──────────── call done, keep-alive ◀──────── forwarding ──▶ retrying ──────┘
///          │                                                 │ resend (`ReplayPolicy`)
///          └─ refused, keep-alive ◀─ (any call phase) ─▶ closingAfterFlush ─written─▶ closed
///
/// A body is held (read whole before the call goes on, and kept to send it again) when it is
/// chunked, or declares a length up to `ReplayPolicy.bodyBound`: whether a call can be sent
/// again then depends on the request, never on the segments its bytes arrived in. A longer
/// declared body streams.
///
/// An event that is not legal in the current phase (a late token, a stale timer, an answer
/// for a call already refused) changes nothing and returns nil.
struct HTTP1Exchange: Equatable {
    enum Phase: Equatable {
        /// Waiting for a whole request head. Past `deadline` with bytes buffered the connection
        /// is closed (whole-head deadline); nil while idle with nothing buffered after a
        /// deadline passed, or between calls (the idle timeout governs; the first byte, or
        /// `readingNextHead`, starts a new deadline).
        case readingHead(deadline: Double?)
        /// A held body (chunked, or a short declared length) is read whole, a chunked one
        /// decoded, before the call goes on: the sidecar forwards it with its own
        /// `Content-Length`, and can send it again.
        case readingBody(Call)
        case awaitingToken(Call)
        case awaitingUpstream(Call)
        case forwarding(Call, Attempt)
        /// Fleet Engine answered 401 to the first try: that answer is dropped as it arrives and
        /// the call is sent once more with a freshly fetched token. `requestSent`: the whole
        /// first try left (else its body is still being written).
        case retrying(Call, requestSent: Bool)
        /// A final answer is queued; the connection closes once it is written.
        case closingAfterFlush
        /// Closed, or handed to HTTP/2.
        case closed
    }

    /// One request, from its head to its answer: what the machine knows of it in every phase.
    /// Plain bits (no `String`, no reference): phases carrying it copy without retains.
    struct Call: Equatable {
        /// Numbers the calls of the connection: a token or connection that arrives for an
        /// earlier call is recognised by it.
        let number: Int
        /// RFC 9110 §9.2.2: the method may be sent twice without a different outcome.
        let isIdempotent: Bool
        /// The client spoke HTTP/1.0: the answer goes back as HTTP/1.0, never chunked.
        let clientIsHTTP10: Bool
        /// The client allows another request on the connection, the sidecar too, and the
        /// answer's framing does not end it.
        var keepAlive: Bool
        /// The client sent `Expect: 100-continue` and has not been told to go on yet.
        var continueOwed: Bool
        /// Sends to Fleet Engine so far (a resend or a 401 retry counts).
        var sends = 0
        /// The one retry with a fresh token was made.
        var tokenRetried = false
        /// The sidecar holds the whole request (head and body) and can send it again.
        var replayable = false

        /// The facts `ReplayPolicy` judges a resend by; `bodyIntact`: no byte of a streamed
        /// body has left yet (the rest is still in the client's input).
        func replayFacts(bodyIntact: Bool = false) -> ReplayPolicy.Call {
            ReplayPolicy.Call(isIdempotent: isIdempotent, sends: sends, tokenRetried: tokenRetried, requestIntact: replayable || bodyIntact)
        }
    }

    /// What the shell knows of the request's body from its head.
    enum BodyPlan: Equatable {
        /// None (no framing, or `Content-Length: 0`): the request is held whole already.
        case none
        /// Chunked, or a declared length up to `ReplayPolicy.bodyBound`: read it whole first.
        case held
        /// A longer declared length: it streams to the upstream as it arrives.
        case streamed
    }

    /// How far one send of the call has got.
    struct Attempt: Equatable {
        enum Answer: Equatable {
            /// No answer head yet.
            case awaited
            /// The head went to the client; its body follows.
            case relaying
            /// Relayed whole.
            case ended
        }
        /// The whole request has been written to the upstream connection.
        var requestSent = false
        var answer = Answer.awaited
    }

    /// How the relayed answer is written to the client: decided here from the answer's
    /// framing and the client's version and wish (docs/CONTRACT.md §6).
    struct Relay: Equatable {
        enum Framing: Equatable {
            /// `Content-Length: n` and that many bytes.
            case contentLength(Int)
            /// Chunks relayed as they come, `Transfer-Encoding: chunked`.
            case chunked
            /// Chunks decoded for an HTTP/1.0 client; the body ends when the connection closes.
            case dechunked
            /// The body ends when the connection closes.
            case untilClose
            /// No body; a HEAD or 304 answer keeps the length it declared for the resource.
            case none(declaredLength: Int?)
        }
        var framing: Framing
        /// The status line says HTTP/1.0.
        var http10: Bool
        /// The connection closes once the answer is written (`Connection: close`).
        var closeAfter: Bool

        /// An HTTP/1.0 client kept alive is told so (`Connection: keep-alive`).
        var saysKeepAlive: Bool { http10 && !closeAfter }
    }

    // MARK: The actions, one enum per event (or per family of events)

    enum ReadAction: Equatable {
        /// Parse the buffered request head, if whole.
        case readHead
        /// The first byte of a head after an idle spell: its deadline starts now.
        case armHeadTimerAndReadHead(at: Double)
        /// Go on decoding the chunked body.
        case readBody
        /// Move more of the Content-Length body upstream.
        case pumpBody
    }

    enum HeadTimerAction: Equatable {
        /// A later head's deadline replaced the one the timer fired for: wait for it.
        case rearm(at: Double)
        case close(reason: String)
    }

    enum TimerArming: Equatable {
        case arm(at: Double)
    }

    enum ReadTimeoutAction: Equatable {
        case close(reason: String)
        /// The client is quiet because it waits for the sidecar (token, upstream answer):
        /// those waits have their own bounds. Turn reading back on (libevent turned it off).
        case enableReading
    }

    enum HeadAction: Equatable {
        /// Read the held body whole before going on; first tell the client to send it
        /// (`100 Continue`) if it waits for that.
        case readBody(writeContinue: Bool)
        /// Ask the token cache for the call's token.
        case lookUpToken(call: Int)
        /// No head was awaited: let go of what was set up for the call.
        case endCall
    }

    enum HandOverAction: Equatable {
        /// Stop the head timer and hand the socket, as it is, to an HTTP/2 connection.
        case handOverToHTTP2
    }

    enum BodyAction: Equatable {
        case lookUpToken(call: Int)
    }

    enum TokenAction: Equatable {
        /// Borrow an upstream connection.
        case acquireUpstream(call: Int)
    }

    enum SendAction: Equatable {
        /// Start an exchange that sends the held body with the head.
        case sendHeld(firstAttempt: Bool)
        /// Start an exchange that pulls the body as it arrives; `100 Continue` first if owed.
        case stream(writeContinue: Bool, firstAttempt: Bool)
    }

    enum RequestSentAction: Equatable {
        /// The call ended: write its record; then, if keep-alive, parse the next buffered
        /// request, else close once the output is written.
        case finishCall(keepAlive: Bool)
    }

    enum ResponseHeadAction: Equatable {
        /// Relay this answer's head, written so, and then its body.
        case relay(Relay)
        /// A 401 answered the first try of a held request: drop it; the call is sent again.
        case dropForRetry
    }

    enum ResponseEndAction: Equatable {
        case finishCall(keepAlive: Bool)
        /// Drop the cached token Fleet Engine refused, then ask for a fresh one.
        case refetchToken(call: Int)
    }

    enum ResponseFailureAction: Equatable {
        /// `ReplayPolicy` allows it: send the request again on another exchange.
        case resend(call: Int)
        /// Part of the answer is with the client: flush it and close, the only honest signal.
        case closeAfterFlush
        case refuse(ProxyFailure, keepAlive: Bool)
    }

    enum RefusalAction: Equatable {
        /// Answer with this failure; then keep reading requests (first dropping the buffered
        /// body of the refused one) or close after flush.
        case refuse(ProxyFailure, keepAlive: Bool)
    }

    enum FlushAction: Equatable {
        case close(reason: String)
    }

    enum DrainAction: Equatable {
        case close(reason: String)
    }

    enum CloseAction: Equatable {
        /// Free the socket and what the call holds.
        case tearDown
    }

    private(set) var phase: Phase
    private(set) var draining = false
    /// Request heads read so far, refused ones included: numbers the calls, and until the
    /// first the bytes may instead be the HTTP/2 preface.
    private(set) var headsRead = 0
    /// When the one whole-head timer of the connection is armed to fire; nil while not armed.
    private(set) var headTimerAt: Double?
    let headTimeout: Double

    /// A connection accepted at `now`: its first head must be in by `now + headTimeout`; the
    /// connection arms its head timer for then.
    init(now: Double, headTimeout: Double) {
        self.headTimeout = headTimeout
        phase = .readingHead(deadline: now + headTimeout)
        headTimerAt = now + headTimeout
    }

    /// The call in flight, in whatever phase.
    var call: Call? {
        switch phase {
        case .readingBody(let c), .awaitingToken(let c), .awaitingUpstream(let c), .forwarding(let c, _), .retrying(let c, _):
            return c
        case .readingHead, .closingAfterFlush, .closed:
            return nil
        }
    }

    /// Whether an answer's body is being relayed to the client now.
    var isRelaying: Bool {
        if case .forwarding(_, let attempt) = phase { return attempt.answer == .relaying }
        return false
    }

    /// Whether the current send waits for its answer's head.
    var isAwaitingAnswer: Bool {
        if case .forwarding(_, let attempt) = phase { return attempt.answer == .awaited }
        return false
    }

    // MARK: Reading heads

    /// Request bytes arrived. Nil when the call in flight does not read now: the bytes wait in
    /// the input (bounded by its high-water mark).
    mutating func bytesArrived(now: Double) -> ReadAction? {
        switch phase {
        case .readingHead(nil):
            let deadline = now + headTimeout
            phase = .readingHead(deadline: deadline)
            switch armHeadTimer(at: deadline) {
            case .arm(let at)?: return .armHeadTimerAndReadHead(at: at)
            case nil: return .readHead
            }
        case .readingHead:
            return .readHead
        case .readingBody:
            return .readBody
        case .forwarding(_, let attempt) where !attempt.requestSent:
            return .pumpBody
        default:
            return nil
        }
    }

    /// Until a first head is read, the bytes may instead be the HTTP/2 preface.
    var mayBeHTTP2: Bool { headsRead == 0 }

    /// The head timer fired at `now`. `buffered`: request bytes waiting in the input. Nil when
    /// no head is awaited against this deadline, or none is buffered: nothing to enforce.
    mutating func headTimerFired(now: Double, buffered: Int) -> HeadTimerAction? {
        guard let armed = headTimerAt else { return nil }
        headTimerAt = nil
        let now = max(armed, now)
        guard case .readingHead(let deadline?) = phase else { return nil }
        if deadline > now {
            headTimerAt = deadline
            return .rearm(at: deadline)
        }
        if buffered == 0 {
            phase = .readingHead(deadline: nil)
            return nil
        }
        closeNow()
        return .close(reason: "request head not complete within \(headTimeout) s")
    }

    /// The client's read timeout passed. `buffered`: request bytes waiting; `described`: the
    /// event as the transport names it.
    mutating func readTimedOut(buffered: Int, described: String) -> ReadTimeoutAction {
        let bodyStalled: Bool
        switch phase {
        case .readingHead:
            closeNow()
            return .close(reason: buffered == 0 ? "idle" : "request head too slow")
        case .readingBody:
            bodyStalled = true
        case .forwarding(_, let attempt):
            // Bytes waiting in the input are the upstream's to take, not the client's to send.
            bodyStalled = !attempt.requestSent && buffered == 0
        case .awaitingToken, .awaitingUpstream, .retrying, .closingAfterFlush, .closed:
            bodyStalled = false
        }
        guard bodyStalled else { return .enableReading }
        closeNow()
        return .close(reason: described)
    }

    /// A whole head was parsed and routed; `body` says what its body is. Never nil: the shell
    /// set the call up before asking, and lets go of it if no head was awaited.
    mutating func headParsed(method: String, http10: Bool, keepAlive: Bool, expectsContinue: Bool, body: BodyPlan) -> HeadAction {
        guard case .readingHead = phase else { return .endCall }
        headsRead += 1
        var call = Call(number: headsRead, isIdempotent: ReplayPolicy.isIdempotent(method), clientIsHTTP10: http10,
                        keepAlive: keepAlive && !draining, continueOwed: expectsContinue)
        switch body {
        case .held:
            let writeContinue = call.continueOwed
            call.continueOwed = false
            phase = .readingBody(call)
            return .readBody(writeContinue: writeContinue)
        case .none:
            call.replayable = true
        case .streamed:
            break
        }
        phase = .awaitingToken(call)
        return .lookUpToken(call: call.number)
    }

    /// A request refused before its call began (bad head, unknown route, method override).
    /// `bodySkippable`: the client allows keep-alive and the body is known and buffered (never
    /// for a head the parser refused: its framing is unknown). Nil when no head was awaited.
    mutating func headRefused(_ failure: ProxyFailure, bodySkippable: Bool) -> RefusalAction? {
        guard case .readingHead = phase else { return nil }
        headsRead += 1
        return .refuse(failure, keepAlive: endRefused(keepAlive: bodySkippable))
    }

    /// The bytes before any head are the HTTP/2 preface (h2c with prior knowledge). Nil when a
    /// head was read already: then they are an HTTP/1.1 request like any other.
    mutating func http2PrefaceArrived() -> HandOverAction? {
        guard mayBeHTTP2, case .readingHead = phase else { return nil }
        closeNow()
        return .handOverToHTTP2
    }

    /// The whole body is in (decoded if chunked) and held. Nil when no body was being read.
    mutating func bodyRead() -> BodyAction? {
        guard case .readingBody(var call) = phase else { return nil }
        call.replayable = true
        phase = .awaitingToken(call)
        return .lookUpToken(call: call.number)
    }

    /// The held body is malformed or too large, or the budget has no room for it: the
    /// connection cannot find the next request. Nil when no body was being read.
    mutating func bodyFailed(_ failure: ProxyFailure) -> RefusalAction? {
        guard case .readingBody = phase else { return nil }
        return .refuse(failure, keepAlive: endRefused(keepAlive: false))
    }

    // MARK: Token and upstream

    /// The token for call `number` arrived. Nil when that call does not wait for one (it was
    /// refused, or ended).
    mutating func tokenArrived(call number: Int) -> TokenAction? {
        guard case .awaitingToken(let call) = phase, call.number == number else { return nil }
        phase = .awaitingUpstream(call)
        return .acquireUpstream(call: number)
    }

    /// No token. `bodySkippable`: the rest of the body is held or buffered, so the connection
    /// can carry another request. Nil when call `number` does not wait for a token.
    mutating func tokenFailed(call number: Int, _ failure: ProxyFailure, bodySkippable: Bool) -> RefusalAction? {
        guard case .awaitingToken(let call) = phase, call.number == number else { return nil }
        return .refuse(failure, keepAlive: endRefused(keepAlive: bodySkippable))
    }

    /// The call's next send starts (an upstream exchange is made for it). Nil when call
    /// `number` does not wait for one.
    mutating func upstreamReady(call number: Int) -> SendAction? {
        guard case .awaitingUpstream(var call) = phase, call.number == number else { return nil }
        call.sends += 1
        let first = call.sends == 1
        if call.replayable {
            phase = .forwarding(call, Attempt())
            return .sendHeld(firstAttempt: first)
        }
        let writeContinue = call.continueOwed
        call.continueOwed = false
        phase = .forwarding(call, Attempt())
        return .stream(writeContinue: writeContinue, firstAttempt: first)
    }

    /// The last request byte was handed to the upstream connection. Nil while the answer is
    /// still to come (or still being relayed), and when no request was being sent.
    mutating func requestSent() -> RequestSentAction? {
        switch phase {
        case .forwarding(let call, var attempt):
            attempt.requestSent = true
            phase = .forwarding(call, attempt)
            guard attempt.answer == .ended else { return nil }
            return .finishCall(keepAlive: finish(call))
        case .retrying(let call, _):
            phase = .retrying(call, requestSent: true)
            return nil
        default:
            return nil
        }
    }

    // MARK: The answer

    /// The answer's head arrived. `framing`: its body's framing for this request's method;
    /// `declared`: the framing its fields declare (a HEAD or 304 answer keeps its length). Nil
    /// when no answer is awaited (one answer a try).
    mutating func responseHead(status: Int, framing: BodyFraming, declared: BodyFraming) -> ResponseHeadAction? {
        guard case .forwarding(var call, var attempt) = phase, attempt.answer == .awaited else { return nil }
        if status == 401 && ReplayPolicy.mayResend(.unauthenticated, call.replayFacts()) {
            call.tokenRetried = true
            phase = .retrying(call, requestSent: attempt.requestSent)
            return .dropForRetry
        }
        let relay = Self.relay(status: status, framing: framing, declared: declared, client: call)
        if relay.closeAfter { call.keepAlive = false }
        attempt.answer = .relaying
        phase = .forwarding(call, attempt)
        return .relay(relay)
    }

    /// The relayed framing (docs/CONTRACT.md §6): exactly one of Content-Length, chunked or
    /// none, whatever the upstream sent; a chunked answer decoded for an HTTP/1.0 client, which
    /// cannot read chunks, and then, as for a body that ends at close, the connection closes.
    private static func relay(status: Int, framing: BodyFraming, declared: BodyFraming, client: Call) -> Relay {
        var closeAfter = !client.keepAlive
        let relayed: Relay.Framing
        switch framing {
        case .contentLength(let n):
            relayed = .contentLength(n)
        case .chunked where client.clientIsHTTP10:
            relayed = .dechunked
            closeAfter = true
        case .chunked:
            relayed = .chunked
        case .untilClose:
            relayed = .untilClose
            closeAfter = true
        case .none:
            if case .contentLength(let n) = declared, status >= 200, status != 204 {
                relayed = .none(declaredLength: n)
            } else {
                relayed = .none(declaredLength: nil)
            }
        }
        return Relay(framing: relayed, http10: client.clientIsHTTP10, closeAfter: closeAfter)
    }

    /// The answer's body ended. Nil while the request body is still being written (its end
    /// finishes the call), and when no answer was being relayed.
    mutating func responseEnded() -> ResponseEndAction? {
        switch phase {
        case .retrying(let call, _):
            phase = .awaitingToken(call)
            return .refetchToken(call: call.number)
        case .forwarding(let call, var attempt) where attempt.answer == .relaying:
            attempt.answer = .ended
            phase = .forwarding(call, attempt)
            guard attempt.requestSent else { return nil }
            return .finishCall(keepAlive: finish(call))
        default:
            return nil
        }
    }

    /// The upstream exchange ended before its answer did. `retry`: why it may be sent again
    /// (`ReplayPolicy` decides; nil: never, as after a reset or a timeout); `bodyIntact`: no
    /// byte of a streamed body has left; `bodySkippable`: what is left of the body is held or
    /// buffered, so a refusal can keep the connection. Nil when no upstream exchange was under
    /// way.
    mutating func responseFailed(
        _ failure: ProxyFailure, retry: ReplayPolicy.Why? = nil, bodyIntact: Bool = false, bodySkippable: Bool = false
    ) -> ResponseFailureAction? {
        let requestSent: Bool
        switch phase {
        case .forwarding(let call, let attempt):
            if attempt.answer != .awaited {
                phase = .closingAfterFlush
                return .closeAfterFlush
            }
            if let retry, ReplayPolicy.mayResend(retry, call.replayFacts(bodyIntact: bodyIntact)) {
                phase = .awaitingUpstream(call)
                return .resend(call: call.number)
            }
            requestSent = attempt.requestSent
        case .retrying(_, let sent):
            requestSent = sent
        default:
            return nil
        }
        // The connection can carry another request once the body has left whole, or what is
        // left of it can be dropped.
        return .refuse(failure, keepAlive: endRefused(keepAlive: requestSent || bodySkippable))
    }

    /// The HTTP/2 upstream turned out not to speak HTTP/2 before the exchange sent a byte, and
    /// REST goes over HTTP/1.1 from now on (docs/CONTRACT.md §6): sent again there, whatever the
    /// method, and the send that never left does not count as a try. Nil when no upstream
    /// exchange was under way.
    mutating func exchangeDeclined(_ failure: ProxyFailure) -> ResponseFailureAction? {
        if case .forwarding(var call, let attempt) = phase, attempt.answer == .awaited,
           ReplayPolicy.mayResend(.declined, call.replayFacts(bodyIntact: true)) {
            call.sends -= 1
            phase = .awaitingUpstream(call)
            return .resend(call: call.number)
        }
        return responseFailed(failure)
    }

    // MARK: Ending

    /// The connection is back to reading heads after a call; the next head's deadline starts
    /// now (`finishCall` / `refuse` with keep-alive left it unset). Nil when the timer is
    /// already armed for an earlier time (when it fires it re-arms for this deadline), and when
    /// the connection is not back to reading heads.
    mutating func readingNextHead(now: Double) -> TimerArming? {
        guard case .readingHead(nil) = phase else { return nil }
        let deadline = now + headTimeout
        phase = .readingHead(deadline: deadline)
        return armHeadTimer(at: deadline)
    }

    /// Everything queued for the client has been written. Nil unless the connection was to
    /// close once it was.
    mutating func outputFlushed() -> FlushAction? {
        guard phase == .closingAfterFlush else { return nil }
        closeNow()
        return .close(reason: "answered, not keep-alive")
    }

    /// Stop taking new requests. `buffered`: request bytes waiting in the input. Nil when a call
    /// is in flight or a head is arriving: it is served, and the connection closes after it.
    mutating func drain(buffered: Int) -> DrainAction? {
        draining = true
        switch phase {
        case .readingHead where buffered == 0:
            closeNow()
            return .close(reason: "draining")
        case .readingBody(var c): c.keepAlive = false; phase = .readingBody(c)
        case .awaitingToken(var c): c.keepAlive = false; phase = .awaitingToken(c)
        case .awaitingUpstream(var c): c.keepAlive = false; phase = .awaitingUpstream(c)
        case .forwarding(var c, let a): c.keepAlive = false; phase = .forwarding(c, a)
        case .retrying(var c, let s): c.keepAlive = false; phase = .retrying(c, requestSent: s)
        case .readingHead, .closingAfterFlush, .closed: break
        }
        return nil
    }

    /// The socket broke, the server closes the connection, or an action said close. Nil when
    /// it is already closed.
    mutating func close() -> CloseAction? {
        if phase == .closed { return nil }
        closeNow()
        return .tearDown
    }

    private mutating func closeNow() {
        phase = .closed
        headTimerAt = nil
    }

    /// The connection arms its head timer only when it would otherwise fire late: deadlines
    /// only move later, so an armed timer is usually left and re-armed when it fires (nil).
    private mutating func armHeadTimer(at deadline: Double) -> TimerArming? {
        if let armed = headTimerAt, armed <= deadline { return nil }
        headTimerAt = deadline
        return .arm(at: deadline)
    }

    /// The call is done, request and answer: back to reading heads, or closing after flush.
    /// Whether the connection is kept.
    private mutating func finish(_ call: Call) -> Bool {
        let keepAlive = call.keepAlive && !draining
        phase = keepAlive ? .readingHead(deadline: nil) : .closingAfterFlush
        return keepAlive
    }

    /// The sidecar answers the call itself: the connection is kept when `keepAlive` (the body
    /// is out of the way), the call's client allows it and the sidecar is not draining.
    private mutating func endRefused(keepAlive: Bool) -> Bool {
        let keep = keepAlive && (call?.keepAlive ?? true) && !draining
        phase = keep ? .readingHead(deadline: nil) : .closingAfterFlush
        return keep
    }
}
