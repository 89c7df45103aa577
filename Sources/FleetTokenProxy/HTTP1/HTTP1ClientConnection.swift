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
    /// How the request body arrives from the client, or that the sidecar holds it whole.
    private enum RequestBody {
        /// Content-Length bytes still to come from the client: a body read whole before the
        /// call goes on (up to `ReplayPolicy.bodyBound`), or one that streams (0: all sent on).
        case remaining(Int)
        /// A chunked body being decoded into `InFlight.held`.
        case chunked(ChunkedBodyScanner)
        /// The whole body is in `InFlight.held` (none, a short declared one, a decoded chunked
        /// one): forwarded with a Content-Length, and kept to send the call again.
        case held
    }

    /// What the call in flight holds: its head, entity, record, body, token and borrowed
    /// connection. Its progress is in `exchange` (`HTTP1Exchange.Call`). A class: updated in
    /// place many times per call.
    private final class InFlight {
        let head: RequestHead
        let key: EntityKey
        var record: CallRecord
        var body: RequestBody
        /// The body's bytes the sidecar holds: being decoded (`.chunked`) or whole (`.held`).
        var held: [UInt8] = []
        var token: String?
        var upstream: HTTP1UpstreamConnection?
        var ticket: PoolTicket?
        /// The send in flight over the HTTP/2 upstream (`ProxyCore.restOverHTTP2`).
        var h2: H2UpstreamAttempt?
        /// Bytes reserved from the process-wide buffer budget for this call.
        var reserved = 0
        /// Decodes a chunked answer for an HTTP/1.0 client (`Relay.Framing.dechunked`).
        var dechunker: ChunkedBodyScanner?

        /// The record is built here, where it stays, rather than copied in.
        init(head: RequestHead, key: EntityKey, started: Double, body: RequestBody) {
            self.head = head
            self.key = key
            record = CallRecord(protocolName: "http1", started: started)
            record.method = head.method
            // The target becomes a String only when a line is written (see `takeRecord`).
            record.entityType = key.type.rawValue
            self.body = body
        }

        /// The record, moved out to be written (a placeholder of literals takes its place),
        /// not copied.
        @inline(__always)
        func takeRecord(core: ProxyCore, logger: Logger) -> CallRecord {
            var taken = CallRecord(protocolName: "http1", started: 0)
            swap(&taken, &record)
            if CallRecord.writesLine(core: core, logger: logger) { taken.target = head.target }
            return taken
        }
    }

    private var transport: Transport!
    private let core: ProxyCore
    private unowned let server: ProxyServer
    private var exchange: HTTP1Exchange
    private var inFlight: InFlight?
    /// The whole-head deadline's timer: one libevent event for the connection's life. When it
    /// is armed is the exchange's to decide (`HTTP1Exchange.headTimerAt`): a call that reads
    /// its head in time leaves it armed, and when it fires it finds the deadline moved on (or
    /// no head awaited) and re-arms or stays quiet. A timer allocated, added and deleted per
    /// call cost about 2,000 instructions a call.
    private var headTimer: LoopWakeup!
    private var logger: Logger
    /// The answer's head waits here until its first body bytes (or its end), so head and body
    /// leave in one write: one packet and one wake-up of the client instead of two.
    private let corked = EventBuffer()
    let id: Int

    init(fd: Int32, core: ProxyCore, server: ProxyServer, id: Int) {
        self.core = core
        self.server = server
        self.id = id
        var logger = core.logger
        logger[metadataKey: "conn"] = "\(id)"
        self.logger = logger
        exchange = HTTP1Exchange(now: core.clock.monotonicNow, headTimeout: core.limits.headTimeout)
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
        // The exchange starts with its first head's deadline armed (`HTTP1Exchange.init`).
        headTimer.arm(after: core.limits.headTimeout)
    }

    /// The one way out, for the server and for a broken socket: the exchange says whether the
    /// connection is still open. Idempotent.
    func close(reason: String) {
        switch exchange.close() {
        case .tearDown?: tearDown(reason: reason)
        case nil: break
        }
    }

    /// Frees the socket, gives back a borrowed upstream connection that can no longer be
    /// trusted, returns held bytes to the budget, and tells the server. Runs once: after the
    /// exchange moved to `closed`.
    private func tearDown(reason: String) {
        endCall(discardUpstream: "client connection closed")
        headTimer.cancel()
        logger.trace("connection closed", metadata: ["reason": "\(reason)"])
        transport.close()
        server.connectionClosed(self)
    }

    /// Stops taking new requests; an idle connection closes now, a busy one after its call.
    func drain() {
        switch exchange.drain(buffered: transport.inputLength) {
        case .close(let reason)?: tearDown(reason: reason)
        case nil: break
        }
    }

    // MARK: TransportDelegate

    func transportReadable(_ transport: Transport) {
        switch exchange.bytesArrived(now: core.clock.monotonicNow) {
        case .readHead?:
            readRequests()
        case .armHeadTimerAndReadHead(let deadline)?:
            armHeadTimer(at: deadline)
            readRequests()
        case .readBody?: readHeldBody()
        case .pumpBody?: pumpRequestBody()
        case nil: break
        }
    }

    func transportWritable(_ transport: Transport) {
        switch exchange.phase {
        case .closingAfterFlush:
            if transport.outputLength == 0 { outputFlushed() }
        case .forwarding:
            // The client caught up: resume the upstream answer.
            if transport.outputLength < core.limits.bufferHighWater {
                inFlight?.upstream?.resumeReading()
                if let attempt = inFlight?.h2, attempt.owedCredit > 0 {
                    attempt.upstream?.responseTaken(count: attempt.owedCredit)
                    attempt.owedCredit = 0
                }
            }
        default:
            break
        }
    }

    func transportEvent(_ transport: Transport, events: Int16) {
        let e = Int32(events)
        if e & BEV_EVENT_TIMEOUT != 0 && e & BEV_EVENT_READING != 0 {
            switch exchange.readTimedOut(buffered: transport.inputLength, described: transport.describe(events: e)) {
            case .close(let reason):
                tearDown(reason: reason)
            case .enableReading:
                // libevent disabled reading on the timeout; turn it back on.
                transport.enableReading()
            }
            return
        }
        close(reason: transport.describe(events: e))
    }

    // MARK: The head timer

    private func armHeadTimer(at deadline: Double) {
        headTimer.arm(after: max(0, deadline - core.clock.monotonicNow))
    }

    private func headTimerFired() {
        switch exchange.headTimerFired(now: core.clock.monotonicNow, buffered: transport.inputLength) {
        case .rearm(let deadline)?: armHeadTimer(at: deadline)
        case .close(let reason)?: tearDown(reason: reason)
        case nil: break
        }
    }

    // MARK: Reading requests

    /// Parses and starts the next request, if a whole head is buffered.
    private func readRequests() {
        guard case .readingHead = exchange.phase, transport.isOpen else { return }
        let available = transport.inputLength
        guard available > 0 else { return }
        if exchange.mayBeHTTP2 {
            switch transport.withInput(upTo: HTTP2Preface.count, HTTP2Preface.match) {
            case .matches:
                // h2c with prior knowledge: the HTTP/2 connection takes the socket over.
                exchange.handedToHTTP2()
                headTimer.cancel()
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
            let record = CallRecord(protocolName: "http1", started: core.clock.monotonicNow)
            // Its framing is unknown: the connection cannot find the next request.
            refuseHead(failure, record: record, skippingIfBuffered: nil)
        case .complete(let head, let length):
            transport.drainInput(length)
            // The head timer stays armed (see `headTimer`): out of `readingHead`, its firing
            // changes nothing.
            start(head)
        }
    }

    private func start(_ head: RequestHead) {
        core.statistics.calls += 1
        let started = core.clock.monotonicNow
        // docs/CONTRACT.md §7: a body the call may have to send again is held whole, so the
        // segments it arrives in never decide whether it can be.
        let body: RequestBody
        let plan: HTTP1Exchange.BodyPlan
        switch head.framing {
        case .contentLength(let n) where n > ReplayPolicy.bodyBound: (body, plan) = (.remaining(n), .streamed)
        case .contentLength(let n) where n > 0: (body, plan) = (.remaining(n), .held)
        case .chunked: (body, plan) = (.chunked(ChunkedBodyScanner()), .held)
        case .contentLength, .none, .untilClose: (body, plan) = (.held, .none)
        }
        // A refusal builds its record here; a call builds its own in `InFlight.init`.
        func refuseBeforeCall(_ failure: ProxyFailure, bodyKnown: Bool) {
            var record = CallRecord(protocolName: "http1", started: started)
            record.method = head.method
            record.target = head.target
            refuseHead(failure, record: record, skippingIfBuffered: head.keepAlive && bodyKnown ? body : nil)
        }
        let key: EntityKey
        switch admit(head) {
        case .refuse(let failure, let bodyKnown):
            refuseBeforeCall(failure, bodyKnown: bodyKnown)
            return
        case .call(let k):
            key = k
        }
        // Request bytes this call may hold before they leave: what the input buffer may queue
        // for it, or its whole body when smaller. Refused when the process-wide budget is spent.
        let hold: Int
        switch body {
        case .remaining(let n): hold = min(n, core.limits.bufferHighWater)
        case .chunked, .held: hold = core.limits.bufferHighWater
        }
        guard core.bufferBudget.reserve(hold) else {
            refuseBeforeCall(.overloaded("the sidecar holds too many request bytes; try again"), bodyKnown: false)
            return
        }
        let call = InFlight(head: head, key: key, started: started, body: body)
        call.reserved = hold
        inFlight = call
        switch exchange.headParsed(method: head.method, http10: head.minorVersion == 0, keepAlive: head.keepAlive,
                                   expectsContinue: head.expectsContinue, body: plan) {
        case .readBody(let writeContinue):
            if writeContinue { transport.write("HTTP/1.1 100 Continue\r\n\r\n") }
            readHeldBody()
        case .lookUpToken(let number):
            lookUpToken(call: number)
        case .endCall:
            endCall(discardUpstream: nil) // not reading heads: `readRequests` checked it
        }
    }

    private enum Admission {
        case call(EntityKey)
        /// `bodyKnown`: the body's length is known and may be skipped to keep the connection.
        case refuse(ProxyFailure, bodyKnown: Bool)
    }

    /// The entity a request is for, or why it is refused before its call begins: a body over
    /// the limit, a header field the sidecar refuses, a route that is not a Fleet Engine call.
    private func admit(_ head: RequestHead) -> Admission {
        if case .contentLength(let n) = head.framing, n > core.limits.maxRequestBodyBytes {
            return .refuse(.requestTooLarge("request body of \(n) bytes is over the limit of \(core.limits.maxRequestBodyBytes)"), bodyKnown: false)
        }
        if let failure = RESTRoute.headerRefusal(fields: head.fields) {
            return .refuse(failure, bodyKnown: true)
        }
        switch head.withTarget({ RESTRoute.classify(method: head.method, target: $0) }) {
        case .failure(let failure): return .refuse(failure, bodyKnown: true)
        case .success(let key): return .call(key)
        }
    }

    /// Whether the body is out of the way once `skip` drops it: held, or wholly buffered.
    /// False when it is still arriving or chunked (then the connection must close).
    private func isSkippable(_ body: RequestBody) -> Bool {
        switch body {
        case .remaining(let n): return transport.inputLength >= n
        case .held: return true
        case .chunked: return false
        }
    }

    /// Drops a refused request's buffered body, so the connection can carry the next one.
    private func skip(_ body: RequestBody) {
        if case .remaining(let n) = body, n > 0 { transport.drainInput(n) }
    }

    /// Reads a held body whole: a declared one once all of it is in the input, a chunked one
    /// as it is decoded.
    private func readHeldBody() {
        guard case .readingBody = exchange.phase, let call = inFlight else { return }
        switch call.body {
        case .chunked: readChunkedBody()
        case .remaining(let n):
            guard transport.inputLength >= n else { return } // the input's high-water mark is far above the bound
            hold(call)
            switch exchange.bodyRead() {
            case .lookUpToken(let number)?: lookUpToken(call: number)
            case nil: break
            }
        case .held: break
        }
    }

    /// Reads and decodes a chunked body whole (extensions and trailers dropped): the sidecar
    /// forwards it with its own Content-Length once it is all in.
    private func readChunkedBody() {
        guard case .readingBody = exchange.phase, let call = inFlight, case .chunked(var scanner) = call.body else { return }
        var held: [UInt8] = []
        swap(&held, &call.held) // one reference to its storage while it grows: no copy
        var (consumed, finished, failure) = decodeChunks(&scanner, into: &held)
        if failure == nil && held.count > call.reserved {
            let more = held.count - call.reserved
            if core.bufferBudget.reserve(more) {
                call.reserved += more
            } else {
                failure = .overloaded("the sidecar holds too many request bytes; try again")
            }
        }
        if let failure {
            switch exchange.bodyFailed(failure) {
            case .refuse(let failure, let keepAlive)?: refuseCall(failure, keepAlive: keepAlive)
            case nil: break
            }
            return
        }
        transport.drainInput(consumed)
        swap(&held, &call.held)
        guard finished else {
            call.body = .chunked(scanner)
            return
        }
        call.body = .held
        switch exchange.bodyRead() {
        case .lookUpToken(let number)?: lookUpToken(call: number)
        case nil: break
        }
    }

    /// Runs the chunk scanner over the input's chains in place, appending the decoded data to
    /// `held` up to the body limit: what it consumed, whether the body ended, and why not.
    private func decodeChunks(
        _ scanner: inout ChunkedBodyScanner, into held: inout [UInt8]
    ) -> (consumed: Int, finished: Bool, failure: ProxyFailure?) {
        var consumed = 0
        var finished = false
        var failure: ProxyFailure?
        let limit = core.limits.maxRequestBodyBytes
        transport.forEachInputChain { chunk in
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
        return (consumed, finished, failure)
    }

    // MARK: Token and upstream

    private func lookUpToken(call number: Int) {
        guard let call = inFlight else { return }
        // A hit is answered here, with no closure made. A call that waits holds the connection
        // strongly until the cache answers (exactly once, within the fetch's bound): a weak
        // reference would give the connection a side table, and every retain and release of
        // it for the rest of its life the slow path. An answer for a call that ended finds
        // no `inFlight` call of that number and is dropped.
        // The record keeps the first lookup's outcome (a refetch after a 401 does not change
        // it), noted before any answer can end the call.
        let first = call.record.cacheOutcome == nil
        let answer = core.cache.token(for: call.key) {
            if first { call.record.cacheOutcome = "miss" }
            return { [self] result in tokenAnswered(result, call: number) }
        }
        if let answer {
            if first { call.record.cacheOutcome = "hit" }
            tokenAnswered(answer, call: number)
        }
    }

    private func tokenAnswered(_ result: Result<String, ProxyFailure>, call number: Int) {
        guard let call = inFlight else { return }
        switch result {
        case .failure(let failure):
            switch exchange.tokenFailed(call: number, failure, bodySkippable: isSkippable(call.body)) {
            case .refuse(let failure, let keepAlive)?: refuseCall(failure, keepAlive: keepAlive)
            case nil: break
            }
        case .success(let token):
            switch exchange.tokenArrived(call: number) {
            case .acquireUpstream(let number)?:
                call.token = token
                acquireUpstream(call: number)
            case nil: break
            }
        }
    }

    /// Fleet Engine refused the token (revoked, rotated key): drop it from the cache and fetch
    /// another; the call is sent once more. The first answer never reaches the client.
    private func refetchToken(call number: Int) {
        guard let call = inFlight else { return }
        if let old = call.token { core.cache.invalidate(call.key, token: old) }
        call.token = nil
        lookUpToken(call: number)
    }

    private func acquireUpstream(call number: Int) {
        guard let call = inFlight else { return }
        if core.restOverHTTP2 {
            startH2Attempt(call: number)
            return
        }
        // A send over HTTP/2 that comes back to go by HTTP/1.1 (the route changed meanwhile).
        if let old = call.h2 { letGo(old, cancel: .superseded) }
        if let upstream = core.upstream.takeIdle() {
            upstreamLent(upstream, call: number)
            return
        }
        // The ticket's completion holds the connection strongly (a weak reference would give it
        // a side table, and every retain and release the slow path); `endCall` cancels the
        // ticket, which drops the completion, so the cycle ends with the call.
        call.ticket = core.upstream.acquire { [self] result in
            switch result {
            case .failure(let failure): upstreamFailed(failure, call: number)
            case .success(let upstream): upstreamLent(upstream, call: number)
            }
        }
    }

    private func upstreamFailed(_ failure: ProxyFailure, call number: Int) {
        guard let call = inFlight else { return }
        switch exchange.upstreamFailed(call: number, failure, bodySkippable: isSkippable(call.body)) {
        case .refuse(let failure, let keepAlive)?:
            call.ticket = nil
            refuseCall(failure, keepAlive: keepAlive)
        case nil: break
        }
    }

    /// A connection for the call: the request goes out on it, with its held body in the same
    /// write.
    private func upstreamLent(_ upstream: HTTP1UpstreamConnection, call number: Int) {
        switch exchange.upstreamReady(call: number) {
        case .sendHeld(let firstAttempt):
            guard let call = inFlight else { return }
            startAttempt(on: upstream, call: call, firstAttempt: firstAttempt)
            guard let token = call.token else { return }
            sendHead(call.head, token: token, bodyLength: call.held.count, body: call.held, to: upstream)
            requestSent()
        case .stream(let writeContinue, let firstAttempt):
            guard let call = inFlight else { return }
            startAttempt(on: upstream, call: call, firstAttempt: firstAttempt)
            if writeContinue { transport.write("HTTP/1.1 100 Continue\r\n\r\n") }
            guard let token = call.token, case .remaining(let n) = call.body else { return }
            sendHead(call.head, token: token, bodyLength: n, to: upstream)
            pumpRequestBody()
        case .giveBackConnection:
            // The call it was dialed for is over.
            core.upstream.release(upstream, reusable: true)
        }
    }

    /// Moves a short body that has fully arrived out of the input: it goes out with the head,
    /// and is kept so the request can be sent again (`ReplayPolicy`).
    private func hold(_ call: InFlight) {
        guard case .remaining(let n) = call.body else { return }
        var body = [UInt8](repeating: 0, count: n)
        if n > 0 { body.withUnsafeMutableBytes { _ = transport.removeInput(into: $0) } }
        call.held = body
        call.body = .held
    }

    private func startAttempt(on upstream: HTTP1UpstreamConnection, call: InFlight, firstAttempt: Bool) {
        call.ticket = nil
        call.upstream = upstream
        countAttempt(first: firstAttempt)
        upstream.beginExchange(method: call.head.method, sink: self)
    }

    private func countAttempt(first: Bool) {
        if first { core.statistics.forwarded += 1 } else { core.statistics.upstreamRetries += 1 }
    }

    // MARK: Forwarding

    /// Moves Content-Length request body bytes from the client to the upstream, with backpressure.
    private func pumpRequestBody() {
        if let attempt = inFlight?.h2 {
            attempt.upstream?.resumeRequestBody()
            return
        }
        guard !exchange.requestFullySent, let call = inFlight, let upstream = call.upstream,
              case .remaining(let n) = call.body else { return }
        let take = min(n, transport.inputLength)
        if take > 0 { upstream.send(fromInputOf: transport, count: take) }
        call.body = .remaining(n - take)
        if n - take == 0 {
            transport.enableReading()
            requestSent()
        } else if upstream.outputLength > core.limits.bufferHighWater {
            transport.disableReading() // resumed in connectionDrained
        } else {
            transport.enableReading()
        }
    }

    private func requestSent() {
        switch exchange.requestSent() {
        case .finishCall(let keepAlive)?: finishCall(keepAlive: keepAlive)
        case nil: break
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
        HeadWriter.withBytes({ out in
            out.write(head.method)
            out.byte(0x20)
            head.withTarget { out.write($0) }
            out.write(literal: " HTTP/1.1\r\nHost: ")
            out.write(host)
            out.write(literal: "\r\n")
            HopByHop.writeEndToEndFields(of: head.fields, dropping: HopByHop.dropFromRequest, to: &out)
            if head.framing != .none || bodyLength > 0 {
                Self.writeContentLength(bodyLength, to: &out)
            }
            out.write(literal: "Authorization: Bearer ")
            out.write(token)
            out.write(literal: "\r\n\r\n")
            out.write(body)
        }, use: { upstream.send($0) })
    }

    // MARK: ResponseSink

    var requestFullySent: Bool { exchange.requestFullySent }

    func responseHead(_ head: ResponseHead, from connection: HTTP1UpstreamConnection) {
        guard let call = inFlight, connection === call.upstream else { return }
        if relayHead(head, of: call)?.framing == .dechunked { call.dechunker = ChunkedBodyScanner() }
    }

    /// Relays an answer's head as the exchange decides (nil: it is not relayed).
    private func relayHead(_ head: ResponseHead, of call: InFlight) -> HTTP1Exchange.Relay? {
        let framing = head.framing(requestMethod: call.head.method)
        switch exchange.responseHead(status: head.status, framing: framing, declared: head.declaredFraming) {
        case .relay(let relay)?:
            call.record.status = head.status
            core.statistics.upstreamStatus[head.status, default: 0] += 1
            cork(head, as: relay)
            return relay
        case .dropForRetry?:
            // Its body is dropped as it arrives; at its end a fresh token is fetched
            // (`refetchToken`).
            logger.debug("Fleet Engine answered 401; retrying once with a fresh token", metadata: ["entity_type": "\(call.key.type.rawValue)"])
            return nil
        case nil:
            return nil
        }
    }

    /// Writes the relayed head into `corked`: the status line, the end-to-end fields and the
    /// framing and keep-alive the exchange decided, exactly one framing field or none.
    private func cork(_ head: ResponseHead, as relay: HTTP1Exchange.Relay) {
        HeadWriter.withBytes({ out in
            out.write(literal: relay.http10 ? "HTTP/1.0 " : "HTTP/1.1 ")
            Self.writeStatus(head.status, to: &out)
            out.byte(0x20)
            out.write(head.reason)
            out.write(literal: "\r\n")
            HopByHop.writeEndToEndFields(of: head.fields, dropping: HopByHop.dropFromResponse, to: &out)
            switch relay.framing {
            case .contentLength(let n), .none(declaredLength: let n?):
                Self.writeContentLength(n, to: &out)
            case .chunked:
                out.write(literal: "Transfer-Encoding: chunked\r\n")
            case .dechunked, .untilClose, .none(declaredLength: nil):
                break
            }
            if relay.closeAfter {
                out.write(literal: "Connection: close\r\n")
            } else if relay.saysKeepAlive {
                out.write(literal: "Connection: keep-alive\r\n")
            }
            out.write(literal: "\r\n")
        }, use: { corked.add($0) })
    }

    /// Writes the corked head (and what was added behind it) to the client.
    private func uncork() {
        let n = corked.count
        if n > 0 { transport.moveIn(from: corked, count: n) }
    }

    func responseBody(count: Int, from connection: HTTP1UpstreamConnection) {
        guard let call = inFlight, connection === call.upstream, exchange.isRelaying else {
            connection.dropBody(count)
            return
        }
        if var dechunker = call.dechunker {
            var left = count
            connection.forEachBodyPiece(count) { chunk in
                _ = dechunker.scan(chunk, onData: { data in corked.add(data) })
                left -= chunk.count
                return left > 0
            }
            connection.dropBody(count)
            call.dechunker = dechunker
        } else {
            connection.moveBody(count, into: corked)
        }
        uncork()
        if transport.outputLength > core.limits.bufferHighWater { connection.pauseReading() }
    }

    func responseEnded(from connection: HTTP1UpstreamConnection) {
        guard let call = inFlight, connection === call.upstream else { return }
        call.upstream = nil
        uncork()
        switch exchange.responseEnded() {
        case .finishCall(let keepAlive)?: finishCall(keepAlive: keepAlive)
        case .refetchToken(let number)?: refetchToken(call: number)
        case nil: break
        }
    }

    func responseFailed(_ failure: ProxyFailure, retryable: Bool) {
        guard let call = inFlight, call.upstream != nil else { return }
        call.upstream = nil
        if retryable { logger.debug("upstream connection was closed before answering") }
        answerFailed(exchange.responseFailed(failure, retry: retryable ? .connectionLost : nil))
    }

    /// Carries out what the exchange decided about an upstream exchange that broke.
    private func answerFailed(_ action: HTTP1Exchange.ResponseFailureAction?) {
        switch action {
        case .resend(let number)?:
            acquireUpstream(call: number)
        case .closeAfterFlush?:
            uncork()
            endCall(discardUpstream: "answer cut short")
            finishAndClose()
        case .refuse(let failure, let keepAlive)?:
            refuseCall(failure, keepAlive: keepAlive)
        case nil:
            break
        }
    }

    func connectionDrained(_ connection: HTTP1UpstreamConnection) {
        guard let call = inFlight, connection === call.upstream else { return }
        if connection.outputLength < core.limits.bufferHighWater { pumpRequestBody() }
    }

    // MARK: Over the HTTP/2 upstream

    /// Sends the call as one stream on the HTTP/2 upstream (`--upstream-protocol h2`): the
    /// head translated (`H2MessageTranslation.requestFields`), the body held whole or pulled
    /// from the input as the stream's DATA, never past this request's own bytes.
    private func startH2Attempt(call number: Int) {
        guard let call = inFlight else { return }
        if let old = call.h2 { letGo(old, cancel: .superseded) }
        switch exchange.upstreamReady(call: number) {
        case .sendHeld(let firstAttempt):
            countAttempt(first: firstAttempt)
        case .stream(let writeContinue, let firstAttempt):
            if writeContinue { transport.write("HTTP/1.1 100 Continue\r\n\r\n") }
            countAttempt(first: firstAttempt)
        case .giveBackConnection:
            return
        }
        guard let token = call.token else { return }
        let length: Int?
        switch call.body {
        case .held: length = call.held.count
        case .remaining(let n): length = call.head.framing == .none && n == 0 ? nil : n
        case .chunked: length = nil
        }
        let attempt = H2UpstreamAttempt(
            connection: self, method: call.head.method, path: call.head.target,
            fields: call.head.fields, bodyLength: length, token: token)
        call.h2 = attempt
        let upstream = core.upstreamH2.start(attempt)
        // A failure to start was reported already, and the call let go of the attempt.
        guard call.h2 === attempt else { return }
        attempt.upstream = upstream
        if !attempt.requestHasBody { requestSent() }
    }

    /// Lets go of a send over HTTP/2, resetting its stream when `cancel` says why.
    private func letGo(_ attempt: H2UpstreamAttempt, cancel why: UpstreamCancel?) {
        if inFlight?.h2 === attempt { inFlight?.h2 = nil }
        attempt.connection = nil
        if let why { attempt.upstream?.cancel(why) }
        attempt.upstream = nil
    }

    /// The call in flight, if `attempt` is its current send.
    private func current(_ attempt: H2UpstreamAttempt) -> InFlight? {
        guard let call = inFlight, call.h2 === attempt else { return nil }
        return call
    }

    /// Copies the request body out for the upstream: from what is held, or from the input up
    /// to the rest of this request's Content-Length (a pipelined request behind it stays in
    /// the input).
    func h2PullRequestBody(_ attempt: H2UpstreamAttempt, into buffer: UnsafeMutableRawBufferPointer) -> RequestBodyPull {
        guard let call = current(attempt) else { return .bytes(0, end: true) }
        let count: Int
        let end: Bool
        switch call.body {
        case .held:
            count = min(buffer.count, call.held.count - attempt.bodyBytesSent)
            call.held.withUnsafeBytes { held in
                buffer.copyMemory(from: UnsafeRawBufferPointer(rebasing: held[attempt.bodyBytesSent..<attempt.bodyBytesSent + count]))
            }
            end = attempt.bodyBytesSent + count == call.held.count
        case .remaining(let n):
            count = n == 0 ? 0 : transport.removeInput(into: UnsafeMutableRawBufferPointer(rebasing: buffer[0..<min(n, buffer.count)]))
            if count == 0 && n > 0 { return .wait }
            call.body = .remaining(n - count)
            end = n - count == 0
        case .chunked:
            return .bytes(0, end: true)
        }
        attempt.bodyBytesSent += count
        if end { requestSent() }
        return .bytes(count, end: end)
    }

    /// A header block of the answer: its head (translated and relayed as the exchange
    /// decides; an interim 1xx head is dropped) or its trailers (dropped: docs/CONTRACT.md §6).
    func h2HeaderBlock(_ attempt: H2UpstreamAttempt, _ fields: H2HeaderList, endStream: Bool) {
        guard let call = current(attempt) else { return }
        if attempt.relayFraming == nil, case .forwarding = exchange.phase {
            guard let bytes = H2MessageTranslation.http1Head(fields) else {
                answerFailed(exchange.responseFailed(.upstreamUnavailable("Fleet Engine answered without a valid :status")))
                return
            }
            let parsed = bytes.withUnsafeBytes { HTTP1Parser.parseResponse($0, maxHeadBytes: .max, maxHeaderCount: .max) }
            guard case .complete(let head, _) = parsed else {
                answerFailed(exchange.responseFailed(.upstreamUnavailable("Fleet Engine's answer head cannot be relayed")))
                return
            }
            if head.status < 200 && !endStream { return }
            attempt.relayFraming = relayHead(head, of: call)?.framing
        }
        if endStream { h2AnswerEnded(attempt) }
    }

    /// Answer DATA: written to the client in the relay's framing (each piece a chunk when
    /// chunked), credited back to the upstream as the client takes it.
    func h2Data(_ attempt: H2UpstreamAttempt, _ bytes: UnsafeRawBufferPointer) {
        guard current(attempt) != nil, exchange.isRelaying, let framing = attempt.relayFraming else {
            attempt.upstream?.responseTaken(count: bytes.count)
            return
        }
        switch framing {
        case .chunked:
            guard bytes.count > 0 else { break }
            HeadWriter.withBytes({ out in
                out.write(String(bytes.count, radix: 16))
                out.write(literal: "\r\n")
            }, use: { corked.add($0) })
            corked.add(bytes)
            corked.add(ByteView("\r\n"))
        case .contentLength, .dechunked, .untilClose:
            corked.add(bytes)
        case .none:
            break
        }
        uncork()
        if transport.outputLength > core.limits.bufferHighWater {
            attempt.owedCredit += bytes.count
        } else {
            attempt.upstream?.responseTaken(count: bytes.count)
        }
    }

    /// The answer ended: the last chunk if chunked, then the exchange decides (the call is
    /// done, or a 401 is retried with a fresh token).
    func h2AnswerEnded(_ attempt: H2UpstreamAttempt) {
        guard current(attempt) != nil else { return }
        if attempt.relayFraming == .chunked && exchange.isRelaying { corked.add(ByteView("0\r\n\r\n")) }
        uncork()
        switch exchange.responseEnded() {
        case .finishCall(let keepAlive)?:
            letGo(attempt, cancel: nil)
            finishCall(keepAlive: keepAlive)
        case .refetchToken(let number)?:
            letGo(attempt, cancel: .superseded)
            refetchToken(call: number)
        case nil:
            break
        }
    }

    /// The stream closed. Cleanly after the answer ended, it matters only if the request body
    /// was cut short (the connection cannot find the next request: it closes). A refused
    /// stream is sent again when the exchange says so; a reset before the head is a 502, after
    /// it the connection closes (docs/CONTRACT.md §6).
    func h2Closed(_ attempt: H2UpstreamAttempt, _ end: UpstreamEnd) {
        guard current(attempt) != nil else { return }
        switch end {
        case .completed:
            answerFailed(exchange.responseFailed(.upstreamUnavailable("Fleet Engine ended the stream before the request body was sent")))
        case .unprocessed(let failure):
            logger.debug("Fleet Engine did not process the stream", metadata: ["reason": "\(failure.message)"])
            answerFailed(exchange.responseFailed(failure, retry: .unprocessed, bodyIntact: attempt.bodyBytesSent == 0))
        case .declined(let failure):
            // Never opened, so not a byte of the body left: the call goes by HTTP/1.1 now.
            letGo(attempt, cancel: nil)
            answerFailed(exchange.exchangeDeclined(failure))
        case .connectionLost(let failure):
            answerFailed(exchange.responseFailed(failure, retry: .connectionLost, bodyIntact: attempt.bodyBytesSent == 0))
        case .failed(let failure):
            answerFailed(exchange.responseFailed(failure))
        }
    }

    // MARK: Ending calls

    /// Lets go of what the call holds: its place in the pool's queue, a borrowed upstream
    /// connection (discarded when the exchange on it is unfinished), its budget.
    private func endCall(discardUpstream reason: String?) {
        guard let call = inFlight else { return }
        inFlight = nil
        call.ticket?.cancel()
        if let attempt = call.h2 { letGo(attempt, cancel: reason == nil ? nil : .abandoned) }
        if let upstream = call.upstream, let reason { core.upstream.discard(upstream, reason: reason) }
        core.bufferBudget.release(call.reserved)
    }

    private func finishCall(keepAlive: Bool) {
        if let call = inFlight {
            let record = call.takeRecord(core: core, logger: logger)
            record.finish(core: core, logger: logger)
            endCall(discardUpstream: nil)
        }
        keepAlive ? readNextRequest() : finishAndClose()
    }

    /// Refuses the call in flight; when the connection is kept, its buffered body is dropped
    /// first.
    private func refuseCall(_ failure: ProxyFailure, keepAlive: Bool) {
        guard let call = inFlight else { return }
        if keepAlive { skip(call.body) }
        answerRefusal(failure, keepAlive: keepAlive, record: call.takeRecord(core: core, logger: logger))
    }

    /// Refuses a request before its call began (bad head, unknown route, too large, no
    /// budget), with the record its refusal built. `body`: what the connection may drop to be
    /// kept (nil: it cannot be, the client asked to close or the body is unknown).
    private func refuseHead(_ failure: ProxyFailure, record: CallRecord, skippingIfBuffered body: RequestBody?) {
        let skippable = body.map(isSkippable) ?? false
        switch exchange.headRefused(failure, bodySkippable: skippable) {
        case .refuse(let failure, let keepAlive)?:
            if keepAlive, let body { skip(body) }
            answerRefusal(failure, keepAlive: keepAlive, record: record)
        case nil:
            break
        }
    }

    /// Answers a call the sidecar refuses itself (docs/CONTRACT.md §5) and either keeps the connection
    /// for the next request or closes it once the answer is written.
    private func answerRefusal(_ failure: ProxyFailure, keepAlive: Bool, record: CallRecord) {
        core.statistics.refusedByStatus[failure.httpStatus, default: 0] += 1
        var record = record
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
        switch exchange.readingNextHead(now: core.clock.monotonicNow) {
        case .arm(let deadline)?: armHeadTimer(at: deadline)
        case nil: break
        }
        if transport.inputLength > 0 { core.loop.schedule(after: 0) { [weak self] in self?.readRequests() } }
    }

    private func finishAndClose() {
        transport.disableReading()
        if transport.outputLength == 0 { outputFlushed() }
    }

    private func outputFlushed() {
        switch exchange.outputFlushed() {
        case .close(let reason)?: tearDown(reason: reason)
        case nil: break
        }
    }

    private static func writeContentLength(_ n: Int, to out: inout HeadWriter) {
        out.write(literal: "Content-Length: ")
        out.decimal(n)
        out.write(literal: "\r\n")
    }

    /// Three ASCII digits (statuses are 100–999).
    private static func writeStatus(_ status: Int, to out: inout HeadWriter) {
        out.byte(UInt8(48 + status / 100 % 10))
        out.byte(UInt8(48 + status / 10 % 10))
        out.byte(UInt8(48 + status % 10))
    }
}
