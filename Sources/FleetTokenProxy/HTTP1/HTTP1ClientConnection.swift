import CEvent
import Logging

/// One client connection speaking HTTP/1.1 to the sidecar: the I/O shell around
/// `HTTP1Exchange`, which holds the call's state and decides every step.
///
/// It reads a request head, works out the entity, waits for that entity's token, borrows an
/// upstream connection, sends the head it writes itself (its own Host, framing and
/// Authorization) and the body in its own framing, then relays the answer. One call at a time;
/// pipelined requests wait in the input buffer. Its owner is the `ProxyServer`;
/// `close(reason:)` is its one way out.
final class HTTP1ClientConnection: ClientConnection, TransportDelegate, ResponseSink {
    /// How the request body arrives from the client.
    private enum RequestBody {
        case remaining(Int)
        case chunked(ChunkedBodyScanner)
    }

    /// The data of the call in flight (its state is in `exchange`). A class: updated in place
    /// many times per call.
    private final class CallData {
        /// Which call of the connection this is: the token and upstream callbacks check it
        /// instead of holding a weak reference (a side-table allocation per call).
        let serial: Int
        let head: RequestHead
        let key: EntityKey
        var record: CallRecord
        var body: RequestBody
        /// The whole request body, once the sidecar holds it (small bodies, chunked bodies):
        /// forwarded with a Content-Length, and kept for one resend.
        var held: [UInt8]?
        var token: String?
        var upstream: HTTP1UpstreamConnection?
        var ticket: PoolTicket?
        /// Bytes reserved from the process-wide buffer budget for this call.
        var reserved = 0
        /// A chunked answer to an HTTP/1.0 client is decoded.
        var dechunker: ChunkedBodyScanner?
        var continueSent = false

        /// The record is built here, where it stays, rather than copied in.
        init(serial: Int, head: RequestHead, key: EntityKey, started: Double, body: RequestBody) {
            self.serial = serial
            self.head = head
            self.key = key
            record = CallRecord(protocolName: "http1", started: started)
            record.method = head.method
            // The target becomes a String only when a line is written (see `finishCall`).
            record.entityType = key.type.rawValue
            self.body = body
        }
    }

    private var transport: Transport!
    private let core: ProxyCore
    private unowned let server: ProxyServer
    private var exchange: HTTP1Exchange
    private var call: CallData?
    /// The whole-head deadline's timer: one libevent event for the connection's life, armed
    /// lazily. A call that reads its head in time leaves it armed; when it fires it finds the
    /// deadline moved on (or no head awaited) and re-arms or stays quiet. A timer allocated,
    /// added and deleted per call cost about 2,000 instructions a call.
    private var headTimer: LoopWakeup!
    /// The monotonic time the armed event fires at; nil while not armed.
    private var headTimerArmedFor: Double?
    private var logger: Logger
    /// The answer's head waits here until its first body bytes (or its end), so head and body
    /// leave in one write: one packet and one wake-up of the client instead of two.
    private let corked: OpaquePointer
    let id: Int

    init(fd: Int32, core: ProxyCore, server: ProxyServer, id: Int) {
        self.core = core
        self.server = server
        self.id = id
        corked = evbuffer_new()
        var logger = core.logger
        logger[metadataKey: "conn"] = "\(id)"
        self.logger = logger
        let now = core.clock.monotonicNow
        exchange = HTTP1Exchange(now: now, headTimeout: core.limits.headTimeout)
        let bev = bufferevent_socket_new(core.loop.base, fd, Int32(BEV_OPT_CLOSE_ON_FREE.rawValue))!
        transport = Transport(bev: bev, delegate: self, directWrites: true)
        transport.readDirectly()
        // Set once: changing timeouts or read interest per call costs epoll_ctl calls on the
        // hot path. Reading stays on; the high-water mark bounds what a client can queue
        // while its call waits for a token or the upstream.
        transport.setTimeouts(read: core.limits.idleTimeout, write: core.limits.ioTimeout)
        transport.setReadHighWater(core.limits.maxHeadBytes + core.limits.bufferHighWater)
        transport.enableReading()
        // Unowned: `close` cancels the wakeup (freeing its event), so it never fires into a
        // freed connection.
        headTimer = LoopWakeup(loop: core.loop) { [unowned self] in headTimerFired() }
        armHeadTimer(at: now + core.limits.headTimeout)
    }

