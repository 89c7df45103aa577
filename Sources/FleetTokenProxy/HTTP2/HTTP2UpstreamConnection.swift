import CEvent
import CNghttp2
import Logging

/// One multiplexed HTTP/2 connection to Fleet Engine (TLS with ALPN `h2`, or h2c with prior
/// knowledge for an `http://` upstream), carrying the streams of many client calls.
/// Owned by its `HTTP2UpstreamPool`, which is its one close path.
final class HTTP2UpstreamConnection: TransportDelegate, H2SessionDelegate {
    enum State { case connecting, ready, goingAway, closed }

    private(set) var state: State = .connecting
    private var transport: Transport!
    private var session: H2Session?
    private unowned let pool: HTTP2UpstreamPool
    private let origin: Origin
    private let isTLS: Bool
    /// Calls waiting for the connection to be ready.
    private var pending: [H2Call] = []
    private var streams = H2StreamTable<H2Call>()
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
    /// The connect timeout, kept as the bound on an idle connection.
    private let idleTimeout: Double

    init(bev: OpaquePointer, pool: HTTP2UpstreamPool, origin: Origin, isTLS: Bool, idleTimeout: Double, loop: EventLoop, id: Int) {
        self.pool = pool
        self.origin = origin
        self.isTLS = isTLS
        self.idleTimeout = idleTimeout
        self.loop = loop
        self.id = id
        transport = Transport(bev: bev, delegate: self, directWrites: !isTLS)
        flushWakeup = LoopWakeup(loop: loop) { [unowned self] in flush() }
    }

    /// Streams open or waiting: what the pool balances on.
    var load: Int { streams.count + pending.count }

    /// Room for one more stream within the peer's SETTINGS_MAX_CONCURRENT_STREAMS.
    var hasRoom: Bool {
        switch state {
        case .connecting: return load < Self.maxStreams
        case .ready: return load < max(1, min(session?.remoteMaxConcurrentStreams ?? Self.maxStreams, Self.maxStreams))
        case .goingAway, .closed: return false
        }
    }

    // MARK: Calls

    /// Sends `call` on this connection now, or once it is ready.
    func start(_ call: H2Call) {
        call.upstream = self
        call.upstreamStarts += 1
        guard state == .ready, let session else {
            pending.append(call)
            return
        }
        // The scratch list is taken out of the property and put back (two checked accesses)
        // rather than appended to in place (one per field).
        var head = H2HeaderList()
        swap(&head, &outgoingHead)
        head.removeAll()
        head.append(name: ":method", value: call.method)
        head.append(name: ":scheme", value: isTLS ? "https" : "http")
        head.append(name: ":authority", value: origin.hostHeader)
        head.append(name: ":path", value: call.path)
        head.append(contentsOf: call.headers)
        head.append(name: "authorization", prefix: "Bearer ", value: call.token ?? "")
        let hasBody = !call.state.requestEnded || evbuffer_get_length(call.requestBody) > 0
        let stream = session.submitRequest(head, hasBody: hasBody)
        swap(&head, &outgoingHead)
        guard stream > 0 else {
            call.upstream = nil
            call.client?.upstreamFailed(call, failure: .upstreamUnavailable("cannot open a stream to \(origin)"), errorCode: 0)
            return
        }
        call.upstreamStream = stream
        call.creditTo = self
        streams[stream] = call
        flushSoon()
    }

    /// More request body (or its end) is there for a call whose body was deferred.
    func resume(_ call: H2Call) {
        guard call.upstreamStream > 0, let session else { return }
        session.resumeData(stream: call.upstreamStream)
        flushSoon()
    }

    /// The client side took `count` response bytes.
    func consume(_ call: H2Call, count: Int) {
        call.responseBytesTaken += count
        creditResponse(call)
        flushSoon()
    }

