import CEvent
#if canImport(Glibc)
import Glibc
#endif
import Logging
import Synchronization

/// libevent's own messages (a failed `epoll_ctl`, a name server that stopped answering) through
/// the sidecar's logger, at the level libevent gave them, a storm of the same message one line
/// each `interval` with the count held back (docs/CONTRACT.md §5). Left alone, libevent writes
/// them raw to stderr, with no time and no level, as often as they happen: a million lines in two
/// seconds when accept() ran out of descriptors, before listeners paused (`AcceptPause`).
package enum LibeventLog {
    static let label = "fleet-token-proxy.libevent"
    static let interval: Double = 10

    private struct Route {
        var logger: Logger
        var limiter: LogRateLimiter
    }

    /// Under a lock: libevent logs from whichever thread called into it.
    private static let route = Mutex<Route?>(nil)

    /// From now on, for the whole process, libevent's messages go to the sidecar's log
    /// (labelled `label`, at `level`). Call once at start-up, before the loop runs.
    package static func install(level: Logger.Level) {
        install(logger: LogSetup.makeLogger(level: level, label: label))
    }

    static func install(logger: Logger) {
        route.withLock { $0 = Route(logger: logger, limiter: LogRateLimiter(interval: interval)) }
        // A thin trampoline: libevent may call it from inside its own functions, holding its
        // locks, so what it reaches only formats and writes, and never calls libevent back.
        event_set_log_callback { severity, message in
            LibeventLog.received(severity: severity, message: message)
        }
    }

    /// libevent writes to stderr itself again (tests that installed a logger of their own).
    static func remove() {
        event_set_log_callback(nil)
        route.withLock { $0 = nil }
    }

    private static func received(severity: Int32, message: UnsafePointer<CChar>?) {
        let text = message.map { String(cString: $0) } ?? ""
        let level = Self.level(severity: severity)
        let now = monotonicNow()
        let admitted: (Logger, suppressed: Int)? = route.withLock { route in
            guard var current = route, level >= current.logger.logLevel else { return nil }
            let decision = current.limiter.admit(key(for: text, level: level), now: now)
            route = current
            guard case .log(let suppressed) = decision else { return nil }
            return (current.logger, suppressed)
        }
        // Written outside the lock: a slow stderr holds up only this thread.
        guard let (logger, suppressed) = admitted else { return }
        logger.log(level: level, "\(text)", metadata: suppressed > 0 ? ["suppressed": "\(suppressed)"] : nil)
    }

    /// swift-log's level for libevent's severity (`EVENT_LOG_DEBUG` … `EVENT_LOG_ERR`).
    static func level(severity: Int32) -> Logger.Level {
        switch severity {
        case EVENT_LOG_DEBUG: return .debug
        case EVENT_LOG_MSG: return .info
        case EVENT_LOG_WARN: return .warning
        default: return .error
        }
    }

    /// Messages that differ only in their numbers (a descriptor, a count) are one message to
    /// the rate limit, so a storm about many sockets is still one storm and the limiter's keys
    /// stay few.
    static func key(for message: String, level: Logger.Level) -> String {
        var key = "\(level) "
        var inNumber = false
        for scalar in message.unicodeScalars {
            let digit = scalar.value >= 0x30 && scalar.value <= 0x39
            if digit {
                if !inNumber { key.append("#") }
            } else {
                key.unicodeScalars.append(scalar)
            }
            inNumber = digit
        }
        return key
    }

    private static func monotonicNow() -> Double {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
    }
}