    deinit {
        evbuffer_free(corked)
    }

    /// The one close path: frees the socket, gives back a borrowed upstream connection that
    /// can no longer be trusted, returns held bytes to the budget, and tells the server.
    /// Idempotent.
    func close(reason: String) {
        guard !closed else { return }
        closed = true
        exchange.closed()
        endCall(discardUpstream: "client connection closed")
        stopHeadTimer()
        logger.trace("connection closed", metadata: ["reason": "\(reason)"])
        transport.close()
        server.connectionClosed(self)
    }

    /// Stops taking new requests; an idle connection closes now, a busy one after its call.
    func drain() {
        perform(exchange.drain(buffered: transport.inputLength))
    }

    /// Until a first request is read, the bytes may instead be the HTTP/2 preface.
    private var servedACall = false
    /// Set once by `close` (or when HTTP/2 takes the socket over).
    private var closed = false

    // MARK: TransportDelegate

    func transportReadable(_ transport: Transport) {
        switch exchange.phase {
        case .readingHead:
            perform(exchange.bytesArrived(now: core.clock.monotonicNow))
            readRequests()
        case .readingBody: readChunkedBody()
        case .forwarding: pumpRequestBody()
        default: break
        }
    }

    func transportWritable(_ transport: Transport) {
        switch exchange.phase {
        case .closingAfterFlush:
            if transport.outputLength == 0 { perform(exchange.outputFlushed()) }
        case .forwarding:
            // The client caught up: resume the upstream answer.
            if transport.outputLength < core.limits.bufferHighWater { call?.upstream?.resumeReading() }
        default:
            break
        }
    }

    func transportEvent(_ transport: Transport, events: Int16) {
        let e = Int32(events)
        if e & BEV_EVENT_TIMEOUT != 0 && e & BEV_EVENT_READING != 0 {
            if case .readingHead = exchange.phase {
                close(reason: transport.inputLength == 0 ? "idle" : "request head too slow")
                return
            }
            let bodyStillArriving = exchange.phase == .readingBody
                || (exchange.phase == .forwarding && exchange.call?.requestSent == false)
            if !bodyStillArriving {
                // Quiet because it waits for us (token, upstream answer): those waits have
                // their own bounds. libevent disabled reading on the timeout; turn it back on.
                transport.enableReading()
                return
            }
        }
        close(reason: transport.describe(events: e))
    }

    // MARK: The state machine's actions

    private func perform(_ actions: HTTP1Exchange.Actions) {
        guard let action = actions.action, !closed else { return }
        switch action {
        case .armHeadDeadline(let at): armHeadTimer(at: at)
        case .readBody: readChunkedBody()
        case .lookUpToken: lookUpToken()
        case .refetchToken: refetchToken()
        case .acquireUpstream: acquireUpstream()
        case .sendRequest: sendRequest()
        case .relayResponse: break // done in responseHead, which knows the head
        case .finishCall(let keepAlive): finishCall(keepAlive: keepAlive)
        case .refuse(let failure, let keepAlive): answerRefusal(failure, keepAlive: keepAlive)
        case .closeAfterFlush:
            uncork()
            endCall(discardUpstream: "answer cut short")
            finishAndClose()
        case .close(let reason): close(reason: reason)
        }
    }

    /// Makes sure the head timer fires no later than `deadline`. Deadlines only move later
    /// (each is a fixed time after the previous call's end), so an armed timer is usually left
    /// as it is and re-armed when it fires.
    private func armHeadTimer(at deadline: Double) {
        if let armed = headTimerArmedFor, armed <= deadline { return }
        headTimerArmedFor = deadline
        headTimer.arm(after: max(0, deadline - core.clock.monotonicNow))
    }

