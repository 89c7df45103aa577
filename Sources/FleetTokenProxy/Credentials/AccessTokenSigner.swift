/// `--signer [TYPES=]adc` (docs/CONTRACT.md §4a): each call of those types carries the ADC
/// access token itself (no JWT), as Google recommends for a backend with an admin role. The
/// token cache still holds it per entity; a 401 from Fleet Engine drops it here too, so the
/// retry gets a fresh one.
final class AccessTokenSigner: TokenFetcher {
    private let source: ADCTokenSource
    private let clock: TokenClock

    init(source: ADCTokenSource, clock: TokenClock) {
        self.source = source
        self.clock = clock
    }

    func fetch(_ key: EntityKey, completion: @escaping (Result<FetchedToken, ProxyFailure>) -> Void) {
        let clock = clock
        source.token { result in
            completion(result.map { held in
                // Opaque: the JWT claim check does not apply; the expiry is what the endpoint said.
                FetchedToken(token: held.value, expiresAt: clock.wallNow + (held.expiresAt - clock.monotonicNow), isOpaqueAccessToken: true)
            })
        }
    }

    func refused(_ key: EntityKey, token: String) {
        source.refused(token)
    }

    /// What the calls carrying this token must send as `x-goog-user-project` (docs/CONTRACT.md
    /// §4a), as Google's libraries do on every call an ADC token authorises.
    var quotaProject: String? { source.quotaProject }
}
