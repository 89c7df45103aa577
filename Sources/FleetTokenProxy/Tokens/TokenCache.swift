/// Counters of the token cache, for `/metrics` and tests. Every call to `token(for:)` is a
/// hit, a miss, or refused at once (during backoff, or with too many calls waiting);
/// `coalesced` counts the misses that joined a fetch already in flight.
package struct TokenCacheStatistics: Sendable, Equatable {
    /// Calls answered at once with a cached token (in the refresh window and backoff too).
    package var hits: Int
    /// Calls that had to wait for a fetch.
    package var misses: Int
    /// Misses that joined a fetch already in flight instead of starting one.
    package var coalesced: Int
    /// Fetches started, background refreshes and backoff probes included.
    package var providerFetches: Int
    /// Fetches that ended without a usable token.
    var providerFailures: Int
    /// Entities dropped to stay within `maxEntities`.
    var evictions: Int
    /// Fetches started by a timer, with no call waiting: refreshes ahead and backoff probes.
    var timerFetches: Int
    /// Calls answered at once with the last fetch's error because the entity is backing off.
    var refusedDuringBackoff: Int
    /// Calls refused because the entity already had the maximum of calls waiting.
    var refusedTooManyWaiting: Int
    /// Provider answers refused by `TokenScopeCheck` (wrong audience, lifetime or entity).
    var wrongTokens: Int
    /// Tokens dropped because Fleet Engine refused them (`invalidate`).
    var invalidations: Int
    /// Refusals of the cached token not honoured because one of the entity's tokens was
    /// dropped less than `TokenEntry.invalidationHoldOff` before.
    var invalidationsHeldOff: Int
    /// Entities dropped because nothing about them was worth keeping any more.
    var idleDrops: Int

    package init(
        hits: Int = 0, misses: Int = 0, coalesced: Int = 0,
        providerFetches: Int = 0, providerFailures: Int = 0, evictions: Int = 0,
        timerFetches: Int = 0, refusedDuringBackoff: Int = 0, refusedTooManyWaiting: Int = 0,
        wrongTokens: Int = 0, invalidations: Int = 0, invalidationsHeldOff: Int = 0, idleDrops: Int = 0
    ) {
        self.hits = hits
        self.misses = misses
        self.coalesced = coalesced
        self.providerFetches = providerFetches
        self.providerFailures = providerFailures
        self.evictions = evictions
        self.timerFetches = timerFetches
        self.refusedDuringBackoff = refusedDuringBackoff
        self.refusedTooManyWaiting = refusedTooManyWaiting
        self.wrongTokens = wrongTokens
        self.invalidations = invalidations
        self.invalidationsHeldOff = invalidationsHeldOff
        self.idleDrops = idleDrops
    }
}

/// Per-entity tokens, fetched once however many calls want them (singleflight), refreshed
/// ahead before they expire, fetched again with per-entity backoff after a failure, and
/// bounded to `maxEntities` least recently used entries; entities that are no longer used
/// leave once their token has expired. `TokenEntry` says what happens when; this class keeps
/// the entries, the queued calls and the timers, and talks to the fetcher.
///
/// Lives on one event-loop thread: not `Sendable`, no locks. Completions run on that thread,
/// sometimes before `token(for:completion:)` returns, and may call `token(for:)` again: every change of
/// state is made before a completion or the fetcher is called.
final class TokenCache {
    typealias Completion = (Result<String, ProxyFailure>) -> Void

    /// An entity's state machine, its queued calls and its place in the recency list (its
    /// timer deadline is in `deadlines`). One per cached entity, so kept small: 32-bit links,
    /// and no optional for the fetch id.
    private struct Slot {
        var key: EntityKey
        var entry: TokenEntry
        var waiters: [Completion] = []
        /// The fetch `entry` is waiting on, or `noFetch`. A completion carrying another id is
        /// stale.
        var fetchID = TokenCache.noFetch
        /// Neighbours in the recency list, as indices into `slots`; `noLink` at the ends.
        var newerLink = TokenCache.noLink
        var olderLink = TokenCache.noLink

        var newer: Int {
            get { Int(newerLink) }
            set { newerLink = Int32(truncatingIfNeeded: newValue) }
        }
        var older: Int {
            get { Int(olderLink) }
            set { olderLink = Int32(truncatingIfNeeded: newValue) }
        }
    }

    /// An evicted entry whose fetch was still in flight: its waiters get that fetch's result,
    /// and nothing is stored.
    private struct Orphan {
        var entry: TokenEntry
        var waiters: [Completion]
    }

