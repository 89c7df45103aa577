/// The certificate config file an X.509 `external_account` points at (docs/CONTRACT.md §4a):
/// what `gcloud iam workload-identity-pools create-cred-config --credential-cert-path` writes,
/// `{"cert_configs": {"workload": {"cert_path": …, "key_path": …}}}`, naming the workload's
/// certificate (PEM) and its private key. Its other members (`version`, other `cert_configs`
/// such as a keychain's) are not read. Refusals name the member, never a value.
package struct CertificateConfig: Sendable, Equatable {
    package var certificatePath: String
    package var keyPath: String

    /// A path longer than this is not one a host uses (Linux's PATH_MAX is 4096 with its NUL).
    static let maximumPathLength = 4095

    package static func parse(_ bytes: [UInt8]) -> Result<CertificateConfig, CertificateConfigError> {
        guard case .object(let members)? = JSONish.parse(bytes) else { return .failure(.notAnObject) }
        guard case .object(let configs)? = members["cert_configs"] else { return .failure(.missing("cert_configs")) }
        guard case .object(let workload)? = configs["workload"] else { return .failure(.missing("cert_configs.workload")) }
        guard let certificate = path("cert_path", in: workload) else { return .failure(.badPath("cert_configs.workload.cert_path")) }
        guard let key = path("key_path", in: workload) else { return .failure(.badPath("cert_configs.workload.key_path")) }
        return .success(CertificateConfig(certificatePath: certificate, keyPath: key))
    }

    /// A member that can name a file: a string of 1 to `maximumPathLength` bytes without a
    /// control character (a NUL would cut the path short where the file is opened).
    static func path(_ name: String, in members: [String: JSONish]) -> String? {
        guard let value = members[name]?.stringValue, isPath(value) else { return nil }
        return value
    }

    static func isPath(_ value: String) -> Bool {
        !value.isEmpty && value.utf8.count <= maximumPathLength && !value.utf8.contains { $0 < 0x20 || $0 == 0x7F }
    }
}

/// Why a certificate config file cannot be used, by member name.
package enum CertificateConfigError: Error, Sendable, Equatable {
    case notAnObject
    case missing(String)
    case badPath(String)

    package var message: String {
        switch self {
        case .notAnObject: return "is not a JSON object"
        case .missing(let name): return "has no \"\(name)\" object"
        case .badPath(let name): return "has no usable \"\(name)\" (a path without control characters)"
        }
    }
}
