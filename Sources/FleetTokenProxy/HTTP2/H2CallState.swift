/// Where one HTTP/2 call stands, as a pure state machine: events in, actions out, no sockets,
/// no clock (times are passed in). The client half (`H2ClientCall`, driven by
/// `HTTP2ClientConnection`) feeds it what happens on the client stream and what its upstream
/// exchange reports, and carries out what it returns; the bytes stay in the client half.
/// Every decision about the call is made here: routing and the token, the sidecar's own
/// answers (docs/CONTRACT.md §5) and deadlines (§7), which answer header block is the head, an
/// interim 1xx or the trailers, the one retry with a fresh token after UNAUTHENTICATED/401,
/// sending a refused or lost stream again, and which sent request bytes are kept to do so.
///
/// Credit: the client's request stream gets credit for its first message while it is routed
/// (`bufferFirstMessage`), then only as bytes leave for the upstream; the upstream stream gets
/// credit as the client reads the answer, and at once for bytes nobody will read (`drop`, an
/// answer or finish that releases the buffers).
///
/// One method per event, each returning its own action (nil: nothing to do).
///
/// | state           | event                                      | next state      | action                                     |
/// |-----------------|--------------------------------------------|-----------------|--------------------------------------------|
/// | receivingHead   | requestHeadEnded                           | routing         | route, arm the head / grpc-timeout timer   |
/// | receivingHead   | requestData                                | receivingHead   | discard                                    |
/// | routing         | requestData                                | routing         | bufferFirstMessage (then route)            |
/// | routing         | requestEndReceived (DATA END_STREAM, trailers)   | routing         | route (the request ended: decide now)      |
/// | routing         | routed                                     | awaitingToken   | fetchToken, arm (grpc-timeout) or cancel the timer |
/// | awaitingToken   | requestData                                | awaitingToken   | buffer (no stream credit)                  |
/// | awaitingToken   | tokenArrived                               | forwarding      | startUpstream (start 1 of at most 3)       |
/// | forwarding      | requestBodyRead                            | forwarding      | send (keepCopy while ≤ 64 KiB), end or wait |
/// | forwarding      | upstreamHeaderBlock 1xx                    | forwarding      | skipInterim                                |
/// | forwarding      | upstreamHeaderBlock 401/16, `ReplayPolicy` allows | awaitingToken (retry) | retryWithFreshToken           |
/// | forwarding      | upstreamHeaderBlock                        | relaying        | relayHead                                  |
/// | forwarding      | upstreamClosed, `ReplayPolicy` allows       | forwarding      | resend (the copy of sent bytes put back)   |
/// | forwarding      | upstreamClosed otherwise                   | answeredLocally | answer                                     |
/// | forwarding, relaying | requestData / requestEndReceived      | same            | (buffer,) resumeUpstreamBody if it waited  |
/// | relaying        | upstreamHeaderBlock                        | relaying        | keepTrailers (the answer ends)             |
/// | relaying        | upstreamDataEnded                          | relaying        | resumeClientBody if it waited              |
/// | relaying        | responseBytes                              | relaying        | keep; resume the client body if it waited; arm the ioTimeout timer if the client had taken all |
/// | relaying        | responseRead                               | relaying        | send, end or wait (the client's progress is noted) |
/// | relaying        | tick, client took nothing for ioTimeout    | reset           | resetStalledClient (CANCEL, upstream cancelled) |
/// | relaying        | upstreamClosed, not completed              | reset           | resetClient (INTERNAL_ERROR)               |
/// | before relaying | refused / tokenFailed                      | answeredLocally | answer (cancelling the upstream if any)    |
/// | routing         | tick past the head deadline                | answeredLocally | answer(headTimeout)                        |
/// | routing, awaitingToken | tick past the grpc-timeout deadline | answeredLocally | answer(deadline)                           |
/// | answeredLocally | answerSent, request still open             | answeredLocally | resetClient (NO_ERROR)                     |
/// | answeredLocally, reset, closed | requestData                 | same            | discard (no stream credit back)            |
/// | any but closed  | streamClosed                               | closed          | finish (cancelling the upstream if any)    |
///
/// Anything else is illegal for its state and returns nil (a late token for a call that was
/// answered, an answer head after the client left, a second streamClosed).
struct H2CallState: Equatable {
    enum State: Equatable {
        case receivingHead
        /// The entity is being worked out from the head or the first message.
        case routing(callDeadline: Double?, requestEnded: Bool)
        /// The token is being fetched; `sends` counts what went upstream before (a retry).
        case awaitingToken(callDeadline: Double?, sends: Sends, requestEnded: Bool)
        /// Sent upstream, no answer head yet.
        case forwarding(Forwarding)
        /// The answer's head went to the client; its body and trailers follow.
        case relaying(Relaying)
        /// The sidecar answered the call itself.
        case answeredLocally(clientBodyWaits: Bool, requestEnded: Bool)
        /// The client stream was reset by the sidecar; its close is awaited.
        case reset
        /// The client stream closed: the call is over.
        case closed
    }

