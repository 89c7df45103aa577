/// The OAuth 2.0 token endpoint (docs/CONTRACT.md §4a): a service account's RS256 JWT-bearer
/// assertion (`scope` cloud-platform for an access token, `target_audience` for an ID token), or
/// a user's refresh token, posted as a form. The endpoint is the credentials' own `token_uri`
/// when they have one, else `--oauth-token-endpoint`. Never sent a quota project: this call
/// makes the token, it is not authorised by it.
final class OAuthTokenExchange: TokenExchange {
    enum Grant {
        case assertion(ServiceAccountKey, SigningCredential)
        case refreshToken(AuthorizedUserCredentials)
    }

    let endpoint: GoogleEndpoint
    private let grant: Grant
    private let kind: ADCTokenSource.Kind
    private let client: EndpointClient
    private let clock: TokenClock

    /// A key that cannot sign, or a token URI that is not a URL, is a start-up line naming `file`.
    convenience init(serviceAccount key: ServiceAccountKey, file: String, kind: ADCTokenSource.Kind, tokenEndpoint: GoogleEndpoint,
         context: TokenExchangeContext) throws(ConfigError) {
        let signer: SigningCredential
        do {
            signer = try SigningCredential(key)
        } catch {
            throw ConfigError("credentials file \(file): \(error.message)")
        }
        // The key file's own token URI wins, as in Google's libraries.
        let endpoint = try key.tokenURI.map { uri throws(ConfigError) in try GoogleEndpoint.parse(uri, what: "token_uri of \(file)") } ?? tokenEndpoint
        self.init(grant: .assertion(key, signer), kind: kind, endpoint: endpoint, context: context)
    }

    convenience init(authorizedUser user: AuthorizedUserCredentials, file: String, kind: ADCTokenSource.Kind, tokenEndpoint: GoogleEndpoint,
         context: TokenExchangeContext) throws(ConfigError) {
        if case .identity = kind {
            throw ConfigError("--provider-id-token-audience needs a service account: the user credentials in \(file) cannot mint an ID token for an arbitrary audience (use a service-account key file, impersonation or the metadata server)")
        }
        let endpoint = try user.tokenURI.map { uri throws(ConfigError) in try GoogleEndpoint.parse(uri, what: "token_uri of \(file)") } ?? tokenEndpoint
        self.init(grant: .refreshToken(user), kind: kind, endpoint: endpoint, context: context)
    }

    private init(grant: Grant, kind: ADCTokenSource.Kind, endpoint: GoogleEndpoint, context: TokenExchangeContext) {
        self.grant = grant
        self.kind = kind
        self.endpoint = endpoint
        clock = context.clock
        client = EndpointClient(loop: context.loop, endpoint: endpoint, name: "the OAuth token endpoint", tls: context.tls,
                                timeout: context.timeout, logger: context.logger)
    }

    func fetch(_ completion: @escaping (Result<AccessToken, ProxyFailure>) -> Void) {
        let form: [(String, String)]
        switch grant {
        case .assertion(let key, let signer):
            let now = Int(clock.wallNow.rounded(.down))
            var members: [String: JSONish] = [
                "iss": .string(key.clientEmail), "aud": .string(endpoint.description),
                "iat": .number(Double(now)), "exp": .number(Double(now + 3600)),
            ]
            // An access token names its scope; an ID token its audience, and no scope.
            switch kind {
            case .access: members["scope"] = .string(ADCTokenSource.scope)
            case .identity(let audience): members["target_audience"] = .string(audience)
            }
            let assertion: String
            do {
                // Once an hour: signed on the loop, a millisecond.
                assertion = try signer.signJWT(claims: .object(members))
            } catch {
                return completion(.failure(.providerAnswerUnusable("signing the OAuth assertion with key \(key.privateKeyID) failed: \(error.message)")))
            }
            form = [("grant_type", "urn:ietf:params:oauth:grant-type:jwt-bearer"), ("assertion", assertion)]
        case .refreshToken(let user):
            form = [("grant_type", "refresh_token"), ("client_id", user.clientID),
                    ("client_secret", user.clientSecret), ("refresh_token", user.refreshToken)]
        }
        client.send(method: "POST", target: endpoint.target(""), headers: Self.formHeaders, body: FormEncoding.body(form)) {
            [kind, clock, name = client.name] result in
            completion(result.flatMap { answer in
                switch kind {
                case .access: return GoogleAnswer.interpret(answer, from: name, AccessTokenAnswer.parse)
                case .identity:
                    return GoogleAnswer.interpret(answer, from: name) { IDTokenAnswer.parse($0, from: $1, wallNow: clock.wallNow) }
                }
            })
        }
    }

    func close() { client.close() }

    static let formHeaders = [
        HeaderField(name: "Content-Type", value: "application/x-www-form-urlencoded"),
        HeaderField(name: "Accept", value: "application/json"),
    ]
}
