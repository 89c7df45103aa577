import XCTest
@testable import FleetTokenProxy

final class TokenCacheTests: XCTestCase {
    var clock: ManualClock!
    var fetcher: FakeFetcher!

    override func setUp() {
        clock = ManualClock()
        fetcher = FakeFetcher()
    }

    /// Lazy refresh (no scheduler) and no jitter: refresh points and backoff steps are exact.
    private func makeCache(maxEntities: Int = 100, timing: TokenTiming = TokenTiming(),
                           backoff: BackoffPolicy = BackoffPolicy(), maxWaiters: Int = 1024) -> TokenCache {
        TokenCache(fetcher: fetcher, clock: clock, timing: timing, maxEntities: maxEntities,
                   backoff: backoff, maxWaiters: maxWaiters, random: { 0 })
    }

    /// A token of `lifetime` seconds issued now.
    private func fetched(_ value: String, lifetime: Double = 3600) -> Result<FetchedToken, ProxyFailure> {
        .success(FetchedToken(token: value, expiresAt: clock.wallNow + lifetime, issuedAt: clock.wallNow))
    }

    /// Puts a one-hour token for `key` in the cache through one miss.
    private func prime(_ cache: TokenCache, _ key: EntityKey, _ value: String, lifetime: Double = 3600) {
        let answers = Answers()
        let before = fetcher.calls.count
        cache.token(for: key, completion: answers.completion)
        XCTAssertEqual(fetcher.calls.count, before + 1, "priming \(key) did not fetch")
        fetcher.complete(before, with: fetched(value, lifetime: lifetime))
        XCTAssertEqual(answers.tokens, [value])
    }

    // MARK: Hits and misses

    func testCachedTokenIsServedWithoutAnotherFetch() {
        let cache = makeCache()
        prime(cache, vehicle("v1"), "tok-v1")
        clock.advance(by: 3000)
        let answers = Answers()
        cache.token(for: vehicle("v1"), completion: answers.completion)
        XCTAssertEqual(answers.tokens, ["tok-v1"])
        XCTAssertEqual(fetcher.calls.count, 1)
        XCTAssertEqual(cache.statistics, TokenCacheStatistics(hits: 1, misses: 1, providerFetches: 1))
    }

    /// The proxy path's lookup: a hit is returned, and no waiter is made for it (the waiter is
    /// a closure holding the asking connection); a miss makes one waiter and answers it once.
    func testHitIsReturnedWithoutMakingAWaiterAndAMissMakesOne() {
        let cache = makeCache()
        var made = 0
        let answers = Answers()
        let miss = cache.token(for: vehicle("v1")) {
            made += 1
            return answers.completion
        }
        XCTAssertNil(miss)
        XCTAssertEqual(made, 1)
        fetcher.complete(0, with: fetched("tok-v1"))
        XCTAssertEqual(answers.tokens, ["tok-v1"])

        let hit = cache.token(for: vehicle("v1")) {
            made += 1
            return answers.completion
        }
        XCTAssertEqual(try hit?.get(), "tok-v1")
        XCTAssertEqual(made, 1, "a hit made a waiter")
        XCTAssertEqual(answers.results.count, 1, "a hit was also answered through a waiter")
        XCTAssertEqual(cache.statistics, TokenCacheStatistics(hits: 1, misses: 1, providerFetches: 1))
    }

    /// An entity that backs off is refused at once, without a waiter.
    func testBackoffFailureIsReturnedWithoutMakingAWaiter() {
        let cache = makeCache()
        cache.token(for: vehicle("v1")) { _ in }
        fetcher.complete(0, with: .failure(.providerUnavailable("down")))
        var made = 0
        let refused = cache.token(for: vehicle("v1")) {
            made += 1
            return { _ in }
        }
        guard case .failure? = refused else { return XCTFail("not refused during the backoff: \(String(describing: refused))") }
        XCTAssertEqual(made, 0)
        XCTAssertEqual(fetcher.calls.count, 1)
    }

    func testConcurrentMissesForOneVehicleFetchOnce() {
        let cache = makeCache()
        let answers = Answers()
        for _ in 0..<100 {
            cache.token(for: vehicle("v1"), completion: answers.completion)
        }
        XCTAssertEqual(fetcher.fetchedKeys, [vehicle("v1")])
        XCTAssertTrue(answers.results.isEmpty, "a waiter was answered before the fetch ended")

        fetcher.complete(0, with: fetched("tok-v1"))
        XCTAssertEqual(answers.tokens, Array(repeating: "tok-v1", count: 100))
        XCTAssertEqual(cache.statistics, TokenCacheStatistics(misses: 100, coalesced: 99, providerFetches: 1))
    }

