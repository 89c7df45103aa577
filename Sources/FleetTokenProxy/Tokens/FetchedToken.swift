/// A token as the provider handed it out, with the expiry the sidecar will hold it to.
public struct FetchedToken: Sendable, Equatable {
    /// The token itself: visible ASCII only, safe to put in an `Authorization` header.
    /// Never log it; use `TokenFingerprint.of(_:)` to tell tokens apart.
    public var token: String
    /// Wall-clock epoch seconds: the earlier of the provider's expiry and the JWT's `exp`.
    public var expiresAt: Double
    /// The JWT's `iat` in epoch seconds, if the token is a JWT that has one.
    public var issuedAt: Double?

    public init(token: String, expiresAt: Double, issuedAt: Double? = nil) {
        self.token = token
        self.expiresAt = expiresAt
        self.issuedAt = issuedAt
    }
}
