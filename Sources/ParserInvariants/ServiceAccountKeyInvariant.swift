import FleetTokenProxy

/// `ServiceAccountKey.parse` over any bytes a `--signer key-file:` file might hold
/// (docs/CONTRACT.md §4a). Promises: what it accepts is the file's own `client_email`,
/// `private_key_id`, `private_key` and `token_uri`; the email and key id are 1 to 256 visible
/// ASCII bytes (they go into every token's header and claims, and into log lines); the key is
/// PKCS#8 PEM. (A refusal cannot repeat a value of the file: `ServiceAccountKeyError`'s cases
/// carry none.)
public enum ServiceAccountKeyInvariant: ParserInvariant {
    public static let name = "service-account-key"

    public static func check(_ input: UnsafeRawBufferPointer) throws(InvariantViolation) {
        let bytes = Array(input)
        let members = jsonMembers(bytes)

        if case .success(let key) = ServiceAccountKey.parse(bytes) {
            try checkAccepted(key, file: members)
        }
    }

    /// What an accepted key must be, against the members of the file it came from.
    static func checkAccepted(_ key: ServiceAccountKey, file members: [String: JSONish]) throws(InvariantViolation) {
        try expect(!members.isEmpty, "accepted a file that is not a JSON object")
        try expect(key.clientEmail == members["client_email"]?.stringValue, "client_email is not the file's")
        try expect(key.privateKeyID == members["private_key_id"]?.stringValue, "private_key_id is not the file's")
        try expect(key.privateKeyPEM == members["private_key"]?.stringValue, "private_key is not the file's")
        try expect(key.tokenURI == members["token_uri"]?.stringValue, "token_uri is not the file's")
        for (field, value) in [("client_email", key.clientEmail), ("private_key_id", key.privateKeyID)] {
            try expect((1...256).contains(value.utf8.count) && value.utf8.allSatisfy { $0 >= 0x21 && $0 <= 0x7E },
                       "accepted a \(field) that is not 1 to 256 visible ASCII bytes")
        }
        try expect(key.clientEmail.contains("@"), "accepted a client_email without @")
        try expect(key.privateKeyPEM.hasPrefix("-----BEGIN PRIVATE KEY-----"), "accepted a private_key that is not PKCS#8 PEM")
        try expect(!key.description.contains(key.privateKeyPEM), "the description holds the private key")
    }
}
