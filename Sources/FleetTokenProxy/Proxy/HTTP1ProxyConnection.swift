import CEvent
import Logging

/// One client connection speaking HTTP/1.1 to the sidecar.
///
/// It reads a request head, works out the entity, waits for that entity's token, borrows an
/// upstream connection, sends the rewritten head and relays the body, then relays the answer
/// back unchanged. One call at a time; pipelined requests wait in the input buffer. Its owner
/// is the `ProxyServer`; `close(reason:)` is its one way out.
final class HTTP1ProxyConnection: ClientConnection, TransportDelegate, ResponseSink {
    private enum State {
        case readingHead
        case waitingForToken
        case waitingForUpstream
        case forwarding
        /// A final answer is queued; close once it is written.
        case closingAfterFlush
        case closed
    }

    private enum RequestBody {
        case remaining(Int)
        case chunked(ChunkedBodyScanner)
    }

    /// The call in flight. A class: it is updated in place many times per call, and copying a
    /// struct this size in and out of an optional costs retains on the hot path.
    private final class Call {
        let head: RequestHead
        let key: EntityKey
        let started: Double
        var body: RequestBody
        var requestDone: Bool
        var responseDone = false
        var upstream: HTTP1ClientConnection?
        /// The whole request as sent, kept for one resend when a reused upstream connection
        /// turns out to be closed. Nil for bodies too large or not yet complete.
        var replay: [UInt8]?
        /// Fleet Engine answered 401: this answer is dropped and the call sent again once with
        /// a freshly fetched token (SPEC: revocation).
        var retryingAfter401 = false
        var attempts = 0
        var keepAlive: Bool
        var status = 0
        var cacheOutcome = "miss"
        var token: String?
        /// A chunked answer to an HTTP/1.0 client is decoded, and the connection closed.
        var dechunker: ChunkedBodyScanner?

        init(head: RequestHead, key: EntityKey, started: Double, body: RequestBody, requestDone: Bool, keepAlive: Bool) {
            self.head = head
            self.key = key
            self.started = started
            self.body = body
            self.requestDone = requestDone
            self.keepAlive = keepAlive
        }
    }

