/// The upstream half of a REST call when REST goes by HTTP/1.1 (`RESTUpstreamRoute`,
/// docs/CONTRACT.md §6), whichever protocol its client speaks: one request on a connection
/// borrowed from the `HTTP1UpstreamPool`, the answer relayed back to the client half. The
/// client half drives it through `UpstreamExchange` as it drives an `H2UpstreamStream`, and it
/// reports through `UpstreamExchangeDelegate` the same facts (a head, data, the end and how),
/// so the call's machine (`HTTP1Exchange`, `H2CallState`) decides as for any exchange; the
/// HTTP/1.1 connection reports to it as its `ResponseSink`. A new one for each send (a resend
/// or a 401 retry).
///
/// The request: the head the client half writes for HTTP/1.1; the body pulled from the client
/// half, held and sent with the head by its length when it has all arrived (up to
/// `ReplayPolicy.bodyBound`), else streamed by the client's declared length, or chunked, never
/// past the upstream connection's high-water mark. Under a `content-length` the request's last byte waits for
/// the client's END_STREAM: only the end of the stream shows the body is no longer than it
/// said, and until then the upstream must not hold a request it could read as complete (a
/// longer body breaks the exchange, and the upstream is left a request cut short). The
/// answer: its head as read (`AnswerHead.http1`), its body (de-chunked by the connection)
/// handed over as it arrives; reading pauses while the client half holds more than
/// `responseBound` bytes it has not taken.
///
/// `delegate` is strong and dropped when the exchange is cancelled or reports its end; the
/// client half drops its own reference to this one when the call finishes. The connection is
/// this exchange's from the pool's hand-over until the answer ends (it is back in the pool
/// then) or the exchange breaks or is cancelled (it is discarded: a half-used HTTP/1.1
/// connection cannot carry another request).
final class H1UpstreamExchange: UpstreamExchange, ResponseSink {
    /// Response bytes the client half may hold untaken before reading from the upstream pauses.
    static let responseBound = HTTP2UpstreamConnection.responseBufferBound
    private static let pullBytes = 16 * 1024

    private var delegate: UpstreamExchangeDelegate?
    private let pool: HTTP1UpstreamPool
    private let loop: EventLoop
    private let host: String
    private let highWater: Int
    private let method: String
    private var ticket: PoolTicket?
    private var connection: HTTP1UpstreamConnection?
    private var framing = H1MessageTranslation.RequestFraming.none
    /// Body bytes still owed under `.contentLength`.
    private var bodyLeft = 0
    /// The request's last byte (of its body, or of its head when nothing is owed), held while
    /// the client has not ended its stream; sent when it does.
    private var heldLastByte: UInt8?
    private var requestEnded = false
    /// The answer's head when no body follows it: reported at the answer's end, once the
    /// connection is back in the pool, so a retry it causes never costs the connection.
    private var bodilessHead: ResponseHead?
    private var responseDelivered = 0
    private var responseTaken = 0
    private var readingPaused = false
    /// Resumes reading after the current callbacks, not inside the client session's read of the
    /// answer; made the first time reading pauses.
    private var resumeWakeup: LoopWakeup?

    /// Starts an exchange for the call `delegate` is the client half of; a failure (a head that
    /// cannot be one HTTP/1.1 request, no connection) is reported to `delegate`, maybe before
    /// this returns.
    static func start(_ delegate: UpstreamExchangeDelegate, pool: HTTP1UpstreamPool, loop: EventLoop, host: String,
                      highWater: Int) -> H1UpstreamExchange {
        let exchange = H1UpstreamExchange(delegate, pool: pool, loop: loop, host: host, highWater: highWater)
        exchange.start()
        return exchange
    }

    private init(_ delegate: UpstreamExchangeDelegate, pool: HTTP1UpstreamPool, loop: EventLoop, host: String, highWater: Int) {
        self.delegate = delegate
        self.pool = pool
        self.loop = loop
        self.host = host
        self.highWater = highWater
        method = delegate.requestMethod
    }

    private func start() {
        guard let delegate else { return }
        if let failure = delegate.http1Refusal {
            end(.failed(failure))
            return
        }
        if let connection = pool.takeIdle() {
            lent(connection)
            return
        }
        // The completion holds this exchange until the pool calls it or the ticket is cancelled.
        ticket = pool.acquire { [self] result in
            ticket = nil
            switch result {
            case .failure(let failure): end(.failed(failure))
            case .success(let connection): lent(connection)
            }
        }
    }

