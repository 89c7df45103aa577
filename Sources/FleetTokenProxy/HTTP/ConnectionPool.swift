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
        if let bev = connection.bufferevent { Dialer.setNoDelay(bev) }
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
        switch Dialer.connect(loop: loop, origin: origin, tls: tls, timeout: limits.connectTimeout) {
        case .failure(let failure):
            completion(.failure(failure))
        case .success(let bev):
            let connection = HTTP1ClientConnection(bev: bev, pool: self, limits: limits, id: nextID, isTLS: tls != nil)
            dialing[ObjectIdentifier(connection)] = (connection, completion)
        }
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
