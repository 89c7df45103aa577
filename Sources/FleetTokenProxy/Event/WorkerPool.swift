#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A few threads that run CPU-bound work off the event loop (RS256 signing, docs/CONTRACT.md
/// §4a), fed through a bounded queue: `submit` refuses work when the queue is full, so a burst
/// of cold entities waits in a known amount of memory, and the caller answers the rest as an
/// overloaded provider would. Work hands its result back to a loop with `EventLoop.execute`.
///
/// `@unchecked Sendable`: `queue` and `stopping` are only touched under `condition`'s lock.
final class WorkerPool: @unchecked Sendable {
    private let condition = ThreadCondition()
    private var queue = FIFO<@Sendable () -> Void>()
    private var stopping = false
    package let threads: Int
    let queueLimit: Int

    /// Starts `threads` detached threads; they end after `stop()` once the queue is empty.
    package init(threads: Int, queueLimit: Int) {
        precondition(threads >= 1 && queueLimit >= 1, "a worker pool needs a thread and room for a job")
        self.threads = threads
        self.queueLimit = queueLimit
        for _ in 0..<threads { WorkerThread.start(self) }
    }

    /// Threads for signing on this host: all processors but one, which the event loop keeps,
    /// at least one and at most four.
    static var defaultThreads: Int {
        min(4, max(1, Int(sysconf(Int32(_SC_NPROCESSORS_ONLN))) - 1))
    }

    /// Queues `work` for a worker; false (and `work` dropped) when the queue is full or the
    /// pool is stopping. Safe from any thread.
    func submit(_ work: @escaping @Sendable () -> Void) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        guard !stopping, queue.count < queueLimit else { return false }
        queue.push(work)
        condition.signal()
        return true
    }

    /// Jobs queued and not yet started.
    package var queued: Int {
        condition.lock()
        defer { condition.unlock() }
        return queue.count
    }

    /// No more work is taken; the threads finish what is queued and end.
    package func stop() {
        condition.lock()
        stopping = true
        condition.broadcast()
        condition.unlock()
    }

    /// A worker's loop: the next job, or nil once stopping with nothing queued.
    fileprivate func next() -> (@Sendable () -> Void)? {
        condition.lock()
        defer { condition.unlock() }
        while queue.isEmpty && !stopping { condition.wait() }
        return queue.pop()
    }
}

/// One detached POSIX thread running `WorkerPool.next()` jobs until the pool stops.
private enum WorkerThread {
    static func start(_ pool: WorkerPool) {
        // +1 for the thread, taken back (released) by the thread itself when it starts.
        let argument = Unmanaged.passRetained(pool).toOpaque()
        var thread = pthread_t()
        let started = pthread_create(&thread, nil, { argument in
            let pool = Unmanaged<WorkerPool>.fromOpaque(argument!).takeRetainedValue()
            while let work = pool.next() { work() }
            return nil
        }, argument)
        precondition(started == 0, "could not start a worker thread (error \(started))")
        pthread_detach(thread)
    }
}
