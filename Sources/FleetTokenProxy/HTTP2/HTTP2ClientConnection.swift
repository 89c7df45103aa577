import CEvent
import CNghttp2
import Logging

/// One client connection speaking HTTP/2 (h2c with prior knowledge, as a gRPC client's
/// insecure channel does) to the sidecar.
///
/// Each stream is the client half of a call (`H2ClientCall`): its entity is worked out from the
/// gRPC method and first request message (or the REST path), its token attached, and it is
/// forwarded through an `UpstreamExchange` the upstream pool starts (a stream of a shared
/// upstream HTTP/2 connection). A thin I/O shell: where each call stands is its `H2CallState`,
/// where the connection stands is its `H2ConnectionLifecycle`; this class feeds them what
/// nghttp2 and the upstream exchange report and carries out what they return.
///
/// Memory: request bytes a call holds count against `limits.maxConnectionBufferedBytes` (this
/// connection) and `core.bufferBudget` (the process); connection-level flow-control credit goes
/// back as bytes arrive, stream-level credit only for the first message (before routing) and
/// then as bytes leave for the upstream, so a stream's window bounds what it can make the
/// sidecar hold. Owned by the `ProxyServer`; `close(reason:)` is its one way out.
final class HTTP2ClientConnection: ClientConnection, TransportDelegate, H2SessionDelegate {
    private var transport: Transport
    private var session: H2Session!
    private let core: ProxyCore
    private unowned let server: ProxyServer
    private var calls = H2StreamTable<H2ClientCall>()
    private var lifecycle = H2ConnectionLifecycle()
    private var logger: Logger
    /// Runs `flush()` once after the current callbacks, for frames queued from outside this
    /// connection's own read (the upstream's answers, a token that arrived).
    private var flushWakeup: LoopWakeup!
    /// Scratch list for the heads this connection submits (reused, not allocated per call).
    private var outgoingHead = H2HeaderList()
    /// Request bytes held by this connection's calls (`limits.maxConnectionBufferedBytes`).
    private var bufferedBytes = 0
    /// Calls whose machine asked for a timer since the last flush. The timer is armed at the
    /// flush, if still wanted: a call routed or answered in the same callbacks never makes one.
    private var timersToArm: [H2ClientCall] = []
    let id: Int

    /// Takes over `transport` from the HTTP/1.1 connection that saw the HTTP/2 preface. Reads
    /// nothing until `start()`, so the server has registered it before any input can end it.
    init(transport: Transport, core: ProxyCore, server: ProxyServer, id: Int) throws {
        self.transport = transport
        self.core = core
        self.server = server
        self.id = id
        var logger = core.logger
        logger[metadataKey: "conn"] = "\(id)"
        logger[metadataKey: "protocol"] = "h2"
        self.logger = logger
        transport.delegate = self
        flushWakeup = LoopWakeup(loop: core.loop) { [unowned self] in flush() }
        session = try H2Session(isServer: true, transport: transport, delegate: self,
                                maxHeaderListBytes: core.limits.maxHeadBytes, maxHeaderCount: core.limits.maxHeaderCount)
        session.submitSettings(maxConcurrentStreams: UInt32(core.limits.maxConcurrentStreams))
    }

    /// Reads the input already there (the preface and what came with it).
    func start() {
        transportReadable(transport)
    }

    func close(reason: String) {
        guard case .close = lifecycle.sessionEnded() else { return }
        let open = calls.values
        calls.removeAll()
        timersToArm.removeAll()
        for call in open { streamClosed(call) }
        logger.trace("connection closed", metadata: ["reason": "\(reason)"])
        flushWakeup.cancel()
        session.close()
        transport.close()
        server.connectionClosed(self)
    }

    /// Stops taking new streams: GOAWAY with the last stream taken; the streams up to it
    /// finish (the server's drain timeout bounds them), then the connection closes.
    func drain() {
        switch lifecycle.drain(lastProcessedStreamID: session.lastProcessedStreamID) {
        case .sendGoAway(let last, let close)?:
            session.goAway(lastStreamID: last)
            if close { flushSoon() }
        case nil:
            break
        }
        flush()
    }