    /// How often the call went upstream.
    struct Sends: Equatable {
        /// 1 for the first token, 2 for the retry with a fresh one.
        var attempt = 0
        /// Exchanges started in all (`ReplayPolicy.maxSends`).
        var starts = 0
    }

    struct Forwarding: Equatable {
        var sends: Sends
        var requestEnded: Bool
        /// Request body bytes this exchange took, while all are copied for a resend (every send
        /// keeps its copy: `ReplayPolicy` bounds the sends); nil once a byte went that was not
        /// copied (past `ReplayPolicy.bodyBound`).
        var copied: Int?
        /// A request body byte left in this exchange: it is not sent again if refused or lost.
        var bodySent = false
        /// The exchange's body pull found nothing and waits for `resumeUpstreamBody`.
        var upstreamBodyWaits = false
    }

    struct Relaying: Equatable {
        var requestEnded: Bool
        var responseEnded: Bool
        var upstreamBodyWaits: Bool
        /// The client stream's body read found nothing and waits for `resumeClientBody`.
        var clientBodyWaits = false
        /// Since when response bytes wait for a client that has taken none of them.
        var waitingSince: Double?
    }

    /// Why the sidecar answers a call itself.
    enum LocalAnswer: Equatable {
        case failure(ProxyFailure)
        /// A gRPC status with no REST counterpart (UNIMPLEMENTED for an unsupported encoding).
        case grpcStatus(Int, String)
        /// The call's `grpc-timeout` passed before it was forwarded.
        case deadline
        /// The head or first message did not arrive within `headTimeout`.
        case headTimeout
    }

    /// The sidecar's own answer: cancel the call's timer and its upstream exchange (if
    /// `cancelUpstream`), release its buffers, answer `why`.
    struct Answer: Equatable {
        let why: LocalAnswer
        let cancelUpstream: Bool
    }

    enum RequestDataAction: Equatable {
        /// Keep it, bounded by the first message, with stream credit up to it; then route.
        case bufferFirstMessage
        /// Keep it for the upstream.
        case buffer
        /// Keep it; the upstream's body pull waits for it.
        case bufferAndResumeUpstream
        /// Drop it; the stream's credit is not returned (its window bounds it).
        case discard
    }

    enum RequestEndedAction: Equatable { case route, resumeUpstreamBody }

    enum RoutedAction: Equatable {
        /// Fetch the token; arm the timer for `armTimerAt` (the call's deadline), or cancel it.
        case fetchToken(armTimerAt: Double?)
    }

    enum TokenArrivedAction: Equatable {
        /// Cancel the timer and start an upstream exchange.
        case startUpstream
    }

    enum RequestBodyAction: Equatable {
        /// Send the bytes pulled; keep a copy of them for a retry if `keepCopy`.
        case send(keepCopy: Bool)
        /// Send the bytes pulled (maybe none) as the request's last.
        case end(keepCopy: Bool)
        /// Nothing to send; wait for `resumeUpstreamBody`.
        case wait
    }

