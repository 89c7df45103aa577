/// One entity's place in the token cache, as a pure state machine: it stores no closures
/// and reads no clock. The cache feeds it inputs with the time and carries out the action
/// each input returns (fetch, serve, answer the waiters), so every transition can be tested
/// on its own.
///
/// | state      | input                          | next state      | action                   |
/// |------------|--------------------------------|-----------------|--------------------------|
/// | idle       | request                        | fetching(1)     | wait, start fetch        |
/// | fetching   | request                        | fetching(n + 1) | wait                     |
/// | fresh      | request before refresh window  | fresh           | serve                    |
/// | fresh      | request in refresh window      | refreshing      | serve, start refresh     |
/// | fresh      | request at or past floor       | fetching(1)     | wait, start fetch        |
/// | refreshing | request above floor            | refreshing      | serve                    |
/// | refreshing | request at or past floor       | fetching(1)     | wait (fetch already runs)|
/// | fetching   | fetch succeeded                | fresh           | answer waiters: token    |
/// | refreshing | fetch succeeded                | fresh (new)     | answer waiters (none)    |
/// | fetching   | fetch failed                   | idle            | answer waiters: failure  |
/// | refreshing | fetch failed                   | fresh (old)     | answer waiters (none)    |
///
/// A token that arrives already at its floor counts as a failed fetch.
/// A fresh token at or past its floor has expired: the next request goes back to fetching.
/// Times are monotonic seconds; the wall clock is only used to turn the provider's absolute
/// expiry into a monotonic one at receipt.
public struct TokenEntry: Sendable {
    /// A token being served, with monotonic deadlines fixed at receipt.
    public struct HeldToken: Sendable, Equatable, CustomStringConvertible {
        public var value: String
        /// From here the token is due for refresh.
        public var refreshAt: Double
        /// From here (`expiresAt − floor`) the token is no longer served.
        public var floorAt: Double
        public var expiresAt: Double

        public init(value: String, refreshAt: Double, floorAt: Double, expiresAt: Double) {
            self.value = value
            self.refreshAt = refreshAt
            self.floorAt = floorAt
            self.expiresAt = expiresAt
        }

        /// Never shows the token, so a state can be logged or printed by a failing test.
        public var description: String {
            "token …\(TokenFingerprint.of(value)) refreshAt \(refreshAt) floorAt \(floorAt) expiresAt \(expiresAt)"
        }

        func isUsable(at now: Double) -> Bool { now < floorAt }
        func isDueForRefresh(at now: Double) -> Bool { now >= refreshAt }
    }

    public enum State: Sendable, Equatable {
        /// No token and no fetch: never asked, or the last fetch failed.
        case idle
        /// One fetch in flight and no token that may be served; `waiters` calls wait for it.
        case fetching(waiters: Int)
        /// A token served as is.
        case fresh(HeldToken)
        /// A token still served while one background fetch replaces it.
        case refreshing(HeldToken)
    }

    /// What the cache does for a call that wants the token.
    public enum RequestAction: Sendable, Equatable {
        /// Answer the call with this token now.
        case serve(String)
        /// Answer the call with this token now and start one background fetch.
        case serveAndStartRefresh(String)
        /// Queue the call until the fetch in flight ends; start that fetch if `startFetch`.
        case wait(startFetch: Bool)
    }

    /// What the cache does when the fetch in flight ends.
    public enum FetchAction: Sendable, Equatable {
        /// Answer every queued call (there may be none) with this result. A success has been
        /// stored; a failure means the provider gave nothing usable and nothing was stored.
        case answerWaiters(Result<String, ProxyFailure>)
        /// No fetch was in flight: a stale completion, dropped.
        case ignore
    }

    public private(set) var state: State = .idle
    public let timing: TokenTiming

    public init(timing: TokenTiming) {
        self.timing = timing
    }

    /// True while a fetch started for this entry has not ended.
    public var isFetching: Bool {
        switch state {
        case .fetching, .refreshing: return true
        case .idle, .fresh: return false
        }
    }

    /// A call wants the token at monotonic time `now`.
    public mutating func request(now: Double) -> RequestAction {
        switch state {
        case .idle:
            state = .fetching(waiters: 1)
            return .wait(startFetch: true)

        case .fetching(let waiters):
            state = .fetching(waiters: waiters + 1)
            return .wait(startFetch: false)

        case .fresh(let held):
            if !held.isUsable(at: now) {
                state = .fetching(waiters: 1)
                return .wait(startFetch: true)
            }
            if held.isDueForRefresh(at: now) {
                state = .refreshing(held)
                return .serveAndStartRefresh(held.value)
            }
            return .serve(held.value)

        case .refreshing(let held):
            if !held.isUsable(at: now) {
                // The background fetch is still running; it now has a waiter.
                state = .fetching(waiters: 1)
                return .wait(startFetch: false)
            }
            return .serve(held.value)
        }
    }

    /// The fetch in flight returned `fetched`, at monotonic `now` and wall-clock `wallNow`.
    public mutating func fetchSucceeded(_ fetched: FetchedToken, now: Double, wallNow: Double) -> FetchAction {
        guard isFetching else { return .ignore }
        let window = timing.window(for: fetched, wallNow: wallNow)
        let expiresAt = now + (fetched.expiresAt - wallNow)
        let held = HeldToken(
            value: fetched.token,
            refreshAt: expiresAt - window.refreshMargin,
            floorAt: expiresAt - window.floor,
            expiresAt: expiresAt
        )
        guard held.isUsable(at: now) else {
            return fetchFailed(.providerAnswerUnusable("provider answer's token has less than the minimum validity left"))
        }
        state = .fresh(held)
        return .answerWaiters(.success(held.value))
    }

    /// The fetch in flight failed. Nothing is stored; a token still being served during a
    /// refresh stays until its floor, and the next call in the refresh window tries again.
    public mutating func fetchFailed(_ failure: ProxyFailure) -> FetchAction {
        switch state {
        case .idle, .fresh:
            return .ignore
        case .fetching:
            state = .idle
        case .refreshing(let held):
            state = .fresh(held)
        }
        return .answerWaiters(.failure(failure))
    }
}
