import CEvent
import CNghttp2
import Logging

/// One multiplexed HTTP/2 connection to Fleet Engine (TLS with ALPN `h2`, or h2c with prior
/// knowledge for an `http://` upstream), carrying the streams of many client calls.
/// Owned by its `HTTP2UpstreamPool`, which is its one close path.
///
/// A session that can carry nothing more (`H2Session.end`, asked after every read and flush:
/// a connection error either side declared, a fatal nghttp2 failure) leaves the pool at once,
/// its GOAWAY written first (RFC 9113 §5.4.1); so does one whose socket breaks (a TLS alert,
/// a read error, a reset). Its streams end as `H2UpstreamStream.endOnLostConnection` judges:
/// those Fleet Engine cannot have processed are sent again, the others fail now.
final class HTTP2UpstreamConnection: TransportDelegate, H2SessionDelegate {
    enum State { case connecting, ready, goingAway, closed }

    private(set) var state: State = .connecting
    private var transport: Transport!
    private var session: H2Session?
    private unowned let pool: HTTP2UpstreamPool
    private let origin: Origin
    private let isTLS: Bool
    /// Exchanges waiting for the connection to be ready.
    private var pending: [H2UpstreamStream] = []
    private var streams = H2StreamTable<H2UpstreamStream>()
    /// Runs `flush()` once after the current callbacks: the streams that calls open from one
    /// read of their clients leave in one write.
    private var flushWakeup: LoopWakeup!
    /// Scratch list for request heads (reused, not allocated per call).
    private var outgoingHead = H2HeaderList()
    private let loop: EventLoop
    let id: Int
    /// Most streams this side opens at once, and each stream's receive window.
    static let maxStreams = 100
    static let streamWindow = 256 * 1024
    /// Response bytes a stream may hold for a client that has not taken them, beyond its window.
    static let responseBufferBound = 256 * 1024
    /// Once connected: read inactivity closes the connection when no stream is open
    /// (`--upstream-idle-timeout`); write inactivity keeps the connect timeout as its bound.
    private let idleTimeout: Double
    private let writeTimeout: Double
    /// A stream whose answer has not started, or has not moved, for this long is reset (docs/CONTRACT.md
    /// §7); swept at each tick.
    private let answerTimeout: Double
    /// PING while idle, a dead path, the idle close (`H2Keepalive`), driven by `tickTimer`
    /// from the time the connection is ready: nothing per call.
    private var keepalive: H2Keepalive?
    private var tickTimer: ScheduledWork?
    /// The last stream the peer's GOAWAY said it may have processed: streams above it were not.
    private var peerLastStreamID: Int32?

    init(bev: OpaquePointer, pool: HTTP2UpstreamPool, origin: Origin, isTLS: Bool, idleTimeout: Double, writeTimeout: Double,
         answerTimeout: Double, loop: EventLoop, id: Int) {
        self.pool = pool
        self.origin = origin
        self.isTLS = isTLS
        self.idleTimeout = idleTimeout
        self.writeTimeout = writeTimeout
        self.answerTimeout = answerTimeout
        self.loop = loop
        self.id = id
        transport = Transport(bev: bev, delegate: self, directWrites: !isTLS)
        flushWakeup = LoopWakeup(loop: loop) { [unowned self] in flush() }
    }

    deinit { tickTimer?.cancel() }

    /// Streams open or waiting: what the pool balances on.
    var load: Int { streams.count + pending.count }

    /// Connecting or ready: not going away, so the pool may count on it for later calls.
    var takesStreams: Bool { state == .connecting || state == .ready }

    /// Room for one more stream within the peer's SETTINGS_MAX_CONCURRENT_STREAMS.
    var hasRoom: Bool {
        switch state {
        case .connecting: return load < Self.maxStreams
        case .ready: return load < max(1, min(session?.remoteMaxConcurrentStreams ?? Self.maxStreams, Self.maxStreams))
        case .goingAway, .closed: return false
        }
    }

    // MARK: Exchanges