    /// Closes once what is queued is written (`flush` sees the lifecycle's closing state).
    private func perform(_ action: H2ConnectionLifecycle.CloseAction?) {
        switch action {
        case .closeWhenWritten?: flushSoon()
        case nil: break
        }
    }

    // MARK: TransportDelegate

    func transportReadable(_ transport: Transport) {
        guard !lifecycle.isClosed else { return }
        session.receiveInput()
        flush()
    }

    func transportWritable(_ transport: Transport) { flush() }

    func transportEvent(_ transport: Transport, events: Int16) {
        let e = Int32(events)
        if e & BEV_EVENT_TIMEOUT != 0 && e & BEV_EVENT_READING != 0 && !calls.isEmpty {
            // Quiet because its calls wait on the upstream or a token; each call has its own
            // timer (head timeout, grpc-timeout) and the upstream its own bounds.
            transport.enableReading()
            return
        }
        close(reason: transport.describe(events: e))
    }

    /// Writes what nghttp2 has queued, then asks whether the session is over (`H2Session.end`,
    /// the one place a connection error either side declared is found): it closes at once
    /// after the client's error or a fatal failure, else once all is written, as after a drain.
    func flush() {
        guard !lifecycle.isClosed else { return }
        session.flush()
        armTimers()
        let end = session.end
        if let end {
            switch lifecycle.sessionOver(end.cause) {
            case .closeNow?:
                logger.debug("HTTP/2 connection error", metadata: ["error": "\(end)"])
                return close(reason: "\(end)")
            case .closeWhenWritten?:
                if end.isConnectionError { logger.debug("HTTP/2 connection error", metadata: ["error": "\(end)"]) }
            case nil:
                break
            }
        }
        guard transport.outputLength == 0, lifecycle.closesWhenWritten, !session.wantsWrite else { return }
        close(reason: end.map { "\($0)" } ?? "drained")
    }

    /// Flushes after the current callbacks (from the other connection's callbacks), once
    /// however often it is asked: the answers of many streams leave in one write.
    func flushSoon() {
        guard !lifecycle.isClosed else { return }
        flushWakeup.soon()
    }

    // MARK: H2SessionDelegate — the client's side

    func h2BeginHeaders(stream: Int32) {
        guard calls[stream] == nil else { return } // trailers: the call's machine hears of them at their end
        switch lifecycle.streamOpened(stream) {
        case .accept:
            break
        case .refuse:
            session.resetStream(stream, errorCode: UInt32(NGHTTP2_REFUSED_STREAM.rawValue))
            return
        }
        core.statistics.calls += 1
        let now = core.clock.monotonicNow
        let call = H2ClientCall(clientStream: stream, connection: self,
                                state: H2CallState(now: now, headTimeout: core.limits.headTimeout, ioTimeout: core.limits.ioTimeout),
                                record: CallRecord(clientProtocol: .h2, started: now))
        calls[stream] = call
    }

    /// Takes what the sidecar reads from the request head, and keeps the fields it forwards.
    private func readRequestHead(_ call: H2ClientCall, _ fields: H2HeaderList) {
        fields.forEach { name, value in
            readRequestField(call, name: name, value: value)
            return true
        }
    }

    private func readRequestField(_ call: H2ClientCall, name: ByteView, value: ByteView) {
        // Fields stay bytes: only the few the sidecar reads become values of their own.
        if name.first == UInt8(ascii: ":") {
            if name == ":method" {
                call.method = value.string
            } else if name == ":path" {
                call.path = value.string
            }
            return // :authority and :scheme are set again for the upstream; no other is forwarded
        }
        if name == "content-type" {
            call.isGRPC = value.hasPrefix("application/grpc")
        } else if name == "grpc-encoding" {
            call.grpcEncoding = value.string
        } else if name == "grpc-timeout" {
            call.grpcTimeout = H2ClientCall.grpcTimeout(value.string)
        } else if HopByHop.dropFromH2Request(name) {
            return
        }
        call.headers.append(name: name, value: value)
    }

