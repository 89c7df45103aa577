/// When a cached token is due for refresh and when it may no longer be attached (SPEC §4).
public struct TokenTiming: Sendable, Equatable {
    /// From `expiry − refreshMargin` a token is served while one background fetch replaces it.
    public var refreshMargin: Double
    /// A token is never attached with less than this left (`--min-token-validity`).
    public var minValidity: Double

    public init(refreshMargin: Double = 300, minValidity: Double = 60) {
        self.refreshMargin = refreshMargin
        self.minValidity = minValidity
    }

    /// The margins that apply to one token, shrunk for short-lived tokens.
    public struct Window: Sendable, Equatable {
        /// Seconds before expiry from which the token is due for refresh.
        public var refreshMargin: Double
        /// Seconds before expiry from which the token is no longer attached.
        public var floor: Double

        public init(refreshMargin: Double, floor: Double) {
            self.refreshMargin = refreshMargin
            self.floor = floor
        }
    }

    /// For a token that lives `lifetime` seconds as issued, the refresh margin shrinks to at
    /// most half of it and the minimum validity to at most a quarter, so a 60-second token
    /// is refreshed after 30 s and attached for 45 s instead of never.
    public func window(lifetime: Double) -> Window {
        let lifetime = max(0, lifetime)
        return Window(refreshMargin: min(refreshMargin, lifetime / 2), floor: min(minValidity, lifetime / 4))
    }

    /// The window for `token` received at `wallNow`.
    public func window(for token: FetchedToken, wallNow: Double) -> Window {
        window(lifetime: Self.lifetime(of: token, wallNow: wallNow))
    }

    /// A token's lifetime as issued: from the JWT's `iat` to its expiry when it has one (so a
    /// token handed out late in its life is not mistaken for a short-lived one), otherwise
    /// what is left at receipt.
    public static func lifetime(of token: FetchedToken, wallNow: Double) -> Double {
        if let issuedAt = token.issuedAt, token.expiresAt > issuedAt {
            return token.expiresAt - issuedAt
        }
        return max(0, token.expiresAt - wallNow)
    }
}