    /// Sends `exchange` on this connection now, or once it is ready.
    func start(_ exchange: H2UpstreamStream) {
        guard let request = exchange.delegate else { return }
        guard state == .ready, let session else {
            exchange.wait(on: self)
            pending.append(exchange)
            return
        }
        // The scratch list is taken out of the property and put back (two checked accesses)
        // rather than appended to in place (one per field).
        var head = H2HeaderList()
        swap(&head, &outgoingHead)
        head.removeAll()
        head.append(name: ":method", value: request.requestMethod)
        head.append(name: ":scheme", value: isTLS ? "https" : "http")
        head.append(name: ":authority", value: origin.hostHeader)
        head.append(name: ":path", value: request.requestPath)
        request.appendRequestFields(to: &head)
        head.append(name: "authorization", prefix: "Bearer ", value: request.requestToken)
        let stream = session.submitRequest(head, hasBody: request.requestHasBody)
        swap(&head, &outgoingHead)
        guard stream > 0 else {
            // Never sent, so sent again elsewhere: nghttp2 opens no stream on a session that is
            // closing (a connection error found in this read, its GOAWAY not out yet) or out of
            // stream ids, and a connection that cannot open one takes no more.
            state = .goingAway
            flushSoon()
            exchange.end(.unprocessed(.upstreamUnavailable("cannot open a stream to \(origin)")))
            return
        }
        exchange.opened(stream, on: self)
        streams[stream] = exchange
        flushSoon()
    }

    /// More request body (or its end) is there for an exchange whose body was deferred.
    func resume(_ exchange: H2UpstreamStream) {
        guard case .open = exchange.place, let session else { return }
        session.resumeData(stream: exchange.streamID)
        flushSoon()
    }

    /// The client took response bytes of `exchange`: credit for them.
    func creditResponse(_ exchange: H2UpstreamStream) {
        credit(exchange)
        flushSoon()
    }

    /// Stream credit for response bytes, so that at most `responseBufferBound` bytes the client
    /// has not taken are held (plus the stream window in flight). An answer that fits is
    /// credited in full as it arrives, so its upstream stream ends and frees its slot even if
    /// the client never reads; connection credit went back on arrival. Credit for a stream
    /// already closed goes to no stream (nghttp2 ignores it).
    private func credit(_ exchange: H2UpstreamStream) {
        let due = exchange.creditDue(bound: Self.responseBufferBound)
        if due > 0 && exchange.streamID > 0 { session?.consumeStream(exchange.streamID, count: due) }
    }

    /// The client half gave up on `exchange` (or sends the call again with a fresh token):
    /// reset its stream.
    func cancel(_ exchange: H2UpstreamStream, _ why: UpstreamCancel) {
        switch exchange.markEnded() {
        case .queued, .ended:
            return
        case .pending:
            if let i = pending.firstIndex(where: { $0 === exchange }) { pending.remove(at: i) }
        case .open:
            let stream = exchange.streamID
            guard streams.removeValue(forKey: stream) != nil else { return }
            let errorCode = why == .superseded ? NGHTTP2_NO_ERROR : NGHTTP2_CANCEL
            session?.resetStream(stream, errorCode: UInt32(errorCode.rawValue))
            flushSoon()
            pool.loadChanged(self)
        }
    }

    // MARK: TransportDelegate

    func transportReadable(_ transport: Transport) {
        guard let session else { return }
        session.receiveInput()
        flush()
    }

    func transportWritable(_ transport: Transport) { flush() }

    func transportEvent(_ transport: Transport, events: Int16) {
        let e = Int32(events)
        if e & BEV_EVENT_CONNECTED != 0 {
            connected()
            return
        }
        if e & BEV_EVENT_TIMEOUT != 0 && state == .ready {
            // Nothing read for the idle bound. With streams open, the calls' own deadlines bound
            // a slow answer; without, the pool closes it or keeps it until its replacement is up.
            if !streams.isEmpty || !pending.isEmpty || !pool.idleBoundReached(self) { transport.enableReading() }
            return
        }
        if state == .ready, let keepalive {
            pool.lost(self, age: keepalive.age(now: pool.now), reason: transport.describe(events: e))
            return
        }
        pool.discard(self, reason: transport.describe(events: e))
    }

