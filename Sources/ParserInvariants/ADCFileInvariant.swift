import FleetTokenProxy

/// `ADCFile.parse` over any bytes an Application Default Credentials file might hold
/// (docs/CONTRACT.md §4a). Promises: a service account is what `ServiceAccountKeyInvariant`
/// promises; an authorized user's fields (top level, or an impersonation's
/// `source_credentials`) are the file's own, 1 to 4096 visible ASCII bytes each (they go into
/// a form body), and its description shows neither the client secret nor the refresh token: it
/// stays the same when they change (whether a short secret happens to be a substring of the
/// client id says nothing); an impersonation's target is the account its URL names before
/// `:generateAccessToken`, and its delegates are the file's; an external account's pool, token
/// type, STS URL and subject token source are the file's, a URL's headers are the file's and can
/// add no header line, its token lifetime is 600 to 43200 s, a workforce user project comes only
/// with a workforce pool, an X.509 source's config location (or the default, exactly one) and
/// trust chain are the file's, and its description shows neither the client secret nor a
/// header's value; the quota project is the file's
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
        case .externalAccount(let account):
            try checkAccepted(account, file: members)
        }
    }

    static func checkAccepted(_ account: ExternalAccountCredentials, file members: [String: JSONish]) throws(InvariantViolation) {
        try expect(members["type"]?.stringValue == "external_account", "an external account without its type")
        for (name, value) in [("audience", account.audience), ("subject_token_type", account.subjectTokenType), ("token_url", account.tokenURL)] {
            try expect(value == members[name]?.stringValue, "\(name) is not the file's")
            try checkField(name, value)
        }
        guard case .object(let source)? = members["credential_source"] else { throw InvariantViolation("an external account without credential_source") }
        switch account.subjectTokenSource {
        case .file(let path, _):
            try expect(path == source["file"]?.stringValue && source["url"] == nil, "the subject token file is not the file's, or a url came too")
        case .url(let url, let headers, _):
            try expect(url == source["url"]?.stringValue && source["file"] == nil, "the subject token URL is not the file's, or a file came too")
            let fileHeaders: [String: JSONish]
            if case .object(let value)? = source["headers"] { fileHeaders = value } else { fileHeaders = [:] }
            try expect(headers.count == fileHeaders.count, "the headers are not the file's")
            for header in headers {
                try expect(fileHeaders[header.name]?.stringValue?.trimmingSpaces == header.value, "header \(header.name) is not the file's")
                try expect(!header.name.isEmpty && !(header.name + header.value).utf8.contains { $0 == 0x0D || $0 == 0x0A || $0 == 0 },
                           "a header that could add a line")
            }
        case .executable(let command):
            guard case .object(let executable)? = source["executable"] else { throw InvariantViolation("an executable the file does not name") }
            try expect(source["file"] == nil && source["url"] == nil, "an executable with a file or url too")
            try expect(!command.arguments.isEmpty && !command.arguments[0].isEmpty || command.arguments.count > 1, "an executable without a program")
            try expect(command.arguments.joined().utf8.count <= (executable["command"]?.stringValue?.utf8.count ?? -1),
                       "the program's words are longer than the file's command")
            try expect((5...120).contains(command.timeout), "a timeout outside 5 to 120 s")
            try expect(command.outputFile == executable["output_file"]?.stringValue, "the output file is not the file's")
            try expect(command.environment.isEmpty, "an environment from the file")
        case .aws(let aws):
            try expect(source["environment_id"]?.stringValue == "aws1", "AWS without environment_id aws1")
            try expect(aws.verificationURL == source["regional_cred_verification_url"]?.stringValue && aws.verificationURL.hasPrefix("https://"),
                       "the verification URL is not the file's, or not https")
            try expect(aws.regionURL == source["region_url"]?.stringValue && aws.credentialsURL == source["url"]?.stringValue
                       && aws.sessionTokenURL == source["imdsv2_session_token_url"]?.stringValue, "an AWS URL is not the file's")
            try expect(aws.environment.isEmpty, "an environment from the file")
        case .certificate(let certificate):
            guard case .object(let options)? = source["certificate"] else { throw InvariantViolation("a certificate the file does not name") }
            try expect(source["file"] == nil && source["url"] == nil && source["executable"] == nil && source["environment_id"] == nil,
                       "a certificate with another source too")
            try expect(certificate.configLocation == options["certificate_config_location"]?.stringValue
                       && certificate.trustChainPath == options["trust_chain_path"]?.stringValue, "a certificate path is not the file's")
            try expect((certificate.configLocation != nil) != (options["use_default_certificate_config"] == .bool(true)),
                       "both or neither of a certificate config location and the default one")
            try expect(certificate.configFile == nil && certificate.certificatePath == nil && certificate.keyPath == nil,
                       "a certificate config that the ADC file alone cannot say")
        }
        try expect(account.impersonationURL == members["service_account_impersonation_url"]?.stringValue, "the impersonation URL is not the file's")
        if let url = account.impersonationURL, let target = account.targetPrincipal {
            try expect(url.hasSuffix("/" + target + ":generateAccessToken") && !target.contains("/"), "the target is not the account the URL names")
        } else {
            try expect(account.impersonationURL == nil && account.targetPrincipal == nil, "a target without its URL, or the other way")
        }
        try expect((600...43_200).contains(account.tokenLifetime), "a token lifetime outside 600 to 43200 s")
        if account.workforcePoolUserProject != nil {
            try expect(account.audience.hasPrefix("//iam.googleapis.com/locations/") && account.audience.contains("/workforcePools/"),
                       "a workforce user project for a workload pool")
        }
        try checkDescription(account)
    }

    /// An external account is described the same whatever its client secret and its URL
    /// headers' values are.
    static func checkDescription(_ account: ExternalAccountCredentials,
                                 describedBy describe: (ExternalAccountCredentials) -> String = { $0.description }) throws(InvariantViolation) {
        var other = account
        other.clientSecret = account.clientSecret.map { $0 + "x" }
        switch account.subjectTokenSource {
        case .url(let url, let headers, let format):
            other.subjectTokenSource = .url(url, headers: headers.map { HeaderField(name: $0.name, value: $0.value + "y") }, format: format)
        case .executable(var command):
            command.arguments += ["--secret=z"]
            other.subjectTokenSource = .executable(command)
        case .aws(var aws):
            aws.environment["AWS_SECRET_ACCESS_KEY"] = "z"
            aws.environment["AWS_SESSION_TOKEN"] = "z"
            other.subjectTokenSource = .aws(aws)
        case .file, .certificate:
            break
        }
        try expect(describe(account) == describe(other), "the description shows the client secret, a header's value or the program's arguments")
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

extension String {
    /// Without the spaces and tabs around it, as a header value is taken.
    fileprivate var trimmingSpaces: String {
        var bytes = Substring(self).utf8[...]
        while let first = bytes.first, first == 0x20 || first == 0x09 { bytes = bytes.dropFirst() }
        while let last = bytes.last, last == 0x20 || last == 0x09 { bytes = bytes.dropLast() }
        return String(decoding: bytes, as: UTF8.self)
    }
}
