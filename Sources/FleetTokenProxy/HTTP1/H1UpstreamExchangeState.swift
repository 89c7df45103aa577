/// Where one REST call's exchange on a pooled HTTP/1.1 upstream connection stands
/// (`H1UpstreamExchange`, its shell), as a value after `TokenEntry`'s convention: one mutating
/// method per event, each returning its own action (nil: nothing to do), no sockets. The shell
/// holds the connection, the client half and the bytes; every fact about the exchange's
/// progress is here: the request's framing and how much of it is still owed, whether its last
/// byte is held back, the answer's progress and its backpressure.
///
/// | phase              | event                       | next               | action                                         |
/// |--------------------|-----------------------------|--------------------|------------------------------------------------|
/// | awaitingConnection | connectionLent, it frames   | exchanging         | sendHead(framing, holdLastByte, pumpBody)      |
/// | awaitingConnection | connectionLent, it does not | ended              | refuse (give the connection back, report)      |
/// | awaitingConnection | noConnection                | ended              | reportFailure                                  |
/// | awaitingConnection | cancelled                   | ended              | cancelTicket                                   |
/// | exchanging         | bodyPulled                  | exchanging / ended | send, sendHeldByte, sendChunk / broke          |
/// | exchanging         | answerHead                  | exchanging         | reportHead, or holdHead (no body follows)      |
/// | exchanging         | answerBytes, over the bound | exchanging         | pauseReading                                   |
/// | exchanging         | answerTaken, back under it  | exchanging         | resumeReading                                  |
/// | exchanging         | answerEnded                 | ended              | reportEnd(withHeldHead)                        |
/// | exchanging         | connectionBroke             | ended              | reportBreak(lost: the keep-alive race)         |
/// | exchanging         | cancelled                   | ended              | discardConnection                              |
/// | ended              | anything                    | ended              | nil (a lent connection is given back)          |
///
/// Under a declared length the request's last byte (of its body, or of its head when nothing
/// is owed) is held back until the client half says the body has ended: an HTTP/2 client's
/// END_STREAM is the only proof its body is no longer than it said, and until then the
/// upstream must not hold a request it could read as complete (docs/CONTRACT.md §6).
struct H1UpstreamExchangeState: Equatable {
    enum Phase: Equatable {
        /// A pool ticket is out.
        case awaitingConnection
        /// The request goes out on the lent connection and its answer comes back.
        case exchanging(Request, Answer)
        /// Reported its end, or cancelled: nothing more happens.
        case ended
    }

    struct Request: Equatable {
        let framing: H1MessageTranslation.RequestFraming
        /// Body bytes still owed under `.contentLength`.
        var bodyLeft: Int
        /// The request's last byte waits in the shell for the body's end.
        var lastByteHeld: Bool
        /// The request's last byte has gone.
        var ended: Bool
    }

    enum Answer: Equatable {
        case awaitingHead
        /// A head with no body after it waits for the answer's end, so a retry it causes finds
        /// the connection back in the pool.
        case headHeld
        case relaying(Relaying)
    }

    /// Answer bytes handed to the client half and taken by its client.
    struct Relaying: Equatable {
        var delivered = 0
        var taken = 0
        var readingPaused = false
    }

    enum LentAction: Equatable {
        /// Write the head (and the held body with it), holding its last byte back if
        /// `holdLastByte`; then pump the rest of the body if `pumpBody`.
        case sendHead(H1MessageTranslation.RequestFraming, holdLastByte: Bool, pumpBody: Bool)
        /// The request cannot be framed as the client declared it: give the connection back
        /// unused and report the failure.
        case refuse(ProxyFailure)
        /// The exchange is over: give the connection back unused.
        case giveBack
    }

    enum BodyAction: Equatable {
        /// Send the first `count` bytes pulled; with `holdingLastByte`, keep the one after
        /// them back (the body is whole but its end is not known yet).
        case send(count: Int, holdingLastByte: Bool)
        /// The body ended: send the byte held back, and the request is whole.
        case sendHeldByte
        /// Send the bytes pulled as a chunk (none: no chunk), then the last chunk if `last`.
        case sendChunk(count: Int, last: Bool)
        /// The body does not fit its framing: discard the connection (a request cut short) and
        /// report the failure.
        case broke(ProxyFailure)
    }

    enum HeadAction: Equatable { case reportHead, holdHead }
    enum PauseAction: Equatable { case pauseReading }
    enum ResumeAction: Equatable { case resumeReading }
    enum EndAction: Equatable { case reportEnd(withHeldHead: Bool) }
    enum BreakAction: Equatable {
        /// Report the end: `lost` (the request may have reached the origin) or failed.
        case reportBreak(lost: Bool)
    }
    enum FailureAction: Equatable { case reportFailure }
    enum CancelAction: Equatable { case cancelTicket, discardConnection }

    /// Answer bytes the client half may hold untaken before reading the connection pauses.
    let responseBound: Int
    private(set) var phase = Phase.awaitingConnection

    init(responseBound: Int) {
        self.responseBound = responseBound
    }

    /// Whether the shell should pull more of the body: the request is being sent and not whole.
    var wantsBody: Bool {
        if case .exchanging(let request, _) = phase { return !request.ended }
        return false
    }