    private func connected() {
        guard let bev = transport.bev else { return }
        Dialer.setNoDelay(bev)
        // One readv per readiness instead of FIONREAD and read (plain sockets only).
        if !isTLS { transport.readDirectly() }
        if isTLS, Dialer.negotiatedALPN(bev) != "h2" {
            pool.alpnDeclined(self)
            return
        }
        if isTLS { transport.readAhead() }
        // The connect timeout bounded connecting; from now on the idle bound takes over.
        transport.setTimeouts(read: idleTimeout, write: writeTimeout)
        do {
            let session = try H2Session(isServer: false, transport: transport, delegate: self)
            // Each stream may hold `streamWindow` bytes of answer its client has not taken
            // (stream credit comes back as the client takes bytes); connection credit goes back
            // on arrival, and the connection window is opened wide so a burst of answers on
            // many streams flows without waiting for WINDOW_UPDATEs.
            session.submitSettings(maxConcurrentStreams: UInt32(Self.maxStreams), initialWindowSize: UInt32(Self.streamWindow),
                                   connectionWindowSize: Int32(Self.streamWindow * Self.maxStreams))
            self.session = session
        } catch {
            pool.discard(self, reason: "\(error)")
            return
        }
        state = .ready
        keepalive = pool.makeKeepalive()
        scheduleTick()
        let waiting = pending
        pending.removeAll()
        for exchange in waiting { start(exchange) }
        flush()
        pool.loadChanged(self)
        pool.connectionReady(self)
    }

    // MARK: Keepalive

    /// One timer per connection: the keepalive's ticks, often enough too for the answer
    /// deadline's sweep to be late by a tenth of it at most.
    private func scheduleTick() {
        guard let period = keepalive?.tickPeriod else { return }
        // Unowned, not weak: a weak reference would give the connection a side table, and every
        // retain and release of it (several a call) the slow path. `deinit` cancels the timer,
        // so it never fires for a connection that is gone.
        tickTimer = loop.schedule(after: min(period, answerTimeout / 10)) { [unowned self] in tick() }
    }

    private func tick() {
        guard state == .ready || state == .goingAway else { return }
        if !streams.isEmpty { resetStalledStreams(now: pool.now) }
        // Going away (GOAWAY, or replaced): only its streams' answers are left to watch.
        if state == .goingAway { scheduleTick() }
        guard state == .ready, let session else { return }
        switch keepalive?.tick(now: pool.now, idle: streams.isEmpty && pending.isEmpty) {
        case .sendPing?:
            session.submitPing()
            pool.pingSent()
            flush()
        case .pathDead?:
            pool.pathDead(self)
            return
        case .closeIdle?:
            if pool.idleBoundReached(self) { return }
        case nil:
            break
        }
        scheduleTick()
    }

    /// Resets the streams whose answer has not started or moved within `answerTimeout`; their
    /// calls fail as an HTTP/1.1 upstream's do when it does not answer in time (502 / 14).
    private func resetStalledStreams(now: Double) {
        var stalled: [H2UpstreamStream] = []
        for exchange in streams.values
        where exchange.answerStalled(now: now, timeout: answerTimeout, bound: Self.responseBufferBound) {
            stalled.append(exchange)
        }
        guard !stalled.isEmpty else { return }
        let failure = ProxyFailure.upstreamUnavailable("\(origin) did not answer within \(Int(answerTimeout)) s")
        for exchange in stalled {
            streams.removeValue(forKey: exchange.streamID)
            session?.resetStream(exchange.streamID, errorCode: UInt32(NGHTTP2_CANCEL.rawValue))
            exchange.end(.failed(failure))
        }
        flush()
        pool.loadChanged(self)
    }

    // MARK: Flushing

    /// Writes what nghttp2 has queued, then asks whether the session is over: the one place an
    /// ended session is found, whatever ended it.
    func flush() {
        guard let session, state != .closed else { return }
        session.flush()
        if let end = session.end {
            sessionEnded(end)
        } else if state == .goingAway && streams.isEmpty {
            pool.discard(self, reason: "GOAWAY and no streams left")
        }
    }

    /// The session can carry nothing more, and its GOAWAY (if any) is written: after a
    /// connection error the pool closes it at once and may dial its replacement
    /// (`WarmConnectionRule`), as for a connection the server dropped; after a graceful end it
    /// just closes.
    private func sessionEnded(_ end: H2SessionEnd) {
        guard end.isConnectionError, let keepalive else {
            pool.discard(self, reason: "\(end)")
            return
        }
        pool.connectionError(self, age: keepalive.age(now: pool.now), end: end)
    }

    private func flushSoon() {
        guard state != .closed else { return }
        flushWakeup.soon()
    }

    // MARK: H2SessionDelegate — Fleet Engine's side

    func h2BeginHeaders(stream: Int32) {}

    func h2HeadersEnded(stream: Int32, fields: H2HeaderList, endStream: Bool) {
        guard let exchange = streams[stream], let delegate = exchange.delegate else { return }
        exchange.headerBlockReceived()
        if endStream { exchange.answerDidEnd() }
        delegate.upstreamHeaderBlock(.http2(fields), endStream: endStream)
    }

