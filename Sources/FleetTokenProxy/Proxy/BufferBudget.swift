/// The process-wide budget for request bytes the sidecar holds before forwarding them
/// (`ServerLimits.maxBufferedBytes`, docs/CONTRACT.md §7): every connection reserves before it buffers and
/// releases when the bytes leave or the call ends, so a flood of slow or hostile clients makes
/// the sidecar refuse new work instead of growing.
///
/// Loop-thread only, like the connections that share it.
final class BufferBudget {
    let limit: Int
    private(set) var used = 0
    /// Reservations refused since start (for metrics and tests).
    private(set) var refusals = 0

    init(limit: Int) {
        self.limit = max(0, limit)
    }

    /// Takes `count` bytes from the budget; false (and nothing taken) when that would pass the limit.
    func reserve(_ count: Int) -> Bool {
        guard count > 0 else { return true }
        guard used + count <= limit else {
            refusals += 1
            return false
        }
        used += count
        return true
    }

    /// Gives back bytes an earlier `reserve` took.
    func release(_ count: Int) {
        guard count > 0 else { return }
        precondition(count <= used, "BufferBudget released more than was reserved")
        used -= count
    }
}
