/// Reads IAM's `generateAccessToken` answer (docs/CONTRACT.md §4a): `{"accessToken": "…",
/// "expireTime": "2026-11-27T16:40:00Z"}`, an access token of the impersonated account and
/// when it expires (RFC 3339). Bounded; the lifetime is what is left until `expireTime`, at
/// most the 12 hours IAM grants; no refusal quotes the token.
package enum GenerateAccessTokenAnswer {
    static let maximumTokenLength = AccessTokenAnswer.maximumTokenLength
    /// IAM grants at most 12 hours (43200 s), and only with an organisation policy.
    static let maximumLifetime: Double = 43_200

    package static func parse(_ body: [UInt8], from endpoint: String, wallNow: Double) -> Result<AccessToken, ProxyFailure> {
        guard case .object(let members)? = JSONish.parse(body) else {
            return unusable("\(endpoint) answer is not a JSON object")
        }
        guard let token = members["accessToken"]?.stringValue, !token.isEmpty else {
            return unusable("\(endpoint) answer has no \"accessToken\" string")
        }
        guard token.utf8.count <= maximumTokenLength, token.utf8.allSatisfy(ASCII.isVisible) else {
            return unusable("\(endpoint) answer's \"accessToken\" is longer than \(maximumTokenLength) bytes or not visible ASCII")
        }
        guard let text = members["expireTime"]?.stringValue, let expires = RFC3339.epochSeconds(text) else {
            return unusable("\(endpoint) answer has no RFC 3339 \"expireTime\"")
        }
        let lifetime = expires - wallNow
        guard lifetime > 0, lifetime <= maximumLifetime + 60 else {
            return unusable("\(endpoint) answer's \"expireTime\" is not within the next 12 hours")
        }
        return .success(AccessToken(value: token, lifetime: lifetime))
    }

    private static func unusable(_ message: String) -> Result<AccessToken, ProxyFailure> {
        .failure(.providerAnswerUnusable(message))
    }
}
