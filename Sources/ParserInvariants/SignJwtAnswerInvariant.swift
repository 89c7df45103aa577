import FleetTokenProxy

/// `SignJwtAnswer.parse` over any bytes IAM `signJwt` might answer (docs/CONTRACT.md §4a).
/// Promises: an accepted token is the answer's own `signedJwt`, 1 to 8192 visible ASCII bytes
/// (it goes into an `Authorization` header); its header is RS256 and names the answer's
/// `keyId`; its expiry is the JWT's `exp` and its claims are the JWT's, so the cache's claim
/// check reads what Fleet Engine will.
public enum SignJwtAnswerInvariant: ParserInvariant {
    public static let name = "sign-jwt-answer"

    public static func check(_ input: UnsafeRawBufferPointer) throws(InvariantViolation) {
        let bytes = Array(input)
        let members = jsonMembers(bytes)
        if case .success(let token) = SignJwtAnswer.parse(bytes, from: "IAM signJwt") {
            try checkAccepted(token, answer: members)
        }
    }

    static func checkAccepted(_ token: FetchedToken, answer members: [String: JSONish]) throws(InvariantViolation) {
        try expect(token.token == members["signedJwt"]?.stringValue, "the token is not the answer's signedJwt")
        try expect((1...8192).contains(token.token.utf8.count) && token.token.utf8.allSatisfy { $0 >= 0x21 && $0 <= 0x7E },
                   "accepted a token that is not 1 to 8192 visible ASCII bytes")
        let decoded = JWTClaims.decode(token.token)
        try expect(decoded != nil && token.claims == decoded, "the claims are not the JWT's")
        try expect(token.expiresAt == decoded?.exp, "the expiry is not the JWT's exp")
        let header = token.token.split(separator: ".", maxSplits: 1).first.flatMap { Base64URL.decode($0.utf8) }.flatMap { JSONish.parse($0) }
        guard case .object(let fields)? = header else { throw InvariantViolation("accepted a JWT without a JSON header") }
        try expect(fields["alg"]?.stringValue == "RS256", "accepted a header that is not RS256")
        try expect(fields["kid"]?.stringValue == members["keyId"]?.stringValue, "the header's kid is not the answer's keyId")
    }
}
