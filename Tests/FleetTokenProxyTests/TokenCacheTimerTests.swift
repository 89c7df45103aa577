import XCTest
@testable import FleetTokenProxy

/// A provider that answers every fetch `latency` seconds later, through the fake scheduler,
/// with a token of `lifetime` seconds (or `failure`, when set).
private final class SlowProvider: TokenFetcher {
    let scheduler: FakeScheduler
    let latency: Double
    let lifetime: Double
    var failure: ProxyFailure?
    /// Monotonic time of every fetch, in order.
    private(set) var fetchTimes: [Double] = []

    init(scheduler: FakeScheduler, latency: Double = 2, lifetime: Double = 3600) {
        self.scheduler = scheduler
        self.latency = latency
        self.lifetime = lifetime
    }

    func fetch(_ key: EntityKey, completion: @escaping (Result<FetchedToken, ProxyFailure>) -> Void) {
        fetchTimes.append(scheduler.clock.monotonicNow)
        let serial = fetchTimes.count
        scheduler.schedule(after: latency) { [self] in
            if let failure { return completion(.failure(failure)) }
            let clock = scheduler.clock
            completion(.success(FetchedToken(
                token: "\(key.id)-\(serial)", expiresAt: clock.wallNow + lifetime, issuedAt: clock.wallNow)))
        }
    }
}

/// Refresh ahead, backoff probes and idle drops run by timers, on a fake scheduler.
final class TokenCacheTimerTests: XCTestCase {
    var clock: ManualClock!
    var scheduler: FakeScheduler!

    override func setUp() {
        clock = ManualClock()
        scheduler = FakeScheduler(clock: clock)
    }

    private func makeCache(_ fetcher: TokenFetcher, lazy: Bool = false, maxEntities: Int = 1000,
                           random: @escaping () -> Double = { 0 }) -> TokenCache {
        TokenCache(fetcher: fetcher, clock: clock, timing: TokenTiming(), maxEntities: maxEntities,
                   scheduler: lazy ? nil : scheduler, random: random)
    }

    /// One call for `key`; true when it was answered with a token before `token(for:)` returned.
    @discardableResult
    private func callIsAnsweredAtOnce(_ cache: TokenCache, _ key: EntityKey) -> Bool {
        var answered = false
        cache.token(for: key) { result in
            if case .success = result { answered = true }
        }
        return answered
    }

    func testRecentlyUsedEntityIsRefreshedAheadWithoutACall() {
        let provider = SlowProvider(scheduler: scheduler)
        let cache = makeCache(provider)
        callIsAnsweredAtOnce(cache, vehicle("v1"))
        scheduler.advance(by: 2)  // first token arrives; refresh point at +3300 from here
        scheduler.advance(by: 600)
        XCTAssertTrue(callIsAnsweredAtOnce(cache, vehicle("v1")))

        scheduler.advance(by: 2699.9)
        XCTAssertEqual(provider.fetchTimes.count, 1, "refreshed before its refresh point")
        scheduler.advance(by: 0.1)
        XCTAssertEqual(provider.fetchTimes, [1000, 4302], "no refresh at the refresh point")
        XCTAssertEqual(cache.statistics.timerFetches, 1)
        scheduler.advance(by: 2)
        var token: String?
        cache.token(for: vehicle("v1")) { token = try? $0.get() }
        XCTAssertEqual(token, "v1-2")
        XCTAssertEqual(cache.statistics.misses, 1, "only the first call waited")
    }

    func testVehicleCallingLessOftenThanItsTokenLastsNeverWaitsWithTimers() {
        // Five-minute tokens: refresh window from 150 s to the floor at 240 s. A call every 250 s
        // always finds the token past its floor unless a timer refreshed it in between.
        func misses(lazy: Bool) -> Int {
            setUp()
            let provider = SlowProvider(scheduler: scheduler, latency: 2, lifetime: 300)
            let cache = makeCache(provider, lazy: lazy)
            for _ in 0..<40 {
                callIsAnsweredAtOnce(cache, vehicle("v1"))
                scheduler.advance(by: 250)
            }
            return cache.statistics.misses
        }
        XCTAssertEqual(misses(lazy: false), 1, "with timers only the first call waits")
        XCTAssertEqual(misses(lazy: true), 40, "lazy refresh: each call finds the token expired")
    }

