#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Where Application Default Credentials come from (docs/CONTRACT.md §4a), found at start in
/// Google's order: the file `GOOGLE_APPLICATION_CREDENTIALS` names, then gcloud's
/// `application_default_credentials.json`, then the metadata server of a Google Cloud host; and
/// the quota project calls made with their token are billed to.
package struct ApplicationDefaultCredentials: Sendable, Equatable {
    package enum Source: Sendable, Equatable {
        /// A service-account key: a JWT-bearer assertion signed with it is exchanged at the
        /// token endpoint (its own `token_uri` when it has one).
        case serviceAccount(ServiceAccountKey)
        /// A user's refresh token (`gcloud auth application-default login`), exchanged at the
        /// token endpoint.
        case authorizedUser(AuthorizedUserCredentials)
        /// Another account's token, through IAM, authorised by the source credentials' own.
        case impersonatedServiceAccount(ImpersonatedServiceAccount)
        /// A subject token from the host's identity provider, exchanged at STS (workload
        /// identity federation), then maybe for a service account's token.
        case externalAccount(ExternalAccountCredentials)
        /// The metadata server at `host` (`host[:port]`), which hands out the attached service
        /// account's token.
        case metadataServer(host: String)
    }

    package var source: Source
    /// The ADC file they were read from; nil for the metadata server.
    package var file: String?
    /// `x-goog-user-project` on every call the token authorises (IAM's, Fleet Engine's), never
    /// on the calls that make the token: `GOOGLE_CLOUD_QUOTA_PROJECT`, else the file's
    /// `quota_project_id`, as Google's libraries choose.
    package var quotaProject: String?

    package init(source: Source, file: String?, quotaProject: String? = nil) {
        self.source = source
        self.file = file
        self.quotaProject = quotaProject
    }

    package static func metadataServer(host: String, quotaProject: String? = nil) -> ApplicationDefaultCredentials {
        ApplicationDefaultCredentials(source: .metadataServer(host: host), file: nil, quotaProject: quotaProject)
    }

    /// Where the token is made, for a start-up line that names the file.
    var fileName: String { file ?? "the metadata server" }

    /// Google's metadata server; `GCE_METADATA_HOST` names another, as Google's libraries allow.
    package static let metadataHost = "metadata.google.internal"
    /// Where gcloud keeps the user's ADC file, under `$CLOUDSDK_CONFIG` or `~/.config/gcloud`.
    static let gcloudFile = "application_default_credentials.json"
    /// The DMI product name of a Compute Engine VM (GKE nodes and Cloud Run alike say so).
    static let dmiProductName = "/sys/class/dmi/id/product_name"
    /// An ADC file is a few kilobytes.
    static let maximumFileBytes = 64 * 1024

    /// Finds the credentials in `environment`; no credentials anywhere is one start-up line
    /// naming every place looked in. `readFile` is nil for a file that does not exist;
    /// `probeMetadataServer` asks the link-local address, last (a second at most).
    package static func find(
        environment: [String: String], readFile: (String) -> [UInt8]? = Self.readFile,
        probeMetadataServer: () -> Bool = { MetadataServerProbe.answers() }
    ) throws(ConfigError) -> ApplicationDefaultCredentials {
        var credentials = try findSource(environment: environment, readFile: readFile, probeMetadataServer: probeMetadataServer)
        if case .externalAccount(var account) = credentials.source, case .executable(var command) = account.subjectTokenSource {
            // As Google's libraries: a file alone may not make the host run a program.
            guard environment[ExecutableCommand.allowVariable] == "1" else {
                throw ConfigError("credentials file \(credentials.fileName) gets its subject token from \(command), which runs only with \(ExecutableCommand.allowVariable)=1 in the environment")
            }
            command.environment = environment
            account.subjectTokenSource = .executable(command)
            credentials.source = .externalAccount(account)
        }
        if case .externalAccount(var account) = credentials.source, case .aws(var aws) = account.subjectTokenSource {
            aws.environment = environment.filter { AWSCredentialSource.variables.contains($0.key) }
            account.subjectTokenSource = .aws(aws)
            credentials.source = .externalAccount(account)
        }
        if case .externalAccount(var account) = credentials.source, case .certificate(let certificate) = account.subjectTokenSource {
            account.subjectTokenSource = .certificate(try certificate.resolved(environment: environment, file: credentials.fileName, readFile: readFile))
            credentials.source = .externalAccount(account)
        }
        if let project = environment["GOOGLE_CLOUD_QUOTA_PROJECT"], !project.isEmpty {
            guard ADCFile.isFieldValue(project) else {
                throw ConfigError("GOOGLE_CLOUD_QUOTA_PROJECT is not a project id (1 to \(ADCFile.maximumFieldLength) bytes of visible ASCII)")
            }
            credentials.quotaProject = project
        }
        return credentials
    }

    private static func findSource(
        environment: [String: String], readFile: (String) -> [UInt8]?, probeMetadataServer: () -> Bool
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
        if probeMetadataServer() {
            return .metadataServer(host: MetadataServerProbe.address)
        }
        throw ConfigError(
            "no Application Default Credentials: GOOGLE_APPLICATION_CREDENTIALS is not set, \(gcloudPath) does not exist, "
                + "and this is not a Google Cloud host (no GCE_METADATA_HOST, \(dmiProductName) does not name Google, "
                + "no metadata server answered at \(MetadataServerProbe.address))")
    }

    /// An ADC file's credentials, by its `type`.
    package static func parse(_ bytes: [UInt8], file: String) throws(ConfigError) -> ApplicationDefaultCredentials {
        let parsed: ADCFile
        switch ADCFile.parse(bytes) {
        case .success(let value): parsed = value
        case .failure(let error): throw ConfigError("credentials file \(file) \(error.message)")
        }
        let source: Source
        switch parsed.credential {
        case .serviceAccount(let key): source = .serviceAccount(key)
        case .authorizedUser(let user): source = .authorizedUser(user)
        case .impersonatedServiceAccount(let impersonated): source = .impersonatedServiceAccount(impersonated)
        case .externalAccount(let account): source = .externalAccount(account)
        }
        return ApplicationDefaultCredentials(source: source, file: file, quotaProject: parsed.quotaProjectID)
    }

    /// Where the credentials are, for the start-up line; never a secret.
    package var origin: String {
        let quota = quotaProject.map { ", quota project \($0)" } ?? ""
        switch source {
        case .serviceAccount(let key): return "\(fileName) (service account \(key.clientEmail)\(quota))"
        case .authorizedUser: return "\(fileName) (authorized user\(quota))"
        case .impersonatedServiceAccount(let impersonated): return "\(fileName) (\(impersonated)\(quota))"
        case .externalAccount(let account): return "\(fileName) (\(account)\(quota))"
        case .metadataServer(let host): return "the metadata server at \(host)" + (quotaProject.map { " (quota project \($0))" } ?? "")
        }
    }

    package static func readFile(_ path: String) -> [UInt8]? {
        guard let data = FileManager.default.contents(atPath: path), data.count <= maximumFileBytes else { return nil }
        return Array(data)
    }
}
