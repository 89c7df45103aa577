/// When an HTTP/1.1 pool closes a connection for idleness (`--upstream-idle-timeout` for Fleet
/// Engine, docs/CONTRACT.md §6), whatever the bound is next to the 60 s answer bound.
///
/// Idle time is counted in the ticks of one timer per pool, not read from a clock: a connection
/// going back to the pool only sets its count to zero, so an exchange pays nothing for the
/// bound (no clock read, no timer moved, no timeout changed), and each tick adds one to the
/// count of every idle connection. A tick comes every `period`: the bound cut in ten, or in as
/// many parts of at most 5 s as it takes (at least 10 ms, though). The first tick after a
/// connection went idle comes anywhere within a period, so the connection is past its bound
/// after `ticksToBound` ticks: idle between the bound and one period more when it closes (two,
/// for a bound under 0.1 s).
///
/// | event | condition                         | result                                        |
/// |-------|-----------------------------------|-----------------------------------------------|
/// | tick  | count + 1 < `ticksToBound`        | count + 1; not past the bound                 |
/// | tick  | count + 1 ≥ `ticksToBound`        | past the bound: the pool closes it, or keeps it (`WarmConnectionRule`) |
/// | kept  |                                   | count 0: judged again a whole bound later     |
struct IdleSweep: Equatable {
    static let shortestPeriod: Double = 0.010
    static let longestPeriod: Double = 5

    /// Seconds between ticks.
    let period: Double
    /// Ticks an idle connection sees before it is past the bound.
    let ticksToBound: Int

    init(idleTimeout: Double) {
        guard idleTimeout.isFinite else {
            // `inf`, which the flag takes: never past the bound.
            (period, ticksToBound) = (Self.longestPeriod, .max)
            return
        }
        // A whole number of periods in the bound, so that the close comes at most one late.
        let periods = max(10, (idleTimeout / Self.longestPeriod).rounded(.up))
        period = max(idleTimeout / periods, Self.shortestPeriod)
        // The periods in the bound, and one more for the first, partial, one; past a count no
        // process lives to see (a century of ticks), never.
        let ticks = (idleTimeout / period - 1e-9).rounded(.up)
        ticksToBound = ticks < 1e12 ? max(1, Int(ticks)) + 1 : .max
    }

    /// One tick for a connection idle `count` ticks so far; true when it is past the bound.
    func tick(_ count: inout Int) -> Bool {
        count += 1
        return count >= ticksToBound
    }

    /// A connection past its bound stays (the pool's last, while its replacement is dialed):
    /// the bound starts over.
    func kept(_ count: inout Int) {
        count = 0
    }
}