    func testSteadyCallsAcrossManyLifetimesNeverWait() {
        let provider = SlowProvider(scheduler: scheduler, latency: 3, lifetime: 60)
        let cache = TokenCache(fetcher: provider, clock: clock, timing: TokenTiming(), maxEntities: 10,
                               scheduler: scheduler, random: FixedRandom([0.1, 0.9, 0.5, 0.3]).source)
        callIsAnsweredAtOnce(cache, vehicle("v1"))
        scheduler.advance(by: 3)
        var waited = 0
        for _ in 0..<600 {  // a call every 2 s for 20 minutes: twenty lifetimes
            if !callIsAnsweredAtOnce(cache, vehicle("v1")) { waited += 1 }
            scheduler.advance(by: 2)
        }
        XCTAssertEqual(waited, 0)
        XCTAssertEqual(cache.statistics.misses, 1)
        XCTAssertGreaterThanOrEqual(provider.fetchTimes.count, 20)
        XCTAssertLessThanOrEqual(provider.fetchTimes.count, 42)
    }

    func testFleetFetchedTogetherIsRefreshedSpreadOverTheFirstHalfOfTheWindow() {
        let provider = SlowProvider(scheduler: scheduler, latency: 0)
        let cache = makeCache(provider, random: FixedRandom((0..<100).map { Double($0) / 100 }).source)
        for id in 0..<100 { callIsAnsweredAtOnce(cache, vehicle("v\(id)")) }
        scheduler.advance(by: 0)
        for id in 0..<100 { XCTAssertTrue(callIsAnsweredAtOnce(cache, vehicle("v\(id)"))) }
        scheduler.advance(by: 3600)
        let refreshes = provider.fetchTimes.dropFirst(100).map { $0 - 1000 }
        XCTAssertEqual(refreshes.count, 100, "each vehicle refreshed once")
        XCTAssertGreaterThanOrEqual(refreshes.min() ?? 0, 3300)
        XCTAssertLessThan(refreshes.max() ?? .infinity, 3420, "past the first half of the window")
        XCTAssertGreaterThan((refreshes.max() ?? 0) - (refreshes.min() ?? 0), 110, "not spread")
        XCTAssertEqual(Set(refreshes).count, 100)
    }

    func testCallsDuringATimerRefreshAreServedAndStartNoSecondFetch() {
        let provider = SlowProvider(scheduler: scheduler, latency: 5)
        let cache = makeCache(provider)
        callIsAnsweredAtOnce(cache, vehicle("v1"))
        scheduler.advance(by: 5)
        scheduler.advance(by: 3300)
        XCTAssertEqual(provider.fetchTimes.count, 2)
        for _ in 0..<4 {
            XCTAssertTrue(callIsAnsweredAtOnce(cache, vehicle("v1")))
            scheduler.advance(by: 1)
        }
        XCTAssertEqual(provider.fetchTimes.count, 2)
    }

    func testEntityUnusedForALifetimeIsRefreshedAtMostOnceMoreThenLeaves() {
        let provider = SlowProvider(scheduler: scheduler, latency: 0)
        let cache = makeCache(provider)
        callIsAnsweredAtOnce(cache, vehicle("v1"))
        scheduler.advance(by: 3 * 3600)
        XCTAssertEqual(provider.fetchTimes.map { $0 - 1000 }, [0, 3300])
        XCTAssertEqual(cache.count, 0)
        XCTAssertEqual(cache.statistics.idleDrops, 1)
        XCTAssertEqual(scheduler.pendingDeadlines, [], "a timer outlived its entity")
    }

    func testProbeTimerRenewsTheTokenOfAnEntityWhoseRefreshFailed() {
        let provider = SlowProvider(scheduler: scheduler, latency: 0, lifetime: 300)
        let cache = makeCache(provider)
        callIsAnsweredAtOnce(cache, vehicle("v1"))
        scheduler.advance(by: 0)
        provider.failure = .providerUnavailable("down")
        scheduler.advance(by: 150)  // the timer's refresh fails: backoff, the old token kept
        XCTAssertEqual(provider.fetchTimes.map { $0 - 1000 }, [0, 150])
        provider.failure = nil
        scheduler.advance(by: 1)  // the timer's probe brings a new token
        XCTAssertEqual(provider.fetchTimes.map { $0 - 1000 }, [0, 150, 151])
        var token: String?
        cache.token(for: vehicle("v1")) { token = try? $0.get() }
        XCTAssertEqual(token, "v1-3")
        XCTAssertEqual(cache.statistics.timerFetches, 2)
    }

