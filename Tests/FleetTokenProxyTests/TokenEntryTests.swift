import XCTest
@testable import FleetTokenProxy

/// Every transition of the token entry state machine, with times passed in by hand.
/// Monotonic time starts at 1 000 and wall time at 1.8e9 so a mix-up between them shows.
final class TokenEntryTests: XCTestCase {
    let mono = 1_000.0
    let wall = 1_800_000_000.0
    let failure = ProxyFailure.providerUnavailable("provider timed out")

    /// A one-hour token received at `mono`: refresh from +3300, floor at +3540, expiry +3600.
    private func hourToken(_ value: String = "tok-1") -> FetchedToken {
        FetchedToken(token: value, expiresAt: wall + 3600, issuedAt: wall)
    }

    private var heldHourToken: TokenEntry.HeldToken {
        TokenEntry.HeldToken(value: "tok-1", refreshAt: mono + 3300, floorAt: mono + 3540, expiresAt: mono + 3600)
    }

    private enum Start {
        case idle, fetching, fresh, refreshing
        /// The first fetch failed at `mono`: retry at +1, no token.
        case backingOff
        /// The refresh started at +3300 failed at +3300: retry at +3301, the old token kept.
        case backingOffWithToken
    }

    private func entry(in start: Start, maxWaiters: Int = TokenEntry.defaultMaxWaiters) -> TokenEntry {
        var entry = TokenEntry(timing: TokenTiming(), maxWaiters: maxWaiters)
        switch start {
        case .idle:
            break
        case .fetching:
            _ = entry.request(now: mono)
        case .fresh:
            _ = entry.request(now: mono)
            _ = entry.fetchSucceeded(hourToken(), now: mono, wallNow: wall)
        case .refreshing:
            _ = entry.request(now: mono)
            _ = entry.fetchSucceeded(hourToken(), now: mono, wallNow: wall)
            _ = entry.request(now: mono + 3300)
        case .backingOff:
            _ = entry.request(now: mono)
            _ = entry.fetchFailed(failure, now: mono)
        case .backingOffWithToken:
            _ = entry.request(now: mono)
            _ = entry.fetchSucceeded(hourToken(), now: mono, wallNow: wall)
            _ = entry.request(now: mono + 3300)
            _ = entry.fetchFailed(failure, now: mono + 3300)
        }
        return entry
    }

    // MARK: idle (absent)

    func testFirstRequestStartsAFetchAndWaits() {
        var entry = entry(in: .idle)
        XCTAssertEqual(entry.state, .idle)
        XCTAssertEqual(entry.phase(at: mono), .absent)
        XCTAssertFalse(entry.isFetching)
        XCTAssertEqual(entry.request(now: mono), .wait(startFetch: true))
        XCTAssertEqual(entry.state, .fetching(waiters: 1))
        XCTAssertEqual(entry.phase(at: mono), .fetching)
        XCTAssertTrue(entry.isFetching)
    }

    func testFetchResultWithNoFetchInFlightIsIgnored() {
        for start in [Start.idle, .fresh, .backingOff, .backingOffWithToken] {
            var entry = entry(in: start)
            let before = entry.state
            XCTAssertNil(entry.fetchSucceeded(hourToken("other"), now: mono, wallNow: wall), "\(start)")
            XCTAssertNil(entry.fetchFailed(failure, now: mono), "\(start)")
            XCTAssertEqual(entry.state, before, "\(start)")
        }
    }

    // MARK: fetching with waiters

    func testRequestsDuringAFetchJoinIt() {
        var entry = entry(in: .fetching)
        XCTAssertEqual(entry.request(now: mono), .wait(startFetch: false))
        XCTAssertEqual(entry.request(now: mono + 1), .wait(startFetch: false))
        XCTAssertEqual(entry.state, .fetching(waiters: 3))
    }