    func testManyEntitiesFetchOnceEachAndGetTheirOwnToken() {
        let cache = makeCache()
        let ids = (0..<50).map { "v\($0)" }
        var answers: [String: Answers] = [:]
        for round in 0..<3 {
            for id in ids {
                let entityAnswers = answers[id] ?? Answers()
                answers[id] = entityAnswers
                cache.token(for: vehicle(id), completion: entityAnswers.completion)
            }
            XCTAssertEqual(fetcher.calls.count, 50, "round \(round)")
        }
        XCTAssertEqual(Set(fetcher.fetchedKeys), Set(ids.map(vehicle)))

        // Completed in reverse order: each token still goes to the entity it was fetched for.
        for index in fetcher.calls.indices.reversed() {
            fetcher.complete(index, with: fetched("tok-" + fetcher.calls[index].key.id))
        }
        for id in ids {
            XCTAssertEqual(answers[id]?.tokens, Array(repeating: "tok-\(id)", count: 3), id)
        }
        XCTAssertEqual(cache.count, 50)
    }

    func testEntitiesOfDifferentKindsOrProjectsDoNotShareTokens() {
        let cache = makeCache()
        let keys = [
            EntityKey(provider: "p1", type: .vehicle, id: "x"),
            EntityKey(provider: "p2", type: .vehicle, id: "x"),
            EntityKey(provider: "p1", type: .trip, id: "x"),
            EntityKey.fleet(provider: "p1"),
        ]
        for (n, key) in keys.enumerated() { prime(cache, key, "tok-\(n)") }
        for (n, key) in keys.enumerated() {
            let answers = Answers()
            cache.token(for: key, completion: answers.completion)
            XCTAssertEqual(answers.tokens, ["tok-\(n)"])
        }
        XCTAssertEqual(fetcher.calls.count, keys.count)
    }

    // MARK: Failures

    func testFailureReachesEveryWaiterAndTheFirstCallAfterTheBackoffStepFetchesAgain() {
        let cache = makeCache()
        let answers = Answers()
        for _ in 0..<10 { cache.token(for: vehicle("v1"), completion: answers.completion) }
        let failure = ProxyFailure.providerRefused("provider answered 403")
        fetcher.complete(0, with: .failure(failure))
        XCTAssertEqual(answers.failures, Array(repeating: failure, count: 10))
        XCTAssertEqual(answers.tokens, [])

        let during = Answers()
        cache.token(for: vehicle("v1"), completion: during.completion)
        XCTAssertEqual(during.failures, [failure], "answered at once with the last error")
        XCTAssertEqual(fetcher.calls.count, 1)

        clock.advance(by: 1)
        let retry = Answers()
        cache.token(for: vehicle("v1"), completion: retry.completion)
        XCTAssertEqual(fetcher.calls.count, 2)
        fetcher.complete(1, with: fetched("tok-v1"))
        XCTAssertEqual(retry.tokens, ["tok-v1"])
        XCTAssertEqual(cache.statistics.providerFailures, 1)
        XCTAssertEqual(cache.statistics.providerFetches, 2)
    }

    func testTokenUnusableAtReceiptIsAFailureForWaiters() {
        let cache = makeCache()
        let answers = Answers()
        cache.token(for: vehicle("v1"), completion: answers.completion)
        // Issued an hour ago with 30 s left: below the one-minute floor.
        fetcher.complete(0, with: .success(FetchedToken(
            token: "stale", expiresAt: clock.wallNow + 30, issuedAt: clock.wallNow - 3570
        )))
        XCTAssertEqual(answers.tokens, [])
        XCTAssertEqual(answers.failures.count, 1)
        XCTAssertEqual(cache.statistics.providerFailures, 1)
    }

    func testSecondCompletionOfOneFetchIsIgnored() {
        let cache = makeCache()
        let answers = Answers()
        cache.token(for: vehicle("v1"), completion: answers.completion)
        fetcher.complete(0, with: fetched("tok-1"))
        fetcher.complete(0, with: fetched("tok-evil"))
        fetcher.complete(0, with: .failure(.providerUnavailable("late")))
        XCTAssertEqual(answers.results.count, 1)

        let later = Answers()
        cache.token(for: vehicle("v1"), completion: later.completion)
        XCTAssertEqual(later.tokens, ["tok-1"])
        XCTAssertEqual(cache.statistics.providerFailures, 0)
    }

    // MARK: Refresh and expiry