    private enum Removal {
        case leastRecentlyUsed
        case idle
    }

    private static let noSlot = -1
    private static let noLink: Int32 = -1
    private static let noFetch: UInt64 = 0
    /// Least recently used entries looked at per call for being idle: enough to keep up with
    /// entities going idle one call at a time, without a scan.
    private static let idleChecksPerCall = 2

    private let fetcher: TokenFetcher
    /// Shared by every entry.
    private let policy: TokenEntry.Policy
    private let clock: TokenClock
    private let timing: TokenTiming
    private let maxEntities: Int
    private let scheduler: Scheduler?
    private let backoff: BackoffPolicy
    private let maxWaiters: Int
    private let random: () -> Double

    /// Slot storage; indices of evicted slots are reused through `freeSlots`, so the array
    /// never grows beyond `maxEntities`.
    private var slots: [Slot] = []
    private var freeSlots: [Int] = []
    private var slotByKey = SlotIndex()
    private var newest = TokenCache.noSlot
    private var oldest = TokenCache.noSlot
    private var orphans: [UInt64: Orphan] = [:]
    /// Starts at 1: 0 is `noFetch`.
    private var nextFetchID: UInt64 = 1
    /// Every entity's next timer deadline, run by the one scheduler timer `wakeUp`, armed for
    /// the earliest: an event and a closure per entity would cost more than the entity.
    private var deadlines = RefreshDeadlines()
    private var wakeUp: ScheduledWork?
    private var wakeUpAt = Double.infinity
    /// True while due deadlines are being run: `wakeUp` is armed once, after them.
    private var runningDueTimers = false

    package private(set) var statistics = TokenCacheStatistics()

    /// Entities currently cached (with a token, a fetch in flight, or backing off).
    package var count: Int { slotByKey.count }

    /// - Parameters:
    ///   - fetcher: where tokens come from (the provider client).
    ///   - clock: monotonic time for every deadline; wall time only to read expiries.
    ///   - timing: refresh margin, minimum validity and refresh spread.
    ///   - maxEntities: the most entities kept; the least recently used leave first.
    ///   - scheduler: runs the refresh-ahead, backoff-probe and idle-drop timers on the
    ///     cache's loop; nil for lazy refresh (`--lazy-refresh`): no timers, calls alone
    ///     start fetches, and idle entities leave as calls come in.
    ///   - backoff: per-entity waits after failed fetches (`--provider-backoff-max`).
    ///   - maxWaiters: calls that may wait for one entity's fetch; more are refused at once.
    ///   - random: uniform numbers from [0, 1) for jitter; fixed in tests.
    package init(
        fetcher: TokenFetcher, clock: TokenClock, timing: TokenTiming, maxEntities: Int,
        scheduler: Scheduler? = nil, backoff: BackoffPolicy = BackoffPolicy(),
        maxWaiters: Int = TokenEntry.defaultMaxWaiters,
        random: @escaping () -> Double = { Double.random(in: 0..<1) }
    ) {
        precondition(maxEntities >= 1, "the token cache needs room for at least one entity")
        precondition(maxWaiters >= 1, "an entity needs room for at least one waiting call")
        // A zero step would probe (and, with timers, re-arm) without ever waiting.
        precondition(backoff.initial > 0 && backoff.maximum > 0, "backoff steps must be longer than zero")
        // Slot links are 32-bit.
        precondition(maxEntities <= Int(Int32.max), "at most \(Int32.max) entities")
        self.policy = TokenEntry.Policy(timing: timing, backoff: backoff, maxWaiters: maxWaiters)
        self.fetcher = fetcher
        self.clock = clock
        self.timing = timing
        self.maxEntities = maxEntities
        self.scheduler = scheduler
        self.backoff = backoff
        self.maxWaiters = maxWaiters
        self.random = random
    }

    /// Calls `completion` exactly once with a token fetched for `key`, or with the failure of
    /// the fetch every waiting call shares, or at once with the last failure while the
    /// entity backs off.
    package func token(for key: EntityKey, completion: @escaping Completion) {
        if let answer = token(for: key, waiter: { completion }) { completion(answer) }
    }