    func testRequestPastTheWaiterBoundIsRefusedAndLeavesTheFetchAlone() {
        var entry = entry(in: .fetching, maxWaiters: 3)
        XCTAssertEqual(entry.request(now: mono), .wait(startFetch: false))
        XCTAssertEqual(entry.request(now: mono), .wait(startFetch: false))
        XCTAssertEqual(entry.request(now: mono), .tooManyWaiters)
        XCTAssertEqual(entry.request(now: mono), .tooManyWaiters)
        XCTAssertEqual(entry.state, .fetching(waiters: 3))
        XCTAssertEqual(entry.fetchSucceeded(hourToken(), now: mono, wallNow: wall), .answerWaiters(.success("tok-1")))
        XCTAssertEqual(entry.request(now: mono), .serve("tok-1"))
    }

    func testFetchSuccessStoresTokenWithMonotonicDeadlinesAndAnswersWaiters() {
        var entry = entry(in: .fetching)
        XCTAssertEqual(entry.fetchSucceeded(hourToken(), now: mono, wallNow: wall), .answerWaiters(.success("tok-1")))
        XCTAssertEqual(entry.state, .fresh(heldHourToken))
        XCTAssertEqual(entry.phase(at: mono), .fresh)
        XCTAssertFalse(entry.isFetching)
    }

    func testFetchFailureAnswersWaitersStoresNothingAndBacksOffOneSecond() {
        var entry = entry(in: .fetching)
        XCTAssertEqual(entry.fetchFailed(failure, now: mono + 2), .answerWaiters(.failure(failure)))
        XCTAssertEqual(entry.state, .backingOff(.init(failure: failure, retryAt: mono + 3)))
        XCTAssertEqual(entry.phase(at: mono + 2), .backingOff)
        XCTAssertEqual(entry.consecutiveFailures, 1)
        XCTAssertFalse(entry.isFetching)
    }

    func testTokenArrivingAtItsFloorIsRefusedToWaitersAndStartsBackoff() {
        var entry = entry(in: .fetching)
        // Issued an hour ago, 50 s left: below the 60 s floor of a one-hour token.
        let stale = FetchedToken(token: "late", expiresAt: wall + 50, issuedAt: wall - 3550)
        guard case .answerWaiters(.failure(.providerAnswerUnusable(let message))) =
                entry.fetchSucceeded(stale, now: mono, wallNow: wall) else {
            return XCTFail("a token below its floor was accepted")
        }
        XCTAssertFalse(message.contains("late"))
        guard case .backingOff(let backoff) = entry.state else { return XCTFail("\(entry.state)") }
        XCTAssertNil(backoff.token)
        XCTAssertEqual(backoff.retryAt, mono + 1)
    }

    // MARK: fresh

    func testFreshTokenIsServedBeforeTheRefreshWindow() {
        var entry = entry(in: .fresh)
        XCTAssertEqual(entry.request(now: mono), .serve("tok-1"))
        XCTAssertEqual(entry.request(now: mono + 3299.9), .serve("tok-1"))
        XCTAssertEqual(entry.state, .fresh(heldHourToken))
        XCTAssertEqual(entry.phase(at: mono + 3299.9), .fresh)
    }

    func testRequestInRefreshWindowServesAndStartsRefresh() {
        var entry = entry(in: .fresh)
        XCTAssertEqual(entry.phase(at: mono + 3300), .refreshDue)
        XCTAssertEqual(entry.request(now: mono + 3300), .serveAndStartRefresh("tok-1"))
        XCTAssertEqual(entry.state, .refreshing(heldHourToken))
        XCTAssertEqual(entry.phase(at: mono + 3300), .refreshing)
        XCTAssertTrue(entry.isFetching)
    }

    func testRequestAtTheFloorFindsTheTokenExpiredAndStartsAFetch() {
        var entry = entry(in: .fresh)
        XCTAssertEqual(entry.phase(at: mono + 3540), .expired)
        XCTAssertEqual(entry.request(now: mono + 3540), .wait(startFetch: true))
        XCTAssertEqual(entry.state, .fetching(waiters: 1))
    }

    func testRequestJustAboveTheFloorIsServed() {
        var entry = entry(in: .fresh)
        XCTAssertEqual(entry.request(now: mono + 3539.9), .serveAndStartRefresh("tok-1"))
    }

