/// An `impersonated_service_account` ADC file (docs/CONTRACT.md §4a): what `gcloud auth
/// application-default login --impersonate-service-account` writes. Its source credentials (a
/// user's refresh token or a service-account key) get an access token, which authorises IAM's
/// `generateAccessToken` (or `generateIdToken`) as the target account, through `delegates`.
/// `description` names the accounts, never a secret of the source.
package struct ImpersonatedServiceAccount: Sendable, Equatable, CustomStringConvertible {
    package enum Source: Sendable, Equatable {
        case serviceAccount(ServiceAccountKey)
        case authorizedUser(AuthorizedUserCredentials)
    }

    package var source: Source
    /// `…/v1/projects/-/serviceAccounts/EMAIL:generateAccessToken`, as the file says.
    package var impersonationURL: String
    /// The account impersonated: what the URL names between its last `/` and
    /// `:generateAccessToken`, as Google's libraries read it.
    package var targetPrincipal: String
    /// The chain of accounts each allowed to act as the next (`projects/-/serviceAccounts/…`).
    package var delegates: [String]

    package static let accessTokenSuffix = ":generateAccessToken"
    package static let idTokenSuffix = ":generateIdToken"

    package init(source: Source, impersonationURL: String, targetPrincipal: String, delegates: [String] = []) {
        self.source = source
        self.impersonationURL = impersonationURL
        self.targetPrincipal = targetPrincipal
        self.delegates = delegates
    }

    /// The target account in `url`, or nil when the URL does not end in one's
    /// `:generateAccessToken`.
    package static func targetPrincipal(in url: String) -> String? {
        guard url.hasSuffix(accessTokenSuffix) else { return nil }
        let path = url.dropLast(accessTokenSuffix.count)
        guard let slash = path.lastIndex(of: "/") else { return nil }
        let name = path[path.index(after: slash)...]
        return name.isEmpty ? nil : String(name)
    }

    package var description: String {
        let by: String
        switch source {
        case .serviceAccount(let key): by = "\(key)"
        case .authorizedUser(let user): by = "\(user)"
        }
        return "\(targetPrincipal) impersonated by \(by)" + (delegates.isEmpty ? "" : " through \(delegates.count) delegates")
    }
}
