/// The one ADC access token of a sidecar (docs/CONTRACT.md §4a) as a pure state machine, in
/// the `TokenEntry` manner: inputs with the monotonic time in, the action to carry out back.
///
/// | state        | input                          | next state          | action                     |
/// |--------------|--------------------------------|---------------------|----------------------------|
/// | empty        | request                        | fetching            | wait, start fetch          |
/// | fetching     | request                        | fetching            | wait                       |
/// | fresh        | request, before refresh point  | fresh               | serve                      |
/// | fresh        | request, in the refresh window | refreshing          | serve, start fetch         |
/// | fresh        | request, at or past the floor  | fetching            | wait, start fetch          |
/// | refreshing   | request, above the floor       | refreshing          | serve                      |
/// | refreshing   | request, at or past the floor  | fetching            | wait (fetch already runs)  |
/// | backing off  | request, before retry          | backing off         | serve the old token, or fail |
/// | backing off  | request, retry due             | fetching/refreshing | as empty / fresh in window |
/// | fetching, refreshing | fetch succeeded        | fresh               | answer waiters: token      |
/// | fetching, refreshing | fetch failed           | backing off         | answer waiters: failure    |
/// | any holding `t` | `t` refused (401)           | empty / fetching    | dropped                    |
///
/// The refresh point is 3 min 45 s before expiry whatever `--refresh-margin` says, as Google's
/// libraries do (the metadata server's own cache turns over 4 min before, so a later refresh
/// would get the same token back), and at most half the lifetime for a short token.
struct AccessTokenState: Sendable, Equatable {
    /// The token with its monotonic deadlines, fixed at receipt.
    struct Held: Sendable, Equatable, CustomStringConvertible {
        var value: String
        var refreshAt: Double
        /// From here the token is no longer handed out.
        var floorAt: Double
        var expiresAt: Double

        var description: String { "token …\(TokenFingerprint.of(value)) refreshAt \(refreshAt) floorAt \(floorAt) expiresAt \(expiresAt)" }
    }

    enum State: Sendable, Equatable {
        case empty
        case fetching
        case fresh(Held)
        case refreshing(Held)
        case backingOff(failure: ProxyFailure, retryAt: Double, kept: Held?)
    }

    enum RequestAction: Sendable, Equatable {
        case serve(Held)
        case serveAndStartRefresh(Held)
        case wait(startFetch: Bool)
        case fail(ProxyFailure)
    }

    enum FetchAction: Sendable, Equatable {
        /// Every queued caller gets this; a success is stored.
        case answerWaiters(Result<Held, ProxyFailure>)
    }

    enum RefusalAction: Sendable, Equatable {
        /// The refused token was the one held: it is gone, the next request fetches another.
        case dropped
    }

    /// Google's libraries refresh an access token this long before it expires.
    static let refreshAhead: Double = 225

    private(set) var state: State = .empty
    private(set) var failures = 0
    let backoff: BackoffPolicy
    /// A token is not handed out with less than this left (`--min-token-validity`), at most a
    /// quarter of its lifetime.
    let minValidity: Double

    init(backoff: BackoffPolicy = BackoffPolicy(), minValidity: Double = 60) {
        self.backoff = backoff
        self.minValidity = minValidity
    }

    mutating func request(now: Double) -> RequestAction {
        switch state {
        case .empty:
            state = .fetching
            return .wait(startFetch: true)
        case .fetching:
            return .wait(startFetch: false)
        case .fresh(let held):
            if now >= held.floorAt {
                state = .fetching
                return .wait(startFetch: true)
            }
            if now >= held.refreshAt {
                state = .refreshing(held)
                return .serveAndStartRefresh(held)
            }
            return .serve(held)
        case .refreshing(let held):
            if now >= held.floorAt {
                state = .fetching
                return .wait(startFetch: false)
            }
            return .serve(held)
        case .backingOff(let failure, let retryAt, let kept):
            let usable = kept.flatMap { now < $0.floorAt ? $0 : nil }
            if now < retryAt {
                if let usable { return .serve(usable) }
                return .fail(failure)
            }
            if let usable {
                state = .refreshing(usable)
                return .serveAndStartRefresh(usable)
            }
            state = .fetching
            return .wait(startFetch: true)
        }
    }

    /// The fetch in flight brought `token` at `now`; nil when none was in flight (stale).
    mutating func fetchSucceeded(_ token: AccessToken, now: Double) -> FetchAction? {
        guard isFetching else { return nil }
        let expiresAt = now + token.lifetime
        let held = Held(
            value: token.value,
            refreshAt: expiresAt - min(Self.refreshAhead, token.lifetime / 2),
            floorAt: expiresAt - min(minValidity, token.lifetime / 4),
            expiresAt: expiresAt)
        state = .fresh(held)
        failures = 0
        return .answerWaiters(.success(held))
    }

    /// The fetch in flight failed at `now`: backoff starts or steps up (`jitter` from [0, 1));
    /// a token being refreshed stays in use until its floor. Nil when none was in flight.
    mutating func fetchFailed(_ failure: ProxyFailure, now: Double, jitter: Double = 0) -> FetchAction? {
        let kept: Held?
        switch state {
        case .fetching: kept = nil
        case .refreshing(let held): kept = held
        case .empty, .fresh, .backingOff: return nil
        }
        failures += 1
        state = .backingOff(failure: failure, retryAt: now + backoff.delay(afterFailures: failures, jitter: jitter), kept: kept)
        return .answerWaiters(.failure(failure))
    }

    /// IAM or Fleet Engine answered 401 to `token`: drop it if it is the one held, so the next
    /// request fetches another. Nil when another token (or none) is held.
    mutating func refused(token: String) -> RefusalAction? {
        switch state {
        case .fresh(let held) where held.value == token:
            state = .empty
        case .refreshing(let held) where held.value == token:
            state = .fetching
        case .backingOff(let failure, let retryAt, let kept?) where kept.value == token:
            state = .backingOff(failure: failure, retryAt: retryAt, kept: nil)
        default:
            return nil
        }
        return .dropped
    }

    var isFetching: Bool {
        switch state {
        case .fetching, .refreshing: return true
        case .empty, .fresh, .backingOff: return false
        }
    }
}