    private var transport: Transport!
    private let core: ProxyCore
    private unowned let server: ProxyServer
    private var state: State = .readingHead
    private var call: Call?
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
        let bev = bufferevent_socket_new(core.loop.base, fd, Int32(BEV_OPT_CLOSE_ON_FREE.rawValue))!
        transport = Transport(bev: bev, delegate: self, directWrites: true)
        // Set once: changing timeouts or read interest per call costs epoll_ctl calls on the
        // hot path. Reading stays on; the high-water mark bounds what a client can queue
        // while its call waits for a token or the upstream.
        transport.setTimeouts(read: core.limits.idleTimeout, write: core.limits.ioTimeout)
        transport.setReadHighWater(core.limits.maxHeadBytes + core.limits.bufferHighWater)
        transport.enableReading()
    }

    deinit { evbuffer_free(corked) }

    /// The one close path: frees the socket, gives back a borrowed upstream connection that
    /// can no longer be trusted, and tells the server. Idempotent.
    func close(reason: String) {
        guard state != .closed else { return }
        state = .closed
        if let upstream = call?.upstream, !(call?.responseDone ?? true) {
            core.upstream.discard(upstream, reason: "client connection closed")
        }
        call = nil
        logger.trace("connection closed", metadata: ["reason": "\(reason)"])
        transport.close()
        server.connectionClosed(self)
    }

    /// Stops taking new requests; an idle connection closes now, a busy one after its call.
    func drain() {
        if state == .readingHead && transport.inputLength == 0 { close(reason: "draining") }
        draining = true
    }

    private var draining = false
    /// Until a first request is read, the bytes may instead be the HTTP/2 preface.
    private var servedACall = false

    // MARK: TransportDelegate

    func transportReadable(_ transport: Transport) {
        switch state {
        case .readingHead: readRequests()
        case .forwarding: pumpRequestBody()
        default: break
        }
    }

    func transportWritable(_ transport: Transport) {
        switch state {
        case .closingAfterFlush:
            if transport.outputLength == 0 { close(reason: "answered, not keep-alive") }
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
            if state == .readingHead {
                close(reason: transport.inputLength == 0 ? "idle" : "request head too slow")
                return
            }
            if state != .forwarding || call?.requestDone == true {
                // Quiet because it waits for us (token, upstream answer): those waits have
                // their own bounds. libevent disabled reading on the timeout; turn it back on.
                transport.enableReading()
                return
            }
        }
        close(reason: transport.describe(events: e))
    }

    // MARK: Reading requests

    /// Parses and starts the next request, if a whole head is buffered.
    private func readRequests() {
        guard state == .readingHead, transport.isOpen else { return }
        let available = transport.inputLength
        guard available > 0 else { return }
        if !servedACall {
            switch HTTP2Preface.match(transport.input, available: available) {
            case .matches:
                // h2c with prior knowledge: the HTTP/2 connection takes the socket over.
                state = .closed
                server.upgrade(self, transport: transport)
                return
            case .needMore:
                return
            case .differs:
                break
            }
        }
        let limits = core.limits
        let window = min(available, limits.maxHeadBytes)
        guard let base = evbuffer_pullup(transport.input, window) else { return }
        let bytes = UnsafeRawBufferPointer(start: base, count: window)
        switch HTTP1Parser.parseRequest(bytes, maxHeadBytes: limits.maxHeadBytes, maxHeaderCount: limits.maxHeaderCount) {
        case .incomplete:
            break
        case .invalid(let failure):
            core.statistics.calls += 1
            refuse(failure, close: true)
        case .complete(let head, let length):
            evbuffer_drain(transport.input, length)
            start(head)
        }
    }

    private func start(_ head: RequestHead) {
        servedACall = true
        core.statistics.calls += 1
        let body: RequestBody
        switch head.framing {
        case .contentLength(let n) where n > core.limits.maxRequestBodyBytes:
            refuse(.requestTooLarge("request body of \(n) bytes is over the limit of \(core.limits.maxRequestBodyBytes)"), close: true)
            return
        case .contentLength(let n): body = .remaining(n)
        case .chunked: body = .chunked(ChunkedBodyScanner())
        case .none, .untilClose: body = .remaining(0)
        }
        let key: EntityKey
        switch RESTRoute.classify(method: head.method, target: head.target) {
        case .failure(let failure):
            refuse(failure, close: !skipBody(body), head: head)
            return
        case .success(let k): key = k
        }
        var done = false
        if case .remaining(0) = body { done = true }
        call = Call(head: head, key: key, started: core.clock.monotonicNow, body: body, requestDone: done,
                    keepAlive: head.keepAlive && !draining)
        state = .waitingForToken
        // A token handed over before token(for:) returns came from the cache without waiting.
        var waited = false
        core.cache.token(for: key) { [self] result in
            guard state == .waitingForToken, let call else { return }
            call.cacheOutcome = waited ? "miss" : "hit"
            switch result {
            case .failure(let failure):
                refuse(failure, close: !skipBody(call.body))
            case .success(let token):
                call.token = token
                state = .waitingForUpstream
                acquireUpstream()
            }
        }
        waited = true
    }

    /// Drops a refused request's body when it is already buffered, so the connection can be
    /// kept; false when the body is still arriving (then the connection must close).
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

    // MARK: Forwarding

    private func acquireUpstream() {
        core.upstream.acquire { [self] result in
            guard state == .waitingForUpstream || state == .forwarding else {
                if case .success(let c) = result { core.upstream.release(c, reusable: true) }
                return
            }
            switch result {
            case .failure(let failure):
                refuse(failure, close: !skipBody(call!.body))
            case .success(let upstream):
                send(on: upstream)
            }
        }
    }

    private func send(on upstream: HTTP1ClientConnection) {
        guard let call, let token = call.token else { return }
        call.upstream = upstream
        call.attempts += 1
        state = .forwarding
        if let body = call.replay {
            // A resend (keep-alive race, or a fresh token after a 401): the body is in the copy;
            // the head is built again with the token the call has now.
            upstream.requestComplete = true
            upstream.send(upstreamHead(call.head, token: token) + body)
            upstream.beginExchange(method: call.head.method, sink: self)
            return
        }
        if call.head.expectsContinue {
            transport.write("HTTP/1.1 100 Continue\r\n\r\n")
        }
        let headBytes = upstreamHead(call.head, token: token)
        // A small body that has fully arrived goes out with the head in one write, and a copy
        // is kept so the request can be sent again if this connection was already dead.
        if case .remaining(let n) = call.body, n <= 64 * 1024, transport.inputLength >= n {
            var body = [UInt8](repeating: 0, count: n)
            if n > 0 { body.withUnsafeMutableBytes { _ = evbuffer_remove(transport.input, $0.baseAddress, n) } }
            call.body = .remaining(0)
            call.requestDone = true
            call.replay = body
            upstream.requestComplete = true
            upstream.send(headBytes + body)
        } else {
            upstream.requestComplete = false
            upstream.send(headBytes)
            pumpRequestBody()
        }
        core.statistics.forwarded += 1
        upstream.beginExchange(method: call.head.method, sink: self)
    }

    /// Moves request body bytes from the client to the upstream, with backpressure.
    private func pumpRequestBody() {
        guard let call, let upstream = call.upstream, !call.requestDone else { return }
        let available = transport.inputLength
        switch call.body {
        case .remaining(let n):
            let take = min(n, available)
            if take > 0 { upstream.send(from: transport.input, count: take) }
            call.body = .remaining(n - take)
            call.requestDone = n - take == 0
        case .chunked(var scanner):
            var consumed = 0
            var finished = false
            var failure: ProxyFailure?
            forEachChain(of: transport.input) { chunk in
                switch scanner.scan(chunk, onData: { _ in }) {
                case .failure(let f): failure = f; return false
                case .success(let r):
                    consumed += r.consumed
                    finished = r.finished
                    return !r.finished && r.consumed == chunk.count
                }
            }
            if let failure {
                // The upstream already has part of this request: nothing sane can follow.
                logger.debug("bad chunked request body", metadata: ["error": "\(failure.message)"])
                close(reason: "malformed chunked body")
                return
            }
            if consumed > 0 { upstream.send(from: transport.input, count: consumed) }
            call.body = .chunked(scanner)
            call.requestDone = finished
        }
        if call.requestDone {
            upstream.requestComplete = true
            transport.enableReading()
            maybeFinish()
        } else if upstream.outputLength > core.limits.bufferHighWater {
            transport.disableReading() // resumed in connectionDrained
        } else {
            transport.enableReading()
        }
    }

    /// The request head as it goes upstream: hop-by-hop fields dropped, Host set for the
    /// upstream, the client's Authorization replaced by the entity's token.
    private func upstreamHead(_ head: RequestHead, token: String) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(256 + head.target.utf8.count + token.utf8.count + head.headers.fields.count * 48)
        out.append(contentsOf: head.method.utf8)
        out.append(0x20)
        out.append(contentsOf: head.target.utf8)
        out.append(contentsOf: " HTTP/1.1\r\nHost: ".utf8)
        out.append(contentsOf: core.upstreamOrigin.hostHeader.utf8)
        out.append(contentsOf: "\r\n".utf8)
        HopByHop.appendEndToEndFields(of: head.headers, dropping: HopByHop.dropFromRequest, to: &out)
        out.append(contentsOf: "Authorization: Bearer ".utf8)
        out.append(contentsOf: token.utf8)
        out.append(contentsOf: "\r\n\r\n".utf8)
        return out
    }

    // MARK: ResponseSink

    func responseHead(_ head: ResponseHead, from connection: HTTP1ClientConnection) {
        guard let call, state == .forwarding else { return }
        if head.status == 401 && call.attempts == 1 && call.replay != nil {
            call.retryingAfter401 = true
            return
        }
        call.status = head.status
        let framing = head.framing(requestMethod: call.head.method)
        let clientIsHTTP10 = call.head.minorVersion == 0
        var closeAfter = !call.keepAlive || draining
        if framing == .untilClose { closeAfter = true }
        if framing == .chunked && clientIsHTTP10 {
            call.dechunker = ChunkedBodyScanner()
            closeAfter = true
        }
        call.keepAlive = !closeAfter
        core.statistics.upstreamStatus[head.status, default: 0] += 1

        var out: [UInt8] = []
        out.reserveCapacity(64 + head.reason.utf8.count + head.headers.fields.count * 48)
        out.append(contentsOf: (clientIsHTTP10 ? "HTTP/1.0 " : "HTTP/1.1 ").utf8)
        appendStatus(head.status, to: &out)
        out.append(0x20)
        out.append(contentsOf: head.reason.utf8)
        out.append(contentsOf: "\r\n".utf8)
        HopByHop.appendEndToEndFields(of: head.headers, dropping: HopByHop.dropFromResponse, to: &out)
        if framing == .chunked && !clientIsHTTP10 { out.append(contentsOf: "Transfer-Encoding: chunked\r\n".utf8) }
        if closeAfter {
            out.append(contentsOf: "Connection: close\r\n".utf8)
        } else if clientIsHTTP10 {
            out.append(contentsOf: "Connection: keep-alive\r\n".utf8)
        }
        out.append(contentsOf: "\r\n".utf8)
        out.withUnsafeBytes { _ = evbuffer_add(corked, $0.baseAddress, $0.count) }
    }

    /// Writes the corked head (and what was added behind it) to the client.
    private func uncork() {
        let n = evbuffer_get_length(corked)
        if n > 0 { transport.moveIn(from: corked, count: n) }
    }

    func responseBody(_ buffer: OpaquePointer, count: Int, from connection: HTTP1ClientConnection) {
        guard state == .forwarding, let call, !call.retryingAfter401 else { evbuffer_drain(buffer, count); return }
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

    func responseEnded(from connection: HTTP1ClientConnection) {
        guard state == .forwarding, let call else { return }
        call.upstream = nil
        if call.retryingAfter401 {
            retryWithFreshToken(call)
            return
        }
        uncork()
        call.responseDone = true
        maybeFinish()
    }

    func responseFailed(_ failure: ProxyFailure, headReceived: Bool, retryable: Bool) {
        guard state == .forwarding, let call else { return }
        call.upstream = nil
        if !headReceived, retryable, call.replay != nil, call.attempts < 2 {
            core.statistics.upstreamRetries += 1
            logger.debug("upstream connection was closed before answering; sending again")
            state = .waitingForUpstream
            acquireUpstream()
            return
        }
        if headReceived {
            uncork()
            // Part of the answer is already with the client: cutting the connection is the only
            // honest signal left.
            close(reason: "upstream broke mid-answer: \(failure.message)")
            return
        }
        refuse(failure, close: !call.requestDone)
    }

    func connectionDrained(_ connection: HTTP1ClientConnection) {
        guard state == .forwarding, let call, !call.requestDone else { return }
        if connection.outputLength < core.limits.bufferHighWater { pumpRequestBody() }
    }

    /// Fleet Engine refused the token (revoked, rotated key): drop it from the cache, fetch
    /// another and send the call once more. The first answer never reaches the client.
    private func retryWithFreshToken(_ call: Call) {
        if let old = call.token { core.cache.invalidate(call.key, token: old) }
        call.token = nil
        call.retryingAfter401 = false
        state = .waitingForToken
        logger.debug("Fleet Engine answered 401; retrying once with a fresh token", metadata: ["entity_type": "\(call.key.type.rawValue)"])
        core.cache.token(for: call.key) { [self] result in
            guard state == .waitingForToken, let current = self.call, current === call else { return }
            switch result {
            case .failure(let failure):
                refuse(failure, close: false)
            case .success(let token):
                call.token = token
                state = .waitingForUpstream
                acquireUpstream()
            }
        }
    }

    // MARK: Ending calls

    private func maybeFinish() {
        guard let call, call.requestDone, call.responseDone else { return }
        logAccess(call, status: call.status)
        core.metrics.callFinished(protocol: "http1", code: call.status, seconds: core.clock.monotonicNow - call.started)
        self.call = nil
        if call.keepAlive && !draining {
            state = .readingHead
            // A pipelined request may already be waiting.
            if transport.inputLength > 0 { core.loop.schedule(after: 0) { [weak self] in self?.readRequests() } }
        } else {
            finishAndClose()
        }
    }

    /// Answers a call the sidecar refuses itself (SPEC §5) and either keeps the connection
    /// for the next request or closes it once the answer is written.
    private func refuse(_ failure: ProxyFailure, close: Bool, head: RequestHead? = nil) {
        let keep = !close && (head?.keepAlive ?? call?.head.keepAlive ?? false) && !draining
        core.statistics.refusedByStatus[failure.httpStatus, default: 0] += 1
        let now = core.clock.monotonicNow
        core.metrics.callFinished(protocol: "http1", code: failure.httpStatus, seconds: now - (call?.started ?? now))
        core.accessLogger?.info("call", metadata: [
            "method": "\(head?.method ?? call?.head.method ?? "-")", "route": "\(routeLabel(head ?? call?.head))",
            "entity_type": "\(call?.key.type.rawValue ?? "-")", "status": "\(failure.httpStatus)",
            "ms": "\(Int((now - (call?.started ?? now)) * 1000))", "cache": "\(call?.cacheOutcome ?? "-")",
        ])
        transport.write(ErrorResponse.http1(failure, close: !keep))
        let method = head?.method ?? call?.head.method ?? "-"
        logger.debug("refused", metadata: [
            "method": "\(method)", "status": "\(failure.httpStatus)",
            "entity_type": "\(call?.key.type.rawValue ?? "-")", "reason": "\(failure.message)",
        ])
        if let upstream = call?.upstream { core.upstream.discard(upstream, reason: "call refused") }
        call = nil
        if keep {
            state = .readingHead
            if transport.inputLength > 0 { core.loop.schedule(after: 0) { [weak self] in self?.readRequests() } }
        } else {
            finishAndClose()
        }
    }

    private func finishAndClose() {
        state = .closingAfterFlush
        transport.disableReading()
        if transport.outputLength == 0 { close(reason: "answered, not keep-alive") }
    }

    /// Three ASCII digits (statuses are 100–999).
    private func appendStatus(_ status: Int, to out: inout [UInt8]) {
        out.append(UInt8(48 + status / 100 % 10))
        out.append(UInt8(48 + status / 10 % 10))
        out.append(UInt8(48 + status % 10))
    }

    /// The path without its query, for the access log (queries may carry ids in bulk).
    private func routeLabel(_ head: RequestHead?) -> Substring {
        guard let head else { return "-" }
        return head.target.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)[0].prefix(128)
    }

    private func logAccess(_ call: Call, status: Int) {
        core.accessLogger?.info("call", metadata: [
            "method": "\(call.head.method)", "route": "\(routeLabel(call.head))", "entity_type": "\(call.key.type.rawValue)",
            "status": "\(status)", "ms": "\(Int((core.clock.monotonicNow - call.started) * 1000))", "cache": "\(call.cacheOutcome)",
        ])
        guard logger.logLevel <= .debug else { return }
        let ms = (core.clock.monotonicNow - call.started) * 1000
        logger.debug("call", metadata: [
            "method": "\(call.head.method)", "entity_type": "\(call.key.type.rawValue)",
            "status": "\(status)", "ms": "\(Int(ms))", "cache": "\(call.cacheOutcome)",
        ])
    }
}
