import CEvent
import COpenSSL
import Logging
#if canImport(Glibc)
import Glibc
#endif

/// Keep-alive HTTP/1.1 connections to one origin, shared by every call on the loop.
///
/// At most `maxConnections` exist at once (connecting, idle or busy); further borrowers wait
/// in arrival order, at most `maxWaiters` of them. Every borrower holds a `PoolTicket` and
/// cancels it when it stops waiting (timed out, client gone): a cancelled ticket's completion
/// is dropped at once and its place skipped. The pool is the one place that frees its
/// connections.
final class HTTP1UpstreamPool {
    typealias Completion = (Result<HTTP1UpstreamConnection, ProxyFailure>) -> Void
    /// Borrowers that may wait for a connection at once, by default; past it `acquire` fails.
    static let defaultMaxWaiters = 1024

    let origin: Origin
    /// Where request body bytes cross from a client half to a connection
    /// (`H1UpstreamExchange`): one buffer for the pool's life, empty between crossings (the
    /// loop runs one crossing at a time).
    let crossing = EventBuffer()
    private let loop: EventLoop
    private let tls: TLSContext?
    private let maxConnections: Int
    private let limits: ClientLimits
    /// Counts the connections dialed (Fleet Engine's pool; the provider's records nothing).
    private let metrics: ProxyMetrics
    private let logger: Logger
    /// Most recently used last: reuse the warmest connection.
    private var idle: [HTTP1UpstreamConnection] = []
    /// Connections being dialed, with the borrower each one is for.
    private var dialing: [ObjectIdentifier: (connection: HTTP1UpstreamConnection, ticket: PoolTicket)] = [:]
    /// Lent to borrowers.
    private var busy = Lent()
    /// Tickets waiting for a connection; cancelled ones stay until they reach the front.
    private var waiters = FIFO<PoolTicket>()
    /// Tickets in `waiters` not cancelled yet.
    private(set) var waiting = 0
    /// Cancelled tickets still in `waiters`; swept out when they outnumber the live ones, so a
    /// flood of callers that give up cannot grow the queue.
    private var cancelledInQueue = 0
    private let maxWaiters: Int
    private var nextID = 0
    private var closed = false
    /// The start-up connection while it is dialed for no one (`warmUp`): the first borrower
    /// takes it over instead of dialing another.
    private var warming: ObjectIdentifier?
    /// Whether this pool keeps a ready connection through idle timeouts.
    private var warm = WarmConnectionRule()
    /// The last connection, past its idle bound, and the replacement dialed before it closes.
    private var replacing: (old: HTTP1UpstreamConnection, new: HTTP1UpstreamConnection)?
    /// The idle bound, in ticks of `sweepTimer`, which runs while the pool has connections.
    private let idleSweep: IdleSweep
    private var sweepTimer: ScheduledWork?

    init(loop: EventLoop, origin: Origin, tls: TLSContext?, maxConnections: Int, limits: ClientLimits = ClientLimits(),
         maxWaiters: Int = HTTP1UpstreamPool.defaultMaxWaiters, metrics: ProxyMetrics = ProxyMetrics(), logger: Logger) {
        self.loop = loop
        self.origin = origin
        self.tls = tls
        self.maxConnections = max(1, maxConnections)
        self.limits = limits
        self.metrics = metrics
        self.maxWaiters = max(0, maxWaiters)
        self.logger = logger
        idleSweep = IdleSweep(idleTimeout: limits.idleTimeout)
    }

    deinit { sweepTimer?.cancel() }

    var totalConnections: Int { idle.count + dialing.count + busy.count }
    /// Idle connections, and connections dialed so far (for tests).
    var idleCount: Int { idle.count }
    var connectionsDialed: Int { nextID }

    /// An idle connection, now, for a borrower that can use one at once; nil when none is idle
    /// (then `acquire`). A warm pool's connection so costs no ticket and no completion closure.
    func takeIdle() -> HTTP1UpstreamConnection? {
        guard !closed, let connection = idle.popLast() else { return nil }
        busy.insert(connection)
        return connection
    }

    /// Hands a connection to `completion`: an idle one at once, a new one once connected, or
    /// the next one released when the pool is full. Fails at once when `maxWaiters` borrowers
    /// already wait. The borrower cancels the returned ticket when it stops waiting; after
    /// that `completion` is never called.
    @discardableResult
    func acquire(_ completion: @escaping Completion) -> PoolTicket {
        let ticket = PoolTicket(completion, pool: self)
        guard !closed else {
            ticket.complete(.failure(.upstreamUnavailable("shutting down")))
            return ticket
        }
        if let connection = takeIdle() {
            ticket.complete(.success(connection))
        } else if let id = warming, let d = dialing[id] {
            warming = nil
            dialing[id] = (d.connection, ticket)
        } else if totalConnections < maxConnections {
            dial(for: ticket)
        } else if waiting >= maxWaiters {
            ticket.complete(.failure(.upstreamUnavailable("\(waiting) calls already wait for a connection to \(origin)")))
        } else {
            waiters.push(ticket)
            ticket.queued = true
            waiting += 1
        }
        return ticket
    }

