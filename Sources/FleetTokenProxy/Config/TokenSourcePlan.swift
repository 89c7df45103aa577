/// Which source each token type's tokens come from (docs/CONTRACT.md §4a): a `--signer` that
/// names the type, else the one `--signer` without TYPES, else `--provider-url`. Every type
/// must end up with exactly one.
struct TokenSourcePlan: Sendable, Equatable {
    enum Source: Sendable, Equatable {
        case provider
        /// The `--signer` at this index of `Configuration.signers`.
        case signer(Int)
    }

    /// Every `EntityType`'s source.
    private(set) var sources: [EntityType: Source]

    /// The plan for `signers`, with or without a provider; a type named twice, two signers
    /// without TYPES, or a type with no source is a start-up error line.
    package init(signers: [SignerFlag], hasProvider: Bool) throws(ConfigError) {
        var sources: [EntityType: Source] = [:]
        var catchAll: Int?
        for (index, signer) in signers.enumerated() {
            guard let types = signer.types else {
                guard catchAll == nil else {
                    throw ConfigError("two --signer flags without TYPES; give each the types it signs for (TYPES=SOURCE)")
                }
                catchAll = index
                continue
            }
            for type in types {
                guard sources[type] == nil else {
                    throw ConfigError("--signer flags overlap: \(type.rawValue) is named twice; each type has one source")
                }
                sources[type] = .signer(index)
            }
        }
        var missing: [EntityType] = []
        for type in EntityType.allCases where sources[type] == nil {
            if let catchAll {
                sources[type] = .signer(catchAll)
            } else if hasProvider {
                sources[type] = .provider
            } else {
                missing.append(type)
            }
        }
        guard missing.isEmpty else {
            let names = missing.map(\.rawValue).joined(separator: ", ")
            throw ConfigError("no token source for \(names): give --provider-url (or FLEET_TOKEN_PROXY_PROVIDER_URL) or a --signer for them")
        }
        self.sources = sources
    }

    /// Whether any type's tokens come from the provider.
    var usesProvider: Bool { sources.values.contains(.provider) }
}