    func h2HeadersEnded(stream: Int32, fields: H2HeaderList, endStream: Bool) {
        guard let call = calls[stream] else { return }
        // Only the request head is read: trailers end the request and are never forwarded
        // (nor their grpc-timeout).
        guard call.state.awaitsRequestHead else {
            requestEnded(call)
            return
        }
        readRequestHead(call, fields)
        call.record.clientProtocol = call.isGRPC ? .grpc : .h2
        call.record.method = call.method
        call.record.target = call.path
        let deadline = call.grpcTimeout.map { core.clock.monotonicNow + $0 }
        guard let timerAt = call.state.requestHeadEnded(endStream: endStream, callDeadline: deadline,
                                                        idempotent: !call.isGRPC && ReplayPolicy.isIdempotent(call.method)) else { return }
        armTimer(call, at: timerAt)
        route(call)
    }

    func h2Data(stream: Int32, bytes: UnsafeRawBufferPointer) {
        guard let call = calls[stream] else {
            session.consumeConnection(count: bytes.count)
            return
        }
        switch call.state.requestData() {
        case .bufferFirstMessage:
            if buffer(call, bytes, firstMessage: true) { route(call) }
        case .buffer:
            buffer(call, bytes, firstMessage: false)
        case .bufferAndResumeUpstream:
            if buffer(call, bytes, firstMessage: false) { call.upstream?.resumeRequestBody() }
        case .discard:
            session.consumeConnection(count: bytes.count)
        }
    }

    func h2DataEnded(stream: Int32) {
        guard let call = calls[stream] else { return }
        requestEnded(call)
    }

    private func requestEnded(_ call: H2ClientCall) {
        switch call.state.requestEndReceived() {
        case .route?: route(call)
        case .resumeUpstreamBody?: call.upstream?.resumeRequestBody()
        case nil: break
        }
    }

    func h2StreamClosed(stream: Int32, errorCode: UInt32) {
        guard let call = calls.removeValue(forKey: stream) else { return }
        streamClosed(call)
        perform(lifecycle.streamClosed())
    }

    /// The call's client stream is gone (or its connection): the call finishes.
    private func streamClosed(_ call: H2ClientCall) {
        switch call.state.streamClosed() {
        case .finish(let cancelUpstream)?:
            cancelTimer(call)
            if cancelUpstream { call.upstream?.cancel(.abandoned) }
            releaseBuffers(call)
            call.upstream = nil
            call.record.entityType = call.key?.type.rawValue
            // The stream id is for the debug line only: not built for calls nobody logs.
            call.record.finish(core: core, logger: logger, extra: logger.logLevel <= .debug ? ["stream": "\(call.clientStream)"] : [:])
        case nil:
            break
        }
        call.connection = nil
    }

    func h2ReadBody(stream: Int32, into buffer: UnsafeMutableRawBufferPointer) -> H2BodyRead {
        guard let call = calls[stream] else { return .bytes(0, end: true, trailers: false) }
        let n = call.responseBody.remove(into: buffer)
        if n > 0 { call.upstream?.responseTaken(count: n) }
        switch call.state.responseRead(count: n, remaining: call.responseBody.count, now: core.clock.monotonicNow) {
        case .send:
            return .bytes(n, end: false, trailers: false)
        case .end:
            guard call.responseTrailers != nil else { return .bytes(n, end: true, trailers: false) }
            // Copied by nghttp2 and let go of, so the upstream session gathers its next block in
            // the same storage.
            session.submitTrailer(stream: stream, releasing: &call.responseTrailers)
            return .bytes(n, end: true, trailers: true)
        case .wait:
            return .deferred
        }
    }

    func h2GoAway(lastStreamID: Int32, errorCode: UInt32) {
        perform(lifecycle.peerGoAway())
    }

    func h2SentEndStream(stream: Int32) {
        guard let call = calls[stream] else { return }
        call.record.outcome.answerEnded()
        switch call.state.answerSent() {
        case .resetClient(let code)?: resetClient(call, errorCode: code)
        case nil: break
        }
    }