    /// Dials one connection for the idle list ahead of the first call (start-up), unless the
    /// pool has one: a borrower that leaves at once, whose connection the pool keeps. From now
    /// on the pool keeps one ready (`WarmConnectionRule`).
    func warmUp() {
        guard !closed else { return }
        warm.warmed()
        guard totalConnections == 0 else { return }
        acquire { _ in }.cancel()
        warming = dialing.keys.first
    }

    /// An idle connection reached `limits.idleTimeout` (`sweepIdle`). It closes, unless it is
    /// the pool's last and the pool keeps one warm: then its replacement is dialed first (for
    /// the idle list), and it stays idle, lent to calls, until that is up. False when it stays
    /// open.
    func idleBoundReached(_ connection: HTTP1UpstreamConnection) -> Bool {
        switch warm.idleBoundReached(others: totalConnections - 1, replacing: replacing?.old === connection) {
        case .close:
            discard(connection, reason: "idle")
            return true
        case .keep:
            return false
        case .replaceFirst:
            let forNoOne = PoolTicket({ _ in }, pool: self)
            forNoOne.cancel()
            if let replacement = dial(for: forNoOne) { replacing = (connection, replacement) }
            return false
        }
    }

    /// Each `idleSweep.period` while the pool has connections: every idle one is a tick older,
    /// and those past the bound meet `idleBoundReached`. Armed when a connection comes up, not
    /// per exchange.
    private func scheduleSweep() {
        guard sweepTimer == nil, !closed else { return }
        // Unowned: `close()` and `deinit` cancel the timer.
        sweepTimer = loop.schedule(after: idleSweep.period) { [unowned self] in
            sweepTimer = nil
            sweepIdle()
            if totalConnections > 0 { scheduleSweep() }
        }
    }

    private func sweepIdle() {
        var past: [HTTP1UpstreamConnection] = []
        for connection in idle where idleSweep.tick(&connection.idleTicks) { past.append(connection) }
        for connection in past where !idleBoundReached(connection) { idleSweep.kept(&connection.idleTicks) }
    }

    /// A waiting ticket was cancelled: it no longer counts against `maxWaiters`.
    fileprivate func waiterCancelled() {
        waiting -= 1
        cancelledInQueue += 1
        if cancelledInQueue > 64 && cancelledInQueue > waiting {
            waiters.removeAll { !$0.isPending }
            cancelledInQueue = 0
        }
    }

    /// The first waiter not cancelled, if any (cancelled ones are dropped on the way, in a loop).
    private func nextWaiter() -> PoolTicket? {
        while let ticket = waiters.pop() {
            ticket.queued = false
            if ticket.isPending {
                waiting -= 1
                return ticket
            }
            cancelledInQueue -= 1
        }
        return nil
    }

    /// Gives a connection back after a complete exchange.
    func release(_ connection: HTTP1UpstreamConnection, reusable: Bool) {
        guard busy.remove(connection) else { return }
        guard reusable, !closed else {
            connection.closeTransport()
            serveWaiter()
            return
        }
        if let waiter = nextWaiter() {
            busy.insert(connection)
            waiter.complete(.success(connection))
        } else {
            connection.markIdle()
            idle.append(connection)
        }
    }

    /// Closes a connection that broke or is not to be reused, wherever it is.
    func discard(_ connection: HTTP1UpstreamConnection, reason: String) {
        if replacing?.old === connection { replacing = nil }
        if !busy.remove(connection) {
            if let i = idle.firstIndex(where: { $0 === connection }) { idle.remove(at: i) }
        }
        logger.trace("upstream connection closed", metadata: ["origin": "\(origin)", "upstream_conn": "\(connection.id)", "reason": "\(reason)"])
        connection.closeTransport()
        serveWaiter()
    }

    /// Closes every connection; waiters get an error.
    func close() {
        closed = true
        replacing = nil
        sweepTimer?.cancel()
        sweepTimer = nil
        for c in idle { c.closeTransport() }
        idle.removeAll()
        for c in busy.removeAll() { c.closeTransport() }
        let pendingDials = dialing.values
        dialing.removeAll()
        for d in pendingDials {
            d.connection.closeTransport()
            d.ticket.complete(.failure(.upstreamUnavailable("shutting down")))
        }
        while let w = nextWaiter() { w.complete(.failure(.upstreamUnavailable("shutting down"))) }
    }

    // MARK: Dialing