    func testRequestAfterExpiryStartsAFetch() {
        var entry = entry(in: .fresh)
        XCTAssertEqual(entry.phase(at: mono + 7200), .expired)
        XCTAssertEqual(entry.request(now: mono + 7200), .wait(startFetch: true))
    }

    // MARK: refreshing

    func testRefreshingServesWithoutASecondRefresh() {
        var entry = entry(in: .refreshing)
        XCTAssertEqual(entry.request(now: mono + 3301), .serve("tok-1"))
        XCTAssertEqual(entry.request(now: mono + 3539), .serve("tok-1"))
        XCTAssertEqual(entry.state, .refreshing(heldHourToken))
    }

    func testRefreshingTokenAtItsFloorMakesTheCallWaitForTheRefresh() {
        var entry = entry(in: .refreshing)
        XCTAssertEqual(entry.request(now: mono + 3540), .wait(startFetch: false))
        XCTAssertEqual(entry.state, .fetching(waiters: 1))
        XCTAssertEqual(
            entry.fetchSucceeded(
                FetchedToken(token: "tok-2", expiresAt: wall + 3541 + 3600, issuedAt: wall + 3541),
                now: mono + 3541, wallNow: wall + 3541
            ),
            .answerWaiters(.success("tok-2"))
        )
    }

    func testRefreshSuccessReplacesTheToken() {
        var entry = entry(in: .refreshing)
        let action = entry.fetchSucceeded(
            FetchedToken(token: "tok-2", expiresAt: wall + 3300 + 3600, issuedAt: wall + 3300),
            now: mono + 3300, wallNow: wall + 3300
        )
        XCTAssertEqual(action, .answerWaiters(.success("tok-2")))
        XCTAssertEqual(entry.state, .fresh(TokenEntry.HeldToken(
            value: "tok-2", refreshAt: mono + 6600, floorAt: mono + 6840, expiresAt: mono + 6900
        )))
        XCTAssertEqual(entry.request(now: mono + 3400), .serve("tok-2"))
    }

    func testRefreshFailureBacksOffAndKeepsTheOldToken() {
        var entry = entry(in: .refreshing)
        XCTAssertEqual(entry.fetchFailed(failure, now: mono + 3300), .answerWaiters(.failure(failure)))
        XCTAssertEqual(entry.state, .backingOff(.init(failure: failure, retryAt: mono + 3301, token: heldHourToken)))
    }

    func testRefreshReturningAStaleTokenBacksOffWithTheOldOne() {
        var entry = entry(in: .refreshing)
        let stale = FetchedToken(token: "late", expiresAt: wall + 3300 + 10, issuedAt: wall)
        guard case .answerWaiters(.failure) = entry.fetchSucceeded(stale, now: mono + 3300, wallNow: wall + 3300) else {
            return XCTFail("a token below its floor was accepted")
        }
        guard case .backingOff(let backoff) = entry.state else { return XCTFail("\(entry.state)") }
        XCTAssertEqual(backoff.token, heldHourToken)
    }

    // MARK: backing off

    func testBackingOffWithoutATokenAnswersTheLastErrorAtOnce() {
        var entry = entry(in: .backingOff)
        XCTAssertEqual(entry.request(now: mono), .fail(failure))
        XCTAssertEqual(entry.request(now: mono + 0.999), .fail(failure))
        XCTAssertEqual(entry.state, .backingOff(.init(failure: failure, retryAt: mono + 1)))
    }

    func testBackingOffServesTheOldTokenWhileAboveItsFloor() {
        var entry = entry(in: .backingOffWithToken)
        XCTAssertEqual(entry.request(now: mono + 3300.5), .serve("tok-1"))
        XCTAssertEqual(entry.phase(at: mono + 3300.5), .backingOff)
    }

    func testBackingOffWithATokenAtItsFloorAnswersTheLastError() {
        var entry = entry(in: .backingOffWithToken)
        _ = entry.request(now: mono + 3301)   // the probe
        _ = entry.fetchFailed(failure, now: mono + 3539.5)  // second failure: retry at +3541.5
        XCTAssertEqual(entry.request(now: mono + 3540), .fail(failure), "never served at the floor")
    }