    func testRefreshWindowServesOldTokenAndRefreshesOnce() {
        let cache = makeCache()
        prime(cache, vehicle("v1"), "tok-1")
        clock.advance(by: 3300)  // refresh window of a one-hour token: last 300 s

        let during = Answers()
        for _ in 0..<20 { cache.token(for: vehicle("v1"), completion: during.completion) }
        XCTAssertEqual(during.tokens, Array(repeating: "tok-1", count: 20))
        XCTAssertEqual(fetcher.calls.count, 2, "exactly one background refresh")

        fetcher.complete(1, with: fetched("tok-2"))
        let after = Answers()
        cache.token(for: vehicle("v1"), completion: after.completion)
        XCTAssertEqual(after.tokens, ["tok-2"])
        XCTAssertEqual(fetcher.calls.count, 2)
        XCTAssertEqual(cache.statistics, TokenCacheStatistics(hits: 21, misses: 1, providerFetches: 2))
    }

    func testTokenIsNotRefreshedBeforeTheWindow() {
        let cache = makeCache()
        prime(cache, vehicle("v1"), "tok-1")
        clock.advance(by: 3299)
        cache.token(for: vehicle("v1")) { _ in }
        XCTAssertEqual(fetcher.calls.count, 1)
    }

    func testFailedBackgroundRefreshKeepsServingUntilTheFloor() {
        let cache = makeCache()
        prime(cache, vehicle("v1"), "tok-1")
        clock.advance(by: 3300)
        cache.token(for: vehicle("v1")) { _ in }
        fetcher.complete(1, with: .failure(.providerUnavailable("timeout")))

        let answers = Answers()
        clock.advance(by: 100)
        cache.token(for: vehicle("v1"), completion: answers.completion)
        XCTAssertEqual(answers.tokens, ["tok-1"])
        XCTAssertEqual(fetcher.calls.count, 3, "the next call in the window tries again")
    }

    func testTokenIsNeverServedAtOrBelowItsFloor() {
        let cache = makeCache()
        prime(cache, vehicle("v1"), "tok-1")
        clock.advance(by: 3540)  // exactly the floor: 60 s left of the hour

        let answers = Answers()
        cache.token(for: vehicle("v1"), completion: answers.completion)
        XCTAssertEqual(answers.results.count, 0, "served a token with only the minimum validity left")
        XCTAssertEqual(fetcher.calls.count, 2)
        fetcher.complete(1, with: fetched("tok-2"))
        XCTAssertEqual(answers.tokens, ["tok-2"])
    }

    func testCallAtTheFloorDuringARefreshWaitsForThatRefresh() {
        let cache = makeCache()
        prime(cache, vehicle("v1"), "tok-1")
        clock.advance(by: 3300)
        cache.token(for: vehicle("v1")) { _ in }  // starts the refresh
        clock.advance(by: 250)  // past the floor while the refresh is still running

        let answers = Answers()
        cache.token(for: vehicle("v1"), completion: answers.completion)
        XCTAssertEqual(answers.results.count, 0)
        XCTAssertEqual(fetcher.calls.count, 2, "joined the refresh instead of fetching again")
        fetcher.complete(1, with: fetched("tok-2"))
        XCTAssertEqual(answers.tokens, ["tok-2"])
        XCTAssertEqual(cache.statistics.coalesced, 1)
    }

    func testWallClockJumpDoesNotExpireACachedToken() {
        let cache = makeCache()
        prime(cache, vehicle("v1"), "tok-1")
        clock.wallNow += 7200
        clock.monotonicNow += 10
        let answers = Answers()
        cache.token(for: vehicle("v1"), completion: answers.completion)
        XCTAssertEqual(answers.tokens, ["tok-1"])
        XCTAssertEqual(fetcher.calls.count, 1)
    }

    func testFiveMinuteTokenRefreshesAtHalfLifeAndStopsAtOneMinuteLeft() {
        let cache = makeCache()
        prime(cache, vehicle("v1"), "tok-1", lifetime: 300)  // margin 150 s, floor 60 s

        clock.advance(by: 149)
        cache.token(for: vehicle("v1")) { _ in }
        XCTAssertEqual(fetcher.calls.count, 1, "refreshed before half its life")

        clock.advance(by: 1)
        let refreshing = Answers()
        cache.token(for: vehicle("v1"), completion: refreshing.completion)
        XCTAssertEqual(refreshing.tokens, ["tok-1"])
        XCTAssertEqual(fetcher.calls.count, 2)
        fetcher.complete(1, with: .failure(.providerUnavailable("down")))

        clock.advance(by: 89)  // 61 s left
        let beforeFloor = Answers()
        cache.token(for: vehicle("v1"), completion: beforeFloor.completion)
        XCTAssertEqual(beforeFloor.tokens, ["tok-1"])
        fetcher.complete(2, with: .failure(.providerUnavailable("down")))

        clock.advance(by: 1)  // 60 s left, backing off after two failures
        let atFloor = Answers()
        cache.token(for: vehicle("v1"), completion: atFloor.completion)
        XCTAssertEqual(atFloor.tokens, [], "served a token with only the minimum validity left")
        XCTAssertEqual(atFloor.failures, [.providerUnavailable("down")])
    }