    func connected(_ connection: HTTP1UpstreamConnection) {
        guard let d = dialing.removeValue(forKey: ObjectIdentifier(connection)) else { return }
        if warming == ObjectIdentifier(connection) { warming = nil }
        if let bev = connection.bufferevent { Dialer.setNoDelay(bev) }
        scheduleSweep()
        busy.insert(connection)
        if d.ticket.isPending {
            d.ticket.complete(.success(connection))
        } else {
            // Its borrower left while it was dialed: the next waiter, or the idle list, gets it.
            release(connection, reusable: true)
        }
        // A replacement is up: the connection it replaces closes if idle (if a call borrowed it
        // meanwhile, it goes back idle and meets its bound again, no longer the last).
        if let r = replacing, r.new === connection {
            replacing = nil
            if idle.contains(where: { $0 === r.old }) { discard(r.old, reason: "idle, replaced") }
        }
    }

    func dialFailed(_ connection: HTTP1UpstreamConnection, reason: String) {
        guard let d = dialing.removeValue(forKey: ObjectIdentifier(connection)) else { return }
        if warming == ObjectIdentifier(connection) { warming = nil }
        if replacing?.new === connection { replacing = nil }
        connection.closeTransport()
        logger.debug("cannot connect", metadata: ["origin": "\(origin)", "reason": "\(reason)"])
        d.ticket.complete(.failure(.upstreamUnavailable("cannot connect to \(origin): \(reason)")))
        serveWaiter()
    }

    /// Dials for the next live waiter when there is room. Called once per freed slot, so it
    /// does not recurse through waiters.
    private func serveWaiter() {
        guard !closed, totalConnections < maxConnections, let waiter = nextWaiter() else { return }
        dial(for: waiter)
    }

    /// The connection being dialed for `ticket`; nil when the dial failed at once (the ticket
    /// was told).
    @discardableResult
    private func dial(for ticket: PoolTicket) -> HTTP1UpstreamConnection? {
        nextID += 1
        switch Dialer.connect(loop: loop, origin: origin, tls: tls, timeout: limits.connectTimeout) {
        case .failure(let failure):
            ticket.complete(.failure(failure))
            return nil
        case .success(let bev):
            let connection = HTTP1UpstreamConnection(bev: bev, pool: self, limits: limits, id: nextID, isTLS: tls != nil)
            metrics.upstreamConnectionOpened(.http1)
            dialing[ObjectIdentifier(connection)] = (connection, ticket)
            return connection
        }
    }
}

extension HTTP1UpstreamPool {
    /// The connections lent out: an array and each connection's place in it, so lending and
    /// taking back cost no hashing (a dictionary by `ObjectIdentifier` cost about 500
    /// instructions a call).
    struct Lent {
        private var connections: [HTTP1UpstreamConnection] = []

        var count: Int { connections.count }

        mutating func insert(_ connection: HTTP1UpstreamConnection) {
            if contains(connection) { return }
            connection.lentSlot = connections.count
            connections.append(connection)
        }

        func contains(_ connection: HTTP1UpstreamConnection) -> Bool {
            let slot = connection.lentSlot
            return slot >= 0 && slot < connections.count && connections[slot] === connection
        }

        /// False when `connection` is not lent.
        mutating func remove(_ connection: HTTP1UpstreamConnection) -> Bool {
            guard contains(connection) else { return false }
            let slot = connection.lentSlot
            let last = connections.removeLast()
            if last !== connection {
                connections[slot] = last
                last.lentSlot = slot
            }
            connection.lentSlot = -1
            return true
        }

        mutating func removeAll() -> [HTTP1UpstreamConnection] {
            let all = connections
            connections.removeAll()
            for c in all { c.lentSlot = -1 }
            return all
        }
    }
}

/// A borrower's place in a `HTTP1UpstreamPool`: completed once with a connection or a failure,
/// unless cancelled first. Cancel it when the call stops waiting (timeout, client gone); a
/// connection it already received is the borrower's to release.
final class PoolTicket {
    private var completion: HTTP1UpstreamPool.Completion?
    /// Set while the ticket waits in the pool's queue, so cancelling frees its place.
    private weak var pool: HTTP1UpstreamPool?
    fileprivate var queued = false

    fileprivate init(_ completion: @escaping HTTP1UpstreamPool.Completion, pool: HTTP1UpstreamPool) {
        self.completion = completion
        self.pool = pool
    }

    /// Neither completed nor cancelled.
    var isPending: Bool { completion != nil }

    /// Drops the completion: it will never be called. Idempotent.
    func cancel() {
        guard completion != nil else { return }
        completion = nil
        if queued, let pool { pool.waiterCancelled() }
    }

    fileprivate func complete(_ result: Result<HTTP1UpstreamConnection, ProxyFailure>) {
        queued = false
        guard let completion else { return }
        self.completion = nil
        completion(result)
    }
}