    /// Stream credit for response bytes, so that at most `responseBufferBound` bytes the client
    /// has not taken are held (plus the stream window in flight). An answer that fits is
    /// credited in full as it arrives, so its upstream stream ends and frees its slot even if
    /// the client never reads; connection credit went back on arrival.
    private func creditResponse(_ call: H2Call) {
        let target = min(call.responseBytesReceived, call.responseBytesTaken + Self.responseBufferBound)
        guard target > call.responseBytesCredited else { return }
        if call.upstreamStream > 0 { session?.consumeStream(call.upstreamStream, count: target - call.responseBytesCredited) }
        call.responseBytesCredited = target
    }

    /// The client side gave up on `call` (or sends it again with a fresh token): reset its
    /// upstream stream with `errorCode`.
    func cancel(_ call: H2Call, errorCode: UInt32) {
        if let i = pending.firstIndex(where: { $0 === call }) { pending.remove(at: i) }
        call.upstream = nil
        guard call.upstreamStream > 0, streams.removeValue(forKey: call.upstreamStream) != nil else { return }
        session?.resetStream(call.upstreamStream, errorCode: errorCode)
        flushSoon()
        pool.loadChanged(self)
    }

    // MARK: TransportDelegate

    func transportReadable(_ transport: Transport) {
        guard let session else { return }
        do {
            try session.receiveInput()
        } catch {
            session.flush()
            pool.discard(self, reason: "\(error)")
            return
        }
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
            if streams.isEmpty && pending.isEmpty {
                pool.discard(self, reason: "idle")
            } else {
                transport.enableReading() // the calls' own deadlines bound a slow answer
            }
            return
        }
        pool.discard(self, reason: transport.describe(events: e))
    }

    private func connected() {
        guard let bev = transport.bev else { return }
        Dialer.setNoDelay(bev)
        if !isTLS {
            // One readv per readiness instead of FIONREAD and read; the read bound moves over
            // with it (the bufferevent's own read timeout no longer applies once it stops reading).
            transport.readDirectly()
            transport.setTimeouts(read: idleTimeout, write: idleTimeout)
        }
        if isTLS, Dialer.negotiatedALPN(bev) != "h2" {
            pool.discard(self, reason: "\(origin) did not agree to HTTP/2 (ALPN)")
            return
        }
        // The connect timeout stays as the idle bound: an idle connection is closed after it.
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
        let waiting = pending
        pending.removeAll()
        for call in waiting where !call.state.isFinished { start(call) }
        flush()
        pool.loadChanged(self)
    }

    // MARK: Flushing

    func flush() {
        guard let session, state != .closed else { return }
        session.flush()
        if state == .goingAway && streams.isEmpty { pool.discard(self, reason: "GOAWAY and no streams left") }
    }

    private func flushSoon() {
        guard state != .closed else { return }
        flushWakeup.soon()
    }

    // MARK: H2SessionDelegate — Fleet Engine's side

    func h2BeginHeaders(stream: Int32) {}

    func h2HeadersEnded(stream: Int32, fields: H2HeaderList, endStream: Bool) {
        guard let call = streams[stream] else { return }
        // A second block while relaying: trailers.
        if call.state.phase == .relaying { call.responseTrailers = fields } else { call.responseHeaders = fields }
        guard let client = call.client else { return }
        if call.state.phase == .forwarding {
            // An interim 1xx head is not the answer.
            if let status = call.responseHeaders.first(":status"), status.hasPrefix("1") {
                call.responseHeaders.removeAll()
                return
            }
            // A revoked or rotated token: the call's machine decides on one more try with a
            // fresh one, unseen by the client (it then cancels this stream).
            client.upstreamResponseHead(call, endStream: endStream, retryable: endStream && Self.isUnauthenticated(call.responseHeaders))
        } else {
            // Trailers end the response.
            client.upstreamResponseEnded(call)
        }
    }

    func h2Data(stream: Int32, bytes: UnsafeRawBufferPointer) {
        guard let call = streams[stream], let client = call.client, !call.state.isFinished else {
            session?.consume(stream: stream, count: bytes.count)
            return
        }
        // Connection credit at once, stream credit up to a bound ahead of the client: a client
        // that never reads cannot shrink the window the connection's other streams share, nor
        // keep a small answer's upstream stream open.
        session?.consumeConnection(count: bytes.count)
        evbuffer_add(call.responseBody, bytes.baseAddress, bytes.count)
        call.responseBytesReceived += bytes.count
        creditResponse(call)
        client.upstreamResponseProgress(call)
    }

    func h2DataEnded(stream: Int32) {
        guard let call = streams[stream] else { return }
        call.client?.upstreamResponseEnded(call)
    }

    func h2StreamClosed(stream: Int32, errorCode: UInt32) {
        guard let call = streams.removeValue(forKey: stream) else { return }
        defer { pool.loadChanged(self) }
        call.upstream = nil
        if call.state.responseEnded && errorCode == 0 { return }
        // Refused before the upstream did anything with it, and nothing of its body has left:
        // safe to send again on another connection.
        if errorCode == UInt32(NGHTTP2_REFUSED_STREAM.rawValue) && call.requestBytesSent == 0 && call.upstreamStarts < 3 && !call.state.isFinished {
            call.upstreamStream = -1
            pool.start(call)
            return
        }
        call.client?.upstreamFailed(call, failure: .upstreamUnavailable(
            "\(origin) reset the stream (\(String(cString: nghttp2_http2_strerror(errorCode))))"), errorCode: errorCode)
    }

    /// A trailers-only gRPC UNAUTHENTICATED, or HTTP 401.
    private static func isUnauthenticated(_ headers: H2HeaderList) -> Bool {
        (0..<headers.count).contains {
            (headers.name(at: $0, is: "grpc-status") && headers.value(at: $0, is: "16"))
                || (headers.name(at: $0, is: ":status") && headers.value(at: $0, is: "401"))
        }
    }

    func h2ReadBody(stream: Int32, into buffer: UnsafeMutableRawBufferPointer) -> H2BodyRead {
        guard let call = streams[stream] else { return .bytes(0, end: true, trailers: false) }
        let n = Int(evbuffer_remove(call.requestBody, buffer.baseAddress, buffer.count))
        if n > 0 {
            if call.replayable && call.state.attempts == 1 && call.requestBytesSent + n <= H2Call.replayLimit {
                evbuffer_add(call.sentCopy, buffer.baseAddress, n)
            } else {
                call.replayable = false
            }
            call.requestBytesSent += n
            call.client?.requestBytesForwarded(call, count: n)
        }
        if evbuffer_get_length(call.requestBody) == 0 && call.state.requestEnded {
            return .bytes(max(n, 0), end: true, trailers: false)
        }
        if n <= 0 {
            call.client?.upstreamBodyStalled(call)
            return .deferred
        }
        return .bytes(n, end: false, trailers: false)
    }

    func h2GoAway(lastStreamID: Int32, errorCode: UInt32) {
        // Streams above lastStreamID come back as REFUSED_STREAM and are sent again; new calls
        // go to another connection.
        state = .goingAway
        pool.loadChanged(self)
    }

    // MARK: Closing (by the pool only)

    /// Fails every call still on this connection and frees it.
    func closeAndFail(reason: String) {
        guard state != .closed else { return }
        state = .closed
        let open = streams.values + pending
        streams.removeAll()
        pending.removeAll()
        flushWakeup.cancel()
        session?.close()
        session = nil
        transport.close()
        for call in open {
            call.upstream = nil
            if call.state.phase == .forwarding && call.requestBytesSent == 0 && call.upstreamStarts < 3 {
                call.upstreamStream = -1
                pool.start(call) // never reached the upstream: try another connection
            } else {
                call.client?.upstreamFailed(call, failure: .upstreamUnavailable("connection to \(origin) broke: \(reason)"),
                                           errorCode: UInt32(NGHTTP2_INTERNAL_ERROR.rawValue))
            }
        }
    }
}
