import CEvent
import Logging

/// Fetches entity tokens from the operator's token provider (docs/CONTRACT.md §4): `GET` on the URL
/// template with the operator's static headers, over a pool of keep-alive connections whose
/// size is the bound on fetches in flight.
final class ProviderClient: TokenFetcher {
    private let template: ProviderURLTemplate
    private let pool: HTTP1UpstreamPool
    private let clock: TokenClock
    private let loop: EventLoop
    private let timeout: Double
    private let tokenField: String?
    private let expiryField: String?
    private let logger: Logger
    private let metrics: ProxyMetrics
    /// The operator's headers (a backend credential); replaced on reload.
    var headers: [HeaderField]
    /// Fetches under way; the client owns them until they finish.
    private var inFlight: [ObjectIdentifier: ProviderExchange] = [:]
    /// The Google-signed ID token sent as `Authorization: Bearer` on each request, for a
    /// provider behind Google IAM (`--provider-id-token-audience`, docs/CONTRACT.md §4a).
    var idTokens: ADCTokenSource?

    init(loop: EventLoop, template: ProviderURLTemplate, tls: TLSContext?, headers: [HeaderField],
         tokenField: String?, expiryField: String?, timeout: Double, concurrency: Int, clock: TokenClock, logger: Logger,
         metrics: ProxyMetrics = ProxyMetrics()) {
        self.metrics = metrics
        self.loop = loop
        self.template = template
        self.headers = headers
        self.tokenField = tokenField
        self.expiryField = expiryField
        self.timeout = timeout
        self.clock = clock
        self.logger = logger
        let origin = Origin(scheme: template.scheme, host: template.host, port: template.port, hostHeader: template.hostHeader)
        var limits = ClientLimits()
        limits.responseTimeout = timeout
        limits.connectTimeout = timeout
        pool = HTTP1UpstreamPool(loop: loop, origin: origin, tls: tls, maxConnections: concurrency, limits: limits, logger: logger)
    }

    func fetch(_ key: EntityKey, completion: @escaping (Result<FetchedToken, ProxyFailure>) -> Void) {
        let started = clock.monotonicNow
        exchange(key) { [metrics, clock] result in
            metrics.providerFetchFinished(ProxyMetrics.outcome(result), seconds: clock.monotonicNow - started)
            completion(result)
        }
    }

    /// One fetch without metrics: a resend after the keep-alive race counts with its first try.
    fileprivate func exchange(_ key: EntityKey, completion: @escaping (Result<FetchedToken, ProxyFailure>) -> Void) {
        guard let idTokens else { return send(key, bearer: nil, completion: completion) }
        idTokens.token { [self] result in
            switch result {
            case .success(let held): send(key, bearer: held.value, completion: completion)
            case .failure(let failure): completion(.failure(failure))
            }
        }
    }

    private func send(_ key: EntityKey, bearer: String?, completion: @escaping (Result<FetchedToken, ProxyFailure>) -> Void) {
        let exchange = ProviderExchange(key: key, bearer: bearer, client: self, completion: completion)
        inFlight[ObjectIdentifier(exchange)] = exchange
        exchange.timer = loop.schedule(after: timeout) { [weak exchange] in
            exchange?.timedOut()
        }
        exchange.ticket = pool.acquire { [weak exchange] result in
            guard let exchange, !exchange.finished else {
                // The fetch already timed out while waiting for a connection.
                if case .success(let c) = result { self.pool.release(c, reusable: true) }
                return
            }
            switch result {
            case .failure(let failure):
                exchange.finish(.failure(.providerUnavailable("token provider unreachable: \(failure.message)")))
            case .success(let connection):
                exchange.connection = connection
                connection.send(self.requestBytes(for: key, bearer: bearer))
                connection.beginExchange(method: "GET", sink: exchange)
            }
        }
    }

    func close() { pool.close() }

    fileprivate func finished(_ exchange: ProviderExchange) {
        inFlight.removeValue(forKey: ObjectIdentifier(exchange))
    }

    fileprivate func discard(_ connection: HTTP1UpstreamConnection) {
        pool.discard(connection, reason: "provider fetch abandoned")
    }

