import CEvent
import Logging
#if canImport(Glibc)
import Glibc
#endif

/// The client-facing side: listeners, and the connections it accepted, which it owns.
final class ProxyServer {
    private let core: ProxyCore
    private var listeners: [Listener] = []
    private var connections: [ObjectIdentifier: ClientConnection] = [:]
    private var nextID = 0
    /// At the connection limit: the listeners are held off until a connection closes.
    private var paused = false
    private var draining = false
    /// One line a reason per `acceptErrorLogInterval` about failed accepts; the metric counts each.
    private var acceptErrorLog = LogRateLimiter(interval: ProxyServer.acceptErrorLogInterval)
    static let acceptErrorLogInterval: Double = 10
    /// Counts descriptors for that line.
    private let descriptors = DescriptorUsage()
    /// Called once, when draining and the last connection has closed.
    private var onDrained: (() -> Void)?

    init(core: ProxyCore) {
        self.core = core
    }

    /// Binds `address`; returns what was bound (with the real port for port 0).
    @discardableResult
    func listen(on address: ListenAddress, socketMode: UInt32? = nil) throws -> String {
        let listener = try Listener(loop: core.loop, address: address, socketMode: socketMode) { [unowned self] fd in
            accept(fd)
        }
        add(listener)
        return listener.boundDescription
    }

    /// Serves on a socket that is already listening (systemd socket activation).
    func adopt(fd: Int32, description: String) throws {
        let listener = try Listener(loop: core.loop, adoptingFD: fd, description: description) { [unowned self] fd in
            accept(fd)
        }
        add(listener)
    }

    private func add(_ listener: Listener) {
        listener.onAcceptError = { [unowned self] error, pause in acceptFailed(error, pause: pause) }
        if paused { listener.connectionLimitReached() }
        listeners.append(listener)
    }

    var openConnections: Int { connections.count }
    /// True while at least one listener accepts (false before start and once draining).
    var isListening: Bool { !listeners.isEmpty && !draining }

    private func accept(_ fd: Int32) {
        guard !draining else { Glibc.close(fd); return }
        var one: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        _ = evutil_make_socket_nonblocking(fd)
        nextID += 1
        let connection = HTTP1ClientConnection(fd: fd, core: core, server: self, id: nextID)
        connections[ObjectIdentifier(connection)] = connection
        core.statistics.acceptedConnections += 1
        core.statistics.openConnections = connections.count
        core.metrics.openConnectionsChanged(to: connections.count)
        if connections.count >= core.limits.maxConnections && !paused {
            paused = true
            listeners.forEach { $0.connectionLimitReached() }
            core.logger.warning("connection limit reached; not accepting until one closes", metadata: ["limit": "\(core.limits.maxConnections)"])
        }
    }

    /// A listener's accept failed (it pauses by itself, `AcceptPause`): counted, and one line a
    /// reason every `acceptErrorLogInterval` with the descriptors open and the limit
    /// (docs/CONTRACT.md §5).
    private func acceptFailed(_ error: AcceptError, pause: Double?) {
        core.metrics.acceptFailed(error.reason)
        guard case .log(let suppressed) = acceptErrorLog.admit(error.reason.rawValue, now: core.clock.monotonicNow) else { return }
        var metadata: Logger.Metadata = [
            "reason": "\(error.reason.rawValue)", "error": "\(error.message)",
            "descriptors_open": "\(descriptors.open().map(String.init) ?? "unknown")",
            "descriptor_limit": "\(DescriptorUsage.limit().map(String.init) ?? "unlimited")",
            "open_connections": "\(connections.count)",
        ]
        if let pause { metadata["pause_ms"] = "\(Int((pause * 1000).rounded()))" }
        if suppressed > 0 { metadata["failed_since_last_line"] = "\(suppressed)" }
        core.logger.warning("not accepting connections for a moment: \(error.summary)", metadata: metadata)
    }

    /// An HTTP/1.1 connection saw the HTTP/2 preface: an HTTP/2 connection takes over its
    /// socket (h2c with prior knowledge, as gRPC clients send on an insecure channel).
    func upgrade(_ old: HTTP1ClientConnection, transport: Transport) {
        connections.removeValue(forKey: ObjectIdentifier(old))
        do {
            let h2 = try HTTP2ClientConnection(transport: transport, core: core, server: self, id: old.id)
            // Registered before it reads: input that ends the session at once (preface,
            // SETTINGS and GOAWAY in one write) must find it here to remove it.
            connections[ObjectIdentifier(h2)] = h2
            if draining { h2.drain() }
            h2.start()
        } catch {
            core.logger.warning("cannot start an HTTP/2 session", metadata: ["error": "\(error)"])
            transport.close()
            core.statistics.openConnections = connections.count
            core.metrics.openConnectionsChanged(to: connections.count)
        }
    }

    func connectionClosed(_ connection: ClientConnection) {
        connections.removeValue(forKey: ObjectIdentifier(connection))
        core.statistics.openConnections = connections.count
        core.metrics.openConnectionsChanged(to: connections.count)
        if paused && connections.count < core.limits.maxConnections && !draining {
            paused = false
            listeners.forEach { $0.connectionLimitCleared() }
        }
        // Its descriptor is free: a listener pausing after a failed accept tries again now.
        listeners.forEach { $0.descriptorFreed() }
        if draining && connections.isEmpty, let done = onDrained {
            onDrained = nil
            done()
        }
    }

    /// Stops accepting, closes idle connections, and calls `done` when the rest have finished.
    func drain(_ done: @escaping () -> Void) {
        draining = true
        listeners.forEach { $0.close() }
        listeners.removeAll()
        onDrained = done
        for c in Array(connections.values) { c.drain() }
        if connections.isEmpty, let done = onDrained {
            onDrained = nil
            done()
        }
    }

    /// Closes every connection at once (drain timeout over, or shutdown).
    func closeAll() {
        listeners.forEach { $0.close() }
        listeners.removeAll()
        for c in Array(connections.values) { c.close(reason: "shutting down") }
    }
}
