/// An `external_account` ADC file: workload identity federation (docs/CONTRACT.md §4a), what
/// `gcloud iam workload-identity-pools create-cred-config` writes. A subject token from the
/// host's own identity provider is exchanged at STS (`token_url`) for a federated access token
/// of the pool (`audience`); with `service_account_impersonation_url` that token then gets a
/// service account's from IAM `generateAccessToken` (`token_lifetime_seconds`). No key anywhere.
/// `description` names the pool and the account, never the client secret or a header's value.
package struct ExternalAccountCredentials: Sendable, Equatable, CustomStringConvertible {
    /// The workload (or workforce) pool provider: `//iam.googleapis.com/…/providers/ID`.
    package var audience: String
    /// `urn:ietf:params:oauth:token-type:jwt`, `…:id_token`, `…:saml2`, …
    package var subjectTokenType: String
    package var tokenURL: String
    package var subjectTokenSource: SubjectTokenSource
    /// `…/serviceAccounts/EMAIL:generateAccessToken`, and the account it names.
    package var impersonationURL: String?
    package var targetPrincipal: String?
    /// `service_account_impersonation.token_lifetime_seconds`, 600 to 43200.
    package var tokenLifetime: Int
    /// Workforce pools only: the project billed for the exchange (`options.userProject`).
    package var workforcePoolUserProject: String?
    /// A client of the pool's own, sent to STS as HTTP Basic authentication.
    package var clientID: String?
    package var clientSecret: String?

    static let defaultTokenLifetime = ImpersonationExchange.defaultLifetime
    static let tokenLifetimes = 600...43_200
    /// Workforce pool audiences, as Google's libraries tell them from workload pools.
    static let workforcePoolPrefix = "//iam.googleapis.com/locations/"

    package var isWorkforcePool: Bool {
        audience.hasPrefix(Self.workforcePoolPrefix) && audience.contains("/workforcePools/")
    }

    package var description: String {
        let pool = "\(isWorkforcePool ? "workforce" : "workload") identity pool \(audience) from \(subjectTokenSource.description)"
        return targetPrincipal.map { "\($0) impersonated through \(pool)" } ?? pool
    }

    /// An `external_account` file's members, or why not (a field name, never a value).
    static func parse(_ members: [String: JSONish]) -> Result<ExternalAccountCredentials, ADCFileError> {
        guard let audience = ADCFile.field("audience", in: members) else { return .failure(.badField("audience")) }
        guard let type = ADCFile.field("subject_token_type", in: members) else { return .failure(.badField("subject_token_type")) }
        guard let tokenURL = ADCFile.field("token_url", in: members) else { return .failure(.badField("token_url")) }
        guard case .object(let sourceMembers)? = members["credential_source"] else { return .failure(.badField("credential_source")) }
        let source: SubjectTokenSource
        switch SubjectTokenSource.parse(sourceMembers) {
        case .success(let value): source = value
        case .failure(let error): return .failure(error)
        }
        var account = ExternalAccountCredentials(
            audience: audience, subjectTokenType: type, tokenURL: tokenURL, subjectTokenSource: source, impersonationURL: nil,
            targetPrincipal: nil, tokenLifetime: defaultTokenLifetime, workforcePoolUserProject: nil, clientID: nil, clientSecret: nil)
        if members["service_account_impersonation_url"] != nil {
            guard let url = ADCFile.field("service_account_impersonation_url", in: members),
                  let target = ImpersonatedServiceAccount.targetPrincipal(in: url)
            else { return .failure(.badImpersonationURL) }
            account.impersonationURL = url
            account.targetPrincipal = target
        }
        switch members["service_account_impersonation"] {
        case nil, .null?: break
        case .object(let options)?:
            if let value = options["token_lifetime_seconds"] {
                guard let seconds = value.numberValue, seconds.rounded() == seconds, tokenLifetimes.contains(Int(seconds)) else {
                    return .failure(.badField("service_account_impersonation.token_lifetime_seconds (600 to 43200)"))
                }
                account.tokenLifetime = Int(seconds)
            }
        default:
            return .failure(.badField("service_account_impersonation"))
        }
        for (name, keyPath) in [("workforce_pool_user_project", \ExternalAccountCredentials.workforcePoolUserProject),
                                ("client_id", \.clientID), ("client_secret", \.clientSecret)] {
            switch ADCFile.optionalField(name, in: members) {
            case .success(let value): account[keyPath: keyPath] = value
            case .failure(let error): return .failure(error)
            }
        }
        // As Google's libraries: a workload pool has no user project to bill.
        if account.workforcePoolUserProject != nil && !account.isWorkforcePool {
            return .failure(.workforceProjectForWorkloadPool)
        }
        if (account.clientID == nil) != (account.clientSecret == nil) {
            return .failure(.badField(account.clientID == nil ? "client_id" : "client_secret"))
        }
        return .success(account)
    }
}
