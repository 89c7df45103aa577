/// A call's token, as both client halves get it from the cache (docs/CONTRACT.md §4): the one
/// place the lookup, its outcome in the call's record and the refetch after a 401 are written.
extension ProxyCore {
    /// The token for `call`'s entity `key`. A hit is returned at once, with no closure made; on
    /// a miss `waiter` makes the closure the cache answers once, later (or at once, when the
    /// fetch fails before it starts). The record keeps the first lookup's outcome, `hit` or
    /// `miss`: a refetch after a 401 does not change it, and it is noted before any answer can
    /// end the call (each note a short access, never one held across the cache's call).
    func token<Call: CallRecordOwner>(
        for key: EntityKey, of call: Call, waiter: () -> (Result<String, ProxyFailure>) -> Void
    ) -> Result<String, ProxyFailure>? {
        let first = call.record.cacheOutcome == nil
        let answer = cache.token(for: key) {
            if first { call.record.cacheOutcome = "miss" }
            return waiter()
        }
        if answer != nil && first { call.record.cacheOutcome = "hit" }
        return answer
    }

    /// Fleet Engine refused `token` (revoked, a rotated key): it leaves the cache if it is still
    /// the entity's (`TokenCache.invalidate` allows that once per entity per 30 s); the caller
    /// then looks the entity up again and sends the call once more.
    func tokenRefused(_ token: String?, for key: EntityKey?) {
        if let token, let key { cache.invalidate(key, token: token) }
    }
}

/// A client half whose record notes how its token was found (`H1ClientCall`, `H2ClientCall`).
protocol CallRecordOwner: AnyObject {
    var record: CallRecord { get set }
}

extension H1ClientCall: CallRecordOwner {}
extension H2ClientCall: CallRecordOwner {}
