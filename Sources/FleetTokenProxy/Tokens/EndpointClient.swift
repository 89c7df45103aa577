import Logging

/// The HTTP client of a token source's endpoint — the operator's provider (docs/CONTRACT.md
/// §4), a Google credential endpoint (§4a): a keep-alive pool on the sidecar's loop, TLS
/// verified, each exchange bounded in time and in the size of the answer, the keep-alive race
/// retried once. It returns the status and body; what they mean is the caller's.
///
/// Loop-bound: not `Sendable`; completions run on the loop thread.
final class EndpointClient {
    /// What came back: any status, the body (at most `maxBody` bytes, de-chunked), and the
    /// first value of each field the client was asked to keep (by its name as given).
    struct Answer: Sendable, Equatable {
        var status: Int
        var body: [UInt8]
        var fields: [String: String] = [:]
    }

    typealias Completion = (Result<Answer, ProxyFailure>) -> Void

    let origin: Origin
    /// Names the endpoint in failures ("token provider", "the OAuth token endpoint").
    let name: String
    /// The largest answer body taken; a larger one is unusable.
    let maxBody: Int
    /// Answer fields the caller reads (the metadata server's `Metadata-Flavor`); none for the
    /// provider, whose answers are read on the hot path.
    let keptFields: [String]
    private let pool: HTTP1UpstreamPool
    fileprivate let loop: EventLoop
    fileprivate let timeout: Double
    private var inFlight: [ObjectIdentifier: EndpointExchange] = [:]

    /// `maxConnections` bounds the requests in flight; more wait for a connection. `timeout`
    /// bounds each exchange, the wait for a connection included.
    init(loop: EventLoop, origin: Origin, name: String, tls: TLSContext?, timeout: Double, maxConnections: Int, maxBody: Int,
         keptFields: [String] = [], logger: Logger) {
        self.loop = loop
        self.keptFields = keptFields
        self.origin = origin
        self.name = name
        self.timeout = timeout
        self.maxBody = maxBody
        var limits = ClientLimits()
        limits.responseTimeout = timeout
        limits.connectTimeout = timeout
        pool = HTTP1UpstreamPool(loop: loop, origin: origin, tls: tls, maxConnections: maxConnections, limits: limits, logger: logger)
    }

    /// Sends `method target` with `headers` and `body` (a `Content-Length` is added for a body),
    /// and calls `completion` once with the answer, or with `providerUnavailable` when the
    /// endpoint cannot be reached, is too slow, or breaks the exchange.
    func send(method: String, target: String, headers: [HeaderField], body: [UInt8] = [], completion: @escaping Completion) {
        var head = "\(method) \(target) HTTP/1.1\r\nHost: \(origin.hostHeader)\r\nUser-Agent: fleet-token-proxy\r\n"
        for field in headers { head += "\(field.name): \(field.value)\r\n" }
        if method != "GET" { head += "Content-Length: \(body.count)\r\n" }
        head += "\r\n"
        send(method: method, request: Array(head.utf8) + body, completion: completion)
    }

    /// Sends `request`, a whole request already written (head and body), for `method`.
    func send(method: String, request: [UInt8], completion: @escaping Completion) {
        start(EndpointExchange(client: self, method: method, request: request, completion: completion))
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
    private var answer: AnswerCollector
    /// The keep-alive race is retried once, on a fresh exchange.
    private var resent = false
    var finished: Bool { completion == nil }

    init(client: EndpointClient, method: String, request: [UInt8], completion: @escaping EndpointClient.Completion) {
        self.client = client
        self.method = method
        self.request = request
        self.completion = completion
        answer = AnswerCollector(limit: client.maxBody, keptFields: client.keptFields)
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
        answer.head(head)
    }

    func responseBody(_ bytes: ByteView, from connection: HTTP1UpstreamConnection) {
        answer.take(bytes)
    }

    func responseEnded(from connection: HTTP1UpstreamConnection) {
        self.connection = nil
        if answer.tooLarge {
            finish(.failure(.providerAnswerUnusable("\(client.name) answer is larger than \(client.maxBody) bytes")))
        } else {
            finish(.success(EndpointClient.Answer(status: answer.status, body: answer.body, fields: answer.fields)))
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