    /// The answer for `key` when there is one now: the cached token (a refresh may have started
    /// behind it), or the failure of an entity that backs off or has too many calls waiting.
    /// Otherwise the call waits: `waiter()` is made, queued and later called exactly once, and
    /// the result is nil. The waiter is made only then, so the proxy path's hits allocate no
    /// closure and hold no reference to the connection that asked.
    package func token(for key: EntityKey, waiter: () -> Completion) -> Result<String, ProxyFailure>? {
        let now = clock.monotonicNow
        dropIdleEntries(now: now)
        let index = touch(key)
        switch slots[index].entry.request(now: now) {
        case .serve(let token):
            statistics.hits += 1
            return .success(token)

        case .serveAndStartRefresh(let token):
            statistics.hits += 1
            startFetch(slot: index)
            return .success(token)

        case .wait(let startFetch):
            statistics.misses += 1
            // Queued before the fetch starts: a fetcher that completes at once answers it.
            slots[index].waiters.append(waiter())
            if startFetch {
                self.startFetch(slot: index)
            } else {
                statistics.coalesced += 1
            }
            return nil

        case .fail(let failure):
            statistics.refusedDuringBackoff += 1
            return .failure(failure)

        case .tooManyWaiters:
            statistics.refusedTooManyWaiting += 1
            return .failure(.providerUnavailable(
                "too many calls waiting for the token of \(key.type.rawValue) \(quoted(key.id)) (at most \(maxWaiters))"))
        }
    }

    /// Fleet Engine refused `token` for a call about `key` (HTTP 401, gRPC `UNAUTHENTICATED`):
    /// the token is dropped if it is still the one cached, so the next call for `key` waits
    /// for a new one. A token already replaced is left alone, so calls that were refused
    /// together cause one fetch, not one each; and an entity's token is dropped at most once
    /// per `TokenEntry.invalidationHoldOff`, so 401s provoked on purpose cannot make every
    /// call a provider fetch.
    func invalidate(_ key: EntityKey, token: String) {
        guard let index = slot(of: key) else { return }
        let now = clock.monotonicNow
        switch slots[index].entry.invalidate(token: token, now: now) {
        case .dropped?:
            statistics.invalidations += 1
            fetcher.refused(key, token: token)
            runTimer(slot: index, now: now)
        case .tooSoon?:
            statistics.invalidationsHeldOff += 1
        case nil:
            break
        }
    }

    private func makeEntry() -> TokenEntry {
        TokenEntry(policy: policy)
    }

    private func startFetch(slot index: Int) {
        let id = nextFetchID
        // Wraps past 0 (`noFetch`) only after 2^64 fetches.
        nextFetchID &+= 1
        slots[index].fetchID = id
        statistics.providerFetches += 1
        let key = slots[index].key
        // Strong capture: the cache stays alive until every fetch it started has answered its
        // waiters. The fetcher drops the closure once it has called it, so no cycle remains.
        fetcher.fetch(key) { result in
            self.fetchEnded(id: id, key: key, result: result)
        }
    }

    private func fetchEnded(id: UInt64, key: EntityKey, result: Result<FetchedToken, ProxyFailure>) {
        let now = clock.monotonicNow
        let wallNow = clock.wallNow
        let jitter = random()
        let slotIndex = slot(of: key).flatMap { slots[$0].fetchID == id ? $0 : nil }
        guard slotIndex != nil || orphans[id] != nil else {
            // A second completion for one fetch, or the fetch of an entry evicted with no
            // one waiting: nothing to store, no one to answer.
            return
        }

        var checked = result
        if case .success(let fetched) = result, let problem = TokenScopeCheck.problem(with: fetched, for: key, wallNow: wallNow) {
            statistics.wrongTokens += 1
            checked = .failure(problem)
        }
        func feed(_ entry: inout TokenEntry) -> TokenEntry.FetchAction? {
            switch checked {
            case .success(let fetched): return entry.fetchSucceeded(fetched, now: now, wallNow: wallNow, jitter: jitter)
            case .failure(let failure): return entry.fetchFailed(failure, now: now, jitter: jitter)
            }
        }

        let answer: Result<String, ProxyFailure>
        let waiters: [Completion]
        if let index = slotIndex {
            slots[index].fetchID = Self.noFetch
            guard case .answerWaiters(let result)? = feed(&slots[index].entry) else { return }
            answer = result
            waiters = slots[index].waiters
            slots[index].waiters = []
            runTimer(slot: index, now: now)
        } else if var orphan = orphans.removeValue(forKey: id) {
            guard case .answerWaiters(let result)? = feed(&orphan.entry) else { return }
            answer = result
            waiters = orphan.waiters
        } else {
            return
        }

        if case .failure = answer { statistics.providerFailures += 1 }
        for waiter in waiters { waiter(answer) }
    }

    // MARK: Timers