    func testFirstCallAfterTheStepSendsTheOneProbeAndWaitsForIt() {
        var entry = entry(in: .backingOff)
        XCTAssertEqual(entry.request(now: mono + 1), .wait(startFetch: true))
        XCTAssertEqual(entry.state, .fetching(waiters: 1))
        XCTAssertEqual(entry.request(now: mono + 1), .wait(startFetch: false), "one probe per step")
        XCTAssertEqual(entry.fetchSucceeded(hourToken(), now: mono + 1, wallNow: wall + 1), .answerWaiters(.success("tok-1")))
        XCTAssertEqual(entry.consecutiveFailures, 0)
    }

    func testProbeWithATokenServesItAndRefreshesInTheBackground() {
        var entry = entry(in: .backingOffWithToken)
        XCTAssertEqual(entry.request(now: mono + 3301), .serveAndStartRefresh("tok-1"))
        XCTAssertEqual(entry.state, .refreshing(heldHourToken))
        XCTAssertEqual(entry.request(now: mono + 3301), .serve("tok-1"))
    }

    func testFailedProbesDoubleTheStepUpToTheCapAndSuccessResetsIt() {
        var entry = TokenEntry(timing: TokenTiming(), backoff: BackoffPolicy(initial: 1, maximum: 8))
        var now = mono
        var steps: [Double] = []
        _ = entry.request(now: now)
        for _ in 0..<6 {
            _ = entry.fetchFailed(failure, now: now)
            guard case .backingOff(let backoff) = entry.state else { return XCTFail("\(entry.state)") }
            steps.append(backoff.retryAt - now)
            XCTAssertEqual(entry.request(now: backoff.retryAt - 0.01), .fail(failure))
            now = backoff.retryAt
            XCTAssertEqual(entry.request(now: now), .wait(startFetch: true))
        }
        XCTAssertEqual(steps, [1, 2, 4, 8, 8, 8])
        XCTAssertEqual(entry.consecutiveFailures, 6)

        _ = entry.fetchSucceeded(hourToken(), now: now, wallNow: wall)
        XCTAssertEqual(entry.consecutiveFailures, 0)
        _ = entry.request(now: now + 3600)  // expired: a new fetch
        _ = entry.fetchFailed(failure, now: now + 3600)
        XCTAssertEqual(entry.state, .backingOff(.init(failure: failure, retryAt: now + 3601)), "back to a one-second step")
    }

    func testBackoffStepIsJittered() {
        var entry = entry(in: .fetching)
        _ = entry.fetchFailed(failure, now: mono, jitter: 0.5)
        XCTAssertEqual(entry.state, .backingOff(.init(failure: failure, retryAt: mono + 0.75)))
    }

    // MARK: Timers

    func testTimerBeforeTheRefreshPointSleepsUntilIt() {
        var entry = entry(in: .fresh)
        XCTAssertEqual(entry.timerDue(now: mono), .sleep(until: mono + 3300))
        XCTAssertEqual(entry.state, .fresh(heldHourToken))
    }

    func testTimerRefreshesARecentlyUsedEntityAhead() {
        var entry = entry(in: .fresh)
        _ = entry.request(now: mono + 600)
        XCTAssertEqual(entry.timerDue(now: mono + 3300), .startFetch)
        XCTAssertEqual(entry.state, .refreshing(heldHourToken))
    }

