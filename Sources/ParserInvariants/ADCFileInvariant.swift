import FleetTokenProxy

/// `ADCFile.parse` over any bytes an Application Default Credentials file might hold
/// (docs/CONTRACT.md §4a). Promises: a service account is what `ServiceAccountKeyInvariant`
/// promises; an authorized user's fields (top level, or an impersonation's
/// `source_credentials`) are the file's own, 1 to 4096 visible ASCII bytes each (they go into
/// a form body), and its description shows neither the client secret nor the refresh token: it
/// stays the same when they change (whether a short secret happens to be a substring of the
/// client id says nothing); an impersonation's target is the account its URL names before
/// `:generateAccessToken`, and its delegates are the file's; the quota project is the file's
/// `quota_project_id`, visible ASCII (it goes into a header). (A refusal cannot repeat a value:
/// `ADCFileError` carries field names only.)
public enum ADCFileInvariant: ParserInvariant {
    public static let name = "adc-file"

    public static func check(_ input: UnsafeRawBufferPointer) throws(InvariantViolation) {
        let bytes = Array(input)
        let members = jsonMembers(bytes)
        guard case .success(let file) = ADCFile.parse(bytes) else { return }
        try expect(file.quotaProjectID == members["quota_project_id"]?.stringValue, "the quota project is not the file's")
        if let quota = file.quotaProjectID { try checkField("quota_project_id", quota) }
        switch file.credential {
        case .serviceAccount(let key):
            try expect(members["type"]?.stringValue == "service_account", "a service account without its type")
            try ServiceAccountKeyInvariant.checkAccepted(key, file: members)
        case .authorizedUser(let user):
            try checkAccepted(user, file: members)
        case .impersonatedServiceAccount(let impersonated):
            try checkAccepted(impersonated, file: members)
        }
    }

    static func checkAccepted(_ user: AuthorizedUserCredentials, file members: [String: JSONish]) throws(InvariantViolation) {
        try expect(members["type"]?.stringValue == "authorized_user", "an authorized user without its type")
        let fields: [(String, String?)] = [
            ("client_id", user.clientID), ("client_secret", user.clientSecret), ("refresh_token", user.refreshToken),
            ("token_uri", user.tokenURI),
        ]
        for (name, value) in fields {
            try expect(value == members[name]?.stringValue, "\(name) is not the file's")
            if let value { try checkField(name, value) }
        }
        try checkDescription(user)
    }

    static func checkAccepted(_ impersonated: ImpersonatedServiceAccount, file members: [String: JSONish]) throws(InvariantViolation) {
        try expect(members["type"]?.stringValue == "impersonated_service_account", "an impersonation without its type")
        let url = members["service_account_impersonation_url"]?.stringValue
        try expect(impersonated.impersonationURL == url, "the impersonation URL is not the file's")
        try checkField("service_account_impersonation_url", impersonated.impersonationURL)
        try expect(url?.hasSuffix("/" + impersonated.targetPrincipal + ":generateAccessToken") == true && !impersonated.targetPrincipal.contains("/"),
                   "the target is not the account the URL names")
        let delegates: [String]
        if case .array(let values)? = members["delegates"] { delegates = values.compactMap(\.stringValue) } else { delegates = [] }
        try expect(impersonated.delegates == delegates, "the delegates are not the file's")
        for delegate in impersonated.delegates { try checkField("delegates", delegate) }
        guard case .object(let source)? = members["source_credentials"] else { throw InvariantViolation("an impersonation without source_credentials") }
        switch impersonated.source {
        case .authorizedUser(let user): try checkAccepted(user, file: source)
        case .serviceAccount(let key):
            try expect(source["type"]?.stringValue == "service_account", "a source service account without its type")
            try ServiceAccountKeyInvariant.checkAccepted(key, file: source)
        }
        try checkDescription(impersonated)
    }

    static func checkField(_ name: String, _ value: String) throws(InvariantViolation) {
        try expect((1...4096).contains(value.utf8.count) && value.utf8.allSatisfy { $0 >= 0x21 && $0 <= 0x7E },
                   "accepted a \(name) that is not 1 to 4096 visible ASCII bytes")
    }

    /// Described the same whatever the client secret and the refresh token are. (`describe` is
    /// there so that a test can show the check catching a leak.)
    static func checkDescription(_ user: AuthorizedUserCredentials,
                                 describedBy describe: (AuthorizedUserCredentials) -> String = { $0.description }) throws(InvariantViolation) {
        var otherSecret = user
        otherSecret.clientSecret += "x"
        var otherRefreshToken = user
        otherRefreshToken.refreshToken += "y"
        try expect(describe(user) == describe(otherSecret), "the description shows the client secret")
        try expect(describe(user) == describe(otherRefreshToken), "the description shows the refresh token")
    }

    /// An impersonation is described the same whatever its source's secrets are.
    static func checkDescription(_ impersonated: ImpersonatedServiceAccount,
                                 describedBy describe: (ImpersonatedServiceAccount) -> String = { $0.description }) throws(InvariantViolation) {
        var other = impersonated
        switch impersonated.source {
        case .authorizedUser(var user):
            user.clientSecret += "x"
            user.refreshToken += "y"
            other.source = .authorizedUser(user)
        case .serviceAccount(var key):
            key.privateKeyPEM += "z"
            other.source = .serviceAccount(key)
        }
        try expect(describe(impersonated) == describe(other), "the description shows a secret of the source credentials")
    }
}