    // MARK: Carrying out the call's decisions

    private func resetClient(_ call: H2ClientCall, errorCode: UInt32) {
        session.resetStream(call.clientStream, errorCode: errorCode)
        flushSoon()
    }

    private func resumeClientBody(_ call: H2ClientCall) {
        session.resumeData(stream: call.clientStream)
        flushSoon()
    }

    /// Cancels the upstream exchange; credit for response bytes the client will never take
    /// goes back with it.
    private func cancelUpstream(_ call: H2ClientCall) {
        call.upstream?.cancel(.abandoned)
        returnResponseCredit(call)
    }

    private func releaseBuffers(_ call: H2ClientCall) {
        settleBudget(call, holding: 0)
        returnResponseCredit(call)
    }

    private func perform(_ answer: H2CallState.Answer?, for call: H2ClientCall) {
        guard let answer else { return }
        cancelTimer(call)
        if answer.cancelUpstream { cancelUpstream(call) }
        releaseBuffers(call)
        self.answer(call, answer.why)
    }

    private func cancelTimer(_ call: H2ClientCall) {
        call.timerDue = nil
        call.timer?.disarm()
    }

    /// Notes the call's deadline; the timer itself is armed at the next flush (`armTimers`),
    /// which `flushSoon` makes sure comes in this turn of the loop. An earlier time stays
    /// armed until then: it only ticks the machine, which re-checks its deadlines.
    private func armTimer(_ call: H2ClientCall, at: Double) {
        guard at.isFinite else {
            call.timerDue = nil
            call.timer?.disarm()
            return
        }
        call.timerDue = at
        if !call.timerListed {
            call.timerListed = true
            timersToArm.append(call)
            flushSoon()
        }
    }

    /// Arms the timers still wanted: one event per call, made the first time, re-armed as the
    /// call moves from deadline to deadline.
    private func armTimers() {
        guard !timersToArm.isEmpty else { return }
        let listed = timersToArm
        timersToArm.removeAll(keepingCapacity: true)
        for call in listed {
            call.timerListed = false
            guard let at = call.timerDue else { continue }
            if call.timer == nil {
                // Unowned, not weak (a weak reference would give both a side table): the call's
                // deinit frees its timer, and every call is disarmed by its streamClosed, which
                // the connection's close() sends to all, so the timer never fires after either.
                call.timer = LoopWakeup(loop: core.loop) { [unowned self, unowned call] in tick(call) }
            }
            call.timer?.arm(after: max(0, at - core.clock.monotonicNow))
        }
    }

    private func tick(_ call: H2ClientCall) {
        switch call.state.tick(now: core.clock.monotonicNow) {
        case .armTimer(let at)?:
            armTimer(call, at: at)
        case .answer(let answer)?:
            perform(answer, for: call)
        case .resetStalledClient?:
            resetClient(call, errorCode: H2CallState.cancel)
            cancelUpstream(call)
        case nil:
            break
        }
    }

    // MARK: Request bytes

    /// Keeps `data` for the upstream if the connection's and the process's budgets allow (and,
    /// for the `firstMessage` being routed, its bound); refuses the call (RESOURCE_EXHAUSTED)
    /// otherwise and returns false. Connection credit goes back at once.
    @discardableResult
    private func buffer(_ call: H2ClientCall, _ data: UnsafeRawBufferPointer, firstMessage: Bool) -> Bool {
        session.consumeConnection(count: data.count)
        let limits = core.limits
        let overFirstMessage = firstMessage
            && call.requestBody.count + data.count > limits.maxFirstMessageBytes + GRPCMessageFrame.headerLength
        if overFirstMessage || bufferedBytes + data.count > limits.maxConnectionBufferedBytes || !core.bufferBudget.reserve(data.count) {
            let why = overFirstMessage ? "the first request message is over \(limits.maxFirstMessageBytes) bytes"
                : "the sidecar holds too many request bytes; try again later"
            // An over-long first message is the call's own fault (413 / RESOURCE_EXHAUSTED); a spent
            // connection or process budget is the sidecar's load (503 / RESOURCE_EXHAUSTED).
            refuse(call, overFirstMessage ? .requestTooLarge(why) : .overloaded(why))
            return false
        }
        call.bytesReserved += data.count
        bufferedBytes += data.count
        call.requestBody.add(data)
        call.requestBytesReceived += data.count
        creditStream(call, firstMessage: firstMessage)
        return true
    }

