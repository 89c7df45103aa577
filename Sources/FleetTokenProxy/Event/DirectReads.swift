import CEvent
#if canImport(Glibc)
import Glibc
#endif

/// The read side of a plain-socket `Transport` without the bufferevent's: one `recv` per
/// readiness straight into the bufferevent's input evbuffer. The bufferevent asks the kernel
/// how many bytes are waiting (`FIONREAD`) before every read; on a proxy hop that is one system
/// call in three, for a number it only uses to size the read.
///
/// It keeps the bufferevent's read semantics, which the connections and their tests rely on:
/// reading on or off (`enable` restarts the inactivity timeout, as `bufferevent_enable` does),
/// a read inactivity timeout that turns reading off and reports `BEV_EVENT_TIMEOUT`, EOF and
/// errors that turn reading off and are reported once, and a high-water mark past which the
/// socket is not read until the owner drains the input below it.
///
/// Loop-thread only. Owned by its `Transport`, which calls `free()` before it closes the socket.
final class DirectReads {
    /// The most read from the socket at once.
    static let readSize = 16 * 1024

    /// Unowned: the transport owns this object and frees it in its `close()`.
    private unowned(unsafe) let transport: Transport
    private let fd: Int32
    private let input: OpaquePointer
    private var event: OpaquePointer?
    private var timeout: timeval?
    private var highWater = 0
    /// Its `evbuffer_cb_entry`, registered with the first high-water mark.
    private var highWaterCallback: OpaquePointer?
    /// The owner wants reading on.
    private var wanted = false
    /// The input holds `highWater` bytes or more: not read until drained below.
    private var suspended = false
    /// The event is added to the loop.
    private var listening = false

    init(transport: Transport, base: OpaquePointer, fd: Int32, input: OpaquePointer) {
        self.transport = transport
        self.fd = fd
        self.input = input
        event = event_new(base, fd, Int16(EV_READ | EV_PERSIST), { _, what, arg in
            let reads = Unmanaged<DirectReads>.fromOpaque(arg!).takeUnretainedValue()
            // The owner may close (and so free this object) from inside the callback.
            withExtendedLifetime(reads) { reads.ready(what) }
        }, Unmanaged.passUnretained(self).toOpaque())
    }

    deinit { free() }

    func enable() {
        wanted = true
        update()
    }

    func disable() {
        wanted = false
        update()
    }

    /// The read timeout counts from now, if reading is on (adding the event again restarts it).
    func restartTimeout() {
        guard listening, let event, var tv = timeout else { return }
        event_add(event, &tv)
    }

    /// nil: no read timeout.
    func setTimeout(_ seconds: Double?) {
        timeout = seconds.map { timeval(seconds: $0) }
        guard listening, let event else { return }
        if var tv = timeout {
            event_add(event, &tv)
        } else {
            event_remove_timer(event)
        }
    }

    /// 0: no mark.
    func setHighWater(_ high: Int) {
        highWater = max(0, high)
        if highWater > 0 && highWaterCallback == nil {
            highWaterCallback = evbuffer_add_cb(input, { _, _, arg in
                Unmanaged<DirectReads>.fromOpaque(arg!).takeUnretainedValue().inputChanged()
            }, Unmanaged.passUnretained(self).toOpaque())
        }
        inputChanged()
    }

    /// Frees the event and the input callback. Idempotent; the transport calls it before it
    /// frees the bufferevent (which closes the socket and frees the input).
    func free() {
        if let event {
            self.event = nil
            listening = false
            event_free(event)
        }
        if let highWaterCallback {
            self.highWaterCallback = nil
            evbuffer_remove_cb_entry(input, highWaterCallback)
        }
    }

    // MARK: Private

    /// Adds or deletes the event to match what is wanted. Adding again restarts the timeout.
    private func update() {
        guard let event else { return }
        if wanted && !suspended {
            if var tv = timeout { event_add(event, &tv) } else { event_add(event, nil) }
            listening = true
        } else if listening {
            event_del(event)
            listening = false
        }
    }

    /// The input grew or shrank: suspend or resume reading around the high-water mark.
    private func inputChanged() {
        let over = highWater > 0 && evbuffer_get_length(input) >= highWater
        guard over != suspended else { return }
        suspended = over
        update()
    }

    private func ready(_ what: Int16) {
        if Int32(what) & EV_TIMEOUT != 0 {
            // As the bufferevent does: reading stops, then the owner hears of it.
            disable()
            transport.directReadEnded(BEV_EVENT_TIMEOUT)
            return
        }
        var room = Self.readSize
        if highWater > 0 {
            let buffered = evbuffer_get_length(input)
            guard buffered < highWater else {
                inputChanged()
                return
            }
            room = min(room, highWater - buffered)
        }
        // The bufferevent keeps its input's end frozen against writers other than its own
        // read; this is that read now. Frozen again before the owner runs (it may close).
        evbuffer_unfreeze(input, 0)
        // Two extents, as the bufferevent's own read takes them: the free end of the last chain
        // first, then a new chain. One contiguous extent of `room` bytes would make libevent
        // start a chain or copy the last one into a larger one whenever it has less free.
        var space = (iovec(), iovec())
        let extents = withUnsafeMutablePointer(to: &space) {
            $0.withMemoryRebound(to: iovec.self, capacity: 2) { evbuffer_reserve_space(input, room, $0, 2) }
        }
        guard extents >= 1 else {
            evbuffer_freeze(input, 0)
            errno = ENOMEM
            disable()
            transport.directReadEnded(BEV_EVENT_ERROR)
            return
        }
        // Never more than `room`, whatever the extents hold.
        space.0.iov_len = min(space.0.iov_len, room)
        space.1.iov_len = extents == 2 ? min(space.1.iov_len, room - space.0.iov_len) : 0
        let vectors: Int32 = space.1.iov_len > 0 ? 2 : 1
        let n = withUnsafeMutablePointer(to: &space) {
            $0.withMemoryRebound(to: iovec.self, capacity: 2) { readv(fd, $0, vectors) }
        }
        let readError = errno
        if n > 0 {
            let first = min(n, space.0.iov_len)
            space.0.iov_len = first
            space.1.iov_len = n - first
            withUnsafeMutablePointer(to: &space) {
                $0.withMemoryRebound(to: iovec.self, capacity: 2) { _ = evbuffer_commit_space(input, $0, n > first ? 2 : 1) }
            }
        }
        evbuffer_freeze(input, 0)
        if n > 0 {
            transport.directBytesArrived()
            return
        }
        if n < 0 && (readError == EAGAIN || readError == EWOULDBLOCK || readError == EINTR) { return }
        disable()
        // The owner describes the failure from errno, as after a bufferevent's read.
        errno = readError
        transport.directReadEnded(n == 0 ? BEV_EVENT_EOF : BEV_EVENT_ERROR)
    }
}
