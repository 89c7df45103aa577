import CEvent
#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// One libevent `event_base` and the thread that runs it.
///
/// Everything that touches the loop's sockets, timers and connections happens on the thread
/// inside `run()`. The only entry from other threads is `execute(_:)`, which queues work under
/// a lock and wakes the loop.
///
/// `@unchecked Sendable`: only `execute(_:)` and `stop()` may be called from other threads
/// (libevent's pthread locking makes `event_active` and `event_base_loopbreak` safe there);
/// everything else is loop-thread only, as each method says.
package final class EventLoop: Scheduler, @unchecked Sendable {
    /// libevent must be told to use pthread locks before the first base exists, once per process.
    private static let threadingReady: Bool = evthread_use_pthreads() == 0

    let base: OpaquePointer
    /// Async DNS for upstream and provider host names; created on first use.
    private var dnsBase: OpaquePointer?
    private let wakeup: OpaquePointer
    private let pending = LockedQueue()
    private var signalEvents: [SignalEvent] = []

    /// `preciseTimers`: timers fire to the microsecond (libevent's timerfd) instead of the
    /// millisecond epoll rounds up to, at the cost of a system call per turn of the loop. For a
    /// stand-in whose delay is what a benchmark measures against, not for the proxy.
    package init(preciseTimers: Bool = false) throws {
        precondition(Self.threadingReady, "libevent pthread support unavailable")
        guard let config = event_config_new() else { throw EventLoopError("event_config_new failed") }
        defer { event_config_free(config) }
        if preciseTimers { event_config_set_flag(config, Int32(EVENT_BASE_FLAG_PRECISE_TIMER.rawValue)) }
        guard let base = event_base_new_with_config(config) else { throw EventLoopError("event_base_new failed") }
        self.base = base
        // A persistent pure event made active from other threads by execute(_:).
        // The callback argument is unretained: the loop owns the event and frees it in deinit.
        guard let wakeup = event_new(base, -1, Int16(EV_PERSIST), { _, _, arg in
            Unmanaged<LockedQueue>.fromOpaque(arg!).takeUnretainedValue().drain()
        }, Unmanaged.passUnretained(pending).toOpaque()) else {
            event_base_free(base)
            throw EventLoopError("event_new failed")
        }
        self.wakeup = wakeup
        event_add(wakeup, nil)
    }

    deinit {
        signalEvents.removeAll()
        event_free(wakeup)
        if let dnsBase { evdns_base_free(dnsBase, 0) }
        event_base_free(base)
    }

    /// Runs the loop on the calling thread until `stop()` or until nothing is left to wait for.
    package func run() {
        event_base_dispatch(base)
    }

    /// Makes `run()` return after the current callbacks. Safe from any thread.
    package func stop() {
        event_base_loopbreak(base)
    }

    /// Runs `work` on the loop thread. Safe from any thread.
    package func execute(_ work: @escaping @Sendable () -> Void) {
        pending.push(work)
        event_active(wakeup, Int32(EV_READ), 0)
    }

    @discardableResult
    package func schedule(after seconds: Double, _ work: @escaping () -> Void) -> ScheduledWork {
        let timer = Timer(loop: self, work: work)
        timer.start(after: seconds)
        return timer
    }

    /// Calls `handler` on the loop thread each time `signal` arrives.
    package func onSignal(_ signal: Int32, _ handler: @escaping () -> Void) {
        signalEvents.append(SignalEvent(base: base, signal: signal, handler: handler))
    }

    /// The loop's async resolver, reading /etc/resolv.conf on first use.
    var dns: OpaquePointer? {
        if dnsBase == nil {
            dnsBase = evdns_base_new(base, EVDNS_BASE_INITIALIZE_NAMESERVERS | EVDNS_BASE_DISABLE_WHEN_INACTIVE)
        }
        return dnsBase
    }
}

/// A failure to set up libevent itself.
struct EventLoopError: Error, CustomStringConvertible {
    package let description: String
    init(_ description: String) { self.description = description }
}

/// Work handed to the loop from other threads.
///
/// The closures run only on the loop thread, in `drain()`. The lock is the standard library's
/// `Mutex`: a `pthread_mutex_t` kept as a stored property has no address Swift promises to
/// keep stable, and a mutex must not move.
private final class LockedQueue: Sendable {
    private let items = Mutex<[@Sendable () -> Void]>([])

    func push(_ work: @escaping @Sendable () -> Void) {
        items.withLock { $0.append(work) }
    }

    func drain() {
        let batch = items.withLock { queued in
            let batch = queued
            queued = []
            return batch
        }
        for work in batch { work() }
    }
}

/// A libevent signal event whose callback calls one Swift closure.
private final class SignalEvent {
    private var event: OpaquePointer?
    private let handler: () -> Void

    init(base: OpaquePointer, signal: Int32, handler: @escaping () -> Void) {
        self.handler = handler
        // Unretained: the loop's `signalEvents` array owns this object for the loop's lifetime.
        event = event_new(base, signal, Int16(EV_SIGNAL | EV_PERSIST), { _, _, arg in
            Unmanaged<SignalEvent>.fromOpaque(arg!).takeUnretainedValue().handler()
        }, Unmanaged.passUnretained(self).toOpaque())
        if let event { event_add(event, nil) }
    }

    deinit { if let event { event_free(event) } }
}
