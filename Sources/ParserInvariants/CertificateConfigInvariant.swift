import FleetTokenProxy

/// `CertificateConfig.parse` over any bytes a certificate config file might hold (what gcloud
/// writes for an X.509 `external_account`, docs/CONTRACT.md §4a). Promises: an accepted config's
/// certificate and key paths are the file's own `cert_configs.workload.cert_path` and
/// `key_path`, each 1 to 4095 bytes with no control byte (a NUL would open another file than the
/// one named); a refusal names the member that is wrong and nothing of the file.
public enum CertificateConfigInvariant: ParserInvariant {
    public static let name = "certificate-config"

    public static func check(_ input: UnsafeRawBufferPointer) throws(InvariantViolation) {
        let bytes = Array(input)
        switch CertificateConfig.parse(bytes) {
        case .success(let config): try checkAccepted(config, file: jsonMembers(bytes))
        case .failure(let error): try checkRefusal(error.message)
        }
    }

    static func checkAccepted(_ config: CertificateConfig, file members: [String: JSONish]) throws(InvariantViolation) {
        guard case .object(let configs)? = members["cert_configs"], case .object(let workload)? = configs["workload"] else {
            throw InvariantViolation("accepted a config without cert_configs.workload")
        }
        try expect(config.certificatePath == workload["cert_path"]?.stringValue, "the certificate path is not the file's")
        try expect(config.keyPath == workload["key_path"]?.stringValue, "the key path is not the file's")
        for path in [config.certificatePath, config.keyPath] {
            try expect((1...4095).contains(path.utf8.count) && !path.utf8.contains { $0 < 0x20 || $0 == 0x7F },
                       "accepted a path that is empty, too long or holds a control byte")
        }
    }

    /// One of the parser's own sentences, naming a member.
    static func checkRefusal(_ message: String) throws(InvariantViolation) {
        let known = ["is not a JSON object", "\"cert_configs\"", "\"cert_configs.workload\"", "\"cert_configs.workload.cert_path\"",
                     "\"cert_configs.workload.key_path\""]
        try expect(message.utf8.count <= 120 && known.contains { message.contains($0) }, "a refusal that is not one of the parser's sentences")
    }
}
