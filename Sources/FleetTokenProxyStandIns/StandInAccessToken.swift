import FleetTokenProxy

/// The access tokens the stand-in Google hands out: opaque to the sidecar as Google's are
/// (`ya29.` and no JWT shape), yet checkable by the stand-in Fleet Engine in another process
/// with nothing but the JWKS it already holds: `ya29.standin.<base64url claims>.<RS256
/// signature by the account's key>`, the claims naming the account, key and expiry.
package enum StandInAccessToken {
    package static let prefix = "ya29.standin."

    package enum Verification: Sendable, Equatable {
        case valid(account: String)
        case invalid(FleetEngineTokenCheck.Verdict)
    }

    /// A token for `keyPair`'s `account`, valid until `expiresAt` (epoch seconds).
    package static func mint(account: String, keyPair: RSAKeyPair, expiresAt: Int, serial: Int) throws -> String {
        let claims = JSONish.object([
            "sub": .string(account), "kid": .string(keyPair.keyID), "exp": .number(Double(expiresAt)), "n": .number(Double(serial)),
        ]).jsonText
        let body = prefix + Base64URL.encode(Array(claims.utf8))
        return body + "." + Base64URL.encode(try keyPair.sign(Array(body.utf8)))
    }

    /// The account a token was minted for, once its signature verifies with a trusted key of
    /// that account and it has not expired; otherwise why not.
    package static func verify(
        _ token: String, trustedKeys: [FleetEngineTokenCheck.TrustedKey], now: Double
    ) -> Verification {
        let rest = token.dropFirst(prefix.count)
        let parts = rest.split(separator: ".", omittingEmptySubsequences: false)
        guard token.hasPrefix(prefix), parts.count == 2,
              let claimBytes = JWTMinter.Base64URL.decode(parts[0]), let signature = JWTMinter.Base64URL.decode(parts[1]),
              case .object(let claims)? = JSONish.parse(claimBytes),
              let account = claims["sub"]?.stringValue, let kid = claims["kid"]?.stringValue,
              let expiresAt = claims["exp"]?.numberValue
        else { return .invalid(.rejected(.malformedToken, detail: "not a stand-in access token")) }
        let keys = trustedKeys.filter { $0.keyID == kid && ($0.account == nil || $0.account == account) }
        guard !keys.isEmpty else { return .invalid(.rejected(.unknownKeyID, detail: "the access token's key is not a known key of its account")) }
        let signed = Array(token.utf8.prefix(prefix.utf8.count + parts[0].utf8.count))
        guard keys.contains(where: { $0.publicKey.verify(signed, signature: signature) }) else {
            return .invalid(.rejected(.badSignature, detail: "the access token's signature does not verify"))
        }
        guard expiresAt > now else { return .invalid(.rejected(.expired, detail: "the access token expired \(Int(now - expiresAt)) s ago")) }
        return .valid(account: account)
    }
}
