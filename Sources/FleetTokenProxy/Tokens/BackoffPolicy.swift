/// How long an entity waits before its next provider fetch after fetches that failed in a row:
/// `initial` seconds, doubling with each failure up to `maximum` (`--provider-backoff-max`).
///
/// Each wait is jittered: up to half of the step is taken off at random, so entities that
/// failed together (a provider outage hits the whole fleet at once) do not probe together,
/// and no wait is longer than the step, so a provider that recovers is used again within one
/// step.
struct BackoffPolicy: Sendable, Equatable {
    /// The step after the first failure.
    var initial: Double
    /// The longest step.
    var maximum: Double

    package init(initial: Double = 1, maximum: Double = 60) {
        self.initial = initial
        self.maximum = maximum
    }

    /// The full step after `failures` failures in a row: 0 for none, `initial` for one,
    /// doubling from there, never over `maximum`.
    package func step(afterFailures failures: Int) -> Double {
        guard failures > 0 else { return 0 }
        // 2^30 steps of a second is decades: enough, and no overflow for any count.
        let doublings = Double(1 << min(failures - 1, 30))
        return min(maximum, initial * doublings)
    }

    /// The wait after `failures` failures in a row, for `jitter` drawn uniformly from [0, 1):
    /// in (step / 2, step].
    package func delay(afterFailures failures: Int, jitter: Double) -> Double {
        let jitter = min(max(jitter, 0), 1)
        return step(afterFailures: failures) * (1 - jitter / 2)
    }
}
