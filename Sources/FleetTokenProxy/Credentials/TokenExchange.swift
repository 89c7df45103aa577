import Logging

/// One way of getting a token from Google for `ADCTokenSource` (docs/CONTRACT.md §4a): the
/// OAuth token endpoint, the metadata server, IAM impersonation, the STS token exchange. The
/// source decides when to fetch and keeps the token; an exchange only asks, once per `fetch`.
///
/// Loop-bound: completions run on the loop thread.
protocol TokenExchange: AnyObject {
    /// Where the token comes from, for the start-up line.
    var endpoint: GoogleEndpoint { get }
    /// Calls `completion` once with a token, or with why there is none (§5's rows).
    func fetch(_ completion: @escaping (Result<AccessToken, ProxyFailure>) -> Void)
    func close()
}

/// What every exchange needs from the sidecar: its loop, Google's TLS context, the time bound
/// of one exchange, the clocks, and (for a source inside an exchange) the ADC cache's settings.
struct TokenExchangeContext {
    var loop: EventLoop
    var tls: TLSContext?
    var timeout: Double
    var backoff: BackoffPolicy
    var minValidity: Double
    var clock: TokenClock
    var logger: Logger
    var random: () -> Double
    /// An X.509 external account's certificate, which its STS and IAM exchanges present.
    var certificate: WorkloadCertificate? = nil
}
