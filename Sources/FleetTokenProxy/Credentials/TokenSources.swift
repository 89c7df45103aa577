/// The token cache's one fetcher, handing each entity to the source its type is assigned
/// (docs/CONTRACT.md §4a): the provider for some types, a signer for others.
final class TokenSources: TokenFetcher {
    /// One source per `EntityType`, at its `ordinal`.
    private let byType: [TokenFetcher]

    /// `source(type)` for every type.
    init(_ source: (EntityType) -> TokenFetcher) {
        let ordered = EntityType.allCases.sorted { $0.ordinal < $1.ordinal }
        precondition(ordered.enumerated().allSatisfy { Int($0.element.ordinal) == $0.offset }, "ordinals are 0..<count")
        byType = ordered.map(source)
    }

    func fetch(_ key: EntityKey, completion: @escaping (Result<FetchedToken, ProxyFailure>) -> Void) {
        byType[Int(key.type.ordinal)].fetch(key, completion: completion)
    }

    func refused(_ key: EntityKey, token: String) {
        byType[Int(key.type.ordinal)].refused(key, token: token)
    }
}
