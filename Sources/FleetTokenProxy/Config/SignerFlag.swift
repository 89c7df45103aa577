/// One `--signer [TYPES=]SOURCE` (docs/CONTRACT.md §4a): which token types a source signs for,
/// and the source. Without TYPES it takes every type no other `--signer` names.
package struct SignerFlag: Sendable, Equatable {
    /// Where a signer's tokens come from.
    package enum Source: Sendable, Equatable {
        /// Sign locally with the service-account key in this file.
        case keyFile(path: String)
        /// Attach the Application Default Credentials' access token itself.
        case adc
        /// Sign with IAM `signJwt` as this service account, authorised by ADC.
        case iam(account: String)

        /// Whether the source needs Application Default Credentials.
        package var usesADC: Bool {
            switch self {
            case .adc, .iam: return true
            case .keyFile: return false
            }
        }
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
            let account = String(text.dropFirst("iam:".count))
            // It goes into IAM's URL path and every token's iss: an email of the characters
            // service-account names use.
            let allowed: (UInt8) -> Bool = {
                switch $0 {
                case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                     UInt8(ascii: "@"), UInt8(ascii: "."), UInt8(ascii: "-"), UInt8(ascii: "_"): return true
                default: return false
                }
            }
            guard account.contains("@"), account.utf8.count <= 256, account.utf8.allSatisfy(allowed) else {
                throw ConfigError("--signer iam: needs the signing service account's email (iam:NAME@PROJECT.iam.gserviceaccount.com)")
            }
            return .iam(account: account)
        }
        let types = EntityType.allCases.map(\.rawValue).joined(separator: ",")
        throw ConfigError("--signer must be [TYPES=]key-file:PATH, [TYPES=]iam:EMAIL or [TYPES=]adc (TYPES from \(types)), not \(ConfigError.quoted(text))")
    }
}