    func h2Data(stream: Int32, bytes: UnsafeRawBufferPointer) {
        guard let exchange = streams[stream], let delegate = exchange.delegate else {
            session?.consume(stream: stream, count: bytes.count)
            return
        }
        // Connection credit at once, stream credit up to a bound ahead of the client: a client
        // that never reads cannot shrink the window the connection's other streams share, nor
        // keep a small answer's upstream stream open.
        session?.consumeConnection(count: bytes.count)
        exchange.received(count: bytes.count)
        credit(exchange)
        delegate.upstreamData(ByteView(bytes))
    }

    func h2DataEnded(stream: Int32) {
        guard let exchange = streams[stream], let delegate = exchange.delegate else { return }
        exchange.answerDidEnd()
        delegate.upstreamDataEnded()
    }

    func h2StreamClosed(stream: Int32, errorCode: UInt32) {
        guard let exchange = streams.removeValue(forKey: stream) else { return }
        defer { pool.loadChanged(self) }
        if errorCode == 0 && exchange.answerEnded {
            exchange.end(.completed)
            return
        }
        let failure = ProxyFailure.upstreamUnavailable("\(origin) reset the stream (\(String(cString: nghttp2_http2_strerror(errorCode))))")
        exchange.end(errorCode == UInt32(NGHTTP2_REFUSED_STREAM.rawValue) ? .unprocessed(failure) : .failed(failure))
    }

    func h2ReadBody(stream: Int32, into buffer: UnsafeMutableRawBufferPointer) -> H2BodyRead {
        guard let exchange = streams[stream], let delegate = exchange.delegate else { return .bytes(0, end: true, trailers: false) }
        // The pieces are copied into nghttp2's frame, never past its end.
        var filled = 0
        let pulled = delegate.pullRequestBody(upTo: buffer.count) { piece in
            let n = min(piece.count, buffer.count - filled)
            guard n > 0 else { return }
            UnsafeMutableRawBufferPointer(rebasing: buffer[filled..<(filled + n)]).copyMemory(from: UnsafeRawBufferPointer(rebasing: piece.raw[..<n]))
            filled += n
        }
        switch pulled {
        case .bytes(_, let end): return .bytes(filled, end: end, trailers: false)
        case .wait: return .deferred
        }
    }

    func h2GoAway(lastStreamID: Int32, errorCode: UInt32) {
        // Streams above lastStreamID come back as REFUSED_STREAM and are sent again; new calls
        // go to another connection. With an error code the connection goes at the next flush.
        state = .goingAway
        peerLastStreamID = min(lastStreamID, peerLastStreamID ?? .max)
        if let action = keepalive?.goAway(errorCode: errorCode, now: pool.now) {
            pool.goAwayReceived(from: self, errorCode: errorCode, action)
        }
        pool.loadChanged(self)
    }

    func h2SentHeaders(stream: Int32) {
        streams[stream]?.headSent()
    }

    func h2PingAcked() {
        if case .roundTrip(let seconds)? = keepalive?.pingAcked(now: pool.now) { pool.pingAcked(roundTrip: seconds) }
    }

    // MARK: Closing (by the pool only)

    /// Replaced after its idle bound (`HTTP2UpstreamPool.connectionReady`): it takes no new
    /// stream, and closes once the streams it carries are done.
    func retire() {
        guard state == .ready else { return }
        state = .goingAway
        if streams.isEmpty && pending.isEmpty { pool.discard(self, reason: "idle, replaced") }
    }

    /// Ends every exchange still on this connection (their calls send them again or fail),
    /// each with `end` (by default as `H2UpstreamStream.endOnLostConnection` judges), and frees
    /// it. What nghttp2 still has queued (a GOAWAY) is written first: the socket takes it at
    /// once unless the peer stopped reading, and then it would not read it anyway.
    func closeAndFail(reason: String, end: UpstreamEnd? = nil) {
        guard state != .closed else { return }
        state = .closed
        let open = streams.values + pending
        streams.removeAll()
        pending.removeAll()
        flushWakeup.cancel()
        tickTimer?.cancel()
        session?.flush()
        session?.close()
        session = nil
        transport.close()
        let failure = ProxyFailure.upstreamUnavailable("connection to \(origin) broke: \(reason)")
        for exchange in open { exchange.end(end ?? exchange.endOnLostConnection(failure, peerLastStreamID: peerLastStreamID)) }
    }
}
