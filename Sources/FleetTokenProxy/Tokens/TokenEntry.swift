/// One entity's place in the token cache, as a pure state machine: it stores no closures
/// and reads no clock. The cache feeds it inputs with the time (and, where a choice is made
/// at random, a number drawn from [0, 1)) and carries out the action each input returns
/// (fetch, serve, answer the waiters, arm a timer, drop the entity), so every transition can
/// be tested on its own.
///
/// Calls (`request`):
///
/// | state         | when                                  | next state      | action                    |
/// |---------------|---------------------------------------|-----------------|---------------------------|
/// | idle          |                                       | fetching(1)     | wait, start fetch         |
/// | fetching(n)   | n < maxWaiters                        | fetching(n + 1) | wait                      |
/// | fetching(n)   | n = maxWaiters                        | fetching(n)     | refuse: too many waiting  |
/// | fresh         | before the refresh point              | fresh           | serve                     |
/// | fresh         | in the refresh window                 | refreshing      | serve, start refresh      |
/// | fresh         | at or past the floor (expired)        | fetching(1)     | wait, start fetch         |
/// | refreshing    | above the floor                       | refreshing      | serve                     |
/// | refreshing    | at or past the floor                  | fetching(1)     | wait (fetch already runs) |
/// | backing off   | before retry, token above floor       | backing off     | serve                     |
/// | backing off   | before retry, no usable token         | backing off     | fail at once: last error  |
/// | backing off   | retry due, token above floor          | refreshing      | serve, start probe        |
/// | backing off   | retry due, no usable token            | fetching(1)     | wait, start probe         |
///
/// Fetch results (`fetchSucceeded`, `fetchFailed`); in any other state they are stale and
/// return nil:
///
/// | state         | input                    | next state                      | action                  |
/// |---------------|--------------------------|---------------------------------|-------------------------|
/// | fetching      | success                  | fresh                           | answer waiters: token   |
/// | refreshing    | success                  | fresh (new token)               | answer waiters (none)   |
/// | fetching      | failure, or token at floor | backing off (no token)        | answer waiters: failure |
/// | refreshing    | failure, or token at floor | backing off (old token)       | answer waiters (none)   |
///
/// Timers (`timerDue`), run by the cache unless refresh is lazy:
///
/// | state         | when                                  | next state      | action                    |
/// |---------------|---------------------------------------|-----------------|---------------------------|
/// | fresh         | before the refresh point              | fresh           | sleep until it            |
/// | fresh         | refresh due, recently used            | refreshing      | start refresh             |
/// | fresh         | refresh due, not recently used        | fresh           | sleep until the floor     |
/// | fresh         | expired, not recently used            | —               | drop                      |
/// | backing off   | token usable, before retry            | backing off     | sleep until retry         |
/// | backing off   | token usable, retry due, recently used | refreshing     | start probe               |
/// | backing off   | token usable, retry due, not used     | backing off     | sleep until the floor     |
/// | backing off   | no usable token, recently used        | backing off     | sleep (a call probes)     |
/// | backing off   | no usable token, not recently used    | —               | drop                      |
/// | idle          | recently used / not                   | idle / —        | sleep / drop              |
/// | fetching, refreshing |                                | same            | nil (the fetch's end re-arms) |
///
/// `invalidate(token:now:)` (Fleet Engine refused the token):
///
/// | state         | when                                            | next state            | outcome  |
/// |---------------|-------------------------------------------------|-----------------------|----------|
/// | fresh         | token held, hold-off over                       | idle                  | dropped  |
/// | refreshing    | token held, hold-off over                       | fetching(0)           | dropped  |
/// | backing off   | token held, hold-off over                       | backing off, no token | dropped  |
/// | any           | another token held, or none                     | same                  | nil      |
/// | any           | token held, last drop < `invalidationHoldOff` ago | same                | tooSoon  |
///
/// The hold-off bounds what a client that can make Fleet Engine answer 401 at will costs:
/// one provider fetch per entity per `invalidationHoldOff`, not one per call. (An entity the
/// cache drops starts again without a hold-off; pushing it out takes fetches of other
/// entities, which cost as much.)
///
/// **Recently used** means a call wanted the token less than one token lifetime ago (the
/// lifetime, as issued, of the entity's last token; ten minutes before it had one). Such an
/// entity is refreshed ahead on a timer; one idle for a whole lifetime is refreshed at most
/// once more, then left to expire and dropped.
///
/// "Expired" is not a stored state: a fresh token is expired from its floor on, which only
/// time decides (`phase(at:)` names it). Times are monotonic seconds; the wall clock is only
/// used to turn the provider's absolute expiry into a monotonic one at receipt.
struct TokenEntry: Sendable {
    /// A token being served, with monotonic deadlines fixed at receipt.
    struct HeldToken: Sendable, Equatable, CustomStringConvertible {
        package var value: String
        /// From here the token is due for refresh.
        var refreshAt: Double
        /// From here (`expiresAt − floor`) the token is no longer served.
        var floorAt: Double
        package var expiresAt: Double

