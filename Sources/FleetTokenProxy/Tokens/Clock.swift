#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Time as the token cache sees it. Scheduling uses the monotonic clock; only a token's
/// absolute expiry (JWT `exp`, epoch timestamps) is read against the wall clock.
package protocol TokenClock: AnyObject {
    /// Monotonic seconds since an arbitrary origin.
    var monotonicNow: Double { get }
    /// Wall-clock seconds since the Unix epoch.
    var wallNow: Double { get }
}

/// The real clocks of the machine.
package final class SystemClock: TokenClock {
    package init() {}

    package var monotonicNow: Double {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
    }

    package var wallNow: Double {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
    }
}
