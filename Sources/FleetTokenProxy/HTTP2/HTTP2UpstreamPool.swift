import CEvent
import Logging

/// A few multiplexed HTTP/2 connections to Fleet Engine shared by every HTTP/2 call: an
/// exchange goes on the least loaded connection with room under the peer's stream limit; a
/// new connection is opened only when none has room. It also keeps where REST calls go
/// (`restRoute`), which its connections' ALPN answers may change.
final class HTTP2UpstreamPool {
    let origin: Origin
    private let loop: EventLoop
    private let tls: TLSContext?
    private let maxConnections: Int
    private let connectTimeout: Double
    /// How long a connection without streams stays open (`--upstream-idle-timeout`).
    private let idleTimeout: Double
    /// How often an idle connection PINGs; doubled (bounded) by GOAWAY ENHANCE_YOUR_CALM, for
    /// every later connection.
    private(set) var pingInterval: Double
    private let pingAckTimeout: Double
    /// A forwarded stream's answer must start, and go on, within this (docs/CONTRACT.md §7).
    private let answerTimeout: Double
    private let clock: TokenClock
    private let metrics: ProxyMetrics
    /// Connections opened, PINGs sent and the last PING round trip, for tests and `/metrics`.
    private(set) var connectionsOpened = 0
    private(set) var pingsSent = 0
    private(set) var lastPingRoundTrip: Double?
    private let logger: Logger
    private var connections: [HTTP2UpstreamConnection] = []
    /// Exchanges waiting because every connection is full and no more may be opened; at most
    /// `maxWaiters` not yet cancelled (docs/CONTRACT.md §7), as for the HTTP/1.1 pool.
    private var waiting = FIFO<H2UpstreamStream>()
    private let maxWaiters: Int
    private var nextID = 0
    private var closed = false
    /// Where REST calls go: this pool, or the HTTP/1.1 one.
    private(set) var restRoute: RESTUpstreamRoute
    /// Told once when REST moves to HTTP/1.1 (`alpnDeclined`): the HTTP/1.1 pool carries calls now.
    var restFellBackToHTTP1: (() -> Void)?
    /// Whether this pool keeps a ready connection through idle timeouts and server closes.
    private var warm = WarmConnectionRule()
    /// The last connection, past its idle bound, and the replacement dialed before it closes.
    private var replacing: (old: HTTP2UpstreamConnection, new: HTTP2UpstreamConnection)?
    /// One line an error per `connectionErrorLogInterval`: an upstream that breaks every new
    /// connection breaks one per call (docs/CONTRACT.md §5, a storm must not fill the disk).
    private var connectionErrorLog = LogRateLimiter(interval: HTTP2UpstreamPool.connectionErrorLogInterval)
    static let connectionErrorLogInterval: Double = 10

    init(loop: EventLoop, origin: Origin, tls: TLSContext?, maxConnections: Int = 4, connectTimeout: Double = 10,
         idleTimeout: Double = Configuration.defaultUpstreamIdleTimeout, pingInterval: Double = H2Keepalive.defaultPingInterval,
         pingAckTimeout: Double = H2Keepalive.defaultAckTimeout, answerTimeout: Double = ClientLimits().responseTimeout,
         maxWaiters: Int = HTTP1UpstreamPool.defaultMaxWaiters, clock: TokenClock = SystemClock(),
         metrics: ProxyMetrics = ProxyMetrics(), upstreamProtocol: UpstreamProtocol = .auto, logger: Logger) {
        self.loop = loop
        self.origin = origin
        self.tls = tls
        self.maxConnections = maxConnections
        self.connectTimeout = connectTimeout
        self.idleTimeout = idleTimeout
        self.pingInterval = pingInterval
        self.pingAckTimeout = pingAckTimeout
        self.answerTimeout = answerTimeout
        self.maxWaiters = max(0, maxWaiters)
        self.clock = clock
        self.metrics = metrics
        self.logger = logger
        restRoute = RESTUpstreamRoute(upstreamProtocol, tls: tls != nil)
    }

    /// REST calls from HTTP/1.1 clients go over this pool (`restRoute`).
    var carriesREST: Bool { restRoute.overHTTP2 }
    /// REST calls from HTTP/2 clients go over this pool (`restRoute`).
    var carriesRESTFromHTTP2Clients: Bool { restRoute.fromHTTP2ClientsOverHTTP2 }

    /// Starts an upstream exchange for the call `delegate` is the client half of (the token
    /// is attached by the connection). A failure to start is reported to `delegate`, maybe
    /// before this returns.
    func start(_ delegate: UpstreamExchangeDelegate) -> UpstreamExchange {
        let exchange = H2UpstreamStream(delegate: delegate)
        start(exchange)
        return exchange
    }

