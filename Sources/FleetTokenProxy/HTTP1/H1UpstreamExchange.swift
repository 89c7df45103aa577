/// The upstream half of a REST call when REST goes by HTTP/1.1 (`RESTUpstreamRoute`,
/// docs/CONTRACT.md §6), whichever protocol its client speaks: one request on a connection
/// borrowed from the `HTTP1UpstreamPool`, the answer relayed back to the client half. The
/// client half drives it through `UpstreamExchange` as it drives an `H2UpstreamStream`, and it
/// reports through `UpstreamExchangeDelegate` the same facts (a head, data, the end and how),
/// so the call's machine (`HTTP1Exchange`, `H2CallState`) decides as for any exchange; the
/// HTTP/1.1 connection reports to it as its `ResponseSink`. One for each send (a resend or a
/// 401 retry): a new one, or the client connection's previous one once it is over and
/// nothing else holds it (`reusable`, `restart`).
///
/// The request: the head the client half writes for HTTP/1.1; the body pulled from the client
/// half, held and sent with the head by its length when it has all arrived (up to
/// `ReplayPolicy.bodyBound`), else streamed by the client's declared length, or chunked, never
/// past the upstream connection's high-water mark; under a declared length its last byte waits
/// for the body's end (`H1UpstreamExchangeState`). The answer: its head as read
/// (`AnswerHead.http1`), its body (de-chunked by the connection) handed over as it arrives;
/// reading pauses while the client half holds more than `responseBound` bytes it has not
/// taken. What happens when is `state`'s decision; this class holds the bytes and the
/// connection and carries the actions out.
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

    /// Unchecked exclusivity (docs/ARCHITECTURE.md, State machines): the machine is a value
    /// whose mutating methods touch nothing but itself and return before the shell acts on
    /// their action, all on the loop's one thread, so no two accesses to it can overlap; the
    /// runtime's check of each event (a thread-local access set, about 120 instructions) could
    /// never fire.
    @exclusivity(unchecked) private var state = H1UpstreamExchangeState(responseBound: responseBound)
    private var delegate: UpstreamExchangeDelegate?
    private var ticket: PoolTicket?
    private var connection: HTTP1UpstreamConnection?
    private let pool: HTTP1UpstreamPool
    private let loop: EventLoop
    private let host: String
    private let highWater: Int
    private var method: String
    /// The request's last byte, while `state` holds it back.
    private var heldLastByte: UInt8 = 0
    /// The answer's head while `state` holds it for the answer's end.
    private var heldHead: ResponseHead?
    /// Resumes reading after the current callbacks, not inside the client session's read of the
    /// answer; made the first time reading pauses, disarmed (not freed) when a send ends, so a
    /// restarted exchange (`restart`) still has a working one (its action checks that the
    /// answer is paused).
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

    /// `spare` when it is an exchange whose last send is over and which nothing else holds any
    /// more (no pool ticket, connection or client half refers to it: the uniqueness check says
    /// so), to `restart`; nil when a new one is needed. The access to `spare` ends before the
    /// exchange starts (a start may report at once, and the call start another send).
    static func reusable(_ spare: inout H1UpstreamExchange?) -> H1UpstreamExchange? {
        guard isKnownUniquelyReferenced(&spare), let exchange = spare, exchange.isOver else { return nil }
        return exchange
    }

    /// Starts an exchange as `start(_:pool:...)` does, on this one (`reusable` said it may be):
    /// for a send of the same client connection, so to the same pool, host and mark. An
    /// HTTP/1.1 client connection carries one call at a time, and this spares each of its
    /// calls an object's allocation and set-up (`scripts/bench callgrind`).
    func restart(for delegate: UpstreamExchangeDelegate) {
        state = H1UpstreamExchangeState(responseBound: Self.responseBound)
        self.delegate = delegate
        method = delegate.requestMethod
        heldLastByte = 0
        heldHead = nil
        start()
    }

    /// Nothing of the last send is left: its end was reported or it was cancelled, and it holds
    /// neither a ticket nor a connection (its wake-up was disarmed with them).
    private var isOver: Bool { delegate == nil && ticket == nil && connection == nil }

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
            _ = state.noConnection()
            end(.failed(failure))
            return
        }
        if let connection = pool.takeIdle() {
            lent(connection)
            return
        }
        // The completion holds this exchange until the pool calls it or the ticket is cancelled.
        // A pool that answers at once (closed, too many waiting) has called it already: the
        // ticket is kept only while it waits (a completed one would keep the exchange from reuse).
        let waiting = pool.acquire { [self] result in
            ticket = nil
            switch result {
            case .failure(let failure):
                switch state.noConnection() {
                case .reportFailure?: end(.failed(failure))
                case nil: break
                }
            case .success(let connection):
                lent(connection)
            }
        }
        if waiting.isPending { ticket = waiting }
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
        // The held body crosses in the pool's buffer, emptied once it is written (or refused).
        let whole: Bool
        let held: Int
        var declaredLength: Int?
        if let delegate, state.phase == .awaitingConnection {
            let hasBody = delegate.requestHasBody
            whole = !hasBody || pullHeld(from: delegate)
            held = hasBody ? pool.crossing.count : 0
            declaredLength = delegate.requestDeclaredLength
        } else {
            (whole, held) = (true, 0)
        }
        switch state.connectionLent(held: held, whole: whole, declaredLength: declaredLength) {
        case .giveBack:
            pool.release(connection, reusable: true)
        case .refuse(let failure):
            pool.crossing.drainAll()
            pool.release(connection, reusable: true)
            end(.failed(failure))
        case .sendHead(let framing, let holdLastByte, let pumpBody):
            // Cancelled while its held body was pulled: nothing was sent on the connection.
            guard let delegate else { return pool.release(connection, reusable: true) }
            self.connection = connection
            connection.beginExchange(method: method, sink: self)
            // Head and held body in one write: one packet, one wake-up of the upstream.
            HeadWriter.withBytes({ out in
                delegate.writeRequestHead(host: host, framing: framing, to: &out)
                guard held > 0 else { return }
                if framing == .chunked { Self.writeChunkHeader(held, to: &out) }
                pool.crossing.forEachPiece { out.write($0.buffer); return true }
                if framing == .chunked { out.write(literal: "\r\n") }
            }, use: { bytes in
                guard holdLastByte, let last = bytes.last else { return connection.send(bytes) }
                connection.send(UnsafeRawBufferPointer(rebasing: bytes.dropLast()))
                heldLastByte = last
            })
            if held > 0 { pool.crossing.drainAll() }
            if pumpBody { pumpRequestBody() }
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
        while state.wantsBody, let connection, let delegate, connection.outputLength <= highWater {
            switch delegate.pullRequestBody(upTo: Self.pullBytes, { pool.crossing.add($0) }) {
            case .wait:
                return
            case .bytes(let count, let end):
                send(state.bodyPulled(count: count, end: end), on: connection)
            }
        }
    }

    /// Sends what `state` decided of the body bytes just pulled into the pool's crossing
    /// buffer.
    private func send(_ action: H1UpstreamExchangeState.BodyAction?, on connection: HTTP1UpstreamConnection) {
        switch action {
        case .send(let count, let holdingLastByte)?:
            connection.send(pool.crossing, count: count)
            if holdingLastByte {
                withUnsafeTemporaryAllocation(byteCount: 1, alignment: 1) { last in
                    if pool.crossing.remove(into: last) == 1 { heldLastByte = last[0] }
                }
            }
        case .sendHeldByte?:
            connection.send([heldLastByte])
        case .sendChunk(let count, let last)?:
            // The chunk with its framing in one write.
            HeadWriter.withBytes({ out in
                if count > 0 {
                    Self.writeChunkHeader(count, to: &out)
                    pool.crossing.forEachPiece { out.write($0.buffer); return true }
                    out.write(literal: "\r\n")
                }
                if last { out.write(literal: "0\r\n\r\n") }
            }, use: { connection.send($0) })
        case .broke(let failure)?:
            // Emptied before the report, which may start another exchange that uses it.
            pool.crossing.drainAll()
            self.connection = nil
            pool.discard(connection, reason: failure.message)
            end(.failed(failure))
        case nil:
            break
        }
    }

    private static func writeChunkHeader(_ count: Int, to out: inout HeadWriter) {
        out.write(String(count, radix: 16))
        out.write(literal: "\r\n")
    }

    // MARK: UpstreamExchange

    func resumeRequestBody() {
        pumpRequestBody()
    }

    func responseTaken(count: Int) {
        switch state.answerTaken(count) {
        case .resumeReading?: resumeWakeup?.soon()
        case nil: break
        }
    }

    func cancel(_ why: UpstreamCancel) {
        delegate = nil
        resumeWakeup?.disarm()
        switch state.cancelled() {
        case .cancelTicket?:
            ticket?.cancel()
            ticket = nil
        case .discardConnection?:
            guard let connection else { return }
            self.connection = nil
            pool.discard(connection, reason: why == .superseded ? "the call is sent again" : "the call ended")
        case nil:
            break
        }
    }

    // MARK: ResponseSink

    var requestFullySent: Bool { state.requestFullySent }

    func responseHead(_ head: ResponseHead, from connection: HTTP1UpstreamConnection) {
        guard connection === self.connection, let delegate else { return }
        let framing = head.framing(requestMethod: method)
        let bodiless: Bool
        switch framing {
        case .none, .contentLength(0): bodiless = true
        case .chunked, .contentLength, .untilClose: bodiless = false
        }
        switch state.answerHead(bodiless: bodiless) {
        case .reportHead?: delegate.upstreamHeaderBlock(.http1(head, framing: framing), endStream: false)
        case .holdHead?: heldHead = head
        case nil: break
        }
    }

    func responseBody(_ bytes: ByteView, from connection: HTTP1UpstreamConnection) {
        guard connection === self.connection, let delegate else { return }
        delegate.upstreamData(bytes)
        guard self.connection === connection else { return }
        switch state.answerBytes(bytes.count) {
        case .pauseReading?:
            connection.pauseReading()
            if resumeWakeup == nil {
                resumeWakeup = LoopWakeup(loop: loop) { [unowned self] in
                    if case .exchanging(_, .relaying(let relaying)) = state.phase, !relaying.readingPaused {
                        self.connection?.resumeReading()
                    }
                }
            }
        case nil:
            break
        }
    }

    func responseEnded(from connection: HTTP1UpstreamConnection) {
        guard connection === self.connection else { return }
        // Back in the pool already: it may carry another call from now on.
        self.connection = nil
        resumeWakeup?.disarm()
        switch state.answerEnded() {
        case .reportEnd(let withHeldHead)?:
            if withHeldHead, let head = heldHead {
                heldHead = nil
                delegate?.upstreamHeaderBlock(.http1(head, framing: head.framing(requestMethod: method)), endStream: true)
            } else {
                delegate?.upstreamDataEnded()
            }
            end(.completed)
        case nil:
            break
        }
    }

    func responseFailed(_ failure: ProxyFailure, retryable: Bool) {
        guard connection != nil else { return }
        connection = nil
        resumeWakeup?.disarm()
        switch state.connectionBroke(retryable: retryable) {
        // The keep-alive race: the origin closed a reused connection before answering, maybe
        // after reading the request (`ReplayPolicy` resends only what may run twice).
        case .reportBreak(let lost)?: end(lost ? .connectionLost(failure) : .failed(failure))
        case nil: break
        }
    }

    func connectionDrained(_ connection: HTTP1UpstreamConnection) {
        guard connection === self.connection, connection.outputLength < highWater else { return }
        pumpRequestBody()
    }
}
