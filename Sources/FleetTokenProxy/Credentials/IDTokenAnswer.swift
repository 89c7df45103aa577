/// Reads a Google-signed ID token (docs/CONTRACT.md §4a, `--provider-id-token-audience`): the
/// metadata server's identity endpoint answers the JWT itself as text; the token endpoint, for
/// a service account's `target_audience` assertion, `{"id_token": "…"}`; IAM's
/// `generateIdToken`, for an impersonated account, `{"token": "…"}`. Bounded; the lifetime
/// is what is left of the JWT's `exp`. No refusal quotes the token.
package enum IDTokenAnswer {
    static let maximumTokenLength = 8192

    package static func parse(_ body: [UInt8], from endpoint: String, wallNow: Double) -> Result<AccessToken, ProxyFailure> {
        let token: String
        if case .object(let members)? = JSONish.parse(body) {
            guard let value = members["id_token"]?.stringValue ?? members["token"]?.stringValue else {
                return unusable("\(endpoint) answer has no \"id_token\" or \"token\" string")
            }
            token = value
        } else {
            // The metadata server's text answer; a trailing newline is not part of it.
            var text = body[...]
            while let last = text.last, last == UInt8(ascii: "\n") || last == UInt8(ascii: "\r") || last == UInt8(ascii: " ") {
                text = text.dropLast()
            }
            token = String(decoding: text, as: UTF8.self)
        }
        guard !token.isEmpty, token.utf8.count <= maximumTokenLength, token.utf8.allSatisfy(ASCII.isVisible) else {
            return unusable("\(endpoint) answer's ID token is empty, longer than \(maximumTokenLength) bytes or not visible ASCII")
        }
        guard let claims = JWTClaims.decode(token), let exp = claims.exp else {
            return unusable("\(endpoint) answer's ID token is not a JWT with exp")
        }
        guard exp > wallNow else {
            return unusable("\(endpoint) answer's ID token expired \(Int((wallNow - exp).rounded())) s ago")
        }
        return .success(AccessToken(value: token, lifetime: exp - wallNow))
    }

    private static func unusable(_ message: String) -> Result<AccessToken, ProxyFailure> {
        .failure(.providerAnswerUnusable(message))
    }
}