    func testSixtySecondTokenRefreshesAfterThirtyAndStopsAtFifteenLeft() {
        let cache = makeCache()
        prime(cache, vehicle("v1"), "tok-1", lifetime: 60)  // margin 30 s, floor 15 s

        clock.advance(by: 29)
        let early = Answers()
        cache.token(for: vehicle("v1"), completion: early.completion)
        XCTAssertEqual(early.tokens, ["tok-1"])
        XCTAssertEqual(fetcher.calls.count, 1)

        clock.advance(by: 1)
        cache.token(for: vehicle("v1")) { _ in }
        XCTAssertEqual(fetcher.calls.count, 2, "no refresh at half a 60-second token's life")

        clock.advance(by: 14)  // 16 s left: still served, the refresh is running
        let late = Answers()
        cache.token(for: vehicle("v1"), completion: late.completion)
        XCTAssertEqual(late.tokens, ["tok-1"])

        clock.advance(by: 1)  // 15 s left: the floor
        let atFloor = Answers()
        cache.token(for: vehicle("v1"), completion: atFloor.completion)
        XCTAssertEqual(atFloor.results.count, 0)
        fetcher.complete(1, with: fetched("tok-2", lifetime: 60))
        XCTAssertEqual(atFloor.tokens, ["tok-2"])
    }

    // MARK: Bound on entities

    func testLeastRecentlyUsedEntityIsEvictedFirst() {
        let cache = makeCache(maxEntities: 3)
        prime(cache, vehicle("a"), "tok-a")
        prime(cache, vehicle("b"), "tok-b")
        prime(cache, vehicle("c"), "tok-c")
        cache.token(for: vehicle("a")) { _ in }  // a is now the most recent; b the least
        prime(cache, vehicle("d"), "tok-d")
        XCTAssertEqual(cache.count, 3)
        XCTAssertEqual(cache.statistics.evictions, 1)

        let fetchesBefore = fetcher.calls.count
        for id in ["a", "c", "d"] { cache.token(for: vehicle(id)) { _ in } }
        XCTAssertEqual(fetcher.calls.count, fetchesBefore, "a, c and d should still be cached")
        cache.token(for: vehicle("b")) { _ in }
        XCTAssertEqual(fetcher.calls.count, fetchesBefore + 1, "b should have been evicted")
    }

    func testRecencyOrderMatchesAModelOverManyCalls() {
        let capacity = 4
        let cache = makeCache(maxEntities: capacity)
        fetcher.autoAnswer = { key in
            .success(FetchedToken(token: "tok-" + key.id, expiresAt: self.clock.wallNow + 3600))
        }
        var model: [String] = []  // least recent first
        var expectedFetches = 0
        var expectedEvictions = 0
        var seed: UInt64 = 42
        for step in 0..<2000 {
            seed = seed &* 6364136223846793005 &+ 1442695040888963407
            let id = "v\((seed >> 33) % 7)"
            if let position = model.firstIndex(of: id) {
                model.remove(at: position)
            } else {
                expectedFetches += 1
                if model.count == capacity {
                    model.removeFirst()
                    expectedEvictions += 1
                }
            }
            model.append(id)

            let answers = Answers()
            cache.token(for: vehicle(id), completion: answers.completion)
            XCTAssertEqual(answers.tokens, ["tok-" + id], "step \(step)")
            XCTAssertEqual(fetcher.calls.count, expectedFetches, "step \(step)")
            if fetcher.calls.count != expectedFetches { return }
        }
        XCTAssertEqual(cache.statistics.evictions, expectedEvictions)
        XCTAssertEqual(cache.count, capacity)
        XCTAssertGreaterThan(expectedEvictions, 100)
    }

    func testEvictionDuringFetchStillAnswersWaitersAndStoresNothing() {
        let cache = makeCache(maxEntities: 1)
        let first = Answers()
        cache.token(for: vehicle("a"), completion: first.completion)
        cache.token(for: vehicle("a"), completion: first.completion)
        cache.token(for: vehicle("b")) { _ in }  // evicts a while its fetch runs
        XCTAssertEqual(cache.statistics.evictions, 1)

        fetcher.complete(0, with: fetched("tok-a"))
        XCTAssertEqual(first.tokens, ["tok-a", "tok-a"])

        // Nothing was stored for a: a new call fetches, and b's slot is untouched.
        cache.token(for: vehicle("a")) { _ in }
        XCTAssertEqual(fetcher.fetchedKeys, [vehicle("a"), vehicle("b"), vehicle("a")])
    }