    private func start(_ exchange: H2UpstreamStream) {
        guard !closed else {
            exchange.end(.failed(.upstreamUnavailable("shutting down")))
            return
        }
        // The least loaded connection with room, first of equals (a loop: no array of
        // candidates per call).
        var best: HTTP2UpstreamConnection?
        for connection in connections where connection.hasRoom && connection.load < best?.load ?? .max {
            best = connection
        }
        if let best {
            best.start(exchange)
            return
        }
        if connections.count < maxConnections {
            switch open() {
            case .failure(let failure): exchange.end(.failed(failure))
            case .success(let connection): connection.start(exchange)
            }
            return
        }
        // Cancelled exchanges stay queued until they reach the front; swept out only when the
        // queue looks full, so the bound counts calls that still wait.
        if waiting.count >= maxWaiters { waiting.removeAll { $0.isEnded } }
        guard waiting.count < maxWaiters else {
            exchange.end(.failed(.upstreamUnavailable("\(waiting.count) calls already wait for a connection to \(origin)")))
            return
        }
        waiting.push(exchange)
        logger.debug("upstream HTTP/2 connections full; call queued", metadata: ["origin": "\(origin)", "queued": "\(waiting.count)"])
    }

    /// Dials one connection ahead of the first call (start-up), unless one is open already, and
    /// from now on keeps one ready (`WarmConnectionRule`). A dial that fails is only logged: the
    /// first call dials again.
    func warmUp() {
        guard !closed else { return }
        warm.warmed()
        openUnlessOpen()
    }

    private func openUnlessOpen() {
        guard !closed, connections.isEmpty else { return }
        if case .failure(let failure) = open() {
            logger.debug("cannot warm the upstream HTTP/2 connection", metadata: ["origin": "\(origin)", "reason": "\(failure.message)"])
        }
    }

    /// `connection` has been idle for `--upstream-idle-timeout`. It closes, unless it is the
    /// pool's last and the pool keeps one warm: then its replacement is dialed first, and it
    /// serves calls until that is ready. False when it stays open.
    func idleBoundReached(_ connection: HTTP2UpstreamConnection) -> Bool {
        var others = 0
        for c in connections where c !== connection && c.takesStreams { others += 1 }
        switch warm.idleBoundReached(others: others, replacing: replacing?.old === connection) {
        case .close:
            discard(connection, reason: "idle")
            return true
        case .keep:
            return false
        case .replaceFirst:
            switch open() {
            case .success(let replacement):
                replacing = (connection, replacement)
                logger.debug("replacing the idle upstream HTTP/2 connection", metadata: ["origin": "\(origin)"])
            case .failure(let failure):
                logger.debug("cannot replace the idle upstream HTTP/2 connection", metadata: ["origin": "\(origin)", "reason": "\(failure.message)"])
            }
            return false
        }
    }

    /// A connection came up: if it replaces one past its idle bound, that one retires.
    func connectionReady(_ connection: HTTP2UpstreamConnection) {
        guard let r = replacing, r.new === connection else { return }
        replacing = nil
        r.old.retire()
    }

    /// A ready connection went without the sidecar closing it (the server closed it, the socket
    /// broke): a pool that keeps one warm dials a replacement when it has none left.
    func lost(_ connection: HTTP2UpstreamConnection, age: Double, reason: String) {
        discard(connection, reason: reason)
        if !closed, warm.replacesLost(age: age, left: connections.count) { openUnlessOpen() }
    }

    /// A connection's session ended in a connection error (`H2SessionEnd`: a malformed frame,
    /// a flood, the peer's GOAWAY with an error; RFC 9113 §5.4.1), its GOAWAY written: it
    /// leaves the pool at once, its calls are sent again or fail, and its replacement is
    /// dialed as for a connection the server dropped (`lost`).
    func connectionError(_ connection: HTTP2UpstreamConnection, age: Double, end: H2SessionEnd) {
        if case .log(let suppressed) = connectionErrorLog.admit(end.description, now: now) {
            var metadata: Logger.Metadata = ["origin": "\(origin)", "error": "\(end)"]
            if suppressed > 0 { metadata["errors_since_last_line"] = "\(suppressed)" }
            logger.warning("upstream HTTP/2 connection error; closing the connection", metadata: metadata)
        }
        lost(connection, age: age, reason: "\(end)")
    }

    /// Connections open or connecting.
    var connectionCount: Int { connections.count }

    /// Connections ready for a call now (for tests).
    var readyConnectionCount: Int {
        var n = 0
        for c in connections where c.state == .ready { n += 1 }
        return n
    }

    private func open() -> Result<HTTP2UpstreamConnection, ProxyFailure> {
        switch Dialer.connect(loop: loop, origin: origin, tls: tls, timeout: connectTimeout) {
        case .failure(let failure):
            return .failure(failure)
        case .success(let bev):
            nextID += 1
            connectionsOpened += 1
            metrics.upstreamConnectionOpened(.h2)
            let connection = HTTP2UpstreamConnection(bev: bev, pool: self, origin: origin, isTLS: tls != nil, idleTimeout: idleTimeout,
                                                        writeTimeout: connectTimeout, answerTimeout: answerTimeout, loop: loop, id: nextID)
            logger.debug("upstream HTTP/2 connection opened", metadata: ["origin": "\(origin)", "connections": "\(connections.count + 1)"])
            connections.append(connection)
            return .success(connection)
        }
    }