    enum UpstreamHeaderBlockAction: Equatable {
        /// An interim 1xx head: not the answer.
        case skipInterim
        /// Cancel the exchange, put the sent bytes back, drop the refused token and fetch a
        /// fresh one: the client never sees this answer.
        case retryWithFreshToken
        case relayHead(endStream: Bool)
        /// The answer's trailers: keep them for the end of the body; resume the client body
        /// if it waited.
        case keepTrailers(resumeClientBody: Bool)
    }

    enum UpstreamDataEndedAction: Equatable { case resumeClientBody }

    enum ResponseBytesAction: Equatable {
        /// Buffer them for the client; resume its body read if it waited; arm the timer for
        /// `armTimerAt` if set.
        case keep(resumeClientBody: Bool, armTimerAt: Double?)
        /// Nobody takes them: give their credit back at once.
        case drop
    }

    enum ResponseReadAction: Equatable {
        case send
        /// The answer's last bytes (maybe none), then its trailers if any were kept.
        case end
        /// Nothing to send; wait for `resumeClientBody`.
        case wait
    }

    enum UpstreamClosedAction: Equatable {
        /// Put the copy of the request bytes sent back in front of the unsent ones and start a
        /// new exchange for the same attempt.
        case resend
        case answer(Answer)
        /// Reset the client stream (the answer was cut short).
        case resetClient(errorCode: UInt32)
    }

    enum TickAction: Equatable {
        case armTimer(at: Double)
        case answer(Answer)
        /// The client took nothing for `ioTimeout`: reset its stream (CANCEL) and cancel the
        /// upstream exchange.
        case resetStalledClient
    }

    enum AnswerSentAction: Equatable {
        /// RFC 9113 §8.1: after a complete answer the server may reset a request still open
        /// with NO_ERROR, so a client that keeps sending stops.
        case resetClient(errorCode: UInt32)
    }

    enum StreamClosedAction: Equatable {
        /// Cancel the timer (and the upstream exchange), release the buffers, write the call
        /// record.
        case finish(cancelUpstream: Bool)
    }

    static let noError: UInt32 = 0
    static let internalError: UInt32 = 2
    static let cancel: UInt32 = 8

    private(set) var state: State = .receivingHead

    /// The client ended its side (END_STREAM on the head, DATA or trailers). The request's
    /// half of the stream ends independently of the answer's, so each state that outlives the
    /// head carries it (`requestEndReceived` sets it in whichever state the call is).
    var requestEnded: Bool {
        switch state {
        case .routing(_, let ended), .awaitingToken(_, _, let ended), .answeredLocally(_, let ended): return ended
        case .forwarding(let forwarding): return forwarding.requestEnded
        case .relaying(let relaying): return relaying.requestEnded
        case .receivingHead, .reset, .closed: return false
        }
    }
    /// The request's method may be sent twice (`ReplayPolicy.isIdempotent`); known once its
    /// head ended.
    private(set) var isIdempotent = false
    /// The head and first message must be complete by this time.
    let headDeadline: Double
    /// A relayed answer the client takes nothing of for this long is reset (a client that
    /// stopped reading must not hold its upstream stream and buffers for ever).
    let ioTimeout: Double

    init(now: Double, headTimeout: Double, ioTimeout: Double = 30) {
        headDeadline = now + headTimeout
        self.ioTimeout = ioTimeout
    }

    /// The next header block from the client is the request head (any later one: trailers).
    var awaitsRequestHead: Bool { state == .receivingHead }

    /// A call being routed reads more of its first message.
    var isRouting: Bool { if case .routing = state { return true } else { return false } }

    // MARK: The client's request

    /// The request head ended; `callDeadline` (from `grpc-timeout`) is when the call must be
    /// forwarded by. Returns when to arm the call's timer; route the call.
    mutating func requestHeadEnded(endStream: Bool, callDeadline: Double?, idempotent: Bool = false) -> Double? {
        guard state == .receivingHead else { return nil }
        isIdempotent = idempotent
        state = .routing(callDeadline: callDeadline, requestEnded: endStream)
        return min(headDeadline, callDeadline ?? .infinity)
    }