    func testEvictedFetchFailureStillReachesItsWaiters() {
        let cache = makeCache(maxEntities: 1)
        let first = Answers()
        cache.token(for: vehicle("a"), completion: first.completion)
        cache.token(for: vehicle("b")) { _ in }
        fetcher.complete(0, with: .failure(.providerUnavailable("down")))
        XCTAssertEqual(first.failures, [.providerUnavailable("down")])
    }

    func testEvictedFetchDoesNotAnswerTheEntitysNewWaiters() {
        let cache = makeCache(maxEntities: 1)
        let old = Answers()
        cache.token(for: vehicle("a"), completion: old.completion)
        cache.token(for: vehicle("b")) { _ in }  // evicts a
        let new = Answers()
        cache.token(for: vehicle("a"), completion: new.completion)  // evicts b, fetches a again
        XCTAssertEqual(fetcher.fetchedKeys, [vehicle("a"), vehicle("b"), vehicle("a")])

        fetcher.complete(0, with: fetched("tok-a-old"))
        XCTAssertEqual(old.tokens, ["tok-a-old"])
        XCTAssertEqual(new.results.count, 0)
        fetcher.complete(2, with: fetched("tok-a-new"))
        XCTAssertEqual(new.tokens, ["tok-a-new"])
        // b's fetch ends after b was evicted with no one waiting: dropped.
        fetcher.complete(1, with: fetched("tok-b"))
        let again = Answers()
        cache.token(for: vehicle("a"), completion: again.completion)
        XCTAssertEqual(again.tokens, ["tok-a-new"])
    }

    // MARK: Re-entrancy

    func testCompletionMayAskAgainForTheSameEntity() {
        let cache = makeCache()
        var nested: [Result<String, ProxyFailure>] = []
        cache.token(for: vehicle("v1")) { _ in
            cache.token(for: vehicle("v1")) { nested.append($0) }
        }
        cache.token(for: vehicle("v1")) { _ in }
        fetcher.complete(0, with: fetched("tok-1"))
        XCTAssertEqual(nested.count, 1)
        XCTAssertEqual(try nested.first?.get(), "tok-1")
        XCTAssertEqual(fetcher.calls.count, 1)
    }

    func testSynchronousFetcherAnswersBeforeTokenReturns() {
        let cache = makeCache()
        fetcher.autoAnswer = { _ in .success(FetchedToken(token: "tok-sync", expiresAt: self.clock.wallNow + 3600)) }
        let answers = Answers()
        cache.token(for: vehicle("v1"), completion: answers.completion)
        XCTAssertEqual(answers.tokens, ["tok-sync"])
        cache.token(for: vehicle("v1"), completion: answers.completion)
        XCTAssertEqual(answers.tokens, ["tok-sync", "tok-sync"])
        XCTAssertEqual(fetcher.calls.count, 1)
    }

    func testCompletionRetryingAtOnceAfterAFailureGetsTheFailureWithoutAFetch() {
        let cache = makeCache()
        let retried = Answers()
        for _ in 0..<3 {
            cache.token(for: vehicle("v1")) { result in
                if case .failure = result { cache.token(for: vehicle("v1"), completion: retried.completion) }
            }
        }
        fetcher.complete(0, with: .failure(.providerUnavailable("down")))
        XCTAssertEqual(retried.failures, Array(repeating: .providerUnavailable("down"), count: 3))
        XCTAssertEqual(fetcher.calls.count, 1)
    }

    func testCompletionRetryingAfterTheStepStartsOneNewFetchForAllRetries() {
        let cache = makeCache()
        let retried = Answers()
        cache.token(for: vehicle("v1")) { _ in }
        fetcher.complete(0, with: .failure(.providerUnavailable("down")))
        clock.advance(by: 1)
        for _ in 0..<3 {
            cache.token(for: vehicle("v1")) { result in
                if case .failure = result { cache.token(for: vehicle("v1"), completion: retried.completion) }
            }
        }
        XCTAssertEqual(fetcher.calls.count, 2)
        fetcher.complete(1, with: .failure(.providerUnavailable("still down")))
        XCTAssertEqual(retried.failures, Array(repeating: .providerUnavailable("still down"), count: 3))
        XCTAssertEqual(fetcher.calls.count, 2, "three retries during the next step fetch nothing")
    }

