/// An `external_account`'s AWS `credential_source` (docs/CONTRACT.md §4a, `environment_id`
/// `aws1`): where the host's region and AWS credentials come from — `AWS_REGION` or
/// `AWS_DEFAULT_REGION` and `AWS_ACCESS_KEY_ID` / `AWS_SECRET_ACCESS_KEY` /
/// `AWS_SESSION_TOKEN` in the environment, else the instance metadata service (`region_url`,
/// `url` for the role's credentials, `imdsv2_session_token_url` for IMDSv2's session token) —
/// and the `regional_cred_verification_url` whose `GetCallerIdentity` request is signed as the
/// subject token. `description` shows no credential.
package struct AWSCredentialSource: Sendable, Equatable, CustomStringConvertible {
    /// `https://sts.{region}.amazonaws.com?Action=GetCallerIdentity&Version=2011-06-15`.
    package var verificationURL: String
    package var regionURL: String?
    package var credentialsURL: String?
    package var sessionTokenURL: String?
    /// The `AWS_*` variables of the sidecar's environment, read at start.
    package var environment: [String: String]

    static let variables = ["AWS_REGION", "AWS_DEFAULT_REGION", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"]

    package init(verificationURL: String, regionURL: String? = nil, credentialsURL: String? = nil, sessionTokenURL: String? = nil,
                 environment: [String: String] = [:]) {
        self.verificationURL = verificationURL
        self.regionURL = regionURL
        self.credentialsURL = credentialsURL
        self.sessionTokenURL = sessionTokenURL
        self.environment = environment
    }

    package var description: String {
        "AWS (" + (environmentCredentials != nil ? "credentials from the environment" : "the instance metadata service") + ")"
    }

    /// The region from the environment, as Google's libraries look for it.
    var environmentRegion: String? {
        environment["AWS_REGION"].flatMap { $0.isEmpty ? nil : $0 } ?? environment["AWS_DEFAULT_REGION"].flatMap { $0.isEmpty ? nil : $0 }
    }

    /// The credentials from the environment, when both the key id and the secret are there.
    var environmentCredentials: SigV4.Credentials? {
        guard let id = environment["AWS_ACCESS_KEY_ID"], !id.isEmpty, let secret = environment["AWS_SECRET_ACCESS_KEY"], !secret.isEmpty else { return nil }
        return SigV4.Credentials(accessKeyID: id, secretAccessKey: secret, sessionToken: environment["AWS_SESSION_TOKEN"].flatMap { $0.isEmpty ? nil : $0 })
    }

    /// `credential_source`'s members with `environment_id`, or why not (a field name, never a
    /// value). `aws1` only, as Google's libraries take; the verification URL must be https.
    static func parse(_ members: [String: JSONish]) -> Result<AWSCredentialSource, ADCFileError> {
        guard members["environment_id"]?.stringValue == "aws1" else { return .failure(.badField("credential_source.environment_id (aws1)")) }
        guard let url = ADCFile.field("regional_cred_verification_url", in: members), url.hasPrefix("https://") else {
            return .failure(.badField("credential_source.regional_cred_verification_url (https)"))
        }
        var source = AWSCredentialSource(verificationURL: url)
        for (name, keyPath) in [("region_url", \AWSCredentialSource.regionURL), ("url", \.credentialsURL),
                                ("imdsv2_session_token_url", \.sessionTokenURL)] {
            switch ADCFile.optionalField(name, in: members, prefix: "credential_source.") {
            case .success(let value): source[keyPath: keyPath] = value
            case .failure(let error): return .failure(error)
            }
        }
        return .success(source)
    }
}