    /// Whether the whole request left (asked when the answer ends: a connection whose request
    /// was cut short is never reused).
    var requestFullySent: Bool {
        if case .exchanging(let request, _) = phase { return request.ended }
        return true
    }

    // MARK: The connection

    /// A connection was lent. `held`: body bytes pulled before the head goes; `whole`: they are
    /// all of it; `declaredLength`: the length the client declared, if any.
    mutating func connectionLent(held: Int, whole: Bool, declaredLength: Int?) -> LentAction {
        guard phase == .awaitingConnection else { return .giveBack }
        var framing = H1MessageTranslation.framing(wholeBody: whole ? held : nil, declaredLength: declaredLength)
        if case .success(.contentLength(let n)) = framing, held > n {
            framing = .failure(.malformedRequest("the request body is longer than its content-length"))
        }
        switch framing {
        case .failure(let failure):
            phase = .ended
            return .refuse(failure)
        case .success(let framing):
            var left = 0
            if case .contentLength(let n) = framing { left = n - held }
            let holdLastByte = !whole && framing == .contentLength(held)
            phase = .exchanging(Request(framing: framing, bodyLeft: left, lastByteHeld: holdLastByte, ended: whole), .awaitingHead)
            return .sendHead(framing, holdLastByte: holdLastByte, pumpBody: !whole)
        }
    }

    /// The pool had no connection to lend.
    mutating func noConnection() -> FailureAction? {
        guard phase == .awaitingConnection else { return nil }
        phase = .ended
        return .reportFailure
    }

    // MARK: The request body

    /// The client half handed `count` more body bytes; `end`: they are its last. Nil when
    /// nothing is to be sent (no bytes, not the end), or no request is being sent.
    mutating func bodyPulled(count: Int, end: Bool) -> BodyAction? {
        guard case .exchanging(var request, let answer) = phase, !request.ended else { return nil }
        let action: BodyAction?
        switch request.framing {
        case .contentLength:
            guard count <= request.bodyLeft, !end || count == request.bodyLeft else {
                phase = .ended
                return .broke(.malformedRequest("the request body is not as long as its content-length"))
            }
            request.bodyLeft -= count
            if end && request.lastByteHeld {
                // Nothing can follow a held byte but the end (the guard): the request is whole.
                request.lastByteHeld = false
                action = .sendHeldByte
            } else if !end && request.bodyLeft == 0 && count > 0 {
                request.lastByteHeld = true
                action = .send(count: count - 1, holdingLastByte: true)
            } else {
                action = count > 0 ? .send(count: count, holdingLastByte: false) : nil
            }
        case .chunked:
            action = count > 0 || end ? .sendChunk(count: count, last: end) : nil
        case .none:
            guard count == 0 else {
                phase = .ended
                return .broke(.malformedRequest("the request body came after its end"))
            }
            action = nil
        }
        if end { request.ended = true }
        phase = .exchanging(request, answer)
        return action
    }

    // MARK: The answer

    /// The answer's head arrived; `bodiless`: no body follows it.
    mutating func answerHead(bodiless: Bool) -> HeadAction? {
        guard case .exchanging(let request, .awaitingHead) = phase else { return nil }
        phase = .exchanging(request, bodiless ? .headHeld : .relaying(Relaying()))
        return bodiless ? .holdHead : .reportHead
    }

    /// `count` answer bytes went to the client half. `.pauseReading` once more than the bound
    /// wait untaken.
    mutating func answerBytes(_ count: Int) -> PauseAction? {
        guard case .exchanging(let request, .relaying(var relaying)) = phase else { return nil }
        relaying.delivered += count
        let pause = !relaying.readingPaused && relaying.delivered - relaying.taken > responseBound
        if pause { relaying.readingPaused = true }
        phase = .exchanging(request, .relaying(relaying))
        return pause ? .pauseReading : nil
    }

    /// The client took `count` answer bytes. `.resumeReading` once a paused answer is back
    /// within the bound.
    mutating func answerTaken(_ count: Int) -> ResumeAction? {
        guard case .exchanging(let request, .relaying(var relaying)) = phase else { return nil }
        relaying.taken += count
        let resume = relaying.readingPaused && relaying.delivered - relaying.taken <= responseBound
        if resume { relaying.readingPaused = false }
        phase = .exchanging(request, .relaying(relaying))
        return resume ? .resumeReading : nil
    }

    /// The answer ended (the connection is back in the pool already).
    mutating func answerEnded() -> EndAction? {
        guard case .exchanging(_, let answer) = phase else { return nil }
        phase = .ended
        return .reportEnd(withHeldHead: answer == .headHeld)
    }

    /// The connection broke. `retryable`: a reused connection the origin closed before
    /// answering (the keep-alive race), which `ReplayPolicy` may resend as a lost connection.
    mutating func connectionBroke(retryable: Bool) -> BreakAction? {
        guard case .exchanging = phase else { return nil }
        phase = .ended
        return .reportBreak(lost: retryable)
    }

    /// The client half gave the exchange up.
    mutating func cancelled() -> CancelAction? {
        switch phase {
        case .awaitingConnection:
            phase = .ended
            return .cancelTicket
        case .exchanging:
            phase = .ended
            return .discardConnection
        case .ended:
            return nil
        }
    }
}