    func testTimerLeavesAnEntityUnusedForALifetimeToExpireThenDropsIt() {
        var entry = entry(in: .fresh)  // last used at mono, when its one-hour token was fetched
        XCTAssertTrue(entry.isRecentlyUsed(at: mono + 3599))
        XCTAssertFalse(entry.isRecentlyUsed(at: mono + 3600))
        // At the first refresh point the last call is 3300 s old, under one lifetime: refreshed.
        XCTAssertEqual(entry.timerDue(now: mono + 3300), .startFetch)
        let second = FetchedToken(token: "tok-2", expiresAt: wall + 3300 + 3600, issuedAt: wall + 3300)
        XCTAssertEqual(entry.fetchSucceeded(second, now: mono + 3300, wallNow: wall + 3300), .answerWaiters(.success("tok-2")))
        // The second token's refresh point comes 6600 s after the last call: left alone.
        XCTAssertEqual(entry.timerDue(now: mono + 6600), .sleep(until: mono + 6840))
        XCTAssertEqual(entry.phase(at: mono + 6600), .refreshDue)
        XCTAssertFalse(entry.isDisposable(at: mono + 6839))
        XCTAssertTrue(entry.isDisposable(at: mono + 6840))
        XCTAssertEqual(entry.timerDue(now: mono + 6840), .drop)
    }

    func testTimerFindingAnExpiredTokenOfARecentlyUsedEntityFetchesInTheBackground() {
        var entry = TokenEntry(timing: TokenTiming())
        _ = entry.request(now: mono)
        _ = entry.fetchSucceeded(FetchedToken(token: "short", expiresAt: wall + 300, issuedAt: wall), now: mono, wallNow: wall)
        _ = entry.request(now: mono + 100)
        // The timer ran late (a suspended host): the five-minute token is past its floor.
        XCTAssertEqual(entry.timerDue(now: mono + 250), .startFetch)
        XCTAssertEqual(entry.state, .fetching(waiters: 0))
    }

    func testTimerInBackoffWithATokenSleepsUntilTheRetry() {
        var entry = entry(in: .backingOffWithToken)
        XCTAssertEqual(entry.timerDue(now: mono + 3300.5), .sleep(until: mono + 3301))
    }

    func testTimerProbesToRenewTheTokenOfARecentlyUsedEntityInBackoff() {
        var entry = entry(in: .backingOffWithToken)
        XCTAssertEqual(entry.timerDue(now: mono + 3301), .startFetch)
        XCTAssertEqual(entry.state, .refreshing(heldHourToken))
    }

    func testTimerLeavesTheProbeToTheNextCallWhenNoTokenIsLeft() {
        var entry = entry(in: .backingOff)
        XCTAssertEqual(entry.timerDue(now: mono + 1), .sleep(until: mono + 600))
        XCTAssertEqual(entry.state, .backingOff(.init(failure: failure, retryAt: mono + 1)))
        XCTAssertEqual(entry.request(now: mono + 1), .wait(startFetch: true))
    }

    func testTimerLeavesAnUnusedTokenInBackoffToItsFloorThenDropsIt() {
        var entry = TokenEntry(timing: TokenTiming(), backoff: BackoffPolicy(initial: 210, maximum: 210))
        _ = entry.request(now: mono)  // the only call
        // The provider took 100 s: the hour token's floor is at +3640, the call recent until +3600.
        _ = entry.fetchSucceeded(FetchedToken(token: "slow", expiresAt: wall + 3700, issuedAt: wall + 100),
                                 now: mono + 100, wallNow: wall + 100)
        XCTAssertEqual(entry.timerDue(now: mono + 3400), .startFetch)
        _ = entry.fetchFailed(failure, now: mono + 3400)  // retry at +3610
        XCTAssertEqual(entry.timerDue(now: mono + 3610), .sleep(until: mono + 3640), "probed for an unused entity")
        XCTAssertEqual(entry.timerDue(now: mono + 3640), .drop)
    }

    func testTimerDropsAnUnusedEntityInBackoffOnceNothingIsLeftToServe() {
        var noToken = entry(in: .backingOff)
        // Never had a token: recently used means the last ten minutes.
        XCTAssertEqual(noToken.timerDue(now: mono + 599), .sleep(until: mono + 600))
        XCTAssertEqual(noToken.timerDue(now: mono + 600), .drop)

        var stale = entry(in: .backingOffWithToken)
        _ = stale.request(now: mono + 3301)
        _ = stale.fetchFailed(failure, now: mono + 3301)
        XCTAssertEqual(stale.timerDue(now: mono + 6901), .drop)
    }