    /// Carries out what the entry's timer says now, and sets its next deadline. Does nothing
    /// when refresh is lazy.
    private func runTimer(slot index: Int, now: Double) {
        guard scheduler != nil else { return }
        deadlines.remove(index)
        switch slots[index].entry.timerDue(now: now) {
        case .sleep(let until)?:
            deadlines.set(index, due: until)
        case .startFetch?:
            statistics.timerFetches += 1
            startFetch(slot: index)
        case .drop?:
            remove(index, .idle)
        case nil:
            break
        }
        armWakeUp(now: now)
    }

    /// Arms the one scheduler timer for the earliest deadline, or cancels it when there is none.
    private func armWakeUp(now: Double) {
        guard let scheduler, !runningDueTimers else { return }
        guard let earliest = deadlines.earliest else {
            wakeUp?.cancel()
            wakeUp = nil
            wakeUpAt = .infinity
            return
        }
        if wakeUp != nil, wakeUpAt == earliest { return }
        wakeUp?.cancel()
        wakeUpAt = earliest
        // Weak: a cache that is gone has nothing to refresh.
        wakeUp = scheduler.schedule(after: max(0, earliest - now)) { [weak self] in
            self?.wakeUpFired()
        }
    }

    /// Runs every entity whose deadline has come, earliest first. Each one's next deadline is
    /// later than now (`TokenEntry.timerDue` sleeps only until a time still to come), so the
    /// loop ends.
    private func wakeUpFired() {
        wakeUp = nil
        wakeUpAt = .infinity
        let now = clock.monotonicNow
        runningDueTimers = true
        while let index = deadlines.popDue(at: now) {
            runTimer(slot: index, now: now)
        }
        runningDueTimers = false
        armWakeUp(now: now)
    }

    /// Without timers nothing else would ever drop an idle entity: look at the least recently
    /// used few on each call, the likeliest to be idle.
    private func dropIdleEntries(now: Double) {
        for _ in 0..<Self.idleChecksPerCall {
            guard oldest != Self.noSlot, slots[oldest].entry.isDisposable(at: now) else { return }
            remove(oldest, .idle)
        }
    }

    // MARK: Recency list

    /// The slot of `key`, made the most recently used; created, after evicting the least
    /// recently used entry if the cache is full, when `key` has none.
    private func touch(_ key: EntityKey) -> Int {
        let hash = SlotIndex.hash(key)
        if let index = slotByKey.find(hash: hash, isKey: { slots[$0].key == key }) {
            if index != newest {
                unlink(index)
                linkAsNewest(index)
            }
            return index
        }
        if slotByKey.count >= maxEntities { remove(oldest, .leastRecentlyUsed) }

        let slot = Slot(key: key, entry: makeEntry())
        let index: Int
        if let free = freeSlots.popLast() {
            slots[free] = slot
            index = free
        } else {
            slots.append(slot)
            index = slots.count - 1
        }
        slotByKey.insert(index, hash: hash)
        linkAsNewest(index)
        return index
    }

    /// The slot holding `key`, if it is cached.
    private func slot(of key: EntityKey) -> Int? {
        slotByKey.find(hash: SlotIndex.hash(key), isKey: { slots[$0].key == key })
    }

    private func remove(_ index: Int, _ why: Removal) {
        unlink(index)
        slotByKey.remove(index, hash: SlotIndex.hash(slots[index].key))
        let id = slots[index].fetchID
        if id != Self.noFetch, !slots[index].waiters.isEmpty {
            orphans[id] = Orphan(entry: slots[index].entry, waiters: slots[index].waiters)
        }
        // Drop the token, the closures and the deadline now rather than when the slot is reused.
        if deadlines.deadline(of: index) != nil {
            deadlines.remove(index)
            armWakeUp(now: clock.monotonicNow)
        }
        slots[index].entry = makeEntry()
        slots[index].waiters = []
        slots[index].fetchID = Self.noFetch
        freeSlots.append(index)
        switch why {
        case .leastRecentlyUsed: statistics.evictions += 1
        case .idle: statistics.idleDrops += 1
        }
    }

    private func unlink(_ index: Int) {
        let newer = slots[index].newer
        let older = slots[index].older
        if newer != Self.noSlot { slots[newer].older = older } else { newest = older }
        if older != Self.noSlot { slots[older].newer = newer } else { oldest = newer }
        slots[index].newer = Self.noSlot
        slots[index].older = Self.noSlot
    }

    private func linkAsNewest(_ index: Int) {
        slots[index].older = newest
        slots[index].newer = Self.noSlot
        if newest != Self.noSlot { slots[newest].newer = index } else { oldest = index }
        newest = index
    }
}
