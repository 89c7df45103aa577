import FleetTokenProxy
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A made-up Google service account with one RSA key: its key file for `--signer key-file:`
/// (docs/CONTRACT.md §4a), its public key as a JWKS for the stand-in Fleet Engine, and the
/// trust entry that binds the key to the account.
package struct StandInServiceAccount: Sendable {
    package let email: String
    package let keyPair: RSAKeyPair

    /// A fresh key for `NAME@PROJECT.iam.gserviceaccount.com`; `keyID` random unless given.
    package init(name: String = "fleet-signer", project: String, keyID: String? = nil) throws {
        email = "\(name)@\(project).iam.gserviceaccount.com"
        let generated = try RSAKeyPair.generate()
        keyPair = try keyID.map { try RSAKeyPair(privateKeyPEM: try generated.privateKeyPEM(), keyID: $0) } ?? generated
    }

    /// The key file Google would issue (the fields the sidecar reads, and `type`, `token_uri`).
    package func keyFileJSON(tokenURI: String = "https://oauth2.googleapis.com/token") throws -> String {
        JSONish.object([
            "type": .string("service_account"),
            "client_email": .string(email),
            "private_key_id": .string(keyPair.keyID),
            "private_key": .string(try keyPair.privateKeyPEM()),
            "token_uri": .string(tokenURI),
        ]).jsonText
    }

    /// Writes the key file with mode 0600 (replacing any file there), as a secret must be.
    package func writeKeyFile(to path: String, tokenURI: String = "https://oauth2.googleapis.com/token") throws {
        try? FileManager.default.removeItem(atPath: path)
        guard FileManager.default.createFile(atPath: path, contents: Data(try keyFileJSON(tokenURI: tokenURI).utf8), attributes: [.posixPermissions: 0o600]) else {
            throw ConfigError("cannot write the key file \(path)")
        }
    }

    /// The account's public keys as Google publishes them: `{"keys":[JWK]}`.
    package func jwksText() throws -> String {
        try JSONWebKeySet.text(for: [keyPair])
    }

    /// What the stand-in Fleet Engine trusts: this key, for this account only.
    package var trustedKey: FleetEngineTokenCheck.TrustedKey {
        FleetEngineTokenCheck.TrustedKey(account: email, keyID: keyPair.keyID, publicKey: keyPair.publicKey)
    }
}