    /// Stream credit up to what the call may hold: its first message while it is routed, then
    /// what has left for the upstream. Never more than was received, never twice for a byte.
    private func creditStream(_ call: H2ClientCall, firstMessage: Bool) {
        let allowance = firstMessage ? core.limits.maxFirstMessageBytes + GRPCMessageFrame.headerLength : 0
        let target = min(call.requestBytesReceived, max(allowance, call.requestBytesForwarded))
        guard target > call.requestBytesCredited else { return }
        session.consumeStream(call.clientStream, count: target - call.requestBytesCredited)
        call.requestBytesCredited = target
    }

    /// Releases budget for request bytes the call no longer holds.
    private func settleBudget(_ call: H2ClientCall, holding: Int) {
        let freed = call.bytesReserved - holding
        guard freed > 0 else { return }
        call.bytesReserved = holding
        bufferedBytes -= freed
        core.bufferBudget.release(freed)
    }

    /// Credit for response bytes the client will never take goes back to the upstream, so a
    /// reset or abandoned stream cannot shrink the shared connection's window.
    private func returnResponseCredit(_ call: H2ClientCall) {
        guard !call.responseBody.isEmpty, let upstream = call.upstream else { return }
        upstream.responseTaken(count: call.responseBody.drainAll())
    }

    // MARK: Routing

    /// Works out the entity once the head (REST) or the first message (gRPC) is complete.
    private func route(_ call: H2ClientCall) {
        guard call.state.isRouting else { return }
        // Checked before the route: a method override or a client credential is refused
        // whatever the call is (docs/CONTRACT.md §7), as over HTTP/1.1. Once: the head does not change, and
        // a gRPC call comes back here for each piece of its first message (with its rule set).
        if call.rule == nil, let failure = RESTRoute.headerRefusal(fields: call.headers) {
            refuse(call, failure)
            return
        }
        if !call.isGRPC {
            switch RESTRoute.classify(method: call.method, target: call.path) {
            case .failure(let failure): refuse(call, failure)
            case .success(let key): routed(call, key: key)
            }
            return
        }
        if call.rule == nil {
            guard let rule = GRPCRoute.rule(forPath: call.path) else {
                refuse(call, .notFleetEngineCall("\(call.path.prefix(96)) is not a Fleet Engine gRPC method"))
                return
            }
            call.rule = rule
        }
        routeGRPC(call, rule: call.rule!)
    }

    /// Reads the first gRPC message once it is complete: its length prefix says when, so the
    /// buffer is made contiguous once, not on every DATA frame.
    private func routeGRPC(_ call: H2ClientCall, rule: GRPCRouteRule) {
        let length = call.requestBody.count
        let maxLength = core.limits.maxFirstMessageBytes
        // The length prefix is copied out to the stack (it may straddle two chains).
        let headerVerdict = withUnsafeTemporaryAllocation(byteCount: GRPCMessageFrame.headerLength, alignment: 1) { prefix in
            let count = call.requestBody.copyOut(into: prefix)
            return GRPCMessageFrame.firstMessage(in: UnsafeRawBufferPointer(rebasing: prefix[..<count]), maxLength: maxLength)
        }
        let total: Int
        switch headerVerdict {
        case .invalid(let failure):
            refuse(call, failure)
            return
        case .needMore(let needed):
            total = needed
        case .complete(_, let payload):
            total = payload.upperBound
        }
        guard length >= total, length > 0 else { return firstMessageIncomplete(call, held: length) }
        // Read in place; the call is acted on once the view is gone (acting may drain buffers).
        let reading: FirstMessageReading = call.requestBody.withPulledUp(total) { frame in
            guard frame.count == total else { return .notJoined }
            guard case .complete(let compressed, let payload) = GRPCMessageFrame.firstMessage(in: frame.raw, maxLength: maxLength) else {
                return .notComplete
            }
            let message = UnsafeRawBufferPointer(rebasing: frame.raw[payload])
            guard compressed else { return .classified(GRPCRoute.classify(rule: rule, message: message)) }
            guard call.grpcEncoding == "gzip" else { return .unsupportedEncoding }
            switch GzipInflate.inflate(message) {
            case .failure(let failure): return .classified(.failure(failure))
            case .success(let inflated): return .classified(inflated.withUnsafeBytes { GRPCRoute.classify(rule: rule, message: $0) })
            }
        }
        switch reading {
        case .classified(.failure(let failure)):
            refuse(call, failure)
        case .classified(.success(let key)):
            routed(call, key: key)
        case .unsupportedEncoding:
            perform(call.state.refused(.grpcStatus(12, "grpc-encoding \(call.grpcEncoding ?? "(none)") is not supported by the sidecar; use gzip or identity")), for: call)
        case .notJoined:
            firstMessageIncomplete(call, held: length)
        case .notComplete:
            break
        }
    }