    /// For good: the connection is closing or handing its socket to HTTP/2.
    private func stopHeadTimer() {
        headTimerArmedFor = nil
        headTimer.cancel()
    }

    /// The head timer fired at the deadline it was armed for: the state machine decides,
    /// unless a later head's deadline has replaced that one (then the timer waits for it).
    private func headTimerFired() {
        guard let armed = headTimerArmedFor else { return }
        headTimerArmedFor = nil
        guard !closed else { return }
        let now = max(armed, core.clock.monotonicNow)
        if case .readingHead(let deadline?) = exchange.phase, deadline > now {
            armHeadTimer(at: deadline)
            return
        }
        perform(exchange.headDeadlinePassed(now: now, buffered: transport.inputLength))
    }

    // MARK: Reading requests

    /// Parses and starts the next request, if a whole head is buffered.
    private func readRequests() {
        guard case .readingHead = exchange.phase, transport.isOpen else { return }
        let available = transport.inputLength
        guard available > 0 else { return }
        if !servedACall {
            switch HTTP2Preface.match(transport.input, available: available) {
            case .matches:
                // h2c with prior knowledge: the HTTP/2 connection takes the socket over.
                closed = true
                exchange.closed()
                stopHeadTimer()
                server.upgrade(self, transport: transport)
                return
            case .needMore:
                return
            case .differs:
                break
            }
        }
        let limits = core.limits
        switch transport.withInput(upTo: limits.maxHeadBytes, {
            HTTP1Parser.parseRequest($0.raw, maxHeadBytes: limits.maxHeadBytes, maxHeaderCount: limits.maxHeaderCount)
        }) {
        case .incomplete:
            break
        case .invalid(let failure):
            core.statistics.calls += 1
            var record = CallRecord(protocolName: "http1", started: core.clock.monotonicNow)
            record.refusal = failure.message
            record.status = failure.httpStatus
            refusedRecord = record
            perform(exchange.headRefused(failure, keepAlive: false))
        case .complete(let head, let length):
            evbuffer_drain(transport.input, length)
            // The head timer stays armed (see `armHeadTimer`): out of `readingHead`, its firing
            // changes nothing.
            start(head)
        }
    }

    /// The serial number of the latest call (see `CallData.serial`).
    private var callSerial = 0

    /// The record of a call refused before `call` existed (bad head, bad route).
    private var refusedRecord: CallRecord?

    private func start(_ head: RequestHead) {
        servedACall = true
        core.statistics.calls += 1
        let started = core.clock.monotonicNow
        let body: RequestBody
        switch head.framing {
        case .contentLength(let n): body = .remaining(n)
        case .chunked: body = .chunked(ChunkedBodyScanner())
        case .none, .untilClose: body = .remaining(0)
        }
        // A refusal builds its record here; a call builds its own in `CallData.init`.
        func refuseBeforeCall(_ failure: ProxyFailure, bodyKnown: Bool) {
            var record = CallRecord(protocolName: "http1", started: started)
            record.method = head.method
            record.target = head.target
            record.status = failure.httpStatus
            record.refusal = failure.message
            refusedRecord = record
            perform(exchange.headRefused(failure, keepAlive: head.keepAlive && bodyKnown && skipBody(body)))
        }
        if case .contentLength(let n) = head.framing, n > core.limits.maxRequestBodyBytes {
            refuseBeforeCall(.requestTooLarge("request body of \(n) bytes is over the limit of \(core.limits.maxRequestBodyBytes)"), bodyKnown: false)
            return
        }
        if let failure = RESTRoute.headerRefusal(fields: head.fields) {
            refuseBeforeCall(failure, bodyKnown: true)
            return
        }
        let key: EntityKey
        switch head.withTarget({ RESTRoute.classify(method: head.method, target: $0) }) {
        case .failure(let failure):
            refuseBeforeCall(failure, bodyKnown: true)
            return
        case .success(let k): key = k
        }
        callSerial += 1
        let call = CallData(serial: callSerial, head: head, key: key, started: started, body: body)
        // Request bytes this call may hold before they leave: what the input buffer may queue
        // for it, or its whole body when smaller. Refused when the process-wide budget is spent.
        let hold: Int
        switch body {
        case .remaining(let n): hold = min(n, core.limits.bufferHighWater)
        case .chunked: hold = core.limits.bufferHighWater
        }
        guard core.bufferBudget.reserve(hold) else {
            refuseBeforeCall(.overloaded("the sidecar holds too many request bytes; try again"), bodyKnown: false)
            return
        }
        call.reserved = hold
        self.call = call
        var chunked = false
        if case .chunked = body { chunked = true }
        if chunked && head.expectsContinue {
            call.continueSent = true
            transport.write("HTTP/1.1 100 Continue\r\n\r\n")
        }
        perform(exchange.headParsed(method: head.method, keepAlive: head.keepAlive, chunked: chunked))
    }

