import Logging

/// The sidecar's one OAuth 2.0 access token from Application Default Credentials
/// (docs/CONTRACT.md §4a), scope `cloud-platform`: fetched once however many callers wait,
/// refreshed ahead, fetched again with backoff after a failure. `AccessTokenState` decides;
/// this class keeps the waiters and talks to the endpoint.
///
/// Loop-bound: not `Sendable`; completions run on the loop thread, sometimes before `token`
/// returns.
final class AccessTokenSource {
    typealias Completion = (Result<AccessTokenState.Held, ProxyFailure>) -> Void

    static let scope = "https://www.googleapis.com/auth/cloud-platform"
    /// Callers that may wait for one fetch; more are refused at once (503).
    static let maxWaiters = 16_384
    static let metadataTokenPath = "/computeMetadata/v1/instance/service-accounts/default/token"

    let credentials: ApplicationDefaultCredentials
    private let signer: SigningCredential?
    private let client: EndpointClient
    private let target: String
    private let clock: TokenClock
    private let random: () -> Double
    private var state: AccessTokenState
    private var waiters: [Completion] = []

    /// Builds the client for where `credentials` get their token; a service-account key that
    /// cannot sign, or a token URI that is not a URL, is a start-up line.
    init(credentials: ApplicationDefaultCredentials, tokenEndpoint: GoogleEndpoint, loop: EventLoop, tls: TLSContext?,
         timeout: Double, backoff: BackoffPolicy, minValidity: Double, clock: TokenClock, logger: Logger,
         random: @escaping () -> Double = { Double.random(in: 0..<1) }) throws(ConfigError) {
        self.credentials = credentials
        self.clock = clock
        self.random = random
        state = AccessTokenState(backoff: backoff, minValidity: minValidity)
        var endpoint = tokenEndpoint
        var name = "the OAuth token endpoint"
        switch credentials {
        case .serviceAccount(let key, let file):
            // The key file's own token URI wins, as in Google's libraries.
            if let uri = key.tokenURI { endpoint = try GoogleEndpoint.parse(uri, what: "token_uri of \(file)") }
            do {
                signer = try SigningCredential(key)
            } catch {
                throw ConfigError("credentials file \(file): \(error.message)")
            }
        case .authorizedUser(let user, let file):
            if let uri = user.tokenURI { endpoint = try GoogleEndpoint.parse(uri, what: "token_uri of \(file)") }
            signer = nil
        case .metadataServer(let host):
            endpoint = try GoogleEndpoint.parse("http://" + host, what: "metadata server host")
            name = "the metadata server"
            signer = nil
        }
        target = credentials.isMetadataServer ? endpoint.target(Self.metadataTokenPath) : endpoint.target("")
        client = EndpointClient(loop: loop, endpoint: endpoint, name: name, tls: tls, timeout: timeout, logger: logger)
    }

    /// Where tokens come from, for the start-up line.
    var endpoint: GoogleEndpoint { client.endpoint }

    /// `x-goog-user-project` for calls made with a user's token.
    var quotaProject: String? {
        if case .authorizedUser(let user, _) = credentials { return user.quotaProjectID }
        return nil
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

    func close() { client.close() }

    private func startFetch() {
        let request: (method: String, headers: [HeaderField], body: [UInt8])
        switch credentials {
        case .serviceAccount(let key, _):
            let now = Int(clock.wallNow.rounded(.down))
            let claims: JSONish = .object([
                "iss": .string(key.clientEmail), "scope": .string(Self.scope),
                "aud": .string(client.endpoint.description), "iat": .number(Double(now)), "exp": .number(Double(now + 3600)),
            ])
            let assertion: String
            do {
                // Once an hour: signed on the loop, a millisecond.
                assertion = try signer!.signJWT(claims: claims)
            } catch {
                return fetchEnded(.failure(.providerAnswerUnusable("signing the OAuth assertion with key \(key.privateKeyID) failed: \(error.message)")))
            }
            request = ("POST", Self.formHeaders, FormEncoding.body([
                ("grant_type", "urn:ietf:params:oauth:grant-type:jwt-bearer"), ("assertion", assertion),
            ]))
        case .authorizedUser(let user, _):
            request = ("POST", Self.formHeaders, FormEncoding.body([
                ("grant_type", "refresh_token"), ("client_id", user.clientID),
                ("client_secret", user.clientSecret), ("refresh_token", user.refreshToken),
            ]))
        case .metadataServer:
            request = ("GET", [HeaderField(name: "Metadata-Flavor", value: "Google"), HeaderField(name: "Accept", value: "application/json")], [])
        }
        let name = client.name
        client.send(method: request.method, target: target, headers: request.headers, body: request.body) { [weak self] result in
            self?.fetchEnded(result.flatMap { GoogleAnswer.interpret($0, from: name, AccessTokenAnswer.parse) })
        }
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

    private static let formHeaders = [
        HeaderField(name: "Content-Type", value: "application/x-www-form-urlencoded"),
        HeaderField(name: "Accept", value: "application/json"),
    ]
}

extension ApplicationDefaultCredentials {
    var isMetadataServer: Bool {
        if case .metadataServer = self { return true }
        return false
    }
}
