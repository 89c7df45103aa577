import CEvent

/// A one-shot libevent timer that runs a closure on its loop.
///
/// While armed the timer holds a +1 on itself (taken in `start`, given back when it fires or
/// is cancelled), so callers may drop the handle without cancelling the work.
final class Timer: ScheduledWork {
    private var event: OpaquePointer?
    private var work: (() -> Void)?
    private var armed = false

    init(loop: EventLoop, work: @escaping () -> Void) {
        self.work = work
        event = event_new(loop.base, -1, 0, { _, _, arg in
            Unmanaged<Timer>.fromOpaque(arg!).takeUnretainedValue().fire()
        }, Unmanaged.passUnretained(self).toOpaque())
    }

    deinit { if let event { event_free(event) } }

    func start(after seconds: Double) {
        guard let event, !armed else { return }
        var tv = timeval(seconds: seconds)
        armed = true
        _ = Unmanaged.passRetained(self) // released in fire() or cancel()
        event_add(event, &tv)
    }

    func cancel() {
        work = nil
        guard armed, let event else { return }
        armed = false
        event_del(event)
        Unmanaged.passUnretained(self).release() // the +1 from start()
    }

    private func fire() {
        armed = false
        let work = self.work
        self.work = nil
        work?()
        Unmanaged.passUnretained(self).release() // the +1 from start()
    }
}

extension timeval {
    /// The longest wait written: about 31 years. A longer one (`--upstream-idle-timeout 1e300`,
    /// or `inf`, which the flag takes) is as good as never, and would not fit in `tv_sec`.
    static let longestSeconds: Double = 1e9

    /// `seconds`, from 0 (also for NaN) to `longestSeconds`.
    init(seconds: Double) {
        let clamped = seconds > 0 ? min(seconds, Self.longestSeconds) : 0
        let whole = clamped.rounded(.down)
        self.init(tv_sec: Int(whole), tv_usec: Int((clamped - whole) * 1_000_000))
    }
}