    /// Drops a refused request's body when it is already buffered, so the connection can be
    /// kept; false when the body is still arriving or chunked (then the connection must close).
    private func skipBody(_ body: RequestBody) -> Bool {
        switch body {
        case .remaining(let n):
            guard transport.inputLength >= n else { return false }
            evbuffer_drain(transport.input, n)
            return true
        case .chunked:
            return false
        }
    }

    /// Reads and decodes a chunked body whole (extensions and trailers dropped): the sidecar
    /// forwards it with its own Content-Length once it is all in.
    private func readChunkedBody() {
        guard exchange.phase == .readingBody, let call, case .chunked(var scanner) = call.body else { return }
        var held = call.held ?? []
        var consumed = 0
        var finished = false
        var failure: ProxyFailure?
        let limit = core.limits.maxRequestBodyBytes
        forEachChain(of: transport.input) { chunk in
            let result = scanner.scan(chunk) { data in
                if held.count + data.count > limit {
                    failure = failure ?? .requestTooLarge("chunked request body over the limit of \(limit) bytes")
                } else {
                    held.append(contentsOf: data)
                }
            }
            switch result {
            case .failure(let f): failure = f; return false
            case .success(let r):
                consumed += r.consumed
                finished = r.finished
                return failure == nil && !r.finished && r.consumed == chunk.count
            }
        }
        if failure == nil && held.count > call.reserved {
            let more = held.count - call.reserved
            if core.bufferBudget.reserve(more) {
                call.reserved += more
            } else {
                failure = .overloaded("the sidecar holds too many request bytes; try again")
            }
        }
        if let failure {
            perform(exchange.refuse(failure, bodyConsumed: false))
            return
        }
        evbuffer_drain(transport.input, consumed)
        call.body = .chunked(scanner)
        call.held = held
        if finished { perform(exchange.bodyRead()) }
    }

    // MARK: Token and upstream

    private func lookUpToken() {
        guard let call else { return }
        // A token handed over before token(for:) returns came from the cache without waiting.
        // (A flag of the connection, not a captured variable: that would be a box per call.)
        lookingUpToken = true
        defer { lookingUpToken = false }
        let serial = call.serial
        core.cache.token(for: call.key) { [weak self] result in
            guard let self, let call = self.call, call.serial == serial, exchange.phase == .awaitingToken else { return }
            if call.record.cacheOutcome == nil { call.record.cacheOutcome = lookingUpToken ? "hit" : "miss" }
            switch result {
            case .failure(let failure):
                perform(exchange.refuse(failure, bodyConsumed: skipRemainingBody()))
            case .success(let token):
                call.token = token
                perform(exchange.tokenReady())
            }
        }
    }

    /// True while `token(for:)` runs: an answer then came from the cache without waiting.
    private var lookingUpToken = false

