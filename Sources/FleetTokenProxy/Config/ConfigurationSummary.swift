/// The line `serve --check` prints for a configuration that would start: where it would listen,
/// where calls go, and where each token type's tokens come from (docs/CONTRACT.md §4a), so an
/// operator sees the plan an `EnvironmentFile=` edit made before restarting on it. Never a
/// header value, and the provider URL as the log shows it (query values hidden: `RedactedURL`).
extension Configuration {
    package func summary() throws(ConfigError) -> String {
        var serving = "serve on \(listen)"
        if let adminListen { serving += " (admin \(adminListen))" }
        return "configuration ok: would \(serving), forwarding to \(upstream) (\(upstreamProtocol.rawValue)); tokens: "
            + (try tokenSourceSummary())
    }

    /// "every type from the provider URL", or the types each source covers, in `EntityType` order.
    private func tokenSourceSummary() throws(ConfigError) -> String {
        let plan = try tokenSources()
        var groups: [(source: TokenSourcePlan.Source, types: [EntityType])] = []
        for type in EntityType.allCases {
            guard let source = plan.sources[type] else { continue }
            if let index = groups.firstIndex(where: { $0.source == source }) {
                groups[index].types.append(type)
            } else {
                groups.append((source, [type]))
            }
        }
        return groups.map { group in
            let types = group.types.count == EntityType.allCases.count ? "every type" : group.types.map(\.rawValue).joined(separator: ", ")
            return "\(types) from \(name(of: group.source))"
        }.joined(separator: "; ")
    }

    private func name(of source: TokenSourcePlan.Source) -> String {
        switch source {
        case .provider:
            return "the provider \(providerURL.map { "\($0)" } ?? "")"
        case .signer(let index):
            switch signers[index].source {
            case .keyFile(let path): return "key-file:\(path)"
            case .adc: return "adc"
            case .iam(let account): return "iam:\(account)"
            }
        }
    }
}
