/// Reads IAM's `signJwt` answer (docs/CONTRACT.md §4a): `{"keyId": "…", "signedJwt": "…"}`,
/// the JWT signed by Google with the service account's key `keyId`, whose header IAM wrote
/// itself (`alg` RS256, `kid` = `keyId`). Bounded; no refusal quotes the JWT.
package enum SignJwtAnswer {
    /// The longest signed JWT taken: a Fleet Engine token is well under 2 KB.
    static let maximumTokenLength = 8192

    /// The token, with the claims decoded for the cache's claim check.
    package static func parse(_ body: [UInt8], from endpoint: String) -> Result<FetchedToken, ProxyFailure> {
        guard case .object(let members)? = JSONish.parse(body) else {
            return unusable("\(endpoint) answer is not a JSON object")
        }
        guard let keyID = members["keyId"]?.stringValue, !keyID.isEmpty else {
            return unusable("\(endpoint) answer has no \"keyId\" string")
        }
        guard let jwt = members["signedJwt"]?.stringValue, !jwt.isEmpty else {
            return unusable("\(endpoint) answer has no \"signedJwt\" string")
        }
        guard jwt.utf8.count <= maximumTokenLength, jwt.utf8.allSatisfy(ASCII.isVisible) else {
            return unusable("\(endpoint) answer's \"signedJwt\" is longer than \(maximumTokenLength) bytes or not visible ASCII")
        }
        guard let headerPart = jwt.split(separator: ".", maxSplits: 1).first,
              let headerBytes = Base64URL.decode(headerPart.utf8),
              case .object(let header)? = JSONish.parse(headerBytes)
        else { return unusable("\(endpoint) answer's \"signedJwt\" is not a JWT") }
        guard header["alg"]?.stringValue == "RS256", header["kid"]?.stringValue == keyID else {
            return unusable("\(endpoint) answer's JWT header is not RS256 with kid = its keyId")
        }
        guard let claims = JWTClaims.decode(jwt), let exp = claims.exp else {
            return unusable("\(endpoint) answer's \"signedJwt\" has no readable claims with exp")
        }
        var token = FetchedToken(token: jwt, expiresAt: exp, issuedAt: claims.iat, claims: claims)
        token.answeredBy = "IAM signJwt"
        return .success(token)
    }

    private static func unusable(_ message: String) -> Result<FetchedToken, ProxyFailure> {
        .failure(.providerAnswerUnusable(message))
    }
}
