/// An `external_account`'s X.509 `credential_source` (docs/CONTRACT.md §4a): `certificate`,
/// with `certificate_config_location` or `use_default_certificate_config`, and an optional
/// `trust_chain_path` (PEM intermediates between the certificate and the pool's trust store).
/// The certificate config file (`CertificateConfig`) is found and read at start
/// (`ApplicationDefaultCredentials.find`): the file's location, else `GOOGLE_API_CERTIFICATE_CONFIG`,
/// else gcloud's `certificate_config.json`; it names the certificate and key the STS exchange
/// presents over mutual TLS. `description` names files, never what they hold.
package struct CertificateCredentialSource: Sendable, Equatable, CustomStringConvertible {
    /// `certificate_config_location`; nil with `use_default_certificate_config`.
    package var configLocation: String?
    package var trustChainPath: String?
    /// Where the certificate config was found, and what it names (set at start).
    package var configFile: String?
    package var certificatePath: String?
    package var keyPath: String?

    package init(configLocation: String? = nil, trustChainPath: String? = nil) {
        self.configLocation = configLocation
        self.trustChainPath = trustChainPath
    }

    /// STS's subject token type for a certificate chain.
    package static let subjectTokenType = "urn:ietf:params:oauth:token-type:mtls"
    /// Names the certificate config when the file says use the default one.
    static let configVariable = "GOOGLE_API_CERTIFICATE_CONFIG"
    /// gcloud's certificate config, beside its ADC file under `$CLOUDSDK_CONFIG` or `~/.config/gcloud`.
    static let gcloudConfigFile = "certificate_config.json"

    package var description: String {
        let chain = trustChainPath.map { ", trust chain \($0)" } ?? ""
        return "X.509 certificate \(certificatePath ?? "?") (certificate config \(configFile ?? configLocation ?? "default")\(chain))"
    }

    /// `credential_source`'s members with `certificate`, or why not (a field name, never a
    /// value). As Google's libraries: alone (no `file`, `url`, `executable`, `environment_id`),
    /// and exactly one of a location and the default.
    static func parse(_ members: [String: JSONish]) -> Result<CertificateCredentialSource, ADCFileError> {
        guard members["file"] == nil, members["url"] == nil, members["executable"] == nil, members["environment_id"] == nil,
              case .object(let certificate)? = members["certificate"]
        else { return .failure(.badField("credential_source.certificate (an object, alone)")) }
        var source = CertificateCredentialSource()
        let useDefault: Bool
        switch certificate["use_default_certificate_config"] {
        case nil, .null?: useDefault = false
        case .bool(let value)?: useDefault = value
        default: return .failure(.badField("credential_source.certificate.use_default_certificate_config (true or false)"))
        }
        for (name, keyPath) in [("certificate_config_location", \CertificateCredentialSource.configLocation),
                                ("trust_chain_path", \.trustChainPath)] {
            switch certificate[name] {
            case nil, .null?: break
            case .string(let path)? where CertificateConfig.isPath(path): source[keyPath: keyPath] = path
            default: return .failure(.badField("credential_source.certificate.\(name)"))
            }
        }
        guard (source.configLocation != nil) != useDefault else {
            return .failure(.badField("credential_source.certificate: certificate_config_location or use_default_certificate_config true (exactly one)"))
        }
        return .success(source)
    }

    /// The certificate config's path: the file's location, else `GOOGLE_API_CERTIFICATE_CONFIG`,
    /// else gcloud's, in the directory the ADC file is looked for in.
    func configPath(environment: [String: String]) -> String {
        if let configLocation { return configLocation }
        if let path = environment[Self.configVariable], !path.isEmpty { return path }
        let directory = environment["CLOUDSDK_CONFIG"].flatMap { $0.isEmpty ? nil : $0 } ?? ((environment["HOME"] ?? "") + "/.config/gcloud")
        return directory + "/" + Self.gcloudConfigFile
    }

    /// The source with its certificate config found and read, or the start-up line saying why
    /// not (`file` is the ADC file's name).
    func resolved(environment: [String: String], file: String, readFile: (String) -> [UInt8]?) throws(ConfigError) -> CertificateCredentialSource {
        let path = configPath(environment: environment)
        guard let bytes = readFile(path) else {
            throw ConfigError("credentials file \(file) takes its X.509 certificate from the certificate config \(path), which cannot be read")
        }
        switch CertificateConfig.parse(bytes) {
        case .failure(let error):
            throw ConfigError("certificate config \(path) (of credentials file \(file)) \(error.message)")
        case .success(let config):
            var resolved = self
            resolved.configFile = path
            resolved.certificatePath = config.certificatePath
            resolved.keyPath = config.keyPath
            return resolved
        }
    }
}
