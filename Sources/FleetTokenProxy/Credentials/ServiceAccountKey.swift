/// The fields of a Google service-account key file (JSON) that local signing uses
/// (docs/CONTRACT.md §4a): who signs (`client_email`), which of its keys (`private_key_id`, the
/// JWT's `kid`) and the key itself (`private_key`, unencrypted PKCS#8 PEM). `token_uri` is kept
/// for the sources that exchange a key for an access token.
///
/// The private key is a secret: `description` names the account and key id only, and no
/// refusal quotes a value of the file.
package struct ServiceAccountKey: Sendable, Equatable, CustomStringConvertible {
    package var clientEmail: String
    package var privateKeyID: String
    /// `-----BEGIN PRIVATE KEY-----` … PEM. Never log it.
    package var privateKeyPEM: String
    package var tokenURI: String?

    /// The longest `client_email` or `private_key_id` taken: both go into every token.
    static let maximumNameLength = 256
    static let pkcs8Header = "-----BEGIN PRIVATE KEY-----"

    package init(clientEmail: String, privateKeyID: String, privateKeyPEM: String, tokenURI: String? = nil) {
        self.clientEmail = clientEmail
        self.privateKeyID = privateKeyID
        self.privateKeyPEM = privateKeyPEM
        self.tokenURI = tokenURI
    }

    package var description: String { "service account \(clientEmail) key \(privateKeyID)" }

    /// Reads a key file's bytes: a JSON object with the three fields as strings (and `type`,
    /// when present, `service_account`). Fails with what is missing or wrong, never a value.
    package static func parse(_ bytes: [UInt8]) -> Result<ServiceAccountKey, ServiceAccountKeyError> {
        guard case .object(let members)? = JSONish.parse(bytes) else {
            return .failure(.notAnObject)
        }
        if let type = members["type"], type.stringValue != "service_account" {
            return .failure(.notAServiceAccount)
        }
        guard let email = members["client_email"]?.stringValue, isName(email), email.contains("@") else {
            return .failure(.badClientEmail)
        }
        guard let keyID = members["private_key_id"]?.stringValue, isName(keyID) else {
            return .failure(.badPrivateKeyID)
        }
        guard let pem = members["private_key"]?.stringValue, pem.hasPrefix(pkcs8Header) else {
            return .failure(.badPrivateKey)
        }
        var tokenURI: String?
        if let value = members["token_uri"] {
            guard let uri = value.stringValue else {
                return .failure(.badTokenURI)
            }
            tokenURI = uri
        }
        return .success(ServiceAccountKey(clientEmail: email, privateKeyID: keyID, privateKeyPEM: pem, tokenURI: tokenURI))
    }

    /// 1 to `maximumNameLength` visible ASCII bytes: safe in a JWT header and in a log line.
    private static func isName(_ text: String) -> Bool {
        let count = text.utf8.count
        return count >= 1 && count <= maximumNameLength && text.utf8.allSatisfy(ASCII.isVisible)
    }
}

/// Why a service-account key file cannot be used; `message` follows the file's name in a
/// start-up or reload line. The cases carry nothing, so a refusal cannot repeat a value of the
/// file, which holds a secret.
package enum ServiceAccountKeyError: Error, Sendable, Equatable, CaseIterable, CustomStringConvertible {
    case notAnObject
    case notAServiceAccount
    case badClientEmail
    case badPrivateKeyID
    case badPrivateKey
    case badTokenURI

    package var message: String {
        switch self {
        case .notAnObject: return "is not a JSON object"
        case .notAServiceAccount: return "is not a service account key (\"type\" must be \"service_account\")"
        case .badClientEmail: return "has no usable \"client_email\" (an email address of visible ASCII)"
        case .badPrivateKeyID: return "has no usable \"private_key_id\" (visible ASCII)"
        case .badPrivateKey: return "has no \"private_key\" in unencrypted PKCS#8 PEM (\(ServiceAccountKey.pkcs8Header))"
        case .badTokenURI: return "has a \"token_uri\" that is not a string"
        }
    }

    package var description: String { message }
}
