import CEvent

/// One libevent event, made once and used again and again, that runs its owner's action:
/// `soon()` after the callbacks the loop is running now (once however often it is asked: an
/// HTTP/2 connection's flush, so frames that many streams queue from one read leave in one
/// write), or `arm(after:)` once a delay has passed (an HTTP/2 call's deadline, re-armed as the
/// call moves on; an HTTP/1.1 connection's whole-head deadline). A `Timer` and closure
/// allocated per flush or per deadline cost more than the work they scheduled.
final class LoopWakeup {
    private var event: OpaquePointer?
    private var pending = false
    private var action: (() -> Void)?

    /// `action` must not keep its owner alive: the owner holds this object.
    init(loop: EventLoop, action: @escaping () -> Void) {
        self.action = action
        // Unretained: the owner keeps this object alive, and `cancel()` (or deinit) frees the
        // event before the object goes away, so no callback can reach a freed object.
        event = event_new(loop.base, -1, 0, { _, _, arg in
            Unmanaged<LoopWakeup>.fromOpaque(arg!).takeUnretainedValue().fire()
        }, Unmanaged.passUnretained(self).toOpaque())
    }

    deinit { cancel() }

    /// Runs the action once the current callbacks are done (in this turn of the loop).
    func soon() {
        guard !pending, let event else { return }
        pending = true
        event_active(event, Int32(EV_TIMEOUT), 0)
    }

    /// Runs the action after `seconds`, replacing any earlier time.
    func arm(after seconds: Double) {
        guard let event else { return }
        var tv = timeval(seconds: seconds)
        pending = true
        event_add(event, &tv)
    }

    /// The action does not run (until armed again).
    func disarm() {
        guard pending, let event else { return }
        pending = false
        event_del(event)
    }

    /// No more runs: frees the event. Idempotent.
    func cancel() {
        action = nil
        pending = false
        guard let event else { return }
        self.event = nil
        event_free(event)
    }

    private func fire() {
        pending = false
        withExtendedLifetime(self) { action?() }
    }
}