    func testOutageSendsNoProbesWithoutCallsAndTheEntityLeavesAfterTenMinutes() {
        let provider = SlowProvider(scheduler: scheduler, latency: 0)
        provider.failure = .providerUnavailable("down")
        let cache = makeCache(provider)
        callIsAnsweredAtOnce(cache, vehicle("v1"))
        scheduler.advance(by: 599)
        XCTAssertEqual(provider.fetchTimes.count, 1, "probed for a client that stopped calling")
        XCTAssertEqual(cache.count, 1)
        scheduler.advance(by: 1)
        XCTAssertEqual(cache.count, 0)
        XCTAssertEqual(scheduler.pendingDeadlines, [])
    }

    func testHotLoopDuringAnOutageWithTimersStillSendsOneProbePerStep() {
        let provider = SlowProvider(scheduler: scheduler, latency: 0)
        provider.failure = .providerUnavailable("down")
        let cache = makeCache(provider)
        for _ in 0..<(20 * 64) {  // 20 s of calls every 1/64 s
            callIsAnsweredAtOnce(cache, vehicle("v1"))
            scheduler.advance(by: 1.0 / 64)
        }
        XCTAssertEqual(provider.fetchTimes.map { $0 - 1000 }, [0, 1, 3, 7, 15])
    }

    func testChurnThroughManyEntitiesKeepsEntriesAndTimersBounded() {
        let provider = SlowProvider(scheduler: scheduler, latency: 0.5)
        let cache = makeCache(provider, maxEntities: 50, random: FixedRandom([0.2, 0.7, 0.4]).source)
        for round in 0..<100 {
            for id in 0..<100 { callIsAnsweredAtOnce(cache, vehicle("r\(round)-\(id)")) }
            scheduler.advance(by: 30)
            XCTAssertLessThanOrEqual(cache.count, 50)
            XCTAssertLessThanOrEqual(scheduler.pendingDeadlines.count, 50, "round \(round)")
        }
        XCTAssertEqual(cache.statistics.evictions + cache.statistics.idleDrops + cache.count, 10_000)
    }

    func testInvalidatedEntityThatIsNotCalledAgainLeaves() {
        let provider = SlowProvider(scheduler: scheduler, latency: 0)
        let cache = makeCache(provider)
        callIsAnsweredAtOnce(cache, vehicle("v1"))
        scheduler.advance(by: 0)
        cache.invalidate(vehicle("v1"), token: "v1-1")
        scheduler.advance(by: 3600)
        XCTAssertEqual(cache.count, 0)
        XCTAssertEqual(provider.fetchTimes.count, 1)
    }

    /// One scheduler timer runs every entity's refresh: an event per entity would cost more
    /// memory than the entity itself. Each entity is still refreshed at its own point.
    func testManyEntitiesShareOneSchedulerTimer() {
        let provider = SlowProvider(scheduler: scheduler, latency: 0)
        let cache = makeCache(provider, random: FixedRandom([0.1, 0.9, 0.5]).source)
        for id in 0..<100 {
            callIsAnsweredAtOnce(cache, vehicle("v\(id)"))
            scheduler.advance(by: 1)
        }
        XCTAssertEqual(cache.count, 100)
        XCTAssertEqual(scheduler.pendingDeadlines.count, 1)
        for id in 0..<100 { callIsAnsweredAtOnce(cache, vehicle("v\(id)")) }
        scheduler.advance(by: 3600)
        XCTAssertEqual(provider.fetchTimes.count, 200, "each entity refreshed once, ahead of its expiry")
        XCTAssertEqual(cache.statistics.timerFetches, 100)
        XCTAssertEqual(scheduler.pendingDeadlines.count, 1)
    }
}