        package init(value: String, refreshAt: Double, floorAt: Double, expiresAt: Double) {
            self.value = value
            self.refreshAt = refreshAt
            self.floorAt = floorAt
            self.expiresAt = expiresAt
        }

        /// Never shows the token, so a state can be logged or printed by a failing test.
        package var description: String {
            "token …\(TokenFingerprint.of(value)) refreshAt \(refreshAt) floorAt \(floorAt) expiresAt \(expiresAt)"
        }

        func isUsable(at now: Double) -> Bool { now < floorAt }
        func isDueForRefresh(at now: Double) -> Bool { now >= refreshAt }
    }

    /// After a failed fetch: calls are answered from here without asking the provider until
    /// `retryAt`, when one probe goes out.
    struct Backoff: Sendable, Equatable {
        /// What the last fetch failed with; calls without a usable token get it at once.
        package var failure: ProxyFailure
        /// From here the next call, or the timer, sends one probe to the provider.
        var retryAt: Double
        /// The token being replaced when the refresh failed, served until its floor.
        package var token: HeldToken?

        package init(failure: ProxyFailure, retryAt: Double, token: HeldToken? = nil) {
            self.failure = failure
            self.retryAt = retryAt
            self.token = token
        }
    }

    enum State: Sendable, Equatable {
        /// No token and no fetch: never asked, or the token was invalidated.
        case idle
        /// One fetch in flight and no token that may be served; `waiters` calls wait for it.
        case fetching(waiters: Int)
        /// A token served as is.
        case fresh(HeldToken)
        /// A token still served while one background fetch replaces it.
        case refreshing(HeldToken)
        /// The last fetch failed; the provider is left alone until `retryAt`. Boxed: a
        /// backoff (rare) is larger than a held token, and every cached entity would pay for
        /// the largest case.
        indirect case backingOff(Backoff)
    }

    /// The state as an operator would name it at a given time (for tests, logs and metrics).
    enum Phase: String, Sendable, Equatable {
        case absent, fetching, fresh, refreshDue, refreshing, backingOff, expired
    }

    /// What the cache does for a call that wants the token.
    enum RequestAction: Sendable, Equatable {
        /// Answer the call with this token now.
        case serve(String)
        /// Answer the call with this token now and start one background fetch.
        case serveAndStartRefresh(String)
        /// Queue the call until the fetch in flight ends; start that fetch if `startFetch`.
        case wait(startFetch: Bool)
        /// Answer the call at once with this failure (the last fetch's, during backoff).
        case fail(ProxyFailure)
        /// `maxWaiters` calls already wait for the fetch: answer this one at once.
        case tooManyWaiters
    }

    /// What the cache does when the fetch in flight ends.
    enum FetchAction: Sendable, Equatable {
        /// Answer every queued call (there may be none) with this result. A success has been
        /// stored; a failure means the provider gave nothing usable and nothing was stored.
        case answerWaiters(Result<String, ProxyFailure>)
    }

    /// What came of `invalidate(token:now:)`.
    enum InvalidationOutcome: Sendable, Equatable {
        /// The token was dropped: the next call waits for a new one.
        case dropped
        /// The token is held, but one was dropped less than `invalidationHoldOff` ago: it is
        /// kept, and calls go on being served with it, until `until`.
        case tooSoon(until: Double)
    }

    /// What the cache does when the entity's timer fires.
    enum TimerAction: Sendable, Equatable {
        /// Start one background fetch (a refresh ahead, or a backoff probe).
        case startFetch
        /// The entity is idle and holds nothing worth keeping: remove it from the cache.
        case drop
        /// Nothing to do before this monotonic time: run the timer again then.
        case sleep(until: Double)
    }

    /// Calls that may wait for one entity's fetch; past it calls are refused at once, so a
    /// stuck provider cannot make one entity hold unbounded memory.
    static let defaultMaxWaiters = 1024
    /// How long an entity that never had a token counts as recently used.
    static let defaultRecentUse: Double = 600
    /// Seconds after a token was dropped on a 401 during which a refusal of the next token is
    /// not honoured. A client able to provoke 401s (a malformed call Fleet Engine answers
    /// UNAUTHENTICATED, say) would otherwise make every call of the entity a provider fetch;
    /// 30 s keeps that to two fetches a minute while a key rotation or a revoked token is still
    /// healed within the half minute.
    static let invalidationHoldOff: Double = 30

