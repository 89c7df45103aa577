/// The token cache's one fetcher, handing each entity to the source its type is assigned
/// (docs/CONTRACT.md §4a): the provider for some types, a signer for others.
final class TokenSources: TokenFetcher {
    /// One source per `EntityType`, at its `ordinal`.
    private let byType: [TokenFetcher]
    /// Per type, the quota project a forwarded call must carry as `x-goog-user-project`: set
    /// only where the token is the ADC access token itself (`adc`, docs/CONTRACT.md §4a); a
    /// minted JWT or a provider's token carries no quota project.
    private let quotaProjects: [String?]

    /// `source(type)` for every type.
    init(_ source: (EntityType) -> TokenFetcher) {
        let ordered = EntityType.allCases.sorted { $0.ordinal < $1.ordinal }
        precondition(ordered.enumerated().allSatisfy { Int($0.element.ordinal) == $0.offset }, "ordinals are 0..<count")
        byType = ordered.map(source)
        quotaProjects = byType.map { ($0 as? AccessTokenSigner)?.quotaProject }
    }

    /// The `x-goog-user-project` value for a call about an entity of `type`, or nil for none.
    func quotaProject(for type: EntityType) -> String? {
        quotaProjects[Int(type.ordinal)]
    }

    func fetch(_ key: EntityKey, completion: @escaping (Result<FetchedToken, ProxyFailure>) -> Void) {
        byType[Int(key.type.ordinal)].fetch(key, completion: completion)
    }

    func refused(_ key: EntityKey, token: String) {
        byType[Int(key.type.ordinal)].refused(key, token: token)
    }
}