    func testTimerDuringAFetchDoesNothing() {
        var fetching = entry(in: .fetching)
        XCTAssertNil(fetching.timerDue(now: mono + 5))
        XCTAssertEqual(fetching.state, .fetching(waiters: 1))
        var refreshing = entry(in: .refreshing)
        XCTAssertNil(refreshing.timerDue(now: mono + 3400))
        XCTAssertEqual(refreshing.state, .refreshing(heldHourToken))
    }

    func testTimerOnAnIdleEntrySleepsWhileItIsRecentThenDropsIt() {
        var entry = entry(in: .fresh)
        XCTAssertEqual(entry.invalidate(token: "tok-1", now: mono), .dropped)
        XCTAssertEqual(entry.timerDue(now: mono + 10), .sleep(until: mono + 3600))
        XCTAssertEqual(entry.timerDue(now: mono + 3600), .drop)
    }

    // MARK: Invalidation

    func testInvalidatingTheFreshTokenMakesTheNextCallFetch() {
        var entry = entry(in: .fresh)
        XCTAssertEqual(entry.invalidate(token: "tok-1", now: mono + 1), .dropped)
        XCTAssertEqual(entry.state, .idle)
        XCTAssertEqual(entry.lastInvalidatedAt, mono + 1)
        XCTAssertEqual(entry.request(now: mono + 1), .wait(startFetch: true))
    }

    func testInvalidatingAnotherTokenChangesNothing() {
        for start in [Start.idle, .fetching, .fresh, .refreshing, .backingOff, .backingOffWithToken] {
            var entry = entry(in: start)
            let before = entry.state
            XCTAssertNil(entry.invalidate(token: "tok-0", now: mono + 3300), "\(start)")
            XCTAssertEqual(entry.state, before, "\(start)")
            XCTAssertNil(entry.lastInvalidatedAt, "\(start)")
        }
    }

    func testInvalidatingDuringARefreshMakesCallsWaitForIt() {
        var entry = entry(in: .refreshing)
        XCTAssertEqual(entry.invalidate(token: "tok-1", now: mono + 3300), .dropped)
        XCTAssertEqual(entry.state, .fetching(waiters: 0))
        XCTAssertEqual(entry.request(now: mono + 3301), .wait(startFetch: false))
        XCTAssertEqual(
            entry.fetchSucceeded(hourToken("tok-2"), now: mono + 3301, wallNow: wall + 3301),
            .answerWaiters(.success("tok-2")))
    }

    func testInvalidatingTheTokenKeptInBackoffLeavesTheLastError() {
        var entry = entry(in: .backingOffWithToken)
        XCTAssertEqual(entry.invalidate(token: "tok-1", now: mono + 3300), .dropped)
        XCTAssertEqual(entry.request(now: mono + 3300.5), .fail(failure))
    }

    func testASecondDropWithinTheHoldOffIsTooSoonInEveryStateThatHoldsAToken() {
        var entry = entry(in: .fresh)
        XCTAssertEqual(entry.invalidate(token: "tok-1", now: mono), .dropped)
        _ = entry.request(now: mono)
        // 100 s left of a one-hour token: refresh due after 20 s, floor at 40 s.
        let late = FetchedToken(token: "tok-2", expiresAt: wall + 100, issuedAt: wall - 3500)
        XCTAssertEqual(entry.fetchSucceeded(late, now: mono, wallNow: wall), .answerWaiters(.success("tok-2")))
        func assertTooSoon(at now: Double, _ state: String) {
            let before = entry.state
            XCTAssertEqual(entry.invalidate(token: "tok-2", now: now), .tooSoon(until: mono + 30), state)
            XCTAssertEqual(entry.state, before, "\(state): a refused drop changed the state")
            XCTAssertEqual(entry.lastInvalidatedAt, mono, "\(state): a refused drop moved the hold-off")
        }
        assertTooSoon(at: mono + 1, "fresh")
        XCTAssertEqual(entry.request(now: mono + 25), .serveAndStartRefresh("tok-2"))
        assertTooSoon(at: mono + 25, "refreshing")
        _ = entry.fetchFailed(failure, now: mono + 26)
        guard case .backingOff(let backoff) = entry.state, backoff.token?.value == "tok-2" else {
            return XCTFail("not backing off with the token: \(entry.state)")
        }
        assertTooSoon(at: mono + 27, "backing off")
    }