    /// The settings every entry of a cache shares, held once by reference rather than copied
    /// into each of 100k entries.
    final class Policy: Sendable {
        let timing: TokenTiming
        package let backoff: BackoffPolicy
        let maxWaiters: Int

        package init(timing: TokenTiming, backoff: BackoffPolicy = BackoffPolicy(), maxWaiters: Int = TokenEntry.defaultMaxWaiters) {
            self.timing = timing
            self.backoff = backoff
            self.maxWaiters = maxWaiters
        }
    }

    // Stored compactly (an entry is kept per cached entity): "never" is -infinity rather than
    // an optional, which would take 16 bytes instead of 8 each.
    package private(set) var state: State = .idle
    private var failures: Int32 = 0
    private var lastUsed = -Double.infinity
    /// How long after its last call the entity counts as recently used: the lifetime, as
    /// issued, of its last token.
    private(set) var recentUse = TokenEntry.defaultRecentUse
    private var lastInvalidated = -Double.infinity
    let policy: Policy

    /// Fetches that failed in a row; sets the backoff step. Zero after a success.
    var consecutiveFailures: Int { Int(failures) }
    /// Monotonic time of the last call that wanted the token.
    var lastUsedAt: Double? { lastUsed == -.infinity ? nil : lastUsed }
    /// Monotonic time a token of this entity was last dropped by `invalidate`.
    var lastInvalidatedAt: Double? { lastInvalidated == -.infinity ? nil : lastInvalidated }
    var timing: TokenTiming { policy.timing }
    package var backoff: BackoffPolicy { policy.backoff }
    var maxWaiters: Int { policy.maxWaiters }

    package init(timing: TokenTiming, backoff: BackoffPolicy = BackoffPolicy(), maxWaiters: Int = TokenEntry.defaultMaxWaiters) {
        self.init(policy: Policy(timing: timing, backoff: backoff, maxWaiters: maxWaiters))
    }

    package init(policy: Policy) {
        self.policy = policy
    }

    /// True while a fetch started for this entry has not ended.
    var isFetching: Bool {
        switch state {
        case .fetching, .refreshing: return true
        case .idle, .fresh, .backingOff: return false
        }
    }

    /// A call wanted the token less than `recentUse` seconds before `now`.
    func isRecentlyUsed(at now: Double) -> Bool {
        guard let lastUsedAt else { return false }
        return now - lastUsedAt < recentUse
    }

    /// Nothing worth keeping at `now`: no fetch, no token that may still be served, and no
    /// recent call. The cache drops such an entry.
    func isDisposable(at now: Double) -> Bool {
        !isFetching && usableToken(at: now) == nil && !isRecentlyUsed(at: now)
    }

    func phase(at now: Double) -> Phase {
        switch state {
        case .idle: return .absent
        case .fetching: return .fetching
        case .refreshing: return .refreshing
        case .backingOff: return .backingOff
        case .fresh(let held):
            if !held.isUsable(at: now) { return .expired }
            return held.isDueForRefresh(at: now) ? .refreshDue : .fresh
        }
    }

    /// The token a call at `now` could be given, whatever the state.
    private func usableToken(at now: Double) -> HeldToken? {
        let held: HeldToken?
        switch state {
        case .fresh(let token), .refreshing(let token): held = token
        case .backingOff(let backoff): held = backoff.token
        case .idle, .fetching: held = nil
        }
        return held.flatMap { $0.isUsable(at: now) ? $0 : nil }
    }

    // MARK: Inputs

    /// A call wants the token at monotonic time `now`.
    package mutating func request(now: Double) -> RequestAction {
        lastUsed = now
        switch state {
        case .idle:
            state = .fetching(waiters: 1)
            return .wait(startFetch: true)

        case .fetching(let waiters):
            guard waiters < maxWaiters else { return .tooManyWaiters }
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

        case .backingOff(let backoff):
            let token = backoff.token.flatMap { $0.isUsable(at: now) ? $0 : nil }
            if now < backoff.retryAt {
                if let token { return .serve(token.value) }
                return .fail(backoff.failure)
            }
            // The step is over: this call sends the one probe of the step.
            if let token {
                state = .refreshing(token)
                return .serveAndStartRefresh(token.value)
            }
            state = .fetching(waiters: 1)
            return .wait(startFetch: true)
        }
    }

