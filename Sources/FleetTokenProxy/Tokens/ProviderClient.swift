import Logging

/// Fetches entity tokens from the operator's token provider (docs/CONTRACT.md §4): `GET` on the URL
/// template with the operator's static headers, over a pool of keep-alive connections whose
/// size is the bound on fetches in flight.
final class ProviderClient: TokenFetcher {
    /// A provider's answer is small JSON; a quarter of a megabyte is plenty.
    static let maxBody = 256 * 1024

    private let template: ProviderURLTemplate
    private let client: EndpointClient
    private let clock: TokenClock
    private let tokenField: String?
    private let expiryField: String?
    private let metrics: ProxyMetrics
    /// The operator's headers (a backend credential); replaced on reload.
    var headers: [HeaderField]
    /// The Google-signed ID token sent as `Authorization: Bearer` on each request, for a
    /// provider behind Google IAM (`--provider-id-token-audience`, docs/CONTRACT.md §4a).
    var idTokens: ADCTokenSource?

    init(loop: EventLoop, template: ProviderURLTemplate, tls: TLSContext?, headers: [HeaderField],
         tokenField: String?, expiryField: String?, timeout: Double, concurrency: Int, clock: TokenClock, logger: Logger,
         metrics: ProxyMetrics = ProxyMetrics()) {
        self.metrics = metrics
        self.template = template
        self.headers = headers
        self.tokenField = tokenField
        self.expiryField = expiryField
        self.clock = clock
        let origin = Origin(scheme: template.scheme, host: template.host, port: template.port, hostHeader: template.hostHeader)
        client = EndpointClient(loop: loop, origin: origin, name: "token provider", tls: tls, timeout: timeout,
                                maxConnections: concurrency, maxBody: Self.maxBody, logger: logger)
    }

    func fetch(_ key: EntityKey, completion: @escaping (Result<FetchedToken, ProxyFailure>) -> Void) {
        let started = clock.monotonicNow
        exchange(key) { [metrics, clock] result in
            metrics.providerFetchFinished(ProxyMetrics.outcome(result), seconds: clock.monotonicNow - started)
            completion(result)
        }
    }

    private func exchange(_ key: EntityKey, completion: @escaping (Result<FetchedToken, ProxyFailure>) -> Void) {
        guard let idTokens else { return send(key, bearer: nil, completion: completion) }
        idTokens.token { [self] result in
            switch result {
            case .success(let held): send(key, bearer: held.value, completion: completion)
            case .failure(let failure): completion(.failure(failure))
            }
        }
    }

    private func send(_ key: EntityKey, bearer: String?, completion: @escaping (Result<FetchedToken, ProxyFailure>) -> Void) {
        client.send(method: "GET", request: requestBytes(for: key, bearer: bearer)) { [self] result in
            completion(result.flatMap { interpret(status: $0.status, body: $0.body, key: key, bearer: bearer) })
        }
    }

    func close() { client.close() }

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

    private func interpret(status: Int, body: [UInt8], key: EntityKey, bearer: String?) -> Result<FetchedToken, ProxyFailure> {
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
}

/// An id for an error message: quoted, and cut short so a huge id cannot flood a log.
func quoted(_ id: String) -> String {
    id.count > 64 ? "\"\(id.prefix(64))…\"" : "\"\(id)\""
}
