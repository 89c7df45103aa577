import FleetTokenProxy

/// `ProviderAnswer.parse` with `ExpiryValue` and `JWTClaims`, over any bytes a token provider
/// might answer. Promises: a token it accepts is 1 or more visible ASCII bytes (nothing that
/// could break the Authorization header it is put in) and its expiry is finite and later than
/// now, at most the JWT's own `exp` when it has one. And `JSONish.parse`, the reader under
/// both: what it accepts is UTF-8 and reads back the same after `jsonText` writes it.
public enum ProviderAnswerInvariant: ParserInvariant {
    public static let name = "provider-answer"
    /// A fixed "now" (2026-11-22T10:00:00Z) so a finding replays the same way.
    static let wallNow = 1_795_341_600.0

    public static func check(_ input: UnsafeRawBufferPointer) throws(InvariantViolation) {
        let body = Array(input)
        // Default field names, then names the seeds use, as an operator may configure them.
        for (tokenField, expiryField) in [(nil, nil), ("token", "expires_in"), ("jwt", "exp")] as [(String?, String?)] {
            guard case .success(let fetched) = ProviderAnswer.parse(
                body: body, tokenField: tokenField, expiryField: expiryField, wallNow: wallNow
            ) else { continue }
            try expect(!fetched.token.isEmpty && fetched.token.utf8.allSatisfy { $0 >= 0x21 && $0 <= 0x7E },
                       "accepted a token with a byte that is not visible ASCII")
            try expect(fetched.expiresAt.isFinite && fetched.expiresAt > wallNow, "accepted an expiry that is not in the future")
            try expect(fetched.claims == JWTClaims.decode(fetched.token), "carried claims that are not the token's")
            if let exp = JWTClaims.decode(fetched.token)?.exp {
                try expect(fetched.expiresAt <= exp, "held the token past its JWT exp")
            }
        }

        let text = String(decoding: input, as: UTF8.self)
        if let claims = JWTClaims.decode(text) {
            try expect(claims.exp.map { $0.isFinite } ?? true, "a JWT exp that is not finite")
            try expect(claims.iat.map { $0.isFinite } ?? true, "a JWT iat that is not finite")
        }
        if let value = JSONish.parse(body) {
            try expect(String(validating: body, as: UTF8.self) != nil, "accepted JSON text that is not UTF-8")
            try expect(JSONish.parse(Array(value.jsonText.utf8)) == value, "a value that does not read back from its jsonText")
            if let expiry = ExpiryValue.absoluteExpiry(from: value, wallNow: wallNow) {
                try expect(expiry.isFinite && expiry >= 0, "an expiry of \(expiry)")
            }
        }
        if let expiry = ExpiryValue.absoluteExpiry(from: text, wallNow: wallNow) {
            try expect(expiry.isFinite && expiry >= 0, "an expiry of \(expiry)")
        }
    }
}