    /// The request head, written as bytes into one buffer: string interpolation and `+=`
    /// cost several allocations a line, on every cold miss.
    private func requestBytes(for key: EntityKey, bearer: String?) -> [UInt8] {
        var head: [UInt8] = []
        head.reserveCapacity(256)
        let crlf: [UInt8] = [UInt8(ascii: "\r"), UInt8(ascii: "\n")]
        head.append(contentsOf: "GET ".utf8)
        head.append(contentsOf: template.target(for: key).utf8)
        head.append(contentsOf: " HTTP/1.1\r\nHost: ".utf8)
        head.append(contentsOf: template.hostHeader.utf8)
        head.append(contentsOf: "\r\nAccept: application/json\r\nUser-Agent: fleet-token-proxy\r\n".utf8)
        if let bearer {
            head.append(contentsOf: "Authorization: Bearer ".utf8)
            head.append(contentsOf: bearer.utf8)
            head.append(contentsOf: crlf)
        }
        for h in headers {
            head.append(contentsOf: h.name.utf8)
            head.append(contentsOf: ": ".utf8)
            head.append(contentsOf: h.value.utf8)
            head.append(contentsOf: crlf)
        }
        head.append(contentsOf: crlf)
        return head
    }

    fileprivate func interpret(status: Int, body: [UInt8], key: EntityKey, bearer: String?) -> Result<FetchedToken, ProxyFailure> {
        // The ID token was refused (revoked, or the provider's audience changed): the next
        // fetch gets a fresh one.
        if status == 401, let bearer { idTokens?.refused(bearer) }
        switch status {
        case 200..<300:
            return ProviderAnswer.parse(body: body, tokenField: tokenField, expiryField: expiryField, wallNow: clock.wallNow)
        case 400..<500:
            return .failure(.providerRefused("token provider refused \(key.type.rawValue) \(quoted(key.id)) with HTTP \(status)"))
        default:
            return .failure(.providerUnavailable("token provider answered HTTP \(status) for \(key.type.rawValue) \(quoted(key.id))"))
        }
    }

    fileprivate var timeoutSeconds: Double { timeout }
}

/// One provider fetch: collects the (bounded) answer and completes exactly once.
private final class ProviderExchange: ResponseSink {
    static let maxBody = 256 * 1024

    let key: EntityKey
    let bearer: String?
    unowned let client: ProviderClient
    private var completion: ((Result<FetchedToken, ProxyFailure>) -> Void)?
    var timer: ScheduledWork?
    /// The fetch's place in the pool's queue, cancelled when the fetch ends (timeout).
    var ticket: PoolTicket?
    var connection: HTTP1UpstreamConnection?
    private var status = 0
    private var body: [UInt8] = []
    private var dechunker: ChunkedBodyScanner?
    private var tooLarge = false
    var finished: Bool { completion == nil }

    init(key: EntityKey, bearer: String?, client: ProviderClient, completion: @escaping (Result<FetchedToken, ProxyFailure>) -> Void) {
        self.key = key
        self.bearer = bearer
        self.client = client
        self.completion = completion
    }

    func finish(_ result: Result<FetchedToken, ProxyFailure>) {
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
        finish(.failure(.providerUnavailable("token provider did not answer within \(Int(client.timeoutSeconds)) s")))
    }

    func responseHead(_ head: ResponseHead, from connection: HTTP1UpstreamConnection) {
        status = head.status
        if head.framing(requestMethod: "GET") == .chunked { dechunker = ChunkedBodyScanner() }
    }

    func responseBody(count: Int, from connection: HTTP1UpstreamConnection) {
        if !tooLarge && body.count + count <= Self.maxBody {
            connection.forEachBodyPiece(count) { piece in
                if var d = dechunker {
                    _ = d.scan(piece, onData: { body.append(contentsOf: $0) })
                    dechunker = d
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
            finish(.failure(.providerAnswerUnusable("token provider answer is larger than \(Self.maxBody) bytes")))
        } else {
            finish(client.interpret(status: status, body: body, key: key, bearer: bearer))
        }
    }

    func responseFailed(_ failure: ProxyFailure, retryable: Bool) {
        connection = nil
        if retryable && !finished {
            // The keep-alive race on a reused connection: the provider never saw the request.
            client.exchange(key) { [self] result in finish(result) }
            return
        }
        finish(.failure(.providerUnavailable("token provider connection failed: \(failure.message)")))
    }

    func connectionDrained(_ connection: HTTP1UpstreamConnection) {}
}

/// An id for an error message: quoted, and cut short so a huge id cannot flood a log.
func quoted(_ id: String) -> String {
    id.count > 64 ? "\"\(id.prefix(64))…\"" : "\"\(id)\""
}
