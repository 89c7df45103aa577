/// An ADC file's JSON (docs/CONTRACT.md §4a), by its `type`: a `service_account` key, an
/// `authorized_user`, an `impersonated_service_account`, an `external_account` (workload
/// identity federation); other types are refused by name. Every
/// type may name the `quota_project_id` calls made with its token are billed to.
package struct ADCFile: Sendable, Equatable {
    package enum Credential: Sendable, Equatable {
        case serviceAccount(ServiceAccountKey)
        case authorizedUser(AuthorizedUserCredentials)
        case impersonatedServiceAccount(ImpersonatedServiceAccount)
        case externalAccount(ExternalAccountCredentials)
    }

    package var credential: Credential
    /// Sent as `x-goog-user-project` (unless `GOOGLE_CLOUD_QUOTA_PROJECT` names another).
    package var quotaProjectID: String?

    package init(credential: Credential, quotaProjectID: String? = nil) {
        self.credential = credential
        self.quotaProjectID = quotaProjectID
    }

    /// The longest field taken: a refresh token is a few hundred bytes.
    static let maximumFieldLength = 4096
    /// The most `delegates` taken: IAM itself allows a short chain.
    static let maximumDelegates = 16

    package static func parse(_ bytes: [UInt8]) -> Result<ADCFile, ADCFileError> {
        guard case .object(let members)? = JSONish.parse(bytes) else { return .failure(.notAnObject) }
        let quota: String?
        switch optionalField("quota_project_id", in: members) {
        case .success(let value): quota = value
        case .failure(let error): return .failure(error)
        }
        let credential: Credential
        switch members["type"]?.stringValue {
        case "service_account":
            switch ServiceAccountKey.parse(bytes) {
            case .success(let key): credential = .serviceAccount(key)
            case .failure(let error): return .failure(.serviceAccount(error))
            }
        case "authorized_user":
            switch authorizedUser(members) {
            case .success(let user): credential = .authorizedUser(user)
            case .failure(let error): return .failure(error)
            }
        case "impersonated_service_account":
            switch impersonated(members) {
            case .success(let impersonated): credential = .impersonatedServiceAccount(impersonated)
            case .failure(let error): return .failure(error)
            }
        case "external_account":
            switch ExternalAccountCredentials.parse(members) {
            case .success(let account): credential = .externalAccount(account)
            case .failure(let error): return .failure(error)
            }
        default:
            return .failure(.unsupportedType)
        }
        return .success(ADCFile(credential: credential, quotaProjectID: quota))
    }

    static func authorizedUser(_ members: [String: JSONish], in prefix: String = "") -> Result<AuthorizedUserCredentials, ADCFileError> {
        guard let clientID = field("client_id", in: members) else { return .failure(.badField(prefix + "client_id")) }
        guard let secret = field("client_secret", in: members) else { return .failure(.badField(prefix + "client_secret")) }
        guard let refresh = field("refresh_token", in: members) else { return .failure(.badField(prefix + "refresh_token")) }
        switch optionalField("token_uri", in: members, prefix: prefix) {
        case .success(let uri):
            return .success(AuthorizedUserCredentials(clientID: clientID, clientSecret: secret, refreshToken: refresh, tokenURI: uri))
        case .failure(let error):
            return .failure(error)
        }
    }

    /// `source_credentials` (an authorized user or a service account, as Google's libraries
    /// take), `service_account_impersonation_url` naming the target, `delegates`.
    static func impersonated(_ members: [String: JSONish]) -> Result<ImpersonatedServiceAccount, ADCFileError> {
        guard case .object(let sourceMembers)? = members["source_credentials"] else { return .failure(.badField("source_credentials")) }
        let source: ImpersonatedServiceAccount.Source
        switch sourceMembers["type"]?.stringValue {
        case "authorized_user":
            switch authorizedUser(sourceMembers, in: "source_credentials.") {
            case .success(let user): source = .authorizedUser(user)
            case .failure(let error): return .failure(error)
            }
        case "service_account":
            switch ServiceAccountKey.parse(Array(JSONish.object(sourceMembers).jsonText.utf8)) {
            case .success(let key): source = .serviceAccount(key)
            case .failure(let error): return .failure(.serviceAccount(error))
            }
        default:
            return .failure(.unsupportedSourceType)
        }
        guard let url = field("service_account_impersonation_url", in: members),
              let target = ImpersonatedServiceAccount.targetPrincipal(in: url)
        else { return .failure(.badImpersonationURL) }
        var delegates: [String] = []
        switch members["delegates"] {
        case nil, .null?: break
        case .array(let values)? where values.count <= maximumDelegates:
            for value in values {
                guard let delegate = value.stringValue, isFieldValue(delegate) else { return .failure(.badField("delegates")) }
                delegates.append(delegate)
            }
        default:
            return .failure(.badField("delegates"))
        }
        return .success(ImpersonatedServiceAccount(source: source, impersonationURL: url, targetPrincipal: target, delegates: delegates))
    }

    /// A string of 1 to `maximumFieldLength` visible ASCII bytes (it goes into a form body or
    /// a header), or nil.
    static func field(_ name: String, in members: [String: JSONish]) -> String? {
        guard let value = members[name]?.stringValue, isFieldValue(value) else { return nil }
        return value
    }

    /// Absent (nil) or a usable field; present and unusable is a refusal naming it.
    static func optionalField(_ name: String, in members: [String: JSONish], prefix: String = "") -> Result<String?, ADCFileError> {
        guard members[name] != nil else { return .success(nil) }
        guard let value = field(name, in: members) else { return .failure(.badField(prefix + name)) }
        return .success(value)
    }

    static func isFieldValue(_ value: String) -> Bool {
        !value.isEmpty && value.utf8.count <= maximumFieldLength && value.utf8.allSatisfy(ASCII.isVisible)
    }
}

/// Why an ADC file cannot be used; never a value of the file, which holds a secret.
package enum ADCFileError: Error, Sendable, Equatable {
    case notAnObject
    case unsupportedType
    case unsupportedSourceType
    case badImpersonationURL
    case workforceProjectForWorkloadPool
    case badField(String)
    case serviceAccount(ServiceAccountKeyError)

    package var message: String {
        switch self {
        case .notAnObject: return "is not a JSON object"
        case .unsupportedType:
            return "has a \"type\" other than \"service_account\", \"authorized_user\", \"impersonated_service_account\" or \"external_account\" (the types this sidecar takes)"
        case .unsupportedSourceType:
            return "has \"source_credentials\" whose \"type\" is not \"authorized_user\" or \"service_account\" (the sources of an impersonation this sidecar takes)"
        case .badImpersonationURL:
            return "has no \"service_account_impersonation_url\" ending in /ACCOUNT:generateAccessToken"
        case .workforceProjectForWorkloadPool:
            return "has a \"workforce_pool_user_project\" but its \"audience\" is not a workforce pool's"
        case .badField(let name): return "has no usable \"\(name)\" (a string of visible ASCII)"
        case .serviceAccount(let error): return error.message
        }
    }
}
