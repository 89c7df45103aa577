import CEvent
import COpenSSL
import Logging
#if canImport(Glibc)
import Glibc
#endif

/// Keep-alive HTTP/1.1 connections to one origin, shared by every call on the loop.
///
/// At most `maxConnections` exist at once (connecting, idle or busy); further borrowers wait
/// in arrival order. The pool is the one place that frees its connections.
final class ConnectionPool {
    typealias Completion = (Result<HTTP1ClientConnection, ProxyFailure>) -> Void

    let origin: Origin
    private let loop: EventLoop
    private let tls: TLSContext?
    private let maxConnections: Int
    private let limits: ClientLimits
    private let logger: Logger
    /// Most recently used last: reuse the warmest connection.
    private var idle: [HTTP1ClientConnection] = []
    /// Connections being dialed, with the borrower each one is for.
    private var dialing: [ObjectIdentifier: (connection: HTTP1ClientConnection, completion: Completion)] = [:]
    private var busy: [ObjectIdentifier: HTTP1ClientConnection] = [:]
    private var waiters = FIFO<Completion>()
    private var nextID = 0
    private var closed = false

    init(loop: EventLoop, origin: Origin, tls: TLSContext?, maxConnections: Int, limits: ClientLimits = ClientLimits(), logger: Logger) {
        self.loop = loop
        self.origin = origin
        self.tls = tls
        self.maxConnections = max(1, maxConnections)
        self.limits = limits
        self.logger = logger
    }

    var totalConnections: Int { idle.count + dialing.count + busy.count }
    var waiting: Int { waiters.count }

    /// Hands a connection to `completion`: an idle one at once, a new one once connected, or
    /// the next one released when the pool is full.
    func acquire(_ completion: @escaping Completion) {
        guard !closed else { completion(.failure(.upstreamUnavailable("shutting down"))); return }
        if let connection = idle.popLast() {
            busy[ObjectIdentifier(connection)] = connection
            completion(.success(connection))
            return
        }
        if totalConnections < maxConnections {
            dial(for: completion)
        } else {
            waiters.push(completion)
        }
    }

    /// Gives a connection back after a complete exchange.
    func release(_ connection: HTTP1ClientConnection, reusable: Bool) {
        guard busy.removeValue(forKey: ObjectIdentifier(connection)) != nil else { return }
        guard reusable, !closed else {
            connection.closeTransport()
            serveWaiter()
            return
        }
        if let waiter = waiters.pop() {
            busy[ObjectIdentifier(connection)] = connection
            waiter(.success(connection))
        } else {
            connection.markIdle()
            idle.append(connection)
        }
    }

    /// Closes a connection that broke or is not to be reused, wherever it is.
    func discard(_ connection: HTTP1ClientConnection, reason: String) {
        let key = ObjectIdentifier(connection)
        if busy.removeValue(forKey: key) == nil {
            if let i = idle.firstIndex(where: { $0 === connection }) { idle.remove(at: i) }
        }
        logger.trace("upstream connection closed", metadata: ["origin": "\(origin)", "upstream_conn": "\(connection.id)", "reason": "\(reason)"])
        connection.closeTransport()
        serveWaiter()
    }

    /// Closes every connection; waiters get an error.
    func close() {
        closed = true
        for c in idle { c.closeTransport() }
        idle.removeAll()
        for c in busy.values { c.closeTransport() }
        busy.removeAll()
        let pendingDials = dialing.values
        dialing.removeAll()
        for d in pendingDials {
            d.connection.closeTransport()
            d.completion(.failure(.upstreamUnavailable("shutting down")))
        }
        while let w = waiters.pop() { w(.failure(.upstreamUnavailable("shutting down"))) }
    }

    // MARK: Dialing

    func connected(_ connection: HTTP1ClientConnection) {
        guard let d = dialing.removeValue(forKey: ObjectIdentifier(connection)) else { return }
        setNoDelay(connection)
        busy[ObjectIdentifier(connection)] = connection
        d.completion(.success(connection))
    }

    func dialFailed(_ connection: HTTP1ClientConnection, reason: String) {
        guard let d = dialing.removeValue(forKey: ObjectIdentifier(connection)) else { return }
        connection.closeTransport()
        logger.debug("cannot connect", metadata: ["origin": "\(origin)", "reason": "\(reason)"])
        d.completion(.failure(.upstreamUnavailable("cannot connect to \(origin): \(reason)")))
        serveWaiter()
    }

    private func serveWaiter() {
        guard !closed, totalConnections < maxConnections, let waiter = waiters.pop() else { return }
        acquire(waiter)
    }

    private func dial(for completion: @escaping Completion) {
        nextID += 1
        let options = Int32(BEV_OPT_CLOSE_ON_FREE.rawValue)
        let bev: OpaquePointer?
        if let tls {
            let ssl: OpaquePointer
            do { ssl = try tls.makeClientSSL(host: origin.host) } catch {
                completion(.failure(.upstreamUnavailable("TLS set-up for \(origin) failed: \(error)")))
                return
            }
            bev = bufferevent_openssl_socket_new(loop.base, -1, ssl, BUFFEREVENT_SSL_CONNECTING, options)
            if bev == nil { SSL_free(ssl) }
        } else {
            bev = bufferevent_socket_new(loop.base, -1, options)
        }
        guard let bev else {
            completion(.failure(.upstreamUnavailable("cannot create a connection to \(origin)")))
            return
        }
        let connection = HTTP1ClientConnection(bev: bev, pool: self, limits: limits, id: nextID, isTLS: tls != nil)
        dialing[ObjectIdentifier(connection)] = (connection, completion)
        var timeout = timeval(seconds: limits.connectTimeout)
        bufferevent_set_timeouts(bev, &timeout, &timeout)
        bufferevent_enable(bev, Int16(EV_READ | EV_WRITE))
        let rc: Int32
        if let address = SocketAddress(numericHost: origin.host, port: origin.port) {
            rc = address.withSockaddr { sa, len in bufferevent_socket_connect(bev, sa, Int32(len)) }
        } else {
            rc = bufferevent_socket_connect_hostname(bev, loop.dns, AF_UNSPEC, origin.host, Int32(origin.port))
        }
        if rc != 0 {
            // libevent has already reported the failure through the event callback in some
            // cases; dialFailed ignores a connection it no longer knows.
            dialFailed(connection, reason: String(cString: strerror(errno)))
        }
    }

    private func setNoDelay(_ connection: HTTP1ClientConnection) {
        guard let bev = connection.bufferevent else { return }
        var one: Int32 = 1
        let fd = bufferevent_getfd(bev)
        if fd >= 0 { setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size)) }
    }
}

/// A first-in, first-out queue with O(1) push and pop.
struct FIFO<Element> {
    private var items: [Element?] = []
    private var head = 0

    var count: Int { items.count - head }
    var isEmpty: Bool { count == 0 }

    mutating func push(_ item: Element) { items.append(item) }

    mutating func pop() -> Element? {
        guard head < items.count else { return nil }
        let item = items[head]
        items[head] = nil
        head += 1
        if head > 64 && head * 2 > items.count {
            items.removeFirst(head)
            head = 0
        }
        return item
    }
}