    /// The client ended its side: DATA END_STREAM, or trailers (never forwarded).
    mutating func requestEndReceived() -> RequestEndedAction? {
        switch state {
        case .routing(let callDeadline, _):
            state = .routing(callDeadline: callDeadline, requestEnded: true)
            return .route
        case .awaitingToken(let callDeadline, let sends, _):
            state = .awaitingToken(callDeadline: callDeadline, sends: sends, requestEnded: true)
            return nil
        case .answeredLocally(let clientBodyWaits, _):
            state = .answeredLocally(clientBodyWaits: clientBodyWaits, requestEnded: true)
            return nil
        case .forwarding(var forwarding):
            forwarding.requestEnded = true
            let resume = forwarding.upstreamBodyWaits
            forwarding.upstreamBodyWaits = false
            state = .forwarding(forwarding)
            return resume ? .resumeUpstreamBody : nil
        case .relaying(var relaying):
            relaying.requestEnded = true
            let resume = relaying.upstreamBodyWaits
            relaying.upstreamBodyWaits = false
            state = .relaying(relaying)
            return resume ? .resumeUpstreamBody : nil
        case .receivingHead, .reset, .closed: return nil
        }
    }

    mutating func requestData() -> RequestDataAction {
        switch state {
        case .routing: return .bufferFirstMessage
        case .awaitingToken: return .buffer
        case .forwarding(var forwarding):
            guard forwarding.upstreamBodyWaits else { return .buffer }
            forwarding.upstreamBodyWaits = false
            state = .forwarding(forwarding)
            return .bufferAndResumeUpstream
        case .relaying(var relaying):
            guard relaying.upstreamBodyWaits else { return .buffer }
            relaying.upstreamBodyWaits = false
            state = .relaying(relaying)
            return .bufferAndResumeUpstream
        case .receivingHead, .answeredLocally, .reset, .closed: return .discard
        }
    }

    // MARK: Routing and the token

    /// The entity is known.
    mutating func routed() -> RoutedAction? {
        guard case .routing(let deadline, let requestEnded) = state else { return nil }
        state = .awaitingToken(callDeadline: deadline, sends: Sends(), requestEnded: requestEnded)
        return .fetchToken(armTimerAt: deadline)
    }

    /// The sidecar answers the call itself (only before an answer head went to the client).
    mutating func refused(_ why: LocalAnswer) -> Answer? {
        answer(why)
    }

    mutating func tokenArrived() -> TokenArrivedAction? {
        guard case .awaitingToken(_, var sends, let requestEnded) = state else { return nil }
        sends.attempt += 1
        sends.starts += 1
        state = .forwarding(Forwarding(sends: sends, requestEnded: requestEnded, copied: 0))
        return .startUpstream
    }

    mutating func tokenFailed(_ failure: ProxyFailure) -> Answer? {
        guard case .awaitingToken = state else { return nil }
        return answer(.failure(failure))
    }

    // MARK: The upstream exchange

    /// The upstream exchange pulled `count` request body bytes; `remaining` are still held.
    mutating func requestBodyRead(count: Int, remaining: Int) -> RequestBodyAction {
        var keepCopy = false
        switch state {
        case .forwarding(var forwarding):
            if count > 0 {
                forwarding.bodySent = true
                if let copied = forwarding.copied, copied + count <= ReplayPolicy.bodyBound {
                    forwarding.copied = copied + count
                    keepCopy = true
                } else {
                    forwarding.copied = nil
                }
            }
            if count <= 0 && !(remaining == 0 && forwarding.requestEnded) { forwarding.upstreamBodyWaits = true }
            state = .forwarding(forwarding)
        case .relaying(var relaying):
            guard count <= 0 && !(remaining == 0 && relaying.requestEnded) else { break }
            relaying.upstreamBodyWaits = true
            state = .relaying(relaying)
        case .receivingHead, .routing, .awaitingToken, .answeredLocally, .reset, .closed:
            break
        }
        if remaining == 0 && requestEnded { return .end(keepCopy: keepCopy) }
        return count > 0 ? .send(keepCopy: keepCopy) : .wait
    }

