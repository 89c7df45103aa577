/// `--signer [TYPES=]iam:EMAIL` (docs/CONTRACT.md §4a): each entity's claims, as `key-file:`
/// builds them, signed by the IAM Service Account Credentials API's `signJwt` as EMAIL,
/// authorised by the ADC access token (and, for a user's credentials, billed to its quota
/// project). A 401 drops the access token and the call is made once more with a fresh one. The
/// signed JWT goes through the cache's claim check like a provider's.
///
/// Loop-bound: not `Sendable`.
final class IAMSigner: TokenFetcher {
    let account: String
    private let accessTokens: ADCTokenSource
    private let client: EndpointClient
    private let target: String
    private let lifetime: Double
    private let clock: TokenClock

    init(account: String, accessTokens: ADCTokenSource, endpoint: GoogleEndpoint, client: EndpointClient, lifetime: Double, clock: TokenClock) {
        self.account = account
        self.accessTokens = accessTokens
        self.client = client
        target = endpoint.target("/v1/projects/-/serviceAccounts/\(account):signJwt")
        self.lifetime = lifetime
        self.clock = clock
    }

    func fetch(_ key: EntityKey, completion: @escaping (Result<FetchedToken, ProxyFailure>) -> Void) {
        let claims = FleetEngineClaims(for: key, account: account, keyID: "", wallNow: clock.wallNow, lifetime: lifetime)
        let body = Array(JSONish.object(["payload": .string(claims.claimsJSON)]).jsonText.utf8)
        accessTokens.authorisedPost(body, to: target, on: client) { [client] answer in
            completion(answer.flatMap { GoogleAnswer.interpret($0, from: client.name, SignJwtAnswer.parse) })
        }
    }
}
