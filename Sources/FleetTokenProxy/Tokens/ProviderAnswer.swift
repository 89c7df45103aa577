/// Reads the token provider's JSON answer (docs/CONTRACT.md §4) into a token and the expiry the sidecar
/// will hold it to. Every refusal names the field or the problem, never the token or the
/// body, because the message may reach a log line or a client.
package enum ProviderAnswer {
    /// Tried in order when no token field is configured.
    static let defaultTokenFields = ["token", "jwt", "access_token"]
    /// Tried in order when no expiry field is configured.
    static let defaultExpiryFields = [
        "expirationTimestamp", "expiration", "expires_at", "expiresInSeconds", "expires_in", "TOKEN_EXPIRATION",
    ]

    package static func parse(
        body: [UInt8],
        tokenField: String?,
        expiryField: String?,
        wallNow: Double
    ) -> Result<FetchedToken, ProxyFailure> {
        // A bare scalar is "not JSON", as JSONSerialization (used here before) said of it.
        guard let parsed = JSONish.parse(body), parsed.isContainer else {
            return unusable("provider answer is not JSON")
        }
        guard case .object(let object) = parsed else {
            return unusable("provider answer is not a JSON object")
        }

        let tokenCandidates = tokenField.map { [$0] } ?? defaultTokenFields
        guard let (tokenName, tokenValue) = firstPresent(tokenCandidates, in: object) else {
            return unusable("provider answer has no token field (looked for \(quoted(tokenCandidates)))")
        }
        guard let token = tokenValue.stringValue else {
            return unusable("provider answer field \"\(tokenName)\" is not a string")
        }
        guard !token.isEmpty else {
            return unusable("provider answer field \"\(tokenName)\" is empty")
        }
        // Visible ASCII only: anything else, CR and LF above all, would let the provider
        // inject header lines into the call forwarded to Fleet Engine.
        // (Over the contiguous bytes a String read from JSON has: a UTF8View walked byte by
        // byte costs tens of instructions a byte.)
        guard token.utf8.withContiguousStorageIfAvailable({ $0.allSatisfy(ASCII.isVisible) })
            ?? token.utf8.allSatisfy(ASCII.isVisible) else {
            return unusable("provider answer field \"\(tokenName)\" has characters not allowed in an Authorization header")
        }

        let claims = JWTClaims.decode(token)
        var expiry: Double? = claims?.exp

        let expiryCandidates = expiryField.map { [$0] } ?? defaultExpiryFields
        if let (expiryName, expiryValue) = firstPresent(expiryCandidates, in: object) {
            // An unreadable expiry is refused rather than skipped: the operator's provider
            // and the sidecar disagree about the format, and guessing could cache too long.
            guard let fieldExpiry = ExpiryValue.absoluteExpiry(from: expiryValue, wallNow: wallNow) else {
                return unusable("provider answer field \"\(expiryName)\" is not an expiry (a number or an RFC 3339 time)")
            }
            expiry = min(expiry ?? fieldExpiry, fieldExpiry)
        }

        guard let expiresAt = expiry else {
            return unusable(
                "provider answer has no expiry: no field of \(quoted(expiryCandidates)) and the token is not a JWT with exp"
            )
        }
        guard expiresAt > wallNow else {
            return unusable("provider answer's token expired \(Int((wallNow - expiresAt).rounded())) s ago")
        }
        return .success(FetchedToken(token: token, expiresAt: expiresAt, issuedAt: claims?.iat, claims: claims))
    }

    /// The first of `names` present in `object` with a non-null value.
    private static func firstPresent(_ names: [String], in object: [String: JSONish]) -> (String, JSONish)? {
        for name in names {
            if let value = object[name], value != .null { return (name, value) }
        }
        return nil
    }

    private static func quoted(_ names: [String]) -> String {
        names.map { "\"\($0)\"" }.joined(separator: ", ")
    }

    private static func unusable(_ message: String) -> Result<FetchedToken, ProxyFailure> {
        .failure(.providerAnswerUnusable(message))
    }
}