    /// A header block of the answer. `informational`: its `:status` is 1xx; `unauthenticated`:
    /// gRPC status 16 or HTTP 401.
    mutating func upstreamHeaderBlock(endStream: Bool, informational: Bool, unauthenticated: Bool) -> UpstreamHeaderBlockAction? {
        switch state {
        case .forwarding(let forwarding):
            if informational { return .skipInterim }
            // A revoked or rotated token: one more try with a fresh one, unseen by the client,
            // if every byte sent so far was kept. A 401's body (Fleet Engine's JSON error) goes
            // with the cancelled exchange, as on HTTP/1.1 (docs/CONTRACT.md §5).
            if unauthenticated && ReplayPolicy.mayResend(.unauthenticated, replayFacts(forwarding)) {
                state = .awaitingToken(callDeadline: nil, sends: forwarding.sends, requestEnded: forwarding.requestEnded)
                return .retryWithFreshToken
            }
            state = .relaying(Relaying(requestEnded: forwarding.requestEnded, responseEnded: endStream,
                                       upstreamBodyWaits: forwarding.upstreamBodyWaits))
            return .relayHead(endStream: endStream)
        case .relaying(var relaying):
            guard !relaying.responseEnded else { return nil }
            let resume = relaying.clientBodyWaits
            relaying.responseEnded = true
            relaying.clientBodyWaits = false
            state = .relaying(relaying)
            return .keepTrailers(resumeClientBody: resume)
        case .receivingHead, .routing, .awaitingToken, .answeredLocally, .reset, .closed:
            return nil
        }
    }

    mutating func upstreamDataEnded() -> UpstreamDataEndedAction? {
        guard case .relaying(var relaying) = state, !relaying.responseEnded else { return nil }
        let resume = relaying.clientBodyWaits
        relaying.responseEnded = true
        relaying.clientBodyWaits = false
        state = .relaying(relaying)
        return resume ? .resumeClientBody : nil
    }

    /// Response body bytes arrived from the upstream.
    mutating func responseBytes(now: Double) -> ResponseBytesAction {
        guard case .relaying(var relaying) = state else { return .drop }
        let resume = relaying.clientBodyWaits
        relaying.clientBodyWaits = false
        var armTimerAt: Double?
        if relaying.waitingSince == nil {
            relaying.waitingSince = now
            armTimerAt = now + ioTimeout
        }
        state = .relaying(relaying)
        return .keep(resumeClientBody: resume, armTimerAt: armTimerAt)
    }

    /// The client stream's body read took `count` response bytes; `remaining` are still held.
    mutating func responseRead(count: Int, remaining: Int, now: Double) -> ResponseReadAction {
        switch state {
        case .relaying(var relaying):
            if count > 0, relaying.waitingSince != nil { relaying.waitingSince = remaining == 0 ? nil : now }
            if remaining == 0 && relaying.responseEnded { state = .relaying(relaying); return .end }
            if count <= 0 { relaying.clientBodyWaits = true }
            state = .relaying(relaying)
        case .answeredLocally(_, let requestEnded):
            if remaining == 0 { return .end }
            if count <= 0 { state = .answeredLocally(clientBodyWaits: true, requestEnded: requestEnded) }
        case .receivingHead, .routing, .awaitingToken, .forwarding, .reset, .closed:
            break
        }
        return count > 0 ? .send : .wait
    }

    /// The upstream exchange ended (`end` says how).
    mutating func upstreamClosed(_ end: UpstreamEnd) -> UpstreamClosedAction? {
        switch (state, end) {
        case (_, .completed):
            return nil
        case (.forwarding(let forwarding), .unprocessed(let failure)):
            return resendOrAnswer(forwarding, .unprocessed, failure)
        case (.forwarding(let forwarding), .connectionLost(let failure)):
            return resendOrAnswer(forwarding, .connectionLost, failure)
        case (.forwarding(let forwarding), .declined(let failure)):
            return resendOrAnswer(forwarding, .declined, failure)
        case (.forwarding, .failed(let failure)):
            return answer(.failure(failure), cancelUpstream: false).map { .answer($0) }
        case (.relaying, _):
            state = .reset
            return .resetClient(errorCode: Self.internalError)
        default:
            return nil
        }
    }

