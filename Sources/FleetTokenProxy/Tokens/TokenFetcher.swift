/// Where the token cache gets a fresh token for an entity: the provider URL in production, a
/// fake in tests. Runs on the cache's loop thread.
protocol TokenFetcher: AnyObject {
    /// Fetches a token for `key` and calls `completion` exactly once, either before returning
    /// or later on the same thread.
    func fetch(_ key: EntityKey, completion: @escaping (Result<FetchedToken, ProxyFailure>) -> Void)

    /// Fleet Engine answered 401 to `token`, fetched for `key`, and the cache dropped it: a
    /// source that shares one token among entities (ADC) drops it too.
    func refused(_ key: EntityKey, token: String)
}

extension TokenFetcher {
    func refused(_ key: EntityKey, token: String) {}
}
