import CEvent
@testable import FleetTokenProxy
#if canImport(Glibc)
import Glibc
#endif
import XCTest

/// An idle HTTP/1.1 upstream connection is past `--upstream-idle-timeout` after enough ticks of
/// its pool's sweep, whatever the bound, and never before it.
final class IdleSweepTests: XCTestCase {
    /// Ticks a connection sees before it is past the bound, with the first tick `offset` (a
    /// fraction of a period) after it went idle; and how long it was idle by then.
    func closesAfter(_ sweep: IdleSweep, offset: Double) -> (ticks: Int, idle: Double) {
        var count = 0
        var ticks = 1
        while !sweep.tick(&count) { ticks += 1 }
        return (ticks, offset * sweep.period + Double(ticks - 1) * sweep.period)
    }

    func testAnyBoundClosesBetweenTheBoundAndOnePeriodMore() {
        for bound in [0.001, 0.015, 0.05, 0.3, 1, 5, 30, 59, 60, 61, 600, 86_400] {
            let sweep = IdleSweep(idleTimeout: bound)
            for offset in [0.000001, 0.5, 1] {
                let idle = closesAfter(sweep, offset: offset).idle
                XCTAssertGreaterThanOrEqual(idle, bound - 1e-9, "bound \(bound), first tick at \(offset) period")
                let late = bound < 10 * IdleSweep.shortestPeriod ? 2 * sweep.period : sweep.period
                XCTAssertLessThanOrEqual(idle, bound + late + 1e-9, "bound \(bound), first tick at \(offset) period")
            }
        }
    }

    func testTheBoundsOfTheTestsAndOfTheIssueTickAtATenthOfTheBound() {
        for bound in [0.3, 1, 5, 30] {
            XCTAssertEqual(IdleSweep(idleTimeout: bound).period, bound / 10, accuracy: 1e-12)
        }
    }

    func testALongBoundTicksEveryFiveSecondsAtMost() {
        XCTAssertEqual(IdleSweep(idleTimeout: 59).period, 59.0 / 12, accuracy: 1e-12)
        XCTAssertEqual(IdleSweep(idleTimeout: 86_400).period, 5)
    }

    func testTheDefaultBoundClosesWithinFiveSecondsOfIt() {
        let sweep = IdleSweep(idleTimeout: 600)
        XCTAssertEqual(sweep.period, 5)
        XCTAssertEqual(sweep.ticksToBound, 121)
        XCTAssertEqual(closesAfter(sweep, offset: 0.000001).idle, 600, accuracy: 0.001)
        XCTAssertEqual(closesAfter(sweep, offset: 1).idle, 605, accuracy: 0.001)
    }

    func testABoundShorterThanTheShortestPeriodWaitsTwoTicks() {
        let sweep = IdleSweep(idleTimeout: 0.001)
        XCTAssertEqual(sweep.period, IdleSweep.shortestPeriod)
        XCTAssertEqual(sweep.ticksToBound, 2, "the first tick may come at once")
    }

    func testAConnectionKeptPastItsBoundIsJudgedAgainAWholeBoundLater() {
        let sweep = IdleSweep(idleTimeout: 1)
        var count = 0
        while !sweep.tick(&count) {}
        sweep.kept(&count)
        var more = 1
        while !sweep.tick(&count) { more += 1 }
        XCTAssertEqual(more, sweep.ticksToBound)
    }

    func testAnInfiniteOrHugeBoundNeverClosesAndTicksEveryFiveSeconds() {
        for bound in [Double.infinity, 1e300, 1e15] {
            let sweep = IdleSweep(idleTimeout: bound)
            XCTAssertEqual(sweep.period, IdleSweep.longestPeriod)
            XCTAssertEqual(sweep.ticksToBound, .max, "bound \(bound)")
        }
        XCTAssertEqual(IdleSweep(idleTimeout: 1e9).ticksToBound, 200_000_001, "31 years is still a bound")
    }

    /// The same values reach libevent as timeouts (the HTTP/2 connection's read timeout): they
    /// are clamped, not trapped on.
    func testLongOrInfiniteWaitsFitInATimeval() {
        XCTAssertEqual(timeval(seconds: .infinity).tv_sec, Int(timeval.longestSeconds))
        XCTAssertEqual(timeval(seconds: 1e300).tv_sec, Int(timeval.longestSeconds))
        XCTAssertEqual(timeval(seconds: .nan).tv_sec, 0)
        XCTAssertEqual(timeval(seconds: -3).tv_sec, 0)
        let t = timeval(seconds: 1.25)
        XCTAssertEqual(t.tv_sec, 1)
        XCTAssertEqual(t.tv_usec, 250_000)
    }
}
