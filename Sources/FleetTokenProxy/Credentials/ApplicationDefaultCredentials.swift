#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Where Application Default Credentials come from (docs/CONTRACT.md §4a), found at start in
/// Google's order: the file `GOOGLE_APPLICATION_CREDENTIALS` names, then gcloud's
/// `application_default_credentials.json`, then the metadata server of a Google Cloud host.
package enum ApplicationDefaultCredentials: Sendable, Equatable {
    /// A service-account key: a JWT-bearer assertion signed with it is exchanged at the token
    /// endpoint (its own `token_uri` when it has one).
    case serviceAccount(ServiceAccountKey, file: String)
    /// A user's refresh token (`gcloud auth application-default login`), exchanged at the
    /// token endpoint.
    case authorizedUser(AuthorizedUserCredentials, file: String)
    /// The metadata server at `host` (`host[:port]`), which hands out the attached service
    /// account's token.
    case metadataServer(host: String)

    /// Google's metadata server; `GCE_METADATA_HOST` names another, as Google's libraries allow.
    package static let metadataHost = "metadata.google.internal"
    /// Where gcloud keeps the user's ADC file, under `$CLOUDSDK_CONFIG` or `~/.config/gcloud`.
    static let gcloudFile = "application_default_credentials.json"
    /// The DMI product name of a Compute Engine VM (GKE nodes and Cloud Run alike say so).
    static let dmiProductName = "/sys/class/dmi/id/product_name"
    /// An ADC file is a few kilobytes.
    static let maximumFileBytes = 64 * 1024

    /// Finds the credentials in `environment`; no credentials anywhere is one start-up line
    /// naming every place looked in. `readFile` is nil for a file that does not exist.
    package static func find(
        environment: [String: String], readFile: (String) -> [UInt8]? = Self.readFile
    ) throws(ConfigError) -> ApplicationDefaultCredentials {
        if let path = environment["GOOGLE_APPLICATION_CREDENTIALS"], !path.isEmpty {
            guard let bytes = readFile(path) else {
                throw ConfigError("GOOGLE_APPLICATION_CREDENTIALS names \(path), which cannot be read (or is larger than \(maximumFileBytes) bytes)")
            }
            return try parse(bytes, file: path)
        }
        let gcloudDirectory = environment["CLOUDSDK_CONFIG"].flatMap { $0.isEmpty ? nil : $0 }
            ?? ((environment["HOME"] ?? "") + "/.config/gcloud")
        let gcloudPath = gcloudDirectory + "/" + gcloudFile
        if let bytes = readFile(gcloudPath) {
            return try parse(bytes, file: gcloudPath)
        }
        if let host = environment["GCE_METADATA_HOST"], !host.isEmpty {
            return .metadataServer(host: host)
        }
        // What Google's libraries check before they probe the network: a VM says so in DMI.
        if let name = readFile(dmiProductName), String(decoding: name, as: UTF8.self).contains("Google") {
            return .metadataServer(host: metadataHost)
        }
        throw ConfigError(
            "no Application Default Credentials: GOOGLE_APPLICATION_CREDENTIALS is not set, \(gcloudPath) does not exist, "
                + "and this is not a Google Cloud host (no GCE_METADATA_HOST, \(dmiProductName) does not name Google)")
    }

    /// An ADC file's credentials, by its `type`.
    package static func parse(_ bytes: [UInt8], file: String) throws(ConfigError) -> ApplicationDefaultCredentials {
        switch ADCFile.parse(bytes) {
        case .success(.serviceAccount(let key)): return .serviceAccount(key, file: file)
        case .success(.authorizedUser(let user)): return .authorizedUser(user, file: file)
        case .failure(let error): throw ConfigError("credentials file \(file) \(error.message)")
        }
    }

    /// Where the credentials are, for the start-up line; never a secret.
    package var origin: String {
        switch self {
        case .serviceAccount(let key, let file): return "\(file) (service account \(key.clientEmail))"
        case .authorizedUser(_, let file): return "\(file) (authorized user)"
        case .metadataServer(let host): return "the metadata server at \(host)"
        }
    }

    package static func readFile(_ path: String) -> [UInt8]? {
        guard let data = FileManager.default.contents(atPath: path), data.count <= maximumFileBytes else { return nil }
        return Array(data)
    }
}

/// A user's credentials from `gcloud auth application-default login` (an `authorized_user`
/// ADC file). The secret and the refresh token are never shown: `description` names the client.
package struct AuthorizedUserCredentials: Sendable, Equatable, CustomStringConvertible {
    package var clientID: String
    package var clientSecret: String
    package var refreshToken: String
    /// Sent as `x-goog-user-project` to IAM: Google bills and checks quota of user
    /// credentials against it.
    package var quotaProjectID: String?
    package var tokenURI: String?

    package init(clientID: String, clientSecret: String, refreshToken: String, quotaProjectID: String? = nil, tokenURI: String? = nil) {
        self.clientID = clientID
        self.clientSecret = clientSecret
        self.refreshToken = refreshToken
        self.quotaProjectID = quotaProjectID
        self.tokenURI = tokenURI
    }

    package var description: String { "authorized user of client \(clientID)" }
}

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
                      value.utf8.allSatisfy({ $0 >= 0x21 && $0 <= 0x7E })
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