    /// What `routeGRPC` read from the first message's bytes.
    private enum FirstMessageReading {
        case classified(Result<EntityKey, ProxyFailure>)
        case unsupportedEncoding
        /// The bytes could not be made contiguous (out of memory): as if not all there.
        case notJoined
        case notComplete
    }

    /// The first message is not all there: refused once the request has ended, else awaited.
    private func firstMessageIncomplete(_ call: H2ClientCall, held: Int) {
        if call.state.requestEnded {
            refuse(call, .invalidEntity(held == 0 ? "the call has no request message" : "the request message is cut short"))
        }
    }

    private func routed(_ call: H2ClientCall, key: EntityKey) {
        call.key = key
        switch call.state.routed() {
        case .fetchToken(let armTimerAt)?:
            if let armTimerAt { armTimer(call, at: armTimerAt) } else { cancelTimer(call) }
            fetchToken(call)
        case nil:
            break
        }
    }

    private func refuse(_ call: H2ClientCall, _ failure: ProxyFailure) {
        perform(call.state.refused(.failure(failure)), for: call)
    }

    /// Gets the entity's token; its arrival moves the call on (unless the call ended meanwhile).
    private func fetchToken(_ call: H2ClientCall) {
        guard let key = call.key else { return }
        let stream = call.clientStream
        // A call that waits is found again by stream id (HTTP/2 never reuses one on a
        // connection, and a call leaves `calls` when its stream closes or the connection
        // closes). No weak references, which give their object a side table and slow reference
        // counting for the rest of its life: the cache calls back exactly once, so holding the
        // connection until then keeps a closed one a little longer at most.
        let answer = core.token(for: key, of: call) {
            { [self] result in
                guard let call = calls[stream] else { return }
                tokenAnswered(call, result)
                flushSoon()
            }
        }
        if let answer { tokenAnswered(call, answer) }
    }

    private func tokenAnswered(_ call: H2ClientCall, _ result: Result<String, ProxyFailure>) {
        switch result {
        case .failure(let failure): perform(call.state.tokenFailed(failure), for: call)
        case .success(let token): tokenArrived(call, token)
        }
    }

    private func tokenArrived(_ call: H2ClientCall, _ token: String) {
        call.token = token
        if let key = call.key { call.quotaProject = core.quotaProject(for: key.type) }
        switch call.state.tokenArrived() {
        case .startUpstream?:
            cancelTimer(call)
            core.statistics.forwarded += 1
            call.upstream = startUpstream(call)
        case nil:
            break
        }
    }

    /// The call's next upstream exchange: a REST call goes by HTTP/1.1 when the route says so
    /// (`RESTUpstreamRoute`, docs/CONTRACT.md §6), through an `H1UpstreamExchange`; a gRPC call,
    /// which needs HTTP/2 end to end, and any other REST call as a stream of the HTTP/2 pool.
    private func startUpstream(_ call: H2ClientCall) -> UpstreamExchange {
        guard call.isGRPC || core.restFromHTTP2ClientsOverHTTP2 else {
            return H1UpstreamExchange.start(call, pool: core.upstream, loop: core.loop, host: core.upstreamOrigin.hostHeader,
                                            highWater: core.limits.bufferHighWater)
        }
        return core.upstreamH2.start(call)
    }

