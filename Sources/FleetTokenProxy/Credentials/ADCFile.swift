/// The ADC file's JSON: a `service_account` key or an `authorized_user`; other types
/// (workload identity federation, impersonation) are refused by name.
package enum ADCFile: Sendable, Equatable {
    case serviceAccount(ServiceAccountKey)
    case authorizedUser(AuthorizedUserCredentials)

    /// The longest field taken: a refresh token is a few hundred bytes.
    static let maximumFieldLength = 4096

    package static func parse(_ bytes: [UInt8]) -> Result<ADCFile, ADCFileError> {
        guard case .object(let members)? = JSONish.parse(bytes) else { return .failure(.notAnObject) }
        switch members["type"]?.stringValue {
        case "service_account":
            switch ServiceAccountKey.parse(bytes) {
            case .success(let key): return .success(.serviceAccount(key))
            case .failure(let error): return .failure(.serviceAccount(error))
            }
        case "authorized_user":
            func field(_ name: String) -> String? {
                guard let value = members[name]?.stringValue, !value.isEmpty, value.utf8.count <= maximumFieldLength,
                      value.utf8.allSatisfy(ASCII.isVisible)
                else { return nil }
                return value
            }
            guard let clientID = field("client_id") else { return .failure(.badField("client_id")) }
            guard let secret = field("client_secret") else { return .failure(.badField("client_secret")) }
            guard let refresh = field("refresh_token") else { return .failure(.badField("refresh_token")) }
            if members["quota_project_id"] != nil, field("quota_project_id") == nil { return .failure(.badField("quota_project_id")) }
            if members["token_uri"] != nil, field("token_uri") == nil { return .failure(.badField("token_uri")) }
            return .success(.authorizedUser(AuthorizedUserCredentials(
                clientID: clientID, clientSecret: secret, refreshToken: refresh,
                quotaProjectID: field("quota_project_id"), tokenURI: field("token_uri"))))
        default:
            return .failure(.unsupportedType)
        }
    }
}

/// Why an ADC file cannot be used; never a value of the file, which holds a secret.
package enum ADCFileError: Error, Sendable, Equatable {
    case notAnObject
    case unsupportedType
    case badField(String)
    case serviceAccount(ServiceAccountKeyError)

    package var message: String {
        switch self {
        case .notAnObject: return "is not a JSON object"
        case .unsupportedType: return "has a \"type\" other than \"service_account\" or \"authorized_user\" (the two this sidecar takes)"
        case .badField(let name): return "has no usable \"\(name)\" (a string of visible ASCII)"
        case .serviceAccount(let error): return error.message
        }
    }
}