    /// Fleet Engine refused the token (revoked, rotated key): drop it from the cache and fetch
    /// another; the call is sent once more. The first answer never reaches the client.
    private func refetchToken() {
        guard let call else { return }
        if let old = call.token { core.cache.invalidate(call.key, token: old) }
        call.token = nil
        logger.debug("Fleet Engine answered 401; retrying once with a fresh token", metadata: ["entity_type": "\(call.key.type.rawValue)"])
        lookUpToken()
    }

    private func acquireUpstream() {
        guard let call else { return }
        if let upstream = core.upstream.takeIdle() {
            call.upstream = upstream
            perform(exchange.upstreamReady())
            return
        }
        let serial = call.serial
        call.ticket = core.upstream.acquire { [weak self, pool = core.upstream] result in
            guard let self, let call = self.call, call.serial == serial, exchange.phase == .awaitingUpstream else {
                if case .success(let c) = result { pool.release(c, reusable: true) }
                return
            }
            call.ticket = nil
            switch result {
            case .failure(let failure):
                perform(exchange.refuse(failure, bodyConsumed: skipRemainingBody()))
            case .success(let upstream):
                call.upstream = upstream
                perform(exchange.upstreamReady())
            }
        }
    }

    /// For a refusal: whether the rest of the body can be dropped so the connection is kept.
    private func skipRemainingBody() -> Bool {
        guard let call else { return false }
        if call.held != nil { return true }
        return skipBody(call.body)
    }

    // MARK: Forwarding

    private func sendRequest() {
        guard let call, let token = call.token, let upstream = call.upstream else { return }
        if exchange.call?.attempts == 1 { core.statistics.forwarded += 1 } else { core.statistics.upstreamRetries += 1 }
        upstream.beginExchange(method: call.head.method, sink: self)
        if call.held == nil, case .remaining(let n) = call.body, n <= 64 * 1024, transport.inputLength >= n {
            // A small body that has fully arrived goes out with the head in one write, and a
            // copy is kept so the request can be sent again if this connection was already dead.
            var body = [UInt8](repeating: 0, count: n)
            if n > 0 { body.withUnsafeMutableBytes { _ = evbuffer_remove(transport.input, $0.baseAddress, n) } }
            call.body = .remaining(0)
            call.held = body
            exchange.requestHeld()
        }
        if let held = call.held {
            sendHead(call.head, token: token, bodyLength: held.count, body: held, to: upstream)
            perform(exchange.requestSent())
            return
        }
        guard case .remaining(let n) = call.body else { return }
        if call.head.expectsContinue && !call.continueSent {
            call.continueSent = true
            transport.write("HTTP/1.1 100 Continue\r\n\r\n")
        }
        sendHead(call.head, token: token, bodyLength: n, to: upstream)
        pumpRequestBody()
    }

    /// Moves Content-Length request body bytes from the client to the upstream, with backpressure.
    private func pumpRequestBody() {
        guard exchange.phase == .forwarding || exchange.phase == .retrying, let call, let upstream = call.upstream,
              exchange.call?.requestSent == false, case .remaining(let n) = call.body else { return }
        let take = min(n, transport.inputLength)
        if take > 0 { upstream.send(from: transport.input, count: take) }
        call.body = .remaining(n - take)
        if n - take == 0 {
            transport.enableReading()
            perform(exchange.requestSent())
        } else if upstream.outputLength > core.limits.bufferHighWater {
            transport.disableReading() // resumed in connectionDrained
        } else {
            transport.enableReading()
        }
    }