    func testTheTokenStaysServedDuringTheHoldOffAndIsDroppedWhenItEnds() {
        var entry = entry(in: .fresh)
        XCTAssertEqual(entry.invalidate(token: "tok-1", now: mono + 10), .dropped)
        _ = entry.request(now: mono + 10)
        _ = entry.fetchSucceeded(hourToken("tok-2"), now: mono + 10, wallNow: wall + 10)
        XCTAssertEqual(entry.invalidate(token: "tok-2", now: mono + 39.9), .tooSoon(until: mono + 40))
        XCTAssertEqual(entry.request(now: mono + 39.9), .serve("tok-2"))
        XCTAssertEqual(entry.invalidate(token: "tok-2", now: mono + 40), .dropped)
        XCTAssertEqual(entry.state, .idle)
        XCTAssertEqual(entry.lastInvalidatedAt, mono + 40)
    }

    func testAStaleRefusalDuringTheHoldOffIsNotHeldRatherThanTooSoon() {
        var entry = entry(in: .fresh)
        XCTAssertEqual(entry.invalidate(token: "tok-1", now: mono), .dropped)
        XCTAssertNil(entry.invalidate(token: "tok-1", now: mono + 1), "nothing held: idle")
        _ = entry.request(now: mono + 1)
        XCTAssertNil(entry.invalidate(token: "tok-1", now: mono + 1), "nothing held: fetching")
        _ = entry.fetchSucceeded(hourToken("tok-2"), now: mono + 1, wallNow: wall)
        XCTAssertNil(entry.invalidate(token: "tok-1", now: mono + 2), "another token held")
    }

    // MARK: Clocks and timing

    func testDeadlinesAreMonotonicNotWallClock() {
        var entry = entry(in: .fetching)
        _ = entry.fetchSucceeded(hourToken(), now: mono, wallNow: wall)
        // Only monotonic time is consulted afterwards; a jump of the wall clock cannot expire it.
        guard case .fresh(let held) = entry.state else { return XCTFail("not fresh") }
        XCTAssertEqual(held.expiresAt, mono + 3600)
        XCTAssertLessThan(held.expiresAt, 1e6)
    }

    func testRefreshPointIsSpreadOverTheFirstHalfOfTheRefreshWindow() {
        // Window of a one-hour token: refresh from +3300, floor at +3540; half of it is 120 s.
        for (jitter, refreshAt) in [(0.0, 3300.0), (0.25, 3330), (0.5, 3360), (0.999, 3419.88)] {
            var entry = entry(in: .fetching)
            _ = entry.fetchSucceeded(hourToken(), now: mono, wallNow: wall, jitter: jitter)
            guard case .fresh(let held) = entry.state else { return XCTFail("not fresh") }
            XCTAssertEqual(held.refreshAt - mono, refreshAt, accuracy: 1e-6, "jitter \(jitter)")
            XCTAssertEqual(held.floorAt, mono + 3540)
        }
    }

    func testTokenHandedOutPastItsRefreshPointIsRefreshedHalfwayToItsFloor() {
        var entry = entry(in: .fetching)
        // An hour-long token with 240 s left: its refresh point passed 60 s ago.
        let late = FetchedToken(token: "late", expiresAt: wall + 240, issuedAt: wall - 3360)
        _ = entry.fetchSucceeded(late, now: mono, wallNow: wall)
        XCTAssertEqual(entry.state, .fresh(.init(value: "late", refreshAt: mono + 90, floorAt: mono + 180, expiresAt: mono + 240)))
        XCTAssertEqual(entry.request(now: mono + 1), .serve("late"), "not refreshed at once")
    }

