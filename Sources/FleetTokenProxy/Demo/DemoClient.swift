import CEvent
import Logging

/// The demo's simulated clients: HTTP/1.1 calls over a pool of keep-alive connections to the
/// sidecar, each answer's status reported to `onAnswer`.
final class DemoClient {
    private let pool: ConnectionPool
    private let target: UpstreamURL
    private let onAnswer: (Int) -> Void
    private(set) var inFlight = 0

    init(loop: EventLoop, target: UpstreamURL, connections: Int, logger: Logger, onAnswer: @escaping (Int) -> Void) {
        self.target = target
        self.onAnswer = onAnswer
        pool = ConnectionPool(loop: loop, origin: Origin(target), tls: nil, maxConnections: connections, logger: logger)
    }

    func send(_ call: DemoCall) {
        inFlight += 1
        var head = "\(call.method) \(call.target) HTTP/1.1\r\nHost: \(target.hostHeader)\r\nUser-Agent: fleet-token-proxy-demo\r\n"
        let body = Array((call.body ?? "").utf8)
        if call.body != nil { head += "Content-Type: application/json\r\nContent-Length: \(body.count)\r\n" }
        head += "\r\n"
        let bytes = Array(head.utf8) + body
        pool.acquire { [self] result in
            switch result {
            case .failure:
                answered(0)
            case .success(let connection):
                let exchange = DemoExchange { [self] status in answered(status) }
                connection.send(bytes)
                connection.beginExchange(method: call.method, sink: exchange)
            }
        }
    }

    func close() { pool.close() }

    private func answered(_ status: Int) {
        inFlight -= 1
        onAnswer(status)
    }
}

/// One demo call's answer: keeps the status, drops the body. It keeps itself alive until the
/// answer ends (the connection holds its sink weakly).
private final class DemoExchange: ResponseSink {
    private var status = 0
    private var done: ((Int) -> Void)?
    private var selfReference: DemoExchange?

    init(done: @escaping (Int) -> Void) {
        self.done = done
        selfReference = self // released in complete()
    }

    private func complete(_ status: Int) {
        let done = self.done
        self.done = nil
        selfReference = nil
        done?(status)
    }

    func responseHead(_ head: ResponseHead, from connection: HTTP1ClientConnection) { status = head.status }
    func responseBody(_ buffer: OpaquePointer, count: Int, from connection: HTTP1ClientConnection) { evbuffer_drain(buffer, count) }
    func responseEnded(from connection: HTTP1ClientConnection) { complete(status) }
    func responseFailed(_ failure: ProxyFailure, headReceived: Bool, retryable: Bool) { complete(0) }
    func connectionDrained(_ connection: HTTP1ClientConnection) {}
}
