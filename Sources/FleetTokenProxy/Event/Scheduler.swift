/// Runs work later on the loop that owns the caller. Handlers and caches get this instead of
/// a concrete event loop so unit tests can drive them without sockets.
package protocol Scheduler: AnyObject {
    /// Runs `work` once after `seconds` on the owning loop; the returned handle cancels it.
    @discardableResult
    func schedule(after seconds: Double, _ work: @escaping () -> Void) -> ScheduledWork
}

/// A handle to work scheduled on a `Scheduler`.
package protocol ScheduledWork: AnyObject {
    func cancel()
}
