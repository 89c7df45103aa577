import CEvent
import Logging

/// A few multiplexed HTTP/2 connections to Fleet Engine shared by every HTTP/2 call: a call
/// goes on the least loaded connection with room under the peer's stream limit; a new
/// connection is opened only when none has room.
final class HTTP2UpstreamPool {
    let origin: Origin
    private let loop: EventLoop
    private let tls: TLSContext?
    private let maxConnections: Int
    private let connectTimeout: Double
    private let logger: Logger
    private var connections: [HTTP2UpstreamConnection] = []
    /// Calls waiting because every connection is full and no more may be opened.
    private var waiting = FIFO<H2Call>()
    private var nextID = 0
    private var closed = false

    init(loop: EventLoop, origin: Origin, tls: TLSContext?, maxConnections: Int = 4, connectTimeout: Double = 10, logger: Logger) {
        self.loop = loop
        self.origin = origin
        self.tls = tls
        self.maxConnections = maxConnections
        self.connectTimeout = connectTimeout
        self.logger = logger
    }

    /// Forwards `call` (its token is attached by the connection).
    func start(_ call: H2Call) {
        guard !closed else {
            call.client?.upstreamFailed(call, failure: .upstreamUnavailable("shutting down"), errorCode: 0)
            return
        }
        // The least loaded connection with room, first of equals (a loop: no array of
        // candidates per call).
        var best: HTTP2UpstreamConnection?
        for connection in connections where connection.hasRoom && connection.load < best?.load ?? .max {
            best = connection
        }
        if let best {
            best.start(call)
            return
        }
        if connections.count < maxConnections {
            switch Dialer.connect(loop: loop, origin: origin, tls: tls, timeout: connectTimeout) {
            case .failure(let failure):
                call.client?.upstreamFailed(call, failure: failure, errorCode: 0)
            case .success(let bev):
                nextID += 1
                let connection = HTTP2UpstreamConnection(bev: bev, pool: self, origin: origin, isTLS: tls != nil, idleTimeout: connectTimeout, loop: loop, id: nextID)
                logger.debug("upstream HTTP/2 connection opened", metadata: ["origin": "\(origin)", "connections": "\(connections.count + 1)"])
                connections.append(connection)
                connection.start(call)
            }
            return
        }
        waiting.push(call)
        logger.debug("upstream HTTP/2 connections full; call queued", metadata: ["origin": "\(origin)", "queued": "\(waiting.count)"])
    }

    /// A connection's streams changed: hand it waiting calls if it has room now.
    func loadChanged(_ connection: HTTP2UpstreamConnection) {
        while connection.hasRoom, let call = waiting.pop() {
            if call.client != nil && !call.state.isFinished { connection.start(call) }
        }
    }

    /// Closes a connection that broke, went away or idled; its calls are retried or failed.
    func discard(_ connection: HTTP2UpstreamConnection, reason: String) {
        guard let i = connections.firstIndex(where: { $0 === connection }) else { return }
        connections.remove(at: i)
        logger.debug("upstream HTTP/2 connection closed", metadata: ["origin": "\(origin)", "reason": "\(reason)"])
        connection.closeAndFail(reason: reason)
        while let call = waiting.pop() {
            guard call.client == nil || call.state.isFinished else {
                start(call)
                break
            }
        }
    }

    func close() {
        closed = true
        for c in connections { c.closeAndFail(reason: "shutting down") }
        connections.removeAll()
        while let call = waiting.pop() {
            call.client?.upstreamFailed(call, failure: .upstreamUnavailable("shutting down"), errorCode: 0)
        }
    }
}
