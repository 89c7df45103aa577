import CEvent
import Logging

/// One keep-alive HTTP/1.1 connection to an origin (Fleet Engine or the token provider),
/// owned by its `HTTP1UpstreamPool`. The borrower sends a whole request (`send`), then calls
/// `beginExchange`; the response arrives at the borrower's `ResponseSink`: its head, then its
/// body's bytes as they come, lent straight from the input and de-chunked here (the one place
/// a chunked answer is decoded), then its end.
final class HTTP1UpstreamConnection: TransportDelegate {
    private enum State {
        case connecting
        case idle
        case awaitingHead
        case readingBody(BodyProgress)
        case closed
    }

    private enum BodyProgress {
        case remaining(Int)
        case chunked(ChunkedBodyScanner)
        case untilClose
    }

    private var transport: Transport!
    private var state: State = .connecting
    /// Unowned: the pool outlives every connection it dials (it closes them in its own close()).
    private unowned let pool: HTTP1UpstreamPool
    /// The borrower reading the answer, held strongly from `beginExchange` until the connection
    /// goes back to the pool (`markIdle`) or is closed (`closeTransport`), the two ways every
    /// exchange ends; a borrower that gives up discards the connection. Not weak: a weak
    /// reference would give the borrower (a client connection) a side table, and every retain
    /// and release of it the slow path.
    private var sink: ResponseSink?
    private var requestMethod = "GET"
    private var bytesReceived = false
    private let limits: ClientLimits
    /// True once one exchange completed on this connection: a failure before any answer on a
    /// reused connection is the keep-alive race, and the request may be sent again.
    private(set) var reused = false
    /// Its place in the pool's list of lent connections (`HTTP1UpstreamPool.Lent`); -1 when not
    /// lent. Only the pool reads and sets it.
    var lentSlot = -1
    let id: Int
    /// Ticks of the pool's idle sweep seen since `markIdle` (`IdleSweep`); only the pool reads
    /// and sets it.
    var idleTicks = 0

    init(bev: OpaquePointer, pool: HTTP1UpstreamPool, limits: ClientLimits, id: Int, isTLS: Bool) {
        self.pool = pool
        self.limits = limits
        self.id = id
        transport = Transport(bev: bev, delegate: self, directWrites: !isTLS)
    }

    var bufferevent: OpaquePointer? { transport.bev }
    var outputLength: Int { transport.outputLength }
    var isOpen: Bool { transport.isOpen }

    /// Starts reading the answer to the request just written into `output`.
    func beginExchange(method: String, sink: ResponseSink) {
        requestMethod = method
        self.sink = sink
        bytesReceived = false
        state = .awaitingHead
        // The answer gets the whole response timeout from now, however long the connection sat
        // idle in the pool: the read timeout otherwise counts from the last bytes it read.
        if readingPaused { resumeReading() } else { transport.restartReadTimeout() }
        if transport.inputLength > 0 { transportReadable(transport) }
    }

    /// Reading from the origin is paused while the borrower's client is slow (backpressure).
    private var readingPaused = false

    func pauseReading() {
        readingPaused = true
        transport.disableReading()
    }

    func resumeReading() {
        readingPaused = false
        transport.enableReading()
        if transport.inputLength > 0 { transportReadable(transport) }
    }

    func send(_ bytes: [UInt8]) { transport.write(bytes) }
    func send(_ bytes: UnsafeRawBufferPointer) { transport.write(bytes) }
    /// Moves up to `count` bytes from the front of `bytes` into the request being sent.
    func send(_ bytes: borrowing EventBuffer, count: Int) { transport.moveIn(from: bytes, count: count) }

    // MARK: TransportDelegate

    func transportReadable(_ transport: Transport) {
        while transport.isOpen {
            let available = transport.inputLength
            if available > 0 { bytesReceived = true }
            switch state {
            case .awaitingHead:
                guard available > 0, readHead() else { return }
            case .readingBody(let progress):
                readBody(progress, available: available)
                return
            case .idle:
                // An idle keep-alive connection must not talk; anything it sends is garbage.
                if available > 0 { pool.discard(self, reason: "unexpected bytes on idle connection") }
                return
            case .connecting, .closed:
                return
            }
        }
    }

    /// Parses the answer's head from the input; true when it was read and its body (or the
    /// real answer after an interim one) may follow in the input.
    @inline(__always)
    private func readHead() -> Bool {
        switch transport.withInput(upTo: limits.maxHeadBytes, {
            HTTP1Parser.parseResponse($0.raw, maxHeadBytes: limits.maxHeadBytes, maxHeaderCount: limits.maxHeaderCount)
        }) {
        case .incomplete:
            return false
        case .invalid(let failure):
            fail(.upstreamUnavailable("malformed response from \(pool.origin): \(failure.message)"))
            return false
        case .complete(let head, let length):
            transport.drainInput(length)
            if head.status == 101 {
                // The sidecar never asks for an upgrade: what follows is not HTTP.
                fail(.upstreamUnavailable("\(pool.origin) answered 101 Switching Protocols, which was never asked for"))
                return false
            }
            if head.status >= 100 && head.status < 200 {
                return true // an interim answer: the real one follows
            }
            let framing = head.framing(requestMethod: requestMethod)
            keepAliveAfter = head.keepAlive && framing != .untilClose
            switch framing {
            case .none: state = .readingBody(.remaining(0))
            case .contentLength(let n): state = .readingBody(.remaining(n))
            case .chunked: state = .readingBody(.chunked(ChunkedBodyScanner()))
            case .untilClose: state = .readingBody(.untilClose)
            }
            sink?.responseHead(head, from: self)
            return true
        }
    }

