import Logging

/// One token from Application Default Credentials (docs/CONTRACT.md §4a): the OAuth 2.0 access
/// token (scope `cloud-platform`) that `iam:` and `adc` use, or a Google-signed ID token for
/// one audience (`--provider-id-token-audience`). Fetched once however many callers wait,
/// refreshed ahead, fetched again with backoff after a failure. `AccessTokenState` decides;
/// this class keeps the waiters, and a `TokenExchange` asks Google.
///
/// Loop-bound: not `Sendable`; completions run on the loop thread, sometimes before `token`
/// returns.
final class ADCTokenSource {
    typealias Completion = (Result<AccessTokenState.Held, ProxyFailure>) -> Void

    static let scope = "https://www.googleapis.com/auth/cloud-platform"
    /// Callers that may wait for one fetch; more are refused at once (503).
    static let maxWaiters = 16_384

    /// Which token: both come from the same credentials, by different requests.
    enum Kind: Sendable, Equatable {
        case access
        /// An ID token whose `aud` is this audience.
        case identity(audience: String)
    }

    let credentials: ApplicationDefaultCredentials
    let kind: Kind
    private let exchange: TokenExchange
    private let clock: TokenClock
    private let random: () -> Double
    private var state: AccessTokenState
    private var waiters: [Completion] = []

    /// Where tokens come from (the start-up line).
    var endpoint: GoogleEndpoint { exchange.endpoint }

    /// `x-goog-user-project` for the calls this token authorises (docs/CONTRACT.md §4a).
    var quotaProject: String? { credentials.quotaProject }

    /// Builds the exchange for where `credentials` get their token; a service-account key that
    /// cannot sign, a URL that is not one, or an ID token the credentials cannot mint is a
    /// start-up line.
    convenience init(credentials: ApplicationDefaultCredentials, kind: Kind = .access, tokenEndpoint: GoogleEndpoint, loop: EventLoop,
                     tls: TLSContext?, timeout: Double, backoff: BackoffPolicy, minValidity: Double, clock: TokenClock, logger: Logger,
                     random: @escaping () -> Double = { Double.random(in: 0..<1) }) throws(ConfigError) {
        let context = TokenExchangeContext(loop: loop, tls: tls, timeout: timeout, backoff: backoff, minValidity: minValidity,
                                           clock: clock, logger: logger, random: random)
        let exchange = try Self.exchange(for: credentials, kind: kind, tokenEndpoint: tokenEndpoint, context: context)
        self.init(credentials: credentials, kind: kind, exchange: exchange, context: context)
    }

    /// A source over `exchange` (also the source credentials inside an impersonation).
    init(credentials: ApplicationDefaultCredentials, kind: Kind, exchange: TokenExchange, context: TokenExchangeContext) {
        self.credentials = credentials
        self.kind = kind
        self.exchange = exchange
        clock = context.clock
        random = context.random
        state = AccessTokenState(backoff: context.backoff, minValidity: context.minValidity)
    }

    private static func exchange(for credentials: ApplicationDefaultCredentials, kind: Kind, tokenEndpoint: GoogleEndpoint,
                                 context: TokenExchangeContext) throws(ConfigError) -> TokenExchange {
        let file = credentials.fileName
        switch credentials.source {
        case .serviceAccount(let key):
            return try OAuthTokenExchange(serviceAccount: key, file: file, kind: kind, tokenEndpoint: tokenEndpoint, context: context)
        case .authorizedUser(let user):
            return try OAuthTokenExchange(authorizedUser: user, file: file, kind: kind, tokenEndpoint: tokenEndpoint, context: context)
        case .metadataServer(let host):
            return try MetadataServerExchange(host: host, kind: kind, context: context)
        case .externalAccount(let account):
            var context = context
            if case .certificate(let source) = account.subjectTokenSource {
                context.certificate = try WorkloadCertificate(source: source, file: file, context: context)
            }
            let sts = try STSExchange(account: account, file: file, context: context)
            guard let url = account.impersonationURL else {
                if case .identity = kind {
                    throw ConfigError("--provider-id-token-audience needs a service account: the external account in \(file) has no service_account_impersonation_url, and a federated token cannot mint an ID token")
                }
                return sts
            }
            // The federated token authorises IAM, as a source's token does.
            let source = ADCTokenSource(credentials: credentials, kind: .access, exchange: sts, context: context)
            return try ImpersonationExchange(url: url, file: file, delegates: [], lifetime: account.tokenLifetime, kind: kind,
                                             source: source, context: context)
        case .impersonatedServiceAccount(let impersonated):
            // The source's access token authorises IAM for an access token and an ID token alike.
            let sourceExchange: TokenExchange
            switch impersonated.source {
            case .serviceAccount(let key):
                sourceExchange = try OAuthTokenExchange(serviceAccount: key, file: file, kind: .access, tokenEndpoint: tokenEndpoint, context: context)
            case .authorizedUser(let user):
                sourceExchange = try OAuthTokenExchange(authorizedUser: user, file: file, kind: .access, tokenEndpoint: tokenEndpoint, context: context)
            }
            let source = ADCTokenSource(credentials: credentials, kind: .access, exchange: sourceExchange, context: context)
            return try ImpersonationExchange(
                url: impersonated.impersonationURL, file: file, delegates: impersonated.delegates, kind: kind, source: source,
                context: context)
        }
    }

    /// Calls `completion` once with a token that has more than the minimum validity left, or
    /// with why there is none.
    func token(_ completion: @escaping Completion) {
        switch state.request(now: clock.monotonicNow) {
        case .serve(let held):
            completion(.success(held))
        case .serveAndStartRefresh(let held):
            startFetch()
            completion(.success(held))
        case .wait(let start):
            guard waiters.count < Self.maxWaiters else {
                return completion(.failure(.providerUnavailable("too many calls waiting for the ADC access token (at most \(Self.maxWaiters))")))
            }
            waiters.append(completion)
            if start { startFetch() }
        case .fail(let failure):
            completion(.failure(failure))
        }
    }

    /// IAM or Fleet Engine answered 401 to `token`: the next call fetches a fresh one.
    func refused(_ token: String) {
        _ = state.refused(token: token)
    }

    func close() { exchange.close() }

    private func startFetch() {
        exchange.fetch { [weak self] result in self?.fetchEnded(result) }
    }

    private func fetchEnded(_ result: Result<AccessToken, ProxyFailure>) {
        let now = clock.monotonicNow
        let action: AccessTokenState.FetchAction?
        switch result {
        case .success(let token): action = state.fetchSucceeded(token, now: now)
        case .failure(let failure): action = state.fetchFailed(failure, now: now, jitter: random())
        }
        guard case .answerWaiters(let answer)? = action else { return }
        let answered = waiters
        waiters = []
        answered.forEach { $0(answer) }
    }
}
