import XCTest
import FleetTokenProxy

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

    private func entry(in state: String) -> TokenEntry {
        var entry = TokenEntry(timing: TokenTiming())
        switch state {
        case "idle":
            break
        case "fetching":
            _ = entry.request(now: mono)
        case "fresh":
            _ = entry.request(now: mono)
            _ = entry.fetchSucceeded(hourToken(), now: mono, wallNow: wall)
        case "refreshing":
            _ = entry.request(now: mono)
            _ = entry.fetchSucceeded(hourToken(), now: mono, wallNow: wall)
            _ = entry.request(now: mono + 3300)
        default:
            XCTFail("unknown state \(state)")
        }
        return entry
    }

    private var heldHourToken: TokenEntry.HeldToken {
        TokenEntry.HeldToken(value: "tok-1", refreshAt: mono + 3300, floorAt: mono + 3540, expiresAt: mono + 3600)
    }

    // MARK: idle

    func testFirstRequestStartsAFetchAndWaits() {
        var entry = entry(in: "idle")
        XCTAssertEqual(entry.state, .idle)
        XCTAssertFalse(entry.isFetching)
        XCTAssertEqual(entry.request(now: mono), .wait(startFetch: true))
        XCTAssertEqual(entry.state, .fetching(waiters: 1))
        XCTAssertTrue(entry.isFetching)
    }

    func testFetchResultWithNoFetchInFlightIsIgnored() {
        var idle = entry(in: "idle")
        XCTAssertEqual(idle.fetchSucceeded(hourToken(), now: mono, wallNow: wall), .ignore)
        XCTAssertEqual(idle.fetchFailed(failure), .ignore)
        XCTAssertEqual(idle.state, .idle)

        var fresh = entry(in: "fresh")
        XCTAssertEqual(fresh.fetchSucceeded(hourToken("other"), now: mono, wallNow: wall), .ignore)
        XCTAssertEqual(fresh.fetchFailed(failure), .ignore)
        XCTAssertEqual(fresh.state, .fresh(heldHourToken))
    }

    // MARK: fetching

    func testRequestsDuringAFetchJoinIt() {
        var entry = entry(in: "fetching")
        XCTAssertEqual(entry.request(now: mono), .wait(startFetch: false))
        XCTAssertEqual(entry.request(now: mono + 1), .wait(startFetch: false))
        XCTAssertEqual(entry.state, .fetching(waiters: 3))
    }

    func testFetchSuccessStoresTokenWithMonotonicDeadlinesAndAnswersWaiters() {
        var entry = entry(in: "fetching")
        XCTAssertEqual(entry.fetchSucceeded(hourToken(), now: mono, wallNow: wall), .answerWaiters(.success("tok-1")))
        XCTAssertEqual(entry.state, .fresh(heldHourToken))
        XCTAssertFalse(entry.isFetching)
    }

    func testFetchFailureAnswersWaitersAndStoresNothing() {
        var entry = entry(in: "fetching")
        XCTAssertEqual(entry.fetchFailed(failure), .answerWaiters(.failure(failure)))
        XCTAssertEqual(entry.state, .idle)
        XCTAssertEqual(entry.request(now: mono), .wait(startFetch: true))
    }

    func testTokenArrivingAtItsFloorIsRefusedToWaiters() {
        var entry = entry(in: "fetching")
        // Issued an hour ago, 50 s left: below the 60 s floor of a one-hour token.
        let stale = FetchedToken(token: "late", expiresAt: wall + 50, issuedAt: wall - 3550)
        guard case .answerWaiters(.failure(.providerAnswerUnusable(let message))) =
                entry.fetchSucceeded(stale, now: mono, wallNow: wall) else {
            return XCTFail("a token below its floor was accepted")
        }
        XCTAssertFalse(message.contains("late"))
        XCTAssertEqual(entry.state, .idle)
    }

    // MARK: fresh

    func testFreshTokenIsServedBeforeTheRefreshWindow() {
        var entry = entry(in: "fresh")
        XCTAssertEqual(entry.request(now: mono), .serve("tok-1"))
        XCTAssertEqual(entry.request(now: mono + 3299.9), .serve("tok-1"))
        XCTAssertEqual(entry.state, .fresh(heldHourToken))
    }

    func testRequestInRefreshWindowServesAndStartsRefresh() {
        var entry = entry(in: "fresh")
        XCTAssertEqual(entry.request(now: mono + 3300), .serveAndStartRefresh("tok-1"))
        XCTAssertEqual(entry.state, .refreshing(heldHourToken))
        XCTAssertTrue(entry.isFetching)
    }

    func testRequestAtTheFloorStartsAFetchAndWaits() {
        var entry = entry(in: "fresh")
        XCTAssertEqual(entry.request(now: mono + 3540), .wait(startFetch: true))
        XCTAssertEqual(entry.state, .fetching(waiters: 1))
    }

    func testRequestJustAboveTheFloorIsServed() {
        var entry = entry(in: "fresh")
        XCTAssertEqual(entry.request(now: mono + 3539.9), .serveAndStartRefresh("tok-1"))
    }

    func testRequestAfterExpiryStartsAFetch() {
        var entry = entry(in: "fresh")
        XCTAssertEqual(entry.request(now: mono + 7200), .wait(startFetch: true))
    }

    // MARK: refreshing

    func testRefreshingServesWithoutASecondRefresh() {
        var entry = entry(in: "refreshing")
        XCTAssertEqual(entry.request(now: mono + 3301), .serve("tok-1"))
        XCTAssertEqual(entry.request(now: mono + 3539), .serve("tok-1"))
        XCTAssertEqual(entry.state, .refreshing(heldHourToken))
    }

    func testRefreshingTokenAtItsFloorMakesTheCallWaitForTheRefresh() {
        var entry = entry(in: "refreshing")
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
        var entry = entry(in: "refreshing")
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

    func testRefreshFailureKeepsServingTheOldToken() {
        var entry = entry(in: "refreshing")
        XCTAssertEqual(entry.fetchFailed(failure), .answerWaiters(.failure(failure)))
        XCTAssertEqual(entry.state, .fresh(heldHourToken))
        // Still in the refresh window: the next call tries again.
        XCTAssertEqual(entry.request(now: mono + 3310), .serveAndStartRefresh("tok-1"))
    }

    func testRefreshReturningAStaleTokenKeepsTheOldOne() {
        var entry = entry(in: "refreshing")
        let stale = FetchedToken(token: "late", expiresAt: wall + 3300 + 10, issuedAt: wall)
        guard case .answerWaiters(.failure) = entry.fetchSucceeded(stale, now: mono + 3300, wallNow: wall + 3300) else {
            return XCTFail("a token below its floor was accepted")
        }
        XCTAssertEqual(entry.state, .fresh(heldHourToken))
    }

    // MARK: Clocks and timing

    func testDeadlinesAreMonotonicNotWallClock() {
        var entry = entry(in: "fetching")
        _ = entry.fetchSucceeded(hourToken(), now: mono, wallNow: wall)
        // Only monotonic time is consulted afterwards; a jump of the wall clock cannot expire it.
        guard case .fresh(let held) = entry.state else { return XCTFail("not fresh") }
        XCTAssertEqual(held.expiresAt, mono + 3600)
        XCTAssertLessThan(held.expiresAt, 1e6)
    }

    func testFiveMinuteTokenHalvesTheRefreshMargin() {
        var entry = entry(in: "fetching")
        _ = entry.fetchSucceeded(FetchedToken(token: "short", expiresAt: wall + 300), now: mono, wallNow: wall)
        XCTAssertEqual(entry.state, .fresh(TokenEntry.HeldToken(
            value: "short", refreshAt: mono + 150, floorAt: mono + 240, expiresAt: mono + 300
        )))
    }

    func testSixtySecondTokenShrinksMarginAndFloor() {
        var entry = entry(in: "fetching")
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