    // MARK: What the upstream exchange reports (through the call, its delegate)

    /// The upstream exchange wants request body bytes: handed over from the front of the
    /// call's buffer, a copy kept while the call's machine says so (for a resend).
    func pullRequestBody(_ call: H2ClientCall, upTo max: Int, _ take: (ByteView) -> Void) -> RequestBodyPull {
        let n = min(max, call.requestBody.count)
        let action = call.state.requestBodyRead(count: n, remaining: call.requestBody.count - n)
        if n > 0 {
            let keepCopy: Bool
            switch action {
            case .send(let keep), .end(let keep): keepCopy = keep
            case .wait: keepCopy = false
            }
            call.requestBody.forEachPiece(limit: n) { piece in
                take(piece)
                if keepCopy { call.sentCopy.add(piece) }
                return true
            }
            call.requestBody.drain(n)
            requestBytesForwarded(call, count: n)
        }
        switch action {
        case .send: return .bytes(n, end: false)
        case .end: return .bytes(n, end: true)
        case .wait: return .wait
        }
    }

    /// The upstream took `count` request bytes: stream credit for them, budget back.
    private func requestBytesForwarded(_ call: H2ClientCall, count: Int) {
        call.requestBytesSent += count
        call.requestBytesForwarded = max(call.requestBytesForwarded, call.requestBytesSent)
        settleBudget(call, holding: call.heldRequestBytes)
        creditStream(call, firstMessage: false)
        flushSoon()
    }

    func upstreamHeaderBlock(_ call: H2ClientCall, _ head: AnswerHead, endStream: Bool) {
        // The facts the call's machine decides on: an interim 1xx head; a trailers-only gRPC
        // UNAUTHENTICATED or an HTTP 401. The record keeps the status and grpc-status relayed.
        let facts = head.facts
        let informational = facts.status.map { $0 < 200 } ?? false
        switch call.state.upstreamHeaderBlock(endStream: endStream, informational: informational, unauthenticated: facts.unauthenticated) {
        case .skipInterim?:
            break
        case .retryWithFreshToken?:
            call.upstream?.cancel(.superseded)
            call.rewindRequest()
            core.tokenRefused(call.token, for: call.key)
            call.token = nil
            fetchToken(call)
        case .relayHead(let endStream)?:
            let status = facts.status ?? 0
            call.record.outcome.headSent(status: status)
            // A trailers-only answer: its grpc-status is the call's.
            if endStream, let grpcStatus = facts.grpcStatus { call.record.outcome.grpcStatusSent(grpcStatus) }
            switch head {
            case .http2(let fields):
                relayHead(call, fields, status: status, endStream: endStream)
            case .http1(let answer, let framing):
                relayHead(call, H1MessageTranslation.responseFields(answer, framing: framing), status: status, endStream: endStream)
            }
        case .keepTrailers(let resume)?:
            // Only an HTTP/2 answer has trailers (an HTTP/1.1 one's chunked trailers are dropped).
            if case .http2(let fields) = head { call.responseTrailers = fields }
            if let grpcStatus = facts.grpcStatus { call.record.outcome.grpcStatusSent(grpcStatus) }
            if resume { resumeClientBody(call) } else { flushSoon() }
        case nil:
            break
        }
    }

    func upstreamData(_ call: H2ClientCall, _ bytes: ByteView) {
        switch call.state.responseBytes(now: core.clock.monotonicNow) {
        case .keep(let resume, let armTimerAt):
            call.responseBody.add(bytes)
            if resume { session.resumeData(stream: call.clientStream) }
            if let armTimerAt { armTimer(call, at: armTimerAt) }
            flushSoon()
        case .drop:
            call.upstream?.responseTaken(count: bytes.count)
        }
    }

