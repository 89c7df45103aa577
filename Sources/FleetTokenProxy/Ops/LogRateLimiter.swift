/// Turns a storm of the same log line into one line now and at most one each `interval` after,
/// each saying how many were held back since the last (docs/CONTRACT.md §5: a failure that
/// repeats thousands of times a second must not fill the disk or hide every other line).
///
/// Lines are told apart by a key the caller chooses (a reason, a message with its numbers
/// masked). At most `maxKeys` are remembered; a new key past that forgets the one logged
/// longest ago, whose held-back count is lost. A value: times are passed in.
struct LogRateLimiter: Equatable {
    /// What to do with one line.
    enum Decision: Equatable {
        /// Write it, saying that `suppressed` lines with the key were held back before it.
        case log(suppressed: Int)
        /// Hold it back (it is counted).
        case suppress
    }

    let interval: Double
    let maxKeys: Int
    private struct Seen: Equatable {
        var loggedAt: Double
        var suppressed: Int
    }
    private var seen: [String: Seen] = [:]

    init(interval: Double, maxKeys: Int = 64) {
        self.interval = interval
        self.maxKeys = max(1, maxKeys)
    }

    mutating func admit(_ key: String, now: Double) -> Decision {
        guard var entry = seen[key] else {
            if seen.count >= maxKeys, let oldest = seen.min(by: { $0.value.loggedAt < $1.value.loggedAt })?.key {
                seen.removeValue(forKey: oldest)
            }
            seen[key] = Seen(loggedAt: now, suppressed: 0)
            return .log(suppressed: 0)
        }
        guard now - entry.loggedAt >= interval else {
            entry.suppressed += 1
            seen[key] = entry
            return .suppress
        }
        let suppressed = entry.suppressed
        seen[key] = Seen(loggedAt: now, suppressed: 0)
        return .log(suppressed: suppressed)
    }
}
