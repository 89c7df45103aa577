import CEvent
import Logging

/// One client connection speaking HTTP/1.1 to the sidecar: the I/O shell around
/// `HTTP1Exchange`, which holds the connection's and the call's state and decides every step.
///
/// It reads a request head, works out the entity, reads a body it must hold whole, waits for
/// that entity's token, then hands the call (`H1ClientCall`, the client half) to an upstream
/// exchange, `H2UpstreamStream` or `H1UpstreamExchange` as `RESTUpstreamRoute` says, through
/// `UpstreamExchange` alone: whichever protocol carries it, the request leaves by the call's
/// pulls and the answer comes back as the same reports (`AnswerHead`, body bytes, its end), so
/// there is one relay and one backpressure scheme (credit given back as the client takes the
/// answer). One call at a time; pipelined requests wait in the input buffer. Its owner is the
/// `ProxyServer`; `close(reason:)` is its one way out.
final class HTTP1ClientConnection: ClientConnection, TransportDelegate {
    private typealias RequestBody = H1ClientCall.RequestBody

    private var transport: Transport!
    private let core: ProxyCore
    private unowned let server: ProxyServer
    /// Unchecked exclusivity (docs/ARCHITECTURE.md, State machines): the machine is a value
    /// whose mutating methods touch nothing but itself and return before the shell acts on
    /// their action, all on the loop's one thread, so no two accesses to it can overlap; the
    /// runtime's check of each event (a thread-local access set, about 120 instructions) could
    /// never fire.
    @exclusivity(unchecked) private var exchange: HTTP1Exchange
    private var inFlight: H1ClientCall?
    /// The HTTP/1.1 pool's exchange of this connection's last call, for the next call to reuse
    /// once it is over and nothing else holds it (`H1UpstreamExchange.reusable`). Unchecked
    /// exclusivity: its one inout access, the uniqueness check, calls nothing that could reach
    /// it again (the runtime's check would cost about 120 instructions a call).
    @exclusivity(unchecked) private var spareExchange: H1UpstreamExchange?
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

