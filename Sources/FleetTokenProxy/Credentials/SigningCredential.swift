/// A service account's key, ready to sign: what one `key-file:` source holds between reloads
/// (docs/CONTRACT.md §4a). Immutable and `Sendable`, so the signing workers use it while the
/// loop may already hold a newer one after a reload.
final class SigningCredential: Sendable {
    package let account: String
    package let keyID: String
    private let key: RSASigningKey

    package init(_ serviceAccountKey: ServiceAccountKey) throws(SigningKeyError) {
        account = serviceAccountKey.clientEmail
        keyID = serviceAccountKey.privateKeyID
        key = try RSASigningKey(pem: serviceAccountKey.privateKeyPEM)
    }

    /// A token for `key` issued at `wallNow` (back-dated: `FleetEngineClaims.backdate(lifetime:)`), valid for
    /// `lifetime` seconds. A failure is the sidecar's own (502 / gRPC 14) and names the key id,
    /// never key material.
    package func mint(for key: EntityKey, wallNow: Double, lifetime: Double) -> Result<FetchedToken, ProxyFailure> {
        let claims = FleetEngineClaims(for: key, account: account, keyID: keyID, wallNow: wallNow, lifetime: lifetime)
        let input = claims.signingInput
        do {
            let signature = try self.key.sign(Array(input.utf8))
            return .success(FetchedToken(
                token: input + "." + Base64URL.encode(signature), expiresAt: Double(claims.expiresAt),
                issuedAt: Double(claims.issuedAt), claims: claims.decoded))
        } catch {
            return .failure(.providerAnswerUnusable(
                "signing a token for \(key.type.rawValue) \(quoted(key.id)) with key \(keyID) failed: \(error.message)"))
        }
    }

    /// A compact RS256 JWT of `claims`, with this key's `kid` (the JWT-bearer assertion an
    /// ADC service account exchanges for an access token, RFC 7523).
    package func signJWT(claims: JSONish) throws(SigningKeyError) -> String {
        let header: JSONish = .object(["alg": .string("RS256"), "typ": .string("JWT"), "kid": .string(keyID)])
        let input = Base64URL.encode(Array(header.jsonText.utf8)) + "." + Base64URL.encode(Array(claims.jsonText.utf8))
        return input + "." + Base64URL.encode(try key.sign(Array(input.utf8)))
    }
}