    /// Reports the exchange's end, once; nothing is reported after it.
    private func end(_ end: UpstreamEnd) {
        guard let delegate else { return }
        self.delegate = nil
        delegate.upstreamClosed(end)
    }

    /// The request is sent on `connection`: its head, and the body held with it when it has
    /// all arrived; the rest is pumped as the client half has it.
    private func lent(_ connection: HTTP1UpstreamConnection) {
        guard let delegate else {
            pool.release(connection, reusable: true)
            return
        }
        // The held body crosses in the pool's buffer, emptied once it is written (or refused).
        let hasBody = delegate.requestHasBody
        let whole = !hasBody || pullHeld(from: delegate)
        let heldCount = hasBody ? pool.crossing.count : 0
        var framing = H1MessageTranslation.framing(wholeBody: whole ? heldCount : nil, declaredLength: delegate.requestDeclaredLength)
        if case .success(.contentLength(let n)) = framing, heldCount > n {
            framing = .failure(.malformedRequest("the request body is longer than its content-length"))
        }
        switch framing {
        case .failure(let failure):
            pool.crossing.drainAll()
            pool.release(connection, reusable: true)
            end(.failed(failure))
        case .success(let framing):
            self.connection = connection
            self.framing = framing
            if case .contentLength(let n) = framing { bodyLeft = n - heldCount }
            requestEnded = whole
            let holdLastByte = !whole && framing == .contentLength(heldCount)
            connection.beginExchange(method: method, sink: self)
            // Head and held body in one write: one packet, one wake-up of the upstream.
            HeadWriter.withBytes({ out in
                delegate.writeRequestHead(host: host, framing: framing, to: &out)
                guard heldCount > 0 else { return }
                if framing == .chunked { Self.writeChunkHeader(heldCount, to: &out) }
                pool.crossing.forEachPiece { out.write($0.buffer); return true }
                if framing == .chunked { out.write(literal: "\r\n") }
            }, use: { bytes in
                guard holdLastByte, let last = bytes.last else { return connection.send(bytes) }
                connection.send(UnsafeRawBufferPointer(rebasing: bytes.dropLast()))
                heldLastByte = last
            })
            if heldCount > 0 { pool.crossing.drainAll() }
            if !whole { pumpRequestBody() }
        }
    }

    /// Pulls the body the client half holds into the pool's crossing buffer, up to about
    /// `ReplayPolicy.bodyBound`: true when that is all of it.
    private func pullHeld(from delegate: UpstreamExchangeDelegate) -> Bool {
        while pool.crossing.count < ReplayPolicy.bodyBound {
            switch delegate.pullRequestBody(upTo: Self.pullBytes, { pool.crossing.add($0) }) {
            case .wait: return false
            case .bytes(_, let end): if end { return true }
            }
        }
        return false
    }

    /// Moves body bytes from the client half to the connection until the request has gone,
    /// the client half has none, or the connection's output is over the high-water mark
    /// (`connectionDrained` comes back here).
    private func pumpRequestBody() {
        defer { pool.crossing.drainAll() }
        while !requestEnded, let connection, let delegate, connection.outputLength <= highWater {
            switch delegate.pullRequestBody(upTo: Self.pullBytes, { pool.crossing.add($0) }) {
            case .wait:
                return
            case .bytes(_, let end):
                send(end: end, on: connection)
            }
        }
    }

