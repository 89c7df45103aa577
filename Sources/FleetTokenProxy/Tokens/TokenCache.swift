/// Counters of the token cache, for `/metrics` and tests. Every call to `token(for:)` is
/// either a hit or a miss; `coalesced` counts the misses that joined a fetch already in flight.
public struct TokenCacheStatistics: Sendable, Equatable {
    /// Calls answered at once with a cached token (in the refresh window too).
    public var hits: Int
    /// Calls that had to wait for a fetch.
    public var misses: Int
    /// Misses that joined a fetch already in flight instead of starting one.
    public var coalesced: Int
    /// Fetches started, background refreshes included.
    public var providerFetches: Int
    /// Fetches that ended without a usable token.
    public var providerFailures: Int
    /// Entities dropped to stay within `maxEntities`.
    public var evictions: Int

    public init(
        hits: Int = 0, misses: Int = 0, coalesced: Int = 0,
        providerFetches: Int = 0, providerFailures: Int = 0, evictions: Int = 0
    ) {
        self.hits = hits
        self.misses = misses
        self.coalesced = coalesced
        self.providerFetches = providerFetches
        self.providerFailures = providerFailures
        self.evictions = evictions
    }
}

/// Per-entity tokens, fetched once however many calls want them (singleflight), refreshed in
/// the background before they expire, and bounded to `maxEntities` least recently used
/// entries.
///
/// Lives on one event-loop thread: not `Sendable`, no locks. Completions run on that thread,
/// sometimes before `token(for:)` returns, and may call `token(for:)` again: every change of
/// state is made before a completion or the fetcher is called.
public final class TokenCache {
    public typealias Completion = (Result<String, ProxyFailure>) -> Void

    /// An entity's state machine, its queued calls, and its place in the recency list.
    private struct Slot {
        var key: EntityKey
        var entry: TokenEntry
        var waiters: [Completion] = []
        /// The fetch `entry` is waiting on. A completion carrying another id is stale.
        var fetchID: UInt64?
        /// Neighbours in the recency list, as indices into `slots`; `noSlot` at the ends.
        var newer = TokenCache.noSlot
        var older = TokenCache.noSlot
    }

    /// An evicted entry whose fetch was still in flight: its waiters get that fetch's result,
    /// and nothing is stored.
    private struct Orphan {
        var entry: TokenEntry
        var waiters: [Completion]
    }

    private static let noSlot = -1

    private let fetcher: TokenFetcher
    private let clock: TokenClock
    private let timing: TokenTiming
    private let maxEntities: Int

    /// Slot storage; indices of evicted slots are reused through `freeSlots`, so the array
    /// never grows beyond `maxEntities`.
    private var slots: [Slot] = []
    private var freeSlots: [Int] = []
    private var slotByKey: [EntityKey: Int] = [:]
    private var newest = TokenCache.noSlot
    private var oldest = TokenCache.noSlot
    private var orphans: [UInt64: Orphan] = [:]
    private var nextFetchID: UInt64 = 0

    public private(set) var statistics = TokenCacheStatistics()

    /// Entities currently cached (with a token, a fetch in flight, or a failed last fetch).
    public var count: Int { slotByKey.count }

    public init(fetcher: TokenFetcher, clock: TokenClock, timing: TokenTiming, maxEntities: Int) {
        precondition(maxEntities >= 1, "the token cache needs room for at least one entity")
        self.fetcher = fetcher
        self.clock = clock
        self.timing = timing
        self.maxEntities = maxEntities
    }

    /// Calls `completion` exactly once with a token fetched for `key`, or with the failure of
    /// the fetch every waiting call shares.
    public func token(for key: EntityKey, completion: @escaping Completion) {
        let index = touch(key)
        switch slots[index].entry.request(now: clock.monotonicNow) {
        case .serve(let token):
            statistics.hits += 1
            completion(.success(token))

        case .serveAndStartRefresh(let token):
            statistics.hits += 1
            startFetch(slot: index)
            completion(.success(token))

        case .wait(let startFetch):
            statistics.misses += 1
            // Queued before the fetch starts: a fetcher that completes at once answers it.
            slots[index].waiters.append(completion)
            if startFetch {
                self.startFetch(slot: index)
            } else {
                statistics.coalesced += 1
            }
        }
    }

    private func startFetch(slot index: Int) {
        let id = nextFetchID
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
        func feed(_ entry: inout TokenEntry) -> TokenEntry.FetchAction {
            switch result {
            case .success(let fetched): return entry.fetchSucceeded(fetched, now: now, wallNow: wallNow)
            case .failure(let failure): return entry.fetchFailed(failure)
            }
        }

        let answer: Result<String, ProxyFailure>
        let waiters: [Completion]
        if let index = slotByKey[key], slots[index].fetchID == id {
            slots[index].fetchID = nil
            guard case .answerWaiters(let result) = feed(&slots[index].entry) else { return }
            answer = result
            waiters = slots[index].waiters
            slots[index].waiters = []
        } else if var orphan = orphans.removeValue(forKey: id) {
            guard case .answerWaiters(let result) = feed(&orphan.entry) else { return }
            answer = result
            waiters = orphan.waiters
        } else {
            // A second completion for one fetch, or the fetch of an entry evicted with no
            // one waiting: nothing to store, no one to answer.
            return
        }

        if case .failure = answer { statistics.providerFailures += 1 }
        for waiter in waiters { waiter(answer) }
    }

    // MARK: Recency list

    /// The slot of `key`, made the most recently used; created, after evicting the least
    /// recently used entry if the cache is full, when `key` has none.
    private func touch(_ key: EntityKey) -> Int {
        if let index = slotByKey[key] {
            if index != newest {
                unlink(index)
                linkAsNewest(index)
            }
            return index
        }
        if slotByKey.count >= maxEntities { evict(oldest) }

        let slot = Slot(key: key, entry: TokenEntry(timing: timing))
        let index: Int
        if let free = freeSlots.popLast() {
            slots[free] = slot
            index = free
        } else {
            slots.append(slot)
            index = slots.count - 1
        }
        slotByKey[key] = index
        linkAsNewest(index)
        return index
    }

    private func evict(_ index: Int) {
        unlink(index)
        slotByKey[slots[index].key] = nil
        if let id = slots[index].fetchID, !slots[index].waiters.isEmpty {
            orphans[id] = Orphan(entry: slots[index].entry, waiters: slots[index].waiters)
        }
        // Drop the token and the closures now rather than when the slot is reused.
        slots[index].entry = TokenEntry(timing: timing)
        slots[index].waiters = []
        slots[index].fetchID = nil
        freeSlots.append(index)
        statistics.evictions += 1
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
