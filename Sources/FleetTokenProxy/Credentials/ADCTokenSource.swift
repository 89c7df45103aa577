import Logging

/// One token from Application Default Credentials (docs/CONTRACT.md §4a): the OAuth 2.0 access
/// token (scope `cloud-platform`) that `iam:` and `adc` use, or a Google-signed ID token for
/// one audience (`--provider-id-token-audience`). Fetched once however many callers wait,
/// refreshed ahead, fetched again with backoff after a failure. `AccessTokenState` decides;
/// this class keeps the waiters and talks to the endpoint.
///
/// Loop-bound: not `Sendable`; completions run on the loop thread, sometimes before `token`
/// returns.
final class ADCTokenSource {
    typealias Completion = (Result<AccessTokenState.Held, ProxyFailure>) -> Void

    static let scope = "https://www.googleapis.com/auth/cloud-platform"
    /// Callers that may wait for one fetch; more are refused at once (503).
    static let maxWaiters = 16_384
    static let metadataTokenPath = "/computeMetadata/v1/instance/service-accounts/default/token"
    static let metadataIdentityPath = "/computeMetadata/v1/instance/service-accounts/default/identity"

    /// Which token: both come from the same credentials, by different requests.
    enum Kind: Sendable, Equatable {
        case access
        /// An ID token whose `aud` is this audience.
        case identity(audience: String)
    }

    let credentials: ApplicationDefaultCredentials
    let kind: Kind
    private let signer: SigningCredential?
    private let client: EndpointClient
    /// Where tokens come from (also the assertion's `aud`, and the start-up line).
    let endpoint: GoogleEndpoint
    private let target: String
    private let clock: TokenClock
    private let random: () -> Double
    private var state: AccessTokenState
    private var waiters: [Completion] = []

    /// Builds the client for where `credentials` get their token; a service-account key that
    /// cannot sign, or a token URI that is not a URL, is a start-up line.
    init(credentials: ApplicationDefaultCredentials, kind: Kind = .access, tokenEndpoint: GoogleEndpoint, loop: EventLoop, tls: TLSContext?,
         timeout: Double, backoff: BackoffPolicy, minValidity: Double, clock: TokenClock, logger: Logger,
         random: @escaping () -> Double = { Double.random(in: 0..<1) }) throws(ConfigError) {
        self.credentials = credentials
        self.kind = kind
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
            if case .identity = kind {
                throw ConfigError("--provider-id-token-audience needs a service account: the user credentials in \(file) cannot mint an ID token for an arbitrary audience (use a service-account key file or the metadata server)")
            }
            if let uri = user.tokenURI { endpoint = try GoogleEndpoint.parse(uri, what: "token_uri of \(file)") }
            signer = nil
        case .metadataServer(let host):
            endpoint = try GoogleEndpoint.parse("http://" + host, what: "metadata server host")
            name = "the metadata server"
            signer = nil
        }
        switch (credentials.isMetadataServer, kind) {
        case (true, .access): target = endpoint.target(Self.metadataTokenPath)
        case (true, .identity(let audience)):
            target = endpoint.target(Self.metadataIdentityPath + "?audience=" + String(decoding: FormEncoding.component(audience), as: UTF8.self) + "&format=full")
        case (false, _): target = endpoint.target("")
        }
        self.endpoint = endpoint
        client = EndpointClient(loop: loop, endpoint: endpoint, name: name, tls: tls, timeout: timeout, logger: logger)
    }

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
            var members: [String: JSONish] = [
                "iss": .string(key.clientEmail), "aud": .string(endpoint.description),
                "iat": .number(Double(now)), "exp": .number(Double(now + 3600)),
            ]
            // An access token names its scope; an ID token its audience, and no scope.
            switch kind {
            case .access: members["scope"] = .string(Self.scope)
            case .identity(let audience): members["target_audience"] = .string(audience)
            }
            let claims: JSONish = .object(members)
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
        let kind = kind
        let clock = clock
        client.send(method: request.method, target: target, headers: request.headers, body: request.body) { [weak self] result in
            self?.fetchEnded(result.flatMap { answer in
                switch kind {
                case .access: return GoogleAnswer.interpret(answer, from: name, AccessTokenAnswer.parse)
                case .identity:
                    return GoogleAnswer.interpret(answer, from: name) { IDTokenAnswer.parse($0, from: $1, wallNow: clock.wallNow) }
                }
            })
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