    func testRecentUseLastsOneLifetimeOfTheLastToken() {
        var entry = entry(in: .fetching)
        XCTAssertEqual(entry.recentUse, TokenEntry.defaultRecentUse)
        _ = entry.fetchSucceeded(FetchedToken(token: "short", expiresAt: wall + 300, issuedAt: wall), now: mono, wallNow: wall)
        XCTAssertEqual(entry.recentUse, 300)
        XCTAssertTrue(entry.isRecentlyUsed(at: mono + 299))
        XCTAssertFalse(entry.isRecentlyUsed(at: mono + 300))
        XCTAssertFalse(TokenEntry(timing: TokenTiming()).isRecentlyUsed(at: mono), "never used")
    }

    func testFiveMinuteTokenHalvesTheRefreshMargin() {
        var entry = entry(in: .fetching)
        _ = entry.fetchSucceeded(FetchedToken(token: "short", expiresAt: wall + 300), now: mono, wallNow: wall)
        XCTAssertEqual(entry.state, .fresh(TokenEntry.HeldToken(
            value: "short", refreshAt: mono + 150, floorAt: mono + 240, expiresAt: mono + 300
        )))
    }

    func testSixtySecondTokenShrinksMarginAndFloor() {
        var entry = entry(in: .fetching)
        _ = entry.fetchSucceeded(FetchedToken(token: "tiny", expiresAt: wall + 60, issuedAt: wall), now: mono, wallNow: wall)
        XCTAssertEqual(entry.state, .fresh(TokenEntry.HeldToken(
            value: "tiny", refreshAt: mono + 30, floorAt: mono + 45, expiresAt: mono + 60
        )))
    }

    func testWindowShrinksWithLifetime() {
        let timing = TokenTiming()
        XCTAssertEqual(timing.window(lifetime: 3600), TokenTiming.Window(refreshMargin: 300, floor: 60))
        XCTAssertEqual(timing.window(lifetime: 600), TokenTiming.Window(refreshMargin: 300, floor: 60))
        XCTAssertEqual(timing.window(lifetime: 300), TokenTiming.Window(refreshMargin: 150, floor: 60))
        XCTAssertEqual(timing.window(lifetime: 60), TokenTiming.Window(refreshMargin: 30, floor: 15))
        XCTAssertEqual(timing.window(lifetime: 0), TokenTiming.Window(refreshMargin: 0, floor: 0))
        XCTAssertEqual(timing.window(lifetime: -5), TokenTiming.Window(refreshMargin: 0, floor: 0))
        let custom = TokenTiming(refreshMargin: 120, minValidity: 10)
        XCTAssertEqual(custom.window(lifetime: 3600), TokenTiming.Window(refreshMargin: 120, floor: 10))
    }

    func testLifetimeComesFromIatWhenPresent() {
        // Handed out with ten minutes left of an hour: not a short-lived token.
        let late = FetchedToken(token: "t", expiresAt: wall + 600, issuedAt: wall - 3000)
        XCTAssertEqual(TokenTiming.lifetime(of: late, wallNow: wall), 3600)
        let opaque = FetchedToken(token: "t", expiresAt: wall + 600)
        XCTAssertEqual(TokenTiming.lifetime(of: opaque, wallNow: wall), 600)
        let nonsense = FetchedToken(token: "t", expiresAt: wall + 600, issuedAt: wall + 900)
        XCTAssertEqual(TokenTiming.lifetime(of: nonsense, wallNow: wall), 600)
    }

    func testHeldTokenDescriptionHidesTheToken() {
        let held = TokenEntry.HeldToken(value: "very-secret-token", refreshAt: 1, floorAt: 2, expiresAt: 3)
        XCTAssertFalse("\(held)".contains("very-secret-token"))
        XCTAssertTrue("\(held)".contains(TokenFingerprint.of("very-secret-token")))
    }

    func testFingerprintIsTheLastSixHexDigitsOfSHA256() {
        XCTAssertEqual(TokenFingerprint.of("abc"), "0015ad")
        XCTAssertEqual(TokenFingerprint.of(""), "52b855")
        XCTAssertNotEqual(TokenFingerprint.of("tok-1"), TokenFingerprint.of("tok-2"))
    }
}