    /// The fetch in flight returned `fetched`, at monotonic `now` and wall-clock `wallNow`.
    /// `jitter`, from [0, 1), places the refresh point in the first part of the refresh window
    /// (and the backoff step, if the token is refused). Nil when no fetch was in flight: a
    /// stale completion, dropped.
    mutating func fetchSucceeded(_ fetched: FetchedToken, now: Double, wallNow: Double, jitter: Double = 0) -> FetchAction? {
        guard isFetching else { return nil }
        let window = timing.window(for: fetched, wallNow: wallNow)
        let expiresAt = now + (fetched.expiresAt - wallNow)
        let floorAt = expiresAt - window.floor
        var refreshAt = timing.refreshPoint(expiresAt: expiresAt, window: window, jitter: jitter)
        if refreshAt <= now {
            // Handed out late in its life: refreshing at once would fetch again and again
            // while the provider keeps answering the same token; halve what is left instead.
            refreshAt = now + (floorAt - now) / 2
        }
        let held = HeldToken(value: fetched.token, refreshAt: refreshAt, floorAt: floorAt, expiresAt: expiresAt)
        guard held.isUsable(at: now) else {
            return fetchFailed(
                .providerAnswerUnusable("provider answer's token has less than the minimum validity left"),
                now: now, jitter: jitter)
        }
        state = .fresh(held)
        failures = 0
        recentUse = TokenTiming.lifetime(of: fetched, wallNow: wallNow)
        return .answerWaiters(.success(held.value))
    }

    /// The fetch in flight failed at `now`: backoff starts, or steps up, with `jitter` from
    /// [0, 1). Nothing is stored; a token still being served during a refresh stays until its
    /// floor. Nil when no fetch was in flight: a stale completion, dropped.
    mutating func fetchFailed(_ failure: ProxyFailure, now: Double, jitter: Double = 0) -> FetchAction? {
        let kept: HeldToken?
        switch state {
        case .idle, .fresh, .backingOff:
            return nil
        case .fetching:
            kept = nil
        case .refreshing(let held):
            kept = held
        }
        // Saturating: a count past two billion steps at the longest backoff all the same.
        failures = failures == .max ? .max : failures + 1
        let retryAt = now + backoff.delay(afterFailures: consecutiveFailures, jitter: jitter)
        state = .backingOff(Backoff(failure: failure, retryAt: retryAt, token: kept))
        return .answerWaiters(.failure(failure))
    }

    /// Fleet Engine refused `token` (401, `UNAUTHENTICATED`) at monotonic `now`: forget it if
    /// it is still the one held and no token was dropped in the last `invalidationHoldOff`,
    /// so the next call fetches another. Nil when the refused token is not the one held
    /// (already replaced, or none): nothing changed.
    mutating func invalidate(token: String, now: Double) -> InvalidationOutcome? {
        let held: HeldToken?
        switch state {
        case .fresh(let token), .refreshing(let token): held = token
        case .backingOff(let backoff): held = backoff.token
        case .idle, .fetching: held = nil
        }
        guard held?.value == token else { return nil }
        if let lastInvalidatedAt, now < lastInvalidatedAt + Self.invalidationHoldOff {
            return .tooSoon(until: lastInvalidatedAt + Self.invalidationHoldOff)
        }
        switch state {
        case .fresh:
            state = .idle
        case .refreshing:
            // The fetch in flight brings the replacement; calls now wait for it.
            state = .fetching(waiters: 0)
        case .backingOff(var backoff):
            backoff.token = nil
            state = .backingOff(backoff)
        case .idle, .fetching:
            return nil
        }
        lastInvalidated = now
        return .dropped
    }

    /// The entity's timer fired at `now`. Nil while a fetch is in flight: its end arms the next
    /// timer.
    mutating func timerDue(now: Double) -> TimerAction? {
        switch state {
        case .fetching, .refreshing:
            return nil

        case .idle:
            if isRecentlyUsed(at: now), let lastUsedAt { return .sleep(until: lastUsedAt + recentUse) }
            return .drop

        case .fresh(let held):
            if now < held.refreshAt { return .sleep(until: held.refreshAt) }
            if isRecentlyUsed(at: now) {
                state = held.isUsable(at: now) ? .refreshing(held) : .fetching(waiters: 0)
                return .startFetch
            }
            return held.isUsable(at: now) ? .sleep(until: held.floorAt) : .drop

        case .backingOff(let backoff):
            if let token = backoff.token, token.isUsable(at: now) {
                if now < backoff.retryAt { return .sleep(until: backoff.retryAt) }
                if isRecentlyUsed(at: now) {
                    state = .refreshing(token)
                    return .startFetch
                }
                return .sleep(until: token.floorAt)
            }
            // Nothing to renew: the next call sends the probe, so a client that stopped
            // calling costs the provider nothing, and a call is answered by what the provider
            // says then, not by a background probe's older failure.
            if isRecentlyUsed(at: now), let lastUsedAt { return .sleep(until: lastUsedAt + recentUse) }
            return .drop
        }
    }
}
