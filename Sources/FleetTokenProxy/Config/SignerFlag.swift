/// One `--signer [TYPES=]SOURCE` (docs/CONTRACT.md §4a): which token types a source signs for,
/// and the source. Without TYPES it takes every type no other `--signer` names.
package struct SignerFlag: Sendable, Equatable {
    /// Where a signer's tokens come from.
    package enum Source: Sendable, Equatable {
        /// Sign locally with the service-account key in this file.
        case keyFile(path: String)
        /// Attach the Application Default Credentials' access token itself.
        case adc

        /// Whether the source needs Application Default Credentials.
        package var usesADC: Bool { self == .adc }
    }

    /// nil: every type no other `--signer` names.
    package var types: [EntityType]?
    package var source: Source

    package init(types: [EntityType]?, source: Source) {
        self.types = types
        self.source = source
    }

    /// Reads one flag value. TYPES is the part before the first `=` when that part is a comma
    /// list of token types, so a path with `=` in it needs no quoting.
    package static func parse(_ text: String) throws(ConfigError) -> SignerFlag {
        var types: [EntityType]?
        var sourceText = Substring(text)
        if let equals = text.firstIndex(of: "="), let listed = typeList(text[..<equals]) {
            types = listed
            sourceText = text[text.index(after: equals)...]
        }
        return SignerFlag(types: types, source: try source(sourceText))
    }

    /// The types of a comma list, or nil when it is not one (then it is part of SOURCE).
    private static func typeList(_ text: Substring) -> [EntityType]? {
        let names = text.split(separator: ",", omittingEmptySubsequences: false)
        var types: [EntityType] = []
        for name in names {
            guard let type = EntityType(rawValue: String(name)) else { return nil }
            types.append(type)
        }
        return types
    }

    private static func source(_ text: Substring) throws(ConfigError) -> Source {
        if text.hasPrefix("key-file:") {
            let path = text.dropFirst("key-file:".count)
            guard !path.isEmpty else { throw ConfigError("--signer key-file: needs the key file's path (key-file:PATH)") }
            return .keyFile(path: String(path))
        }
        if text == "adc" { return .adc }
        if text.hasPrefix("iam:") {
            throw ConfigError("--signer iam:EMAIL is not available in this build; key-file:PATH and adc are")
        }
        let types = EntityType.allCases.map(\.rawValue).joined(separator: ",")
        throw ConfigError("--signer must be [TYPES=]key-file:PATH or [TYPES=]adc (TYPES from \(types)), not \(ConfigError.quoted(text))")
    }
}