    func upstreamDataEnded(_ call: H2ClientCall) {
        switch call.state.upstreamDataEnded() {
        case .resumeClientBody?: resumeClientBody(call)
        case nil: flushSoon()
        }
    }

    /// The upstream exchange ended: a resend, or (before any answer) an error the client's
    /// library understands, or (after) a reset stream.
    func upstreamClosed(_ call: H2ClientCall, _ end: UpstreamEnd) {
        switch call.state.upstreamClosed(end) {
        case .resend?:
            call.rewindRequest()
            call.upstream = startUpstream(call)
        case .answer(let answer)?:
            perform(answer, for: call)
        case .resetClient(let code)?:
            call.record.outcome.answerCut()
            resetClient(call, errorCode: code)
        case nil:
            break
        }
    }

    /// Sends the answer's head to the client. `response` is the upstream session's, lent for
    /// this call: nghttp2 copies it, and letting go of it lets the next head be gathered in the
    /// same storage instead of a new allocation.
    private func relayHead(_ call: H2ClientCall, _ response: H2HeaderList, status: Int, endStream: Bool) {
        core.statistics.upstreamStatus[status, default: 0] += 1
        // :status first (a pseudo-header precedes every regular field), then the rest in order,
        // without the hop-by-hop fields.
        session.submitResponse(stream: call.clientStream, response, hasBody: !endStream,
                               leading: { $0 == ":status" }, dropping: HopByHop.dropFromH2Response)
        flushSoon()
    }

    // MARK: Answers from the sidecar itself

    private func answer(_ call: H2ClientCall, _ why: H2CallState.LocalAnswer) {
        switch why {
        case .grpcStatus(let status, let message):
            answer(call, grpcStatus: status, message: message)
        case .failure(let failure):
            if call.isGRPC {
                answer(call, grpcStatus: failure.grpcStatus, message: failure.message)
            } else {
                answerREST(call, failure)
            }
        case .deadline:
            answer(call, grpcStatus: 4, message: "deadline exceeded while the sidecar waited for the entity's token")
        case .headTimeout:
            let message = "the request head or first message did not arrive within \(core.limits.headTimeout) s"
            if call.isGRPC { answer(call, grpcStatus: 4, message: message) } else { answerREST(call, .malformedRequest(message)) }
        }
    }

    private func answerREST(_ call: H2ClientCall, _ failure: ProxyFailure) {
        call.record.outcome.headSent(status: failure.httpStatus)
        call.record.refusal = failure.message
        core.statistics.refusedByStatus[failure.httpStatus, default: 0] += 1
        let body = ErrorResponse.jsonBody(failure)
        body.withUnsafeBytes { call.responseBody.add($0) }
        outgoingHead.removeAll()
        outgoingHead.append(name: ":status", value: "\(failure.httpStatus)")
        outgoingHead.append(name: "content-type", value: "application/json; charset=UTF-8")
        outgoingHead.append(name: "content-length", value: "\(body.count)")
        session.submitResponse(stream: call.clientStream, outgoingHead, hasBody: true)
        flushSoon()
    }

    /// A trailers-only gRPC answer (HEADERS with END_STREAM) carrying `grpcStatus`.
    private func answer(_ call: H2ClientCall, grpcStatus: Int, message: String) {
        call.record.outcome.headSent(status: 200)
        call.record.outcome.grpcStatusSent(grpcStatus)
        call.record.refusal = message
        core.statistics.refusedByGRPCStatus[grpcStatus, default: 0] += 1
        logger.debug("refused", metadata: ["stream": "\(call.clientStream)", "grpc_status": "\(grpcStatus)", "reason": "\(message)"])
        outgoingHead.removeAll()
        outgoingHead.append(name: ":status", value: "200")
        outgoingHead.append(name: "content-type", value: "application/grpc")
        outgoingHead.append(name: "grpc-status", value: "\(grpcStatus)")
        outgoingHead.append(name: "grpc-message", value: GRPCMessage.percentEncoded(message))
        session.submitResponse(stream: call.clientStream, outgoingHead, hasBody: false)
        flushSoon()
    }
}