    /// Sends the request head as it goes upstream, written by the sidecar: the request line, its
    /// own Host, the end-to-end fields (no hop-by-hop, framing, Host or Authorization field of
    /// the client's is copied), the body's framing from its own parse, and the entity's token;
    /// then `body`, in the same write.
    private func sendHead(
        _ head: RequestHead, token: String, bodyLength: Int, body: [UInt8] = [], to upstream: HTTP1UpstreamConnection
    ) {
        let host = core.upstreamOrigin.hostHeader
        let bound = head.method.utf8.count + head.targetLength + host.utf8.count + token.utf8.count
            + head.fields.writtenBound + body.count + 96 + HeadWriter.maxDecimalLength
        HeadWriter.withBytes(capacity: bound, { out in
            out.write(head.method)
            out.byte(0x20)
            head.withTarget { out.write($0) }
            out.write(literal: " HTTP/1.1\r\nHost: ")
            out.write(host)
            out.write(literal: "\r\n")
            HopByHop.writeEndToEndFields(of: head.fields, dropping: HopByHop.dropFromRequest, to: &out)
            if head.framing != .none || bodyLength > 0 {
                out.write(literal: "Content-Length: ")
                out.decimal(bodyLength)
                out.write(literal: "\r\n")
            }
            out.write(literal: "Authorization: Bearer ")
            out.write(token)
            out.write(literal: "\r\n\r\n")
            out.write(body)
        }, use: { upstream.send($0) })
    }

    // MARK: ResponseSink

    var requestFullySent: Bool { exchange.call?.requestSent ?? true }

    func responseHead(_ head: ResponseHead, from connection: HTTP1UpstreamConnection) {
        guard let call, connection === call.upstream else { return }
        guard exchange.responseHead(status: head.status) == .one(.relayResponse) else { return }
        call.record.status = head.status
        let framing = head.framing(requestMethod: call.head.method)
        let clientIsHTTP10 = call.head.minorVersion == 0
        var closeAfter = !(exchange.call?.keepAlive ?? false)
        if framing == .untilClose { closeAfter = true }
        if framing == .chunked && clientIsHTTP10 {
            call.dechunker = ChunkedBodyScanner()
            closeAfter = true
        }
        if closeAfter { exchange.closeAfterAnswer() }
        core.statistics.upstreamStatus[head.status, default: 0] += 1

        let bound = head.reason.utf8.count + head.fields.writtenBound + 128 + HeadWriter.maxDecimalLength
        HeadWriter.withBytes(capacity: bound, { out in
            out.write(literal: clientIsHTTP10 ? "HTTP/1.0 " : "HTTP/1.1 ")
            appendStatus(head.status, to: &out)
            out.byte(0x20)
            out.write(head.reason)
            out.write(literal: "\r\n")
            HopByHop.writeEndToEndFields(of: head.fields, dropping: HopByHop.dropFromResponse, to: &out)
            // The framing the sidecar relays, written by it: exactly one of them, or none.
            switch framing {
            case .contentLength(let n):
                writeContentLength(n, to: &out)
            case .chunked:
                if !clientIsHTTP10 { out.write(literal: "Transfer-Encoding: chunked\r\n") }
            case .none:
                // No body follows, but a HEAD or 304 answer's length describes the resource.
                if case .contentLength(let n) = head.declaredFraming, head.status >= 200, head.status != 204 {
                    writeContentLength(n, to: &out)
                }
            case .untilClose:
                break
            }
            if closeAfter {
                out.write(literal: "Connection: close\r\n")
            } else if clientIsHTTP10 {
                out.write(literal: "Connection: keep-alive\r\n")
            }
            out.write(literal: "\r\n")
        }, use: { _ = evbuffer_add(corked, $0.baseAddress, $0.count) })
    }

    /// Writes the corked head (and what was added behind it) to the client.
    private func uncork() {
        let n = evbuffer_get_length(corked)
        if n > 0 { transport.moveIn(from: corked, count: n) }
    }

    func responseBody(_ buffer: OpaquePointer, count: Int, from connection: HTTP1UpstreamConnection) {
        guard let call, connection === call.upstream, exchange.phase == .forwarding, exchange.call?.responseStarted == true else {
            evbuffer_drain(buffer, count)
            return
        }
        if var dechunker = call.dechunker {
            var left = count
            forEachChain(of: buffer, limit: count) { chunk in
                _ = dechunker.scan(chunk, onData: { data in _ = evbuffer_add(corked, data.baseAddress, data.count) })
                left -= chunk.count
                return left > 0
            }
            evbuffer_drain(buffer, count)
            call.dechunker = dechunker
        } else {
            evbuffer_remove_buffer(buffer, corked, count)
        }
        uncork()
        if transport.outputLength > core.limits.bufferHighWater { connection.pauseReading() }
    }

