/// Reads the instance metadata service's answer for a role's credentials (docs/CONTRACT.md
/// §4a): `{"Code": "Success", "AccessKeyId": "…", "SecretAccessKey": "…", "Token": "…",
/// "Expiration": "…"}`. Each is 1 to 4096 visible ASCII bytes (the key id and token go into
/// header fields of the signed request). No refusal quotes a value: the secret and the token
/// are credentials.
package enum AWSCredentialsAnswer {
    static let maximumLength = 4096

    package static func parse(_ body: [UInt8], from endpoint: String) -> Result<SigV4.Credentials, ProxyFailure> {
        guard case .object(let members)? = JSONish.parse(body) else { return unusable("\(endpoint) answer is not a JSON object") }
        if let code = members["Code"], code.stringValue != "Success" { return unusable("\(endpoint) answer's \"Code\" is not Success") }
        func field(_ name: String) -> String? {
            guard let value = members[name]?.stringValue, !value.isEmpty, value.utf8.count <= maximumLength,
                  value.utf8.allSatisfy(ASCII.isVisible)
            else { return nil }
            return value
        }
        guard let id = field("AccessKeyId") else { return unusable("\(endpoint) answer has no usable \"AccessKeyId\"") }
        guard let secret = field("SecretAccessKey") else { return unusable("\(endpoint) answer has no usable \"SecretAccessKey\"") }
        if members["Token"] != nil, field("Token") == nil { return unusable("\(endpoint) answer's \"Token\" is not usable") }
        return .success(SigV4.Credentials(accessKeyID: id, secretAccessKey: secret, sessionToken: field("Token")))
    }

    private static func unusable(_ message: String) -> Result<SigV4.Credentials, ProxyFailure> {
        .failure(.providerAnswerUnusable(message))
    }
}
