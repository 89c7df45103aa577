import FleetTokenProxy

/// `IDTokenAnswer.parse` over any bytes the metadata server's identity endpoint or the token
/// endpoint might answer (docs/CONTRACT.md §4a). Promises: an accepted token is 1 to 8192
/// visible ASCII bytes (it goes into the provider's `Authorization` header), a JWT whose `exp`
/// is after now, and lives exactly until that `exp`.
public enum IDTokenAnswerInvariant: ParserInvariant {
    public static let name = "id-token-answer"
    static let wallNow: Double = 1_767_225_600

    public static func check(_ input: UnsafeRawBufferPointer) throws(InvariantViolation) {
        if case .success(let token) = IDTokenAnswer.parse(Array(input), from: "the metadata server", wallNow: wallNow) {
            try checkAccepted(token)
        }
    }

    static func checkAccepted(_ token: AccessToken) throws(InvariantViolation) {
        try expect((1...8192).contains(token.value.utf8.count) && token.value.utf8.allSatisfy { $0 >= 0x21 && $0 <= 0x7E },
                   "accepted a token that is not 1 to 8192 visible ASCII bytes")
        let exp = JWTClaims.decode(token.value)?.exp
        try expect(exp != nil, "accepted a token that is not a JWT with exp")
        try expect(token.lifetime > 0 && token.lifetime == (exp ?? 0) - wallNow, "the lifetime is not what is left of exp")
    }
}
