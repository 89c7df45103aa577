import Logging

/// One Google endpoint's HTTP client (docs/CONTRACT.md §4a): a small keep-alive pool on the
/// sidecar's loop, TLS verified against the system's CAs, each exchange bounded in time and in
/// the size of the answer. It returns the status and body; what they mean is the caller's.
///
/// Loop-bound: not `Sendable`; completions run on the loop thread.
final class EndpointClient {
    /// What came back: any status, the body (at most `maxBody` bytes, de-chunked).
    struct Answer: Sendable, Equatable {
        var status: Int
        var body: [UInt8]
    }

    typealias Completion = (Result<Answer, ProxyFailure>) -> Void

    /// An answer from Google's credential endpoints is a few kilobytes; more is not one of them.
    static let maxBody = 64 * 1024

    let endpoint: GoogleEndpoint
    /// Names the endpoint in failures ("the OAuth token endpoint").
    let name: String
    private let pool: HTTP1UpstreamPool
    fileprivate let loop: EventLoop
    fileprivate let timeout: Double
    private var inFlight: [ObjectIdentifier: EndpointExchange] = [:]

    /// `maxConnections` bounds the requests in flight; more wait for a connection.
    init(loop: EventLoop, endpoint: GoogleEndpoint, name: String, tls: TLSContext?, timeout: Double, maxConnections: Int = 2, logger: Logger) {
        self.loop = loop
        self.endpoint = endpoint
        self.name = name
        self.timeout = timeout
        var limits = ClientLimits()
        limits.responseTimeout = timeout
        limits.connectTimeout = timeout
        pool = HTTP1UpstreamPool(loop: loop, origin: endpoint.origin, tls: endpoint.scheme == .https ? tls : nil,
                                 maxConnections: maxConnections, limits: limits, logger: logger)
    }

    /// Sends `method target` with `headers` and `body` (a `Content-Length` is added for a body),
    /// and calls `completion` once with the answer, or with `providerUnavailable` when the
    /// endpoint cannot be reached, is too slow, or breaks the exchange.
    func send(method: String, target: String, headers: [HeaderField], body: [UInt8] = [], completion: @escaping Completion) {
        var head = "\(method) \(target) HTTP/1.1\r\nHost: \(endpoint.origin.hostHeader)\r\nUser-Agent: fleet-token-proxy\r\n"
        for field in headers { head += "\(field.name): \(field.value)\r\n" }
        if method != "GET" { head += "Content-Length: \(body.count)\r\n" }
        head += "\r\n"
        start(EndpointExchange(client: self, method: method, request: Array(head.utf8) + body, completion: completion))
    }

    fileprivate func start(_ exchange: EndpointExchange) {
        inFlight[ObjectIdentifier(exchange)] = exchange
        exchange.timer = loop.schedule(after: timeout) { [weak exchange] in exchange?.timedOut() }
        exchange.ticket = pool.acquire { [weak exchange, pool, name] result in
            guard let exchange, !exchange.finished else {
                if case .success(let connection) = result { pool.release(connection, reusable: true) }
                return
            }
            switch result {
            case .failure(let failure):
                exchange.finish(.failure(.providerUnavailable("\(name) unreachable: \(failure.message)")))
            case .success(let connection):
                exchange.connection = connection
                connection.send(exchange.request)
                connection.beginExchange(method: exchange.method, sink: exchange)
            }
        }
    }

    fileprivate func finished(_ exchange: EndpointExchange) {
        inFlight.removeValue(forKey: ObjectIdentifier(exchange))
    }

    fileprivate func discard(_ connection: HTTP1UpstreamConnection) {
        pool.discard(connection, reason: "\(name) exchange abandoned")
    }

    func close() { pool.close() }
}

/// One request to an endpoint: collects the bounded answer and completes exactly once.
private final class EndpointExchange: ResponseSink {
    unowned let client: EndpointClient
    let method: String
    let request: [UInt8]
    private var completion: EndpointClient.Completion?
    var timer: ScheduledWork?
    var ticket: PoolTicket?
    var connection: HTTP1UpstreamConnection?
    private var status = 0
    private var body: [UInt8] = []
    private var dechunker: ChunkedBodyScanner?
    private var tooLarge = false
    /// The keep-alive race is retried once, on a fresh exchange.
    private var resent = false
    var finished: Bool { completion == nil }

    init(client: EndpointClient, method: String, request: [UInt8], completion: @escaping EndpointClient.Completion) {
        self.client = client
        self.method = method
        self.request = request
        self.completion = completion
    }

    func finish(_ result: Result<EndpointClient.Answer, ProxyFailure>) {
        guard let completion else { return }
        self.completion = nil
        timer?.cancel()
        timer = nil
        ticket?.cancel()
        ticket = nil
        client.finished(self)
        completion(result)
    }

    func timedOut() {
        if let connection, connection.isOpen { client.discard(connection) }
        connection = nil
        finish(.failure(.providerUnavailable("\(client.name) did not answer within \(Int(client.timeout)) s")))
    }

    func responseHead(_ head: ResponseHead, from connection: HTTP1UpstreamConnection) {
        status = head.status
        if head.framing(requestMethod: method) == .chunked { dechunker = ChunkedBodyScanner() }
    }

    func responseBody(count: Int, from connection: HTTP1UpstreamConnection) {
        if !tooLarge && body.count + count <= EndpointClient.maxBody {
            connection.forEachBodyPiece(count) { piece in
                if var scanner = dechunker {
                    _ = scanner.scan(piece, onData: { body.append(contentsOf: $0) })
                    dechunker = scanner
                } else {
                    body.append(contentsOf: piece)
                }
                return true
            }
        } else {
            tooLarge = true
        }
        connection.dropBody(count)
    }

    func responseEnded(from connection: HTTP1UpstreamConnection) {
        self.connection = nil
        if tooLarge {
            finish(.failure(.providerAnswerUnusable("\(client.name) answer is larger than \(EndpointClient.maxBody) bytes")))
        } else {
            finish(.success(EndpointClient.Answer(status: status, body: body)))
        }
    }

    func responseFailed(_ failure: ProxyFailure, retryable: Bool) {
        connection = nil
        guard !finished else { return }
        if retryable && !resent {
            // A reused connection the endpoint had closed: it never saw the request.
            let again = EndpointExchange(client: client, method: method, request: request) { [self] in finish($0) }
            again.resent = true
            timer?.cancel()
            timer = nil
            client.start(again)
            return
        }
        finish(.failure(.providerUnavailable("\(client.name) connection failed: \(failure.message)")))
    }

    func connectionDrained(_ connection: HTTP1UpstreamConnection) {}
    var requestFullySent: Bool { true }
}
