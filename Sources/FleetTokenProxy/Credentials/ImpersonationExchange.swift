/// A token as another service account, from the IAM Service Account Credentials API
/// (docs/CONTRACT.md §4a): `POST …/serviceAccounts/TARGET:generateAccessToken` (`scope`
/// cloud-platform, `lifetime`, `delegates`) for an access token, or `:generateIdToken`
/// (`audience`, `includeEmail`) at the same place for an ID token, authorised by the source
/// credentials' access token and billed to the quota project (`authorisedPost`: as for
/// `signJwt`, a 401 drops the source's token and asks once more with a fresh one).
final class ImpersonationExchange: TokenExchange {
    /// Google's libraries ask for an hour unless told otherwise.
    static let defaultLifetime = 3600

    let endpoint: GoogleEndpoint
    private let source: ADCTokenSource
    private let kind: ADCTokenSource.Kind
    private let delegates: [String]
    private let lifetime: Int
    private let client: EndpointClient
    private let clock: TokenClock
    private let certificate: WorkloadCertificate?

    /// `url` is the file's `service_account_impersonation_url`; an ID token is asked for at the
    /// same account's `:generateIdToken`.
    init(url: String, file: String, delegates: [String], lifetime: Int = defaultLifetime, kind: ADCTokenSource.Kind, source: ADCTokenSource,
         context: TokenExchangeContext) throws(ConfigError) {
        var target = url
        let name: String
        switch kind {
        case .access:
            name = "IAM generateAccessToken"
        case .identity:
            target = String(url.dropLast(ImpersonatedServiceAccount.accessTokenSuffix.count)) + ImpersonatedServiceAccount.idTokenSuffix
            name = "IAM generateIdToken"
        }
        endpoint = try GoogleEndpoint.parse(target, what: "service_account_impersonation_url of \(file)")
        self.source = source
        self.kind = kind
        self.delegates = delegates
        self.lifetime = lifetime
        clock = context.clock
        certificate = context.certificate
        client = EndpointClient(loop: context.loop, endpoint: endpoint, name: name, tls: context.tls, timeout: context.timeout,
                                logger: context.logger)
    }

    func fetch(_ completion: @escaping (Result<AccessToken, ProxyFailure>) -> Void) {
        var members: [String: JSONish] = ["delegates": .array(delegates.map { .string($0) })]
        switch kind {
        case .access:
            members["scope"] = .array([.string(ADCTokenSource.scope)])
            members["lifetime"] = .string("\(lifetime)s")
        case .identity(let audience):
            members["audience"] = .string(audience)
            members["includeEmail"] = .bool(true)
        }
        // An X.509 external account presents its certificate to IAM too, as Google's libraries do.
        let client = certificate?.client(for: endpoint, name: self.client.name) ?? self.client
        source.authorisedPost(Array(JSONish.object(members).jsonText.utf8), to: endpoint.target(""), on: client) { [kind, clock] answer in
            let wallNow = clock.wallNow
            completion(answer.flatMap { answer in
                switch kind {
                case .access:
                    return GoogleAnswer.interpret(answer, from: client.name) { GenerateAccessTokenAnswer.parse($0, from: $1, wallNow: wallNow) }
                case .identity:
                    return GoogleAnswer.interpret(answer, from: client.name) { IDTokenAnswer.parse($0, from: $1, wallNow: wallNow) }
                }
            })
        }
    }

    func close() {
        client.close()
        source.close()
    }
}