    func testCompletionThatEvictsOtherEntitiesDoesNotLoseWaiters() {
        let cache = makeCache(maxEntities: 2)
        let answers = Answers()
        cache.token(for: vehicle("a")) { _ in
            for id in ["x", "y", "z"] { cache.token(for: vehicle(id)) { _ in } }
        }
        cache.token(for: vehicle("a"), completion: answers.completion)
        fetcher.complete(0, with: fetched("tok-a"))
        XCTAssertEqual(answers.tokens, ["tok-a"])
        XCTAssertEqual(cache.count, 2)
        XCTAssertEqual(fetcher.fetchedKeys, [vehicle("a"), vehicle("x"), vehicle("y"), vehicle("z")])
    }

    // MARK: Backoff

    func testHotLoopDuringAnOutageSendsOnlyOneProbePerBackoffStep() {
        let cache = makeCache(backoff: BackoffPolicy(initial: 1, maximum: 8))
        fetcher.autoAnswer = { _ in .failure(.providerUnavailable("token provider answered HTTP 503")) }
        var answered = 0
        var fetchTimes: [Double] = []
        let start = clock.monotonicNow
        // A call every 1/64 s (exact in binary, so step ends fall on a call) for 40 s.
        for _ in 0..<2560 {
            let before = fetcher.calls.count
            cache.token(for: vehicle("v1")) { result in
                if case .failure = result { answered += 1 }
            }
            if fetcher.calls.count > before { fetchTimes.append(clock.monotonicNow - start) }
            clock.advance(by: 1.0 / 64)
        }
        XCTAssertEqual(answered, 2560, "every call answered at once")
        // Steps of 1, 2, 4, 8, 8, 8... seconds: probes at 0, 1, 3, 7, 15, 23, 31, 39.
        XCTAssertEqual(fetchTimes, [0, 1, 3, 7, 15, 23, 31, 39])
        XCTAssertEqual(cache.statistics.refusedDuringBackoff, 2560 - 8)
    }

    func testRecoveredProviderIsUsedAgainWithinOneStep() {
        let cache = makeCache(backoff: BackoffPolicy(initial: 1, maximum: 8))
        fetcher.autoAnswer = { _ in .failure(.providerUnavailable("down")) }
        for _ in 0..<1500 {  // 15 s of calls: the step is now 8 s
            cache.token(for: vehicle("v1")) { _ in }
            clock.advance(by: 0.01)
        }
        fetcher.autoAnswer = { key in .success(FetchedToken(token: "tok-" + key.id, expiresAt: self.clock.wallNow + 3600)) }
        let recoveredAt = clock.monotonicNow
        var firstToken: Double?
        while firstToken == nil && clock.monotonicNow - recoveredAt < 20 {
            cache.token(for: vehicle("v1")) { result in
                if case .success = result { firstToken = self.clock.monotonicNow }
            }
            clock.advance(by: 0.01)
        }
        let waited = try? XCTUnwrap(firstToken) - recoveredAt
        XCTAssertNotNil(waited)
        XCTAssertLessThanOrEqual(waited ?? 99, 8, "a recovered provider must be used within one step")
    }

    func testFailedRefreshKeepsServingTheOldTokenAndProbesOncePerStep() {
        let cache = makeCache()
        prime(cache, vehicle("v1"), "tok-1")
        clock.advance(by: 3300)
        cache.token(for: vehicle("v1")) { _ in }
        fetcher.complete(1, with: .failure(.providerUnavailable("down")))

        let answers = Answers()
        for _ in 0..<63 {
            clock.advance(by: 1.0 / 64)
            cache.token(for: vehicle("v1"), completion: answers.completion)
        }
        XCTAssertEqual(answers.tokens, Array(repeating: "tok-1", count: 63))
        XCTAssertEqual(fetcher.calls.count, 2, "no probe before the one-second step ends")
        clock.advance(by: 1.0 / 64)
        cache.token(for: vehicle("v1"), completion: answers.completion)
        XCTAssertEqual(fetcher.calls.count, 3)
        XCTAssertEqual(answers.tokens.count, 64)
    }

    func testBackoffIsPerEntity() {
        let cache = makeCache()
        cache.token(for: vehicle("down")) { _ in }
        fetcher.complete(0, with: .failure(.providerUnavailable("down")))
        let other = Answers()
        cache.token(for: vehicle("up"), completion: other.completion)
        XCTAssertEqual(fetcher.fetchedKeys, [vehicle("down"), vehicle("up")])
    }