    /// Sends the body bytes just pulled into the pool's crossing buffer in the request's
    /// framing; a body that does not fit its framing (more or fewer bytes than its length)
    /// ends the exchange before a byte past it leaves.
    private func send(end isLast: Bool, on connection: HTTP1UpstreamConnection) {
        let count = pool.crossing.count
        switch framing {
        case .contentLength:
            guard count <= bodyLeft, !isLast || count == bodyLeft else {
                return broke(.malformedRequest("the request body is not as long as its content-length"))
            }
            bodyLeft -= count
            if isLast, let last = heldLastByte {
                // Nothing can follow a held byte but the end (the guard): the request is whole.
                heldLastByte = nil
                connection.send([last])
            } else if !isLast, bodyLeft == 0, count > 0 {
                connection.send(pool.crossing, count: count - 1)
                withUnsafeTemporaryAllocation(byteCount: 1, alignment: 1) { last in
                    if pool.crossing.remove(into: last) == 1 { heldLastByte = last[0] }
                }
            } else if count > 0 {
                connection.send(pool.crossing, count: count)
            }
        case .chunked:
            // The chunk with its framing in one write.
            HeadWriter.withBytes({ out in
                if count > 0 {
                    Self.writeChunkHeader(count, to: &out)
                    pool.crossing.forEachPiece { out.write($0.buffer); return true }
                    out.write(literal: "\r\n")
                }
                if isLast { out.write(literal: "0\r\n\r\n") }
            }, use: { connection.send($0) })
        case .none:
            guard count == 0 else { return broke(.malformedRequest("the request body came after its end")) }
        }
        if isLast { requestEnded = true }
    }

    private static func writeChunkHeader(_ count: Int, to out: inout HeadWriter) {
        out.write(String(count, radix: 16))
        out.write(literal: "\r\n")
    }

    /// The exchange fails with its connection, which a half-sent request leaves unusable.
    private func broke(_ failure: ProxyFailure) {
        // Emptied before the report, which may start another exchange that uses it.
        pool.crossing.drainAll()
        if let connection {
            self.connection = nil
            pool.discard(connection, reason: failure.message)
        }
        end(.failed(failure))
    }

    // MARK: UpstreamExchange

    func resumeRequestBody() {
        pumpRequestBody()
    }

    func responseTaken(count: Int) {
        responseTaken += count
        guard readingPaused, responseDelivered - responseTaken <= Self.responseBound else { return }
        readingPaused = false
        resumeWakeup?.soon()
    }

    func cancel(_ why: UpstreamCancel) {
        delegate = nil
        ticket?.cancel()
        ticket = nil
        resumeWakeup?.cancel()
        guard let connection else { return }
        self.connection = nil
        pool.discard(connection, reason: why == .superseded ? "the call is sent again" : "the call ended")
    }

    // MARK: ResponseSink

    var requestFullySent: Bool { requestEnded }

    func responseHead(_ head: ResponseHead, from connection: HTTP1UpstreamConnection) {
        guard connection === self.connection, let delegate else { return }
        let framing = head.framing(requestMethod: method)
        switch framing {
        case .none, .contentLength(0):
            bodilessHead = head
        case .chunked, .contentLength, .untilClose:
            delegate.upstreamHeaderBlock(.http1(head, framing: framing), endStream: false)
        }
    }

    func responseBody(_ payload: borrowing EventBuffer, from connection: HTTP1UpstreamConnection) {
        guard connection === self.connection, let delegate else { return }
        responseDelivered += payload.count
        payload.forEachPiece { piece in
            delegate.upstreamData(piece)
            return self.delegate != nil // cancelled meanwhile: nothing more is reported
        }
        guard self.connection === connection, !readingPaused, responseDelivered - responseTaken > Self.responseBound else { return }
        readingPaused = true
        connection.pauseReading()
        if resumeWakeup == nil {
            resumeWakeup = LoopWakeup(loop: loop) { [unowned self] in
                if !readingPaused { self.connection?.resumeReading() }
            }
        }
    }

    func responseEnded(from connection: HTTP1UpstreamConnection) {
        guard connection === self.connection else { return }
        // Back in the pool already: it may carry another call from now on.
        self.connection = nil
        resumeWakeup?.cancel()
        if let head = bodilessHead {
            bodilessHead = nil
            delegate?.upstreamHeaderBlock(.http1(head, framing: head.framing(requestMethod: method)), endStream: true)
        } else {
            delegate?.upstreamDataEnded()
        }
        end(.completed)
    }

    func responseFailed(_ failure: ProxyFailure, retryable: Bool) {
        guard connection != nil else { return }
        connection = nil
        resumeWakeup?.cancel()
        // The keep-alive race: the origin closed a reused connection before answering, maybe
        // after reading the request (`ReplayPolicy` resends only what may run twice).
        end(retryable ? .connectionLost(failure) : .failed(failure))
    }

    func connectionDrained(_ connection: HTTP1UpstreamConnection) {
        guard connection === self.connection, connection.outputLength < highWater else { return }
        pumpRequestBody()
    }
}
