/// A token as the provider handed it out, with the expiry the sidecar will hold it to.
package struct FetchedToken: Sendable, Equatable {
    /// The token itself: visible ASCII only, safe to put in an `Authorization` header.
    /// Never log it; use `TokenFingerprint.of(_:)` to tell tokens apart.
    package var token: String
    /// Wall-clock epoch seconds: the earlier of the provider's expiry and the JWT's `exp`.
    package var expiresAt: Double
    /// The JWT's `iat` in epoch seconds, if the token is a JWT that has one.
    package var issuedAt: Double?
    /// The JWT's claims as `ProviderAnswer` decoded them, so `TokenScopeCheck` need not decode
    /// them again (a decode is most of a cold miss's CPU); nil for an opaque token, or when
    /// the value was made without them. Derived from `token`, so not part of equality.
    package var claims: JWTClaims?
    /// An OAuth access token from ADC (`--signer adc`): opaque by design, so the JWT claim
    /// check (`TokenScopeCheck`) does not read it, whatever it looks like.
    package var isOpaqueAccessToken: Bool
    /// Who handed the token out, for a claim check's refusal ("token provider", "IAM signJwt").
    package var answeredBy: StaticString = "token provider"

    package init(token: String, expiresAt: Double, issuedAt: Double? = nil, claims: JWTClaims? = nil, isOpaqueAccessToken: Bool = false) {
        self.token = token
        self.expiresAt = expiresAt
        self.issuedAt = issuedAt
        self.claims = claims
        self.isOpaqueAccessToken = isOpaqueAccessToken
    }

    package static func == (lhs: FetchedToken, rhs: FetchedToken) -> Bool {
        lhs.token == rhs.token && lhs.expiresAt == rhs.expiresAt && lhs.issuedAt == rhs.issuedAt
    }
}