    // MARK: Keepalive (`H2Keepalive`, run by each connection)

    var now: Double { clock.monotonicNow }

    func makeKeepalive() -> H2Keepalive {
        H2Keepalive(now: now, pingInterval: pingInterval, ackTimeout: pingAckTimeout, idleTimeout: idleTimeout)
    }

    func pingSent() {
        pingsSent += 1
        metrics.upstreamPingSent()
    }

    func pingAcked(roundTrip seconds: Double) {
        lastPingRoundTrip = seconds
        metrics.upstreamPingAcked(roundTrip: seconds)
    }

    /// A PING went unanswered: the path is gone (a NAT forgot it, the peer vanished). Its
    /// replacement is opened now, before a call needs it.
    func pathDead(_ connection: HTTP2UpstreamConnection) {
        logger.info("upstream HTTP/2 PING unanswered; replacing the connection", metadata: ["origin": "\(origin)"])
        discard(connection, reason: "PING unanswered")
        openUnlessOpen()
    }

    /// The peer sent GOAWAY: its streams above the last one come back refused and are sent
    /// again; a replacement is opened now unless another connection has room.
    func goAwayReceived(from connection: HTTP2UpstreamConnection, errorCode: UInt32, _ action: H2Keepalive.GoAwayAction) {
        logger.debug("upstream HTTP/2 GOAWAY", metadata: ["origin": "\(origin)", "error_code": "\(errorCode)"])
        metrics.upstreamGoAwayReceived(code: errorCode)
        switch action {
        case .wait(let interval):
            pingInterval = interval
        case .replace(let interval):
            pingInterval = interval
            guard !closed, connections.count < maxConnections,
                  !connections.contains(where: { $0 !== connection && $0.hasRoom }) else { return }
            if case .failure(let failure) = open() {
                logger.debug("cannot replace the upstream HTTP/2 connection", metadata: ["origin": "\(origin)", "reason": "\(failure.message)"])
            }
        }
    }

    /// A TLS connection came up without `h2` (the server chose `http/1.1`, or no ALPN). With
    /// `auto` REST goes over HTTP/1.1 from now on (docs/CONTRACT.md §6): the calls waiting here
    /// never sent a byte, and are told so (`UpstreamEnd.declined`) to go again by HTTP/1.1.
    /// Otherwise they fail as on any lost connection.
    func alpnDeclined(_ connection: HTTP2UpstreamConnection) {
        let reason = "\(origin) did not agree to HTTP/2 (ALPN)"
        switch restRoute.declined() {
        case .fail:
            discard(connection, reason: reason)
        case .fallBackToHTTP1(let firstTime):
            if firstTime {
                logger.notice("the upstream does not speak HTTP/2; REST calls go over HTTP/1.1 from now on", metadata: ["origin": "\(origin)"])
            }
            guard remove(connection) else { return }
            let failure = ProxyFailure.upstreamUnavailable(reason)
            connection.closeAndFail(reason: reason, end: .declined(failure))
            while let exchange = waiting.pop() { exchange.end(.declined(failure)) }
            if firstTime { restFellBackToHTTP1?() }
        }
    }

    /// A connection's streams changed: hand it waiting exchanges if it has room now.
    func loadChanged(_ connection: HTTP2UpstreamConnection) {
        while connection.hasRoom, let exchange = waiting.pop() {
            if !exchange.isEnded { connection.start(exchange) }
        }
    }

    /// Closes a connection that broke, went away or idled; its exchanges are sent again or
    /// fail, as their calls decide.
    func discard(_ connection: HTTP2UpstreamConnection, reason: String) {
        guard remove(connection) else { return }
        logger.debug("upstream HTTP/2 connection closed", metadata: ["origin": "\(origin)", "reason": "\(reason)"])
        connection.closeAndFail(reason: reason)
        while let exchange = waiting.pop() {
            guard exchange.isEnded else {
                start(exchange)
                break
            }
        }
    }

    /// Takes `connection` out of the pool (and out of a replacement under way); false when it
    /// was not in it.
    private func remove(_ connection: HTTP2UpstreamConnection) -> Bool {
        guard let i = connections.firstIndex(where: { $0 === connection }) else { return false }
        connections.remove(at: i)
        if replacing?.old === connection || replacing?.new === connection { replacing = nil }
        return true
    }

    func close() {
        closed = true
        replacing = nil
        for c in connections { c.closeAndFail(reason: "shutting down") }
        connections.removeAll()
        while let exchange = waiting.pop() {
            exchange.end(.failed(.upstreamUnavailable("shutting down")))
        }
    }
}
