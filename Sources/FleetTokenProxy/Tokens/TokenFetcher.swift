/// Where the token cache gets a fresh token for an entity: the provider URL in production, a
/// fake in tests. Runs on the cache's loop thread.
protocol TokenFetcher: AnyObject {
    /// Fetches a token for `key` and calls `completion` exactly once, either before returning
    /// or later on the same thread.
    func fetch(_ key: EntityKey, completion: @escaping (Result<FetchedToken, ProxyFailure>) -> Void)
}