    /// Hands the sink what the input holds of the body, and ends the exchange at its end.
    @inline(__always)
    private func readBody(_ progress: BodyProgress, available: Int) {
        switch progress {
        case .remaining(let n):
            let take = min(n, available)
            if take > 0 { deliver(take) }
            guard transport.isOpen else { return }
            if n - take == 0 { finish(); return }
            state = .readingBody(.remaining(n - take))
        case .chunked(var scanner):
            guard available > 0 else { return }
            switch dechunk(&scanner) {
            case .failure(let failure):
                fail(.upstreamUnavailable("malformed chunked body from \(pool.origin): \(failure.message)"))
            case .success(let finished):
                state = .readingBody(.chunked(scanner))
                guard transport.isOpen else { return }
                if finished { finish() }
            }
        case .untilClose:
            if available > 0 { deliver(available) }
        }
    }

    private var keepAliveAfter = true

    func transportWritable(_ transport: Transport) {
        switch state {
        case .awaitingHead, .readingBody: sink?.connectionDrained(self)
        case .connecting, .idle, .closed: break
        }
    }

    func transportEvent(_ transport: Transport, events: Int16) {
        let e = Int32(events)
        if e & BEV_EVENT_CONNECTED != 0 {
            // Set once for the connection's life: the answer's bound. Changing it per exchange
            // would cost epoll_ctl calls; each exchange only restarts the read timeout
            // (`beginExchange`), which moves a timer and no more. The idle bound is the pool's
            // sweep (`IdleSweep`).
            transport.readDirectly()
            transport.setTimeouts(read: limits.responseTimeout, write: limits.responseTimeout)
            pool.connected(self)
            return
        }
        let why = transport.describe(events: e)
        switch state {
        case .connecting:
            pool.dialFailed(self, reason: why)
        case .idle where e & BEV_EVENT_TIMEOUT != 0:
            // Quiet for the answer's bound while pooled: nothing wrong, keep watching for a close.
            transport.enableReading()
        case .idle:
            pool.discard(self, reason: why)
        case .readingBody(.untilClose) where e & BEV_EVENT_EOF != 0:
            keepAliveAfter = false
            finish()
        case .awaitingHead, .readingBody:
            if e & BEV_EVENT_TIMEOUT != 0 {
                // The origin may be working on the request: it is never sent a second time.
                fail(.upstreamUnavailable("\(pool.origin) did not answer within \(Int(limits.responseTimeout)) s"), mayRetry: false)
            } else {
                fail(.upstreamUnavailable("connection to \(pool.origin) broke: \(why)"))
            }
        case .closed:
            break
        }
    }

    // MARK: Pool interface

    func markIdle() {
        state = .idle
        idleTicks = 0
        sink = nil
        if readingPaused { resumeReading() }
    }

    /// Frees the bufferevent. Called by the pool only (its one close path for connections).
    func closeTransport() {
        state = .closed
        sink = nil
        transport.close()
    }

    // MARK: Private

    /// Lends the first `count` bytes of the input to the sink, a chain at a time, then drops
    /// them. The sink copies what it keeps and never closes the connection from inside the
    /// call (it discards it through the pool later, if at all), so the chains stay valid.
    private func deliver(_ count: Int) {
        if let sink {
            transport.forEachInputChain(limit: count) { piece in
                sink.responseBody(ByteView(piece), from: self)
                return transport.isOpen
            }
        }
        transport.drainInput(count)
    }

    private func finish() {
        let sink = self.sink
        reused = true
        // Back to the pool first, so the sink's end handler may borrow a connection at once.
        // A connection whose request was cut short is never reused.
        let requestSent = sink?.requestFullySent ?? true
        pool.release(self, reusable: keepAliveAfter && requestSent && transport.inputLength == 0)
        sink?.responseEnded(from: self)
    }

    /// `mayRetry`: false when the request may have reached the origin whatever was read; a
    /// reused connection that broke before answering anything was closed by the origin before
    /// it saw the request (the keep-alive race), and only that is `retryable`.
    private func fail(_ failure: ProxyFailure, mayRetry: Bool = true) {
        let sink = self.sink
        let retryable = mayRetry && reused && !bytesReceived
        pool.discard(self, reason: failure.message)
        sink?.responseFailed(failure, retryable: retryable)
    }

    /// Runs the chunk scanner over the input's chains in place (no pull-up of large bodies),
    /// lending the chunks' data to the sink as it goes, and drops what it consumed; whether
    /// the body ended.
    private func dechunk(_ scanner: inout ChunkedBodyScanner) -> Result<Bool, ProxyFailure> {
        var total = 0
        var finished = false
        var failure: ProxyFailure?
        let sink = self.sink
        transport.forEachInputChain { piece in
            switch scanner.scan(piece, onData: { sink?.responseBody(ByteView($0), from: self) }) {
            case .failure(let f):
                failure = f
                return false
            case .success(let r):
                total += r.consumed
                finished = r.finished
                return !r.finished && r.consumed == piece.count
            }
        }
        transport.drainInput(total)
        if let failure { return .failure(failure) }
        return .success(finished)
    }
}

extension ResponseSink {
    /// Default: the request side needs no write backpressure signal.
    func connectionDrained(_ connection: HTTP1UpstreamConnection) {}
    /// Default: the borrower wrote its whole request before `beginExchange`.
    var requestFullySent: Bool { true }
}

/// Limits for connections to an origin.
struct ClientLimits {
    var maxHeadBytes = 64 * 1024
    var maxHeaderCount = 128
    /// Time allowed for the answer to start and between any two reads of it.
    var responseTimeout: Double = 60
    /// How long a pooled connection may stay idle (`--upstream-idle-timeout` for Fleet
    /// Engine), any length: the pool's sweep checks it (`IdleSweep`).
    var idleTimeout: Double = 60
    var connectTimeout: Double = 10
}