    /// Frees the socket, cancels the call's upstream exchange (which discards a connection it
    /// left half used), returns held bytes to the budget, and tells the server. Runs once:
    /// after the exchange moved to `closed`.
    private func tearDown(reason: String) {
        recordUnended()
        endCall(abandoningUpstream: true)
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
        case .pumpBody?: inFlight?.upstream?.resumeRequestBody()
        case nil: break
        }
    }

    func transportWritable(_ transport: Transport) {
        switch exchange.phase {
        case .closingAfterFlush:
            if transport.outputLength == 0 { outputFlushed() }
        case .forwarding:
            // The client caught up: the upstream may send what it was owed credit for.
            if transport.outputLength < core.limits.bufferHighWater, let call = inFlight, call.owedCredit > 0 {
                let owed = call.owedCredit
                call.owedCredit = 0
                call.upstream?.responseTaken(count: owed)
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
                switch exchange.http2PrefaceArrived() {
                case .handOverToHTTP2?:
                    headTimer.cancel()
                    server.upgrade(self, transport: transport)
                    return
                case nil:
                    break
                }
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
            let record = CallRecord(clientProtocol: .http1, started: core.clock.monotonicNow)
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
        // A refusal builds its record here; a call builds its own in `H1ClientCall.init`.
        func refuseBeforeCall(_ failure: ProxyFailure, bodyKnown: Bool) {
            var record = CallRecord(clientProtocol: .http1, started: started)
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
        let call = H1ClientCall(connection: self, head: head, key: key, started: started, body: body)
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
            endCall(abandoningUpstream: false) // not reading heads: `readRequests` checked it
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
        // A call that waits holds the connection strongly until the cache answers (exactly
        // once, within the fetch's bound): a weak reference would give the connection a side
        // table, and every retain and release of it for the rest of its life the slow path. An
        // answer for a call that ended finds no `inFlight` call of that number and is dropped.
        let answer = core.token(for: call.key, of: call) {
            { [self] result in tokenAnswered(result, call: number) }
        }
        if let answer { tokenAnswered(answer, call: number) }
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
                call.quotaProject = core.quotaProject(for: call.key.type)
                startExchange(call: number)
            case nil: break
            }
        }
    }

    /// Fleet Engine refused the token (revoked, rotated key): drop it from the cache and fetch
    /// another; the call is sent once more. The first answer never reaches the client.
    private func refetchToken(call number: Int) {
        guard let call = inFlight else { return }
        core.tokenRefused(call.token, for: call.key)
        call.token = nil
        lookUpToken(call: number)
    }

    /// Starts the call's next send: on the HTTP/2 upstream or the HTTP/1.1 pool as
    /// `RESTUpstreamRoute` says now (an `auto` fallback moves a resend to HTTP/1.1), through
    /// the one `UpstreamExchange` interface either way.
    private func startExchange(call number: Int) {
        guard let call = inFlight else { return }
        // A 401's exchange was cancelled when its answer ended; any other had ended.
        call.upstream = nil
        switch exchange.upstreamReady(call: number) {
        case .sendHeld(let firstAttempt)?:
            countAttempt(first: firstAttempt)
        case .stream(let writeContinue, let firstAttempt)?:
            if writeContinue { transport.write("HTTP/1.1 100 Continue\r\n\r\n") }
            countAttempt(first: firstAttempt)
        case nil:
            return
        }
        call.beginSend()
        let send = call.sendsStarted
        let upstream: UpstreamExchange
        if core.restOverHTTP2 {
            upstream = core.upstreamH2.start(call)
        } else if let spare = H1UpstreamExchange.reusable(&spareExchange) {
            spare.restart(for: call)
            upstream = spare
        } else {
            let fresh = H1UpstreamExchange.start(call, pool: core.upstream, loop: core.loop, host: core.upstreamOrigin.hostHeader,
                                                 highWater: core.limits.bufferHighWater)
            spareExchange = fresh
            upstream = fresh
        }
        // A start that failed at once was reported already: the call moved on without it.
        guard inFlight === call, call.sendsStarted == send else { return }
        call.upstream = upstream
        if !call.requestHasBody { requestSent() }
    }

    /// Moves a short body that has fully arrived out of the input: it goes out with the head,
    /// and is kept so the request can be sent again (`ReplayPolicy`).
    private func hold(_ call: H1ClientCall) {
        guard case .remaining(let n) = call.body else { return }
        var body = [UInt8](repeating: 0, count: n)
        if n > 0 { body.withUnsafeMutableBytes { _ = transport.removeInput(into: $0) } }
        call.held = body
        call.body = .held
    }

    private func countAttempt(first: Bool) {
        if first { core.statistics.forwarded += 1 } else { core.statistics.upstreamRetries += 1 }
    }

    // MARK: The request, as the upstream exchange pulls it

    /// Hands request body bytes to the upstream exchange: from what is held, or from the
    /// input up to the rest of this request's Content-Length (a pipelined request behind it
    /// stays in the input). The last of them means the request has left.
    func pullRequestBody(_ call: H1ClientCall, upTo max: Int, _ take: (ByteView) -> Void) -> RequestBodyPull {
        guard inFlight === call else { return .bytes(0, end: true) }
        let count: Int
        let end: Bool
        switch call.body {
        case .held:
            let from = call.heldBytesSent
            count = min(max, call.held.count - from)
            if count > 0 { call.held.withUnsafeBufferPointer { take(ByteView($0[from..<(from + count)])) } }
            call.heldBytesSent += count
            end = call.heldBytesSent == call.held.count
        case .remaining(let n):
            count = min(n, max, transport.inputLength)
            if count == 0 && n > 0 { return .wait }
            transport.forEachInputChain(limit: count) { piece in
                take(ByteView(piece))
                return true
            }
            transport.drainInput(count)
            call.body = .remaining(n - count)
            call.streamedBytesSent += count
            end = n - count == 0
        case .chunked:
            return .bytes(0, end: true)
        }
        if end { requestSent() }
        return .bytes(count, end: end)
    }

    private func requestSent() {
        switch exchange.requestSent() {
        case .finishCall(let keepAlive)?: finishCall(keepAlive: keepAlive)
        case nil: break
        }
    }

    // MARK: The answer, as the upstream exchange reports it

    /// A header block of the answer: its head (relayed as the exchange decides; an interim 1xx
    /// head is dropped) or its trailers (dropped: docs/CONTRACT.md §6).
    func upstreamHeaderBlock(_ call: H1ClientCall, _ head: AnswerHead, endStream: Bool) {
        guard inFlight === call else { return }
        if call.relayFraming == nil, exchange.isAwaitingAnswer {
            guard let status = head.facts.status else {
                answerFailed(call, exchange.responseFailed(.upstreamUnavailable("Fleet Engine answered without a valid :status")))
                return
            }
            if status < 200 && !endStream { return }
            relayHead(head, status: status, endStream: endStream, of: call)
        }
        if endStream { upstreamDataEnded(call) }
    }

    /// Relays an answer's head as the exchange decides.
    private func relayHead(_ head: AnswerHead, status: Int, endStream: Bool, of call: H1ClientCall) {
        let (framing, declared) = head.framing(requestMethod: call.head.method, status: status, endStream: endStream)
        switch exchange.responseHead(status: status, framing: framing, declared: declared) {
        case .relay(let relay)?:
            call.record.outcome.headSent(status: status)
            core.statistics.upstreamStatus[status, default: 0] += 1
            cork(head, status: status, as: relay)
            call.relayFraming = relay.framing
        case .dropForRetry?:
            // Its body is dropped as it arrives; at its end a fresh token is fetched
            // (`refetchToken`).
            logger.debug("Fleet Engine answered 401; retrying once with a fresh token", metadata: ["entity_type": "\(call.key.type.rawValue)"])
        case nil:
            break
        }
    }

    /// Writes the relayed head into `corked`: the status line, the end-to-end fields (an
    /// HTTP/2 field that is not valid HTTP/1.1 is dropped, `H2MessageTranslation.isRelayed`)
    /// and the framing and keep-alive the exchange decided, exactly one framing field or none.
    private func cork(_ head: AnswerHead, status: Int, as relay: HTTP1Exchange.Relay) {
        HeadWriter.withBytes({ out in
            out.write(literal: relay.http10 ? "HTTP/1.0 " : "HTTP/1.1 ")
            Self.writeStatus(status, to: &out)
            out.byte(0x20)
            switch head {
            case .http1(let answer, _):
                out.write(answer.reason)
                out.write(literal: "\r\n")
                HopByHop.writeEndToEndFields(of: answer.fields, dropping: HopByHop.dropFromResponse, to: &out)
            case .http2(let fields):
                H2MessageTranslation.writeReasonAndFields(of: fields, status: status, to: &out)
            }
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

    /// Answer body bytes (de-chunked by the upstream half): written to the client in the
    /// relay's framing (each piece a chunk when chunked), credited back to the upstream as the
    /// client takes them. Bytes nobody relays (a 401's body) are credited at once.
    func upstreamData(_ call: H1ClientCall, _ bytes: ByteView) {
        let count = bytes.count
        guard inFlight === call, exchange.isRelaying, let framing = call.relayFraming else {
            call.upstream?.responseTaken(count: count)
            return
        }
        switch framing {
        case .chunked:
            guard count > 0 else { break }
            HeadWriter.withBytes({ out in
                out.write(String(count, radix: 16))
                out.write(literal: "\r\n")
            }, use: { corked.add($0) })
            corked.add(bytes)
            corked.add(ByteView("\r\n"))
            uncork()
        case .contentLength, .dechunked, .untilClose:
            // Behind the corked head (one write), or straight to the client once it is out.
            if corked.isEmpty {
                transport.write(bytes.raw)
            } else {
                corked.add(bytes)
                uncork()
            }
        case .none:
            break
        }
        if transport.outputLength > core.limits.bufferHighWater {
            call.owedCredit += count
        } else {
            call.upstream?.responseTaken(count: count)
        }
    }

    /// The answer ended: the last chunk if chunked, then the exchange decides (the call is
    /// done, or a 401 is retried with a fresh token).
    func upstreamDataEnded(_ call: H1ClientCall) {
        guard inFlight === call else { return }
        if call.relayFraming == .chunked && exchange.isRelaying { corked.add(ByteView("0\r\n\r\n")) }
        uncork()
        // A relayed answer is whole now, whatever the exchange decides next (a 401 is not relayed).
        if call.relayFraming != nil { call.record.outcome.answerEnded() }
        switch exchange.responseEnded() {
        case .finishCall(let keepAlive)?:
            finishCall(keepAlive: keepAlive)
        case .refetchToken(let number)?:
            call.upstream?.cancel(.superseded)
            call.upstream = nil
            refetchToken(call: number)
        case nil:
            break
        }
    }

    /// The exchange is over. Cleanly after the answer ended, it matters only if the request
    /// body was cut short (the connection cannot find the next request: it closes). Otherwise
    /// `ReplayPolicy`, through the exchange, says whether the call goes again; a failure before
    /// the head is a 502, after it the connection closes (docs/CONTRACT.md §6).
    func upstreamClosed(_ call: H1ClientCall, _ end: UpstreamEnd) {
        guard inFlight === call else { return }
        call.upstream = nil
        let intact = call.streamedBytesSent == 0
        let skippable = isSkippable(call.body)
        switch end {
        case .completed:
            answerFailed(call, exchange.responseFailed(.upstreamUnavailable("Fleet Engine ended the exchange before the request was sent")))
        case .unprocessed(let failure):
            logger.debug("Fleet Engine did not process the exchange", metadata: ["reason": "\(failure.message)"])
            answerFailed(call, exchange.responseFailed(failure, retry: .unprocessed, bodyIntact: intact, bodySkippable: skippable))
        case .connectionLost(let failure):
            logger.debug("the upstream connection was lost", metadata: ["reason": "\(failure.message)"])
            answerFailed(call, exchange.responseFailed(failure, retry: .connectionLost, bodyIntact: intact, bodySkippable: skippable))
        case .declined(let failure):
            // Nothing of it left: the call goes by HTTP/1.1 now.
            answerFailed(call, exchange.exchangeDeclined(failure))
        case .failed(let failure):
            answerFailed(call, exchange.responseFailed(failure, bodySkippable: skippable))
        }
    }

    /// Carries out what the exchange decided about an upstream exchange that ended early.
    private func answerFailed(_ call: H1ClientCall, _ action: HTTP1Exchange.ResponseFailureAction?) {
        switch action {
        case .resend(let number)?:
            startExchange(call: number)
        case .closeAfterFlush?:
            uncork()
            call.record.outcome.answerCut()
            recordUnended()
            endCall(abandoningUpstream: true)
            finishAndClose()
        case .refuse(let failure, let keepAlive)?:
            refuseCall(failure, keepAlive: keepAlive)
        case nil:
            break
        }
    }

    // MARK: Ending calls

    /// Lets go of what the call holds: its upstream exchange (cancelled when `abandoningUpstream`:
    /// its request or answer is unfinished), its budget.
    private func endCall(abandoningUpstream: Bool) {
        guard let call = inFlight else { return }
        inFlight = nil
        call.connection = nil
        if let upstream = call.upstream {
            call.upstream = nil
            if abandoningUpstream { upstream.cancel(.abandoned) }
        }
        core.bufferBudget.release(call.reserved)
    }

    /// Records the call in flight when it ends before its answer did (docs/CONTRACT.md §5, "What
    /// a call is recorded as"): the sidecar cut the answer, or the client went away.
    private func recordUnended() {
        guard let call = inFlight else { return }
        call.takeRecord(core: core, logger: logger).finish(core: core, logger: logger)
    }

    private func finishCall(keepAlive: Bool) {
        if let call = inFlight {
            let record = call.takeRecord(core: core, logger: logger)
            record.finish(core: core, logger: logger)
            endCall(abandoningUpstream: false)
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
        record.outcome.headSent(status: failure.httpStatus)
        record.outcome.answerEnded()
        record.refusal = failure.message
        record.finish(core: core, logger: logger)
        endCall(abandoningUpstream: true)
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