    func responseEnded(from connection: HTTP1UpstreamConnection) {
        guard let call, connection === call.upstream else { return }
        call.upstream = nil
        uncork()
        perform(exchange.responseEnded())
    }

    func responseFailed(_ failure: ProxyFailure, headReceived: Bool, retryable: Bool) {
        guard let call, call.upstream != nil else { return }
        call.upstream = nil
        if retryable { logger.debug("upstream connection was closed before answering") }
        perform(exchange.responseFailed(failure, retryable: retryable))
    }

    func connectionDrained(_ connection: HTTP1UpstreamConnection) {
        guard let call, connection === call.upstream else { return }
        if connection.outputLength < core.limits.bufferHighWater { pumpRequestBody() }
    }

    // MARK: Ending calls

    /// Lets go of what the call holds: its place in the pool's queue, a borrowed upstream
    /// connection (discarded when the exchange on it is unfinished), its budget.
    private func endCall(discardUpstream reason: String?) {
        guard let call else { return }
        self.call = nil
        call.ticket?.cancel()
        if let upstream = call.upstream, let reason { core.upstream.discard(upstream, reason: reason) }
        core.bufferBudget.release(call.reserved)
    }

    private func finishCall(keepAlive: Bool) {
        if let call {
            // The record leaves the ending call to be written: moved out (a placeholder of
            // literals takes its place), not copied.
            var record = CallRecord(protocolName: "http1", started: 0)
            swap(&record, &call.record)
            if CallRecord.writesLine(core: core, logger: logger) { record.target = call.head.target }
            record.finish(core: core, logger: logger)
            endCall(discardUpstream: nil)
        }
        keepAlive ? readNextRequest() : finishAndClose()
    }

    /// Answers a call the sidecar refuses itself (docs/CONTRACT.md §5) and either keeps the connection
    /// for the next request or closes it once the answer is written.
    private func answerRefusal(_ failure: ProxyFailure, keepAlive: Bool) {
        core.statistics.refusedByStatus[failure.httpStatus, default: 0] += 1
        var record = call?.record ?? refusedRecord ?? CallRecord(protocolName: "http1", started: core.clock.monotonicNow)
        refusedRecord = nil
        if let call, CallRecord.writesLine(core: core, logger: logger) { record.target = call.head.target }
        record.status = failure.httpStatus
        record.refusal = failure.message
        record.finish(core: core, logger: logger)
        endCall(discardUpstream: "call refused")
        transport.write(ErrorResponse.http1(failure, close: !keepAlive))
        keepAlive ? readNextRequest() : finishAndClose()
    }

    /// Back to reading heads: the next head's deadline starts now; a pipelined request may
    /// already be waiting.
    private func readNextRequest() {
        perform(exchange.readingNextHead(now: core.clock.monotonicNow))
        if transport.inputLength > 0 { core.loop.schedule(after: 0) { [weak self] in self?.readRequests() } }
    }

    private func finishAndClose() {
        transport.disableReading()
        if transport.outputLength == 0 { perform(exchange.outputFlushed()) }
    }

    private func writeContentLength(_ n: Int, to out: inout HeadWriter) {
        out.write(literal: "Content-Length: ")
        out.decimal(n)
        out.write(literal: "\r\n")
    }

    /// Three ASCII digits (statuses are 100–999).
    private func appendStatus(_ status: Int, to out: inout HeadWriter) {
        out.byte(UInt8(48 + status / 100 % 10))
        out.byte(UInt8(48 + status / 10 % 10))
        out.byte(UInt8(48 + status % 10))
    }
}