    func testBackoffJitterStaysWithinHalfAStepAndTheStep() {
        for jitter in [0.0, 0.3, 0.999] {
            let cache = TokenCache(fetcher: fetcher, clock: clock, timing: TokenTiming(), maxEntities: 10, random: { jitter })
            let key = vehicle("j\(jitter)")
            let first = fetcher.calls.count
            cache.token(for: key) { _ in }
            fetcher.complete(first, with: .failure(.providerUnavailable("down")))
            let retryAt = clock.monotonicNow + (1 - jitter / 2)
            clock.advance(by: retryAt - 0.001 - clock.monotonicNow)
            cache.token(for: key) { _ in }
            XCTAssertEqual(fetcher.calls.count, first + 1, "no probe before the jittered step, jitter \(jitter)")
            clock.advance(by: retryAt - clock.monotonicNow)
            cache.token(for: key) { _ in }
            XCTAssertEqual(fetcher.calls.count, first + 2, "a probe once the jittered step is over, jitter \(jitter)")
            fetcher.complete(first + 1, with: fetched("tok"))
        }
    }

    // MARK: Waiters

    func testCallsPastTheWaiterBoundAreRefusedAtOnceWithAClearError() {
        let cache = makeCache(maxWaiters: 1024)
        let answers = Answers()
        for _ in 0..<1030 { cache.token(for: vehicle("v1"), completion: answers.completion) }
        XCTAssertEqual(answers.failures.count, 6)
        XCTAssertEqual(answers.failures.first?.httpStatus, 503)
        XCTAssertTrue(answers.failures.first?.message.hasPrefix("too many calls waiting for the token of vehicle \"v1\"") ?? false,
                      answers.failures.first?.message ?? "")
        XCTAssertEqual(fetcher.calls.count, 1)
        fetcher.complete(0, with: fetched("tok-1"))
        XCTAssertEqual(answers.tokens.count, 1024)
        XCTAssertEqual(cache.statistics.refusedTooManyWaiting, 6)
    }

    // MARK: Invalidation

    func testInvalidatedTokenIsFetchedAgainOnce() {
        let cache = makeCache()
        prime(cache, vehicle("v1"), "tok-1")
        cache.invalidate(vehicle("v1"), token: "tok-1")
        let answers = Answers()
        for _ in 0..<5 { cache.token(for: vehicle("v1"), completion: answers.completion) }
        XCTAssertEqual(fetcher.calls.count, 2, "five retried calls share one fetch")
        fetcher.complete(1, with: fetched("tok-2"))
        XCTAssertEqual(answers.tokens, Array(repeating: "tok-2", count: 5))
        XCTAssertEqual(cache.statistics.invalidations, 1)
    }

    func testInvalidatingATokenAlreadyReplacedKeepsTheNewOne() {
        let cache = makeCache()
        prime(cache, vehicle("v1"), "tok-1")
        cache.invalidate(vehicle("v1"), token: "tok-1")
        prime(cache, vehicle("v1"), "tok-2")
        // A second call refused with the old token reports it late.
        cache.invalidate(vehicle("v1"), token: "tok-1")
        cache.invalidate(vehicle("other"), token: "tok-2")
        let answers = Answers()
        cache.token(for: vehicle("v1"), completion: answers.completion)
        XCTAssertEqual(answers.tokens, ["tok-2"])
        XCTAssertEqual(fetcher.calls.count, 2)
        XCTAssertEqual(cache.statistics.invalidations, 1)
    }

    func testInvalidatingDuringABackgroundRefreshMakesCallsWaitForIt() {
        let cache = makeCache()
        prime(cache, vehicle("v1"), "tok-1")
        clock.advance(by: 3300)
        cache.token(for: vehicle("v1")) { _ in }  // starts the refresh
        cache.invalidate(vehicle("v1"), token: "tok-1")
        let answers = Answers()
        cache.token(for: vehicle("v1"), completion: answers.completion)
        XCTAssertEqual(answers.results.count, 0, "the refused token was served again")
        XCTAssertEqual(fetcher.calls.count, 2)
        fetcher.complete(1, with: fetched("tok-2"))
        XCTAssertEqual(answers.tokens, ["tok-2"])
    }

    /// A client that can make Fleet Engine answer 401 at will must not turn every call into a
    /// provider fetch: an entity's token is dropped at most once per hold-off.
    func testInvalidationsOfOneEntityAreHonouredAtMostOncePerHoldOff() {
        let cache = makeCache()
        prime(cache, vehicle("v1"), "tok-1")
        cache.invalidate(vehicle("v1"), token: "tok-1")
        prime(cache, vehicle("v1"), "tok-2")

        for _ in 0..<10 {
            clock.advance(by: 2.9)
            cache.invalidate(vehicle("v1"), token: "tok-2")
            let answers = Answers()
            cache.token(for: vehicle("v1"), completion: answers.completion)
            XCTAssertEqual(answers.tokens, ["tok-2"], "an invalidation within the hold-off was honoured")
        }
        XCTAssertEqual(fetcher.calls.count, 2)
        XCTAssertEqual(cache.statistics.invalidations, 1)
        XCTAssertEqual(cache.statistics.invalidationsHeldOff, 10)

        clock.advance(by: 1)  // 30 s after the first invalidation
        cache.invalidate(vehicle("v1"), token: "tok-2")
        prime(cache, vehicle("v1"), "tok-3")
        XCTAssertEqual(cache.statistics.invalidations, 2)
    }

