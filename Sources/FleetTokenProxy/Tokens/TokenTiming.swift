/// When a cached token is due for refresh and when it may no longer be attached (docs/CONTRACT.md §4).
struct TokenTiming: Sendable, Equatable {
    /// From `expiry − refreshMargin` a token is served while one background fetch replaces it.
    package var refreshMargin: Double
    /// A token is never attached with less than this left (`--min-token-validity`).
    var minValidity: Double
    /// The share of the refresh window (from `expiry − refreshMargin` to the floor) over which
    /// tokens' refresh points are spread at random, so a fleet whose tokens were fetched
    /// together is not refreshed together. Half keeps the later half of the window for
    /// retries with backoff.
    var refreshSpread: Double

    package init(refreshMargin: Double = 300, minValidity: Double = 60, refreshSpread: Double = 0.5) {
        self.refreshMargin = refreshMargin
        self.minValidity = minValidity
        self.refreshSpread = refreshSpread
    }

    /// The margins that apply to one token, shrunk for short-lived tokens.
    struct Window: Sendable, Equatable {
        /// Seconds before expiry from which the token is due for refresh.
        package var refreshMargin: Double
        /// Seconds before expiry from which the token is no longer attached.
        var floor: Double

        package init(refreshMargin: Double, floor: Double) {
            self.refreshMargin = refreshMargin
            self.floor = floor
        }
    }

    /// For a token that lives `lifetime` seconds as issued, the refresh margin shrinks to at
    /// most half of it and the minimum validity to at most a quarter, so a 60-second token
    /// is refreshed after 30 s and attached for 45 s instead of never.
    func window(lifetime: Double) -> Window {
        let lifetime = max(0, lifetime)
        return Window(refreshMargin: min(refreshMargin, lifetime / 2), floor: min(minValidity, lifetime / 4))
    }

    /// The refresh point of a token expiring at `expiresAt` with `window`, for `jitter` drawn
    /// uniformly from [0, 1): in the first `refreshSpread` of its refresh window.
    func refreshPoint(expiresAt: Double, window: Window, jitter: Double) -> Double {
        let jitter = min(max(jitter, 0), 1)
        let spread = max(0, window.refreshMargin - window.floor) * refreshSpread
        return expiresAt - window.refreshMargin + jitter * spread
    }

    /// The window for `token` received at `wallNow`.
    func window(for token: FetchedToken, wallNow: Double) -> Window {
        window(lifetime: Self.lifetime(of: token, wallNow: wallNow))
    }

    /// A token's lifetime as issued: from the JWT's `iat` to its expiry when it has one (so a
    /// token handed out late in its life is not mistaken for a short-lived one), otherwise
    /// what is left at receipt.
    package static func lifetime(of token: FetchedToken, wallNow: Double) -> Double {
        if let issuedAt = token.issuedAt, token.expiresAt > issuedAt {
            return token.expiresAt - issuedAt
        }
        return max(0, token.expiresAt - wallNow)
    }
}