    /// The facts `ReplayPolicy` judges this call's resend by.
    private func replayFacts(_ forwarding: Forwarding) -> ReplayPolicy.Call {
        // Intact: no body byte left, or every one that left was copied (`copied`).
        ReplayPolicy.Call(isIdempotent: isIdempotent, sends: forwarding.sends.starts, tokenRetried: forwarding.sends.attempt > 1,
                          requestIntact: !forwarding.bodySent || forwarding.copied != nil)
    }

    /// An exchange ended before its answer's head: sent again when `ReplayPolicy` allows (the
    /// shell puts the copy of the bytes sent back in front first), else answered with
    /// `failure`. A declined exchange counts as a send: a gRPC call goes to the same HTTP/2
    /// pool again, so only the count bounds it.
    private mutating func resendOrAnswer(_ forwarding: Forwarding, _ why: ReplayPolicy.Why, _ failure: ProxyFailure) -> UpstreamClosedAction? {
        guard ReplayPolicy.mayResend(why, replayFacts(forwarding)) else {
            return answer(.failure(failure), cancelUpstream: false).map { .answer($0) }
        }
        var sends = forwarding.sends
        sends.starts += 1
        state = .forwarding(Forwarding(sends: sends, requestEnded: forwarding.requestEnded, copied: 0))
        return .resend
    }

    // MARK: Time, the answer's end and the stream's close

    /// A timer fired (or any moment): answers the call if one of its deadlines passed.
    mutating func tick(now: Double) -> TickAction? {
        switch state {
        case .routing(let callDeadline, _):
            if let callDeadline, now >= callDeadline { return answer(.deadline).map { .answer($0) } }
            if now >= headDeadline { return answer(.headTimeout).map { .answer($0) } }
            return .armTimer(at: min(headDeadline, callDeadline ?? .infinity))
        case .awaitingToken(let callDeadline?, _, _):
            if now >= callDeadline { return answer(.deadline).map { .answer($0) } }
            return .armTimer(at: callDeadline)
        case .relaying(let relaying):
            guard let since = relaying.waitingSince else { return nil }
            guard now >= since + ioTimeout else { return .armTimer(at: since + ioTimeout) }
            state = .reset
            return .resetStalledClient
        case .receivingHead, .awaitingToken, .forwarding, .answeredLocally, .reset, .closed:
            return nil
        }
    }

    /// Our answer's END_STREAM went out to the client.
    mutating func answerSent() -> AnswerSentAction? {
        guard case .answeredLocally(_, requestEnded: false) = state else { return nil }
        return .resetClient(errorCode: Self.noError)
    }

    /// The client stream closed (normally or reset).
    mutating func streamClosed() -> StreamClosedAction? {
        let upstream: Bool
        switch state {
        case .closed: return nil
        case .forwarding, .relaying: upstream = true
        case .receivingHead, .routing, .awaitingToken, .answeredLocally, .reset: upstream = false
        }
        state = .closed
        return .finish(cancelUpstream: upstream)
    }

    /// The sidecar answers the call itself (only before an answer head went to the client).
    private mutating func answer(_ why: LocalAnswer) -> Answer? {
        if case .forwarding = state { return answer(why, cancelUpstream: true) }
        return answer(why, cancelUpstream: false)
    }

    private mutating func answer(_ why: LocalAnswer, cancelUpstream: Bool) -> Answer? {
        switch state {
        case .relaying, .answeredLocally, .reset, .closed: return nil
        case .receivingHead, .routing, .awaitingToken, .forwarding: break
        }
        state = .answeredLocally(clientBodyWaits: false, requestEnded: requestEnded)
        return Answer(why: why, cancelUpstream: cancelUpstream)
    }
}