    func testTheHoldOffIsPerEntity() {
        let cache = makeCache()
        prime(cache, vehicle("v1"), "tok-1")
        prime(cache, vehicle("v2"), "tok-a")
        cache.invalidate(vehicle("v1"), token: "tok-1")
        cache.invalidate(vehicle("v2"), token: "tok-a")
        XCTAssertEqual(cache.statistics.invalidations, 2)
    }

    // MARK: Wrong tokens

    func testTokenForAnotherVehicleIsRefusedAndNeverCached() {
        let cache = makeCache()
        let answers = Answers()
        cache.token(for: vehicle("a"), completion: answers.completion)
        let wrong = makeJWT(exp: clock.wallNow + 3600, iat: clock.wallNow, vehicleID: "b")
        fetcher.complete(0, with: .success(FetchedToken(token: wrong, expiresAt: clock.wallNow + 3600, issuedAt: clock.wallNow)))
        XCTAssertEqual(answers.failures, [.providerAnswerUnusable(
            "token provider answered a token for vehicle \"b\" when asked for vehicle \"a\"")])
        XCTAssertEqual(answers.tokens, [])
        XCTAssertEqual(cache.statistics.wrongTokens, 1)

        clock.advance(by: 1)
        let later = Answers()
        cache.token(for: vehicle("a"), completion: later.completion)
        XCTAssertEqual(later.results.count, 0, "served something without a new fetch")
        guard fetcher.calls.count == 2 else { return XCTFail("\(fetcher.calls.count) fetches, not 2") }
        let right = makeJWT(exp: clock.wallNow + 3600, iat: clock.wallNow, vehicleID: "a")
        fetcher.complete(1, with: .success(FetchedToken(token: right, expiresAt: clock.wallNow + 3600, issuedAt: clock.wallNow)))
        XCTAssertEqual(later.tokens, [right])
    }

    func testWrongTokenFromABackgroundRefreshKeepsTheRightOne() {
        let cache = makeCache()
        prime(cache, vehicle("a"), "opaque-a")
        clock.advance(by: 3300)
        cache.token(for: vehicle("a")) { _ in }
        let wrong = makeJWT(exp: clock.wallNow + 3600, iat: clock.wallNow, vehicleID: "b")
        fetcher.complete(1, with: .success(FetchedToken(token: wrong, expiresAt: clock.wallNow + 3600)))
        let answers = Answers()
        cache.token(for: vehicle("a"), completion: answers.completion)
        XCTAssertEqual(answers.tokens, ["opaque-a"])
    }

    func testOpaqueTokenIsCachedOnItsExpiryAlone() {
        let cache = makeCache()
        prime(cache, vehicle("v1"), "opaque-token-without-claims")
        XCTAssertEqual(cache.statistics.wrongTokens, 0)
        XCTAssertEqual(cache.statistics.providerFailures, 0)
    }

    // MARK: Idle entities

    func testIdleEntitiesLeaveAsCallsComeInWithoutTimers() {
        let cache = makeCache()
        fetcher.autoAnswer = { key in
            .success(FetchedToken(token: "tok-" + key.id, expiresAt: self.clock.wallNow + 600, issuedAt: self.clock.wallNow))
        }
        for id in 0..<20 { cache.token(for: vehicle("old-\(id)")) { _ in } }
        XCTAssertEqual(cache.count, 20)
        clock.advance(by: 600)  // their tokens have expired and no one used them for a lifetime
        for id in 0..<10 { cache.token(for: vehicle("new-\(id)")) { _ in } }
        XCTAssertEqual(cache.count, 10, "each call drops up to two idle entities")
        XCTAssertEqual(cache.statistics.idleDrops, 20)
        XCTAssertEqual(cache.statistics.evictions, 0)
    }

    func testEntityStillUsedIsNotDroppedWhenItsTokenExpires() {
        let cache = makeCache()
        fetcher.autoAnswer = { key in
            .success(FetchedToken(token: "tok-" + key.id, expiresAt: self.clock.wallNow + 600, issuedAt: self.clock.wallNow))
        }
        cache.token(for: vehicle("busy")) { _ in }
        clock.advance(by: 590)
        cache.token(for: vehicle("busy")) { _ in }  // past its floor: fetches, still recent
        clock.advance(by: 20)
        cache.token(for: vehicle("other")) { _ in }
        XCTAssertEqual(cache.count, 2)
        XCTAssertEqual(cache.statistics.idleDrops, 0)
    }
}
