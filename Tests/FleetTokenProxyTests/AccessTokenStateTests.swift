import XCTest
@testable import FleetTokenProxy

/// The ADC access token's cache as a state machine (docs/CONTRACT.md §4a): one fetch for every
/// waiter, refresh 3 min 45 s ahead (half the life of a short token), backoff, a 401's drop.
final class AccessTokenStateTests: XCTestCase {
    let hour = AccessToken(value: "ya29.a", lifetime: 3600)

    func fresh(at now: Double = 0) -> AccessTokenState {
        var state = AccessTokenState(backoff: BackoffPolicy(initial: 1, maximum: 60), minValidity: 60)
        XCTAssertEqual(state.request(now: now), .wait(startFetch: true))
        _ = state.fetchSucceeded(hour, now: now)
        return state
    }

    func testOneFetchForEveryWaiterAndTheTokenAnswersThemAll() {
        var state = AccessTokenState()
        XCTAssertEqual(state.request(now: 0), .wait(startFetch: true))
        XCTAssertEqual(state.request(now: 0), .wait(startFetch: false))
        XCTAssertEqual(state.request(now: 1), .wait(startFetch: false))
        guard case .answerWaiters(.success(let held))? = state.fetchSucceeded(hour, now: 2) else { return XCTFail("answers the waiters") }
        XCTAssertEqual(held.value, "ya29.a")
        XCTAssertEqual(held.expiresAt, 3602)
        XCTAssertEqual(state.request(now: 3), .serve(held))
        XCTAssertNil(state.fetchSucceeded(hour, now: 4), "a second result with no fetch in flight is stale")
    }

    func testRefreshIsThreeMinutesFortyFiveSecondsAheadWhateverTheRefreshMargin() {
        var state = fresh()
        guard case .serve(let held) = state.request(now: 3600 - 226) else { return XCTFail("served before the refresh point") }
        XCTAssertEqual(held.refreshAt, 3600 - 225)
        XCTAssertEqual(state.request(now: 3600 - 225), .serveAndStartRefresh(held))
        XCTAssertEqual(state.request(now: 3600 - 200), .serve(held), "one refresh at a time; the old token is still served")
        XCTAssertEqual(state.request(now: 3600 - 60), .wait(startFetch: false), "at the floor callers wait for the refresh in flight")
        guard case .answerWaiters(.success(let next))? = state.fetchSucceeded(AccessToken(value: "ya29.b", lifetime: 3600), now: 3600 - 59) else {
            return XCTFail("the refresh answers the waiter")
        }
        XCTAssertEqual(next.value, "ya29.b")
    }

    func testAShortTokenIsRefreshedAfterHalfItsLife() {
        var state = AccessTokenState(minValidity: 60)
        _ = state.request(now: 0)
        guard case .answerWaiters(.success(let held))? = state.fetchSucceeded(AccessToken(value: "t", lifetime: 300), now: 0) else {
            return XCTFail("stored")
        }
        XCTAssertEqual(held.refreshAt, 150)
        XCTAssertEqual(held.floorAt, 240)
    }

    func testAFailureAnswersTheWaitersAndBacksOffThenOneCallProbes() {
        var state = AccessTokenState(backoff: BackoffPolicy(initial: 1, maximum: 60))
        _ = state.request(now: 0)
        let down = ProxyFailure.providerUnavailable("the OAuth token endpoint unreachable")
        XCTAssertEqual(state.fetchFailed(down, now: 0, jitter: 0), .answerWaiters(.failure(down)))
        XCTAssertEqual(state.request(now: 0.5), .fail(down), "during backoff the last failure is answered at once")
        XCTAssertEqual(state.request(now: 1), .wait(startFetch: true), "the step is over: one probe")
        XCTAssertEqual(state.request(now: 1), .wait(startFetch: false))
        XCTAssertEqual(state.fetchFailed(down, now: 1, jitter: 0), .answerWaiters(.failure(down)))
        XCTAssertEqual(state.request(now: 2.5), .fail(down), "the second step is two seconds")
        XCTAssertEqual(state.request(now: 3), .wait(startFetch: true))
        guard case .answerWaiters(.success)? = state.fetchSucceeded(hour, now: 3) else { return XCTFail("recovers") }
        XCTAssertEqual(state.failures, 0)
    }

    func testAFailedRefreshKeepsServingTheOldTokenUntilItsFloor() {
        var state = fresh()
        guard case .serveAndStartRefresh(let held) = state.request(now: 3400) else { return XCTFail("refresh starts") }
        let down = ProxyFailure.providerUnavailable("down")
        _ = state.fetchFailed(down, now: 3400, jitter: 0)
        XCTAssertEqual(state.request(now: 3400.5), .serve(held))
        XCTAssertEqual(state.request(now: 3401), .serveAndStartRefresh(held), "the probe is a refresh while the token lasts")
        _ = state.fetchFailed(down, now: 3401, jitter: 0)
        XCTAssertEqual(state.request(now: 3402), .serve(held))
        XCTAssertEqual(state.request(now: 3545), .wait(startFetch: true), "past the floor nothing is served: callers wait for a probe")
    }

    func testARefusedTokenIsDroppedOnceAndAnotherTokenIsLeftAlone() {
        var state = fresh()
        XCTAssertNil(state.refused(token: "ya29.other"))
        XCTAssertEqual(state.refused(token: "ya29.a"), .dropped)
        XCTAssertEqual(state.request(now: 10), .wait(startFetch: true))
        XCTAssertNil(state.refused(token: "ya29.a"), "already gone")
    }

    func testARefusalDuringARefreshMakesCallersWaitForIt() {
        var state = fresh()
        _ = state.request(now: 3400)
        XCTAssertEqual(state.refused(token: "ya29.a"), .dropped)
        XCTAssertEqual(state.request(now: 3400), .wait(startFetch: false), "the refresh in flight brings the replacement")
    }
}
