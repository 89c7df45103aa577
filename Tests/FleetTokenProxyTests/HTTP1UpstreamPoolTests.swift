import Logging
import XCTest
@testable import FleetTokenProxy

#if canImport(Glibc)
import Glibc
#endif

/// The pool's queue of borrowers and its idle bound, against a loopback listener that never
/// accepts (`BacklogListener`: dials succeed and no answer ever comes).
final class HTTP1UpstreamPoolTests: BacklogListenerTestCase {
    private var origin: Origin { listener.origin }

    private func pool(maxConnections: Int = 1) -> HTTP1UpstreamPool {
        HTTP1UpstreamPool(loop: loop, origin: origin, tls: nil, maxConnections: maxConnections, logger: Logger(label: "test"))
    }

    private func run(timeout: Double = 1, until done: @escaping () -> Bool) {
        loop.run(timeout: timeout, until: done)
    }

    /// One connection, borrowed.
    private func borrowed(from pool: HTTP1UpstreamPool) -> HTTP1UpstreamConnection? {
        var connection: HTTP1UpstreamConnection?
        pool.acquire { if case .success(let c) = $0 { connection = c } }
        run { connection != nil }
        return connection
    }

    func testWaitersAreBoundedAndThoseOverTheBoundFailAtOnce() {
        let pool = pool()
        var failures = 0
        for _ in 0..<(HTTP1UpstreamPool.defaultMaxWaiters + 77) {
            pool.acquire { if case .failure = $0 { failures += 1 } }
        }
        // The first dials; the next `defaultMaxWaiters` wait; the rest are refused.
        XCTAssertEqual(pool.waiting, HTTP1UpstreamPool.defaultMaxWaiters)
        XCTAssertEqual(failures, 76)
        pool.close()
    }

    func testCancelledWaitersAreNeverCalledAndReleaseSkipsThem() throws {
        let pool = pool()
        let connection = try XCTUnwrap(borrowed(from: pool))
        var deadCalls = 0
        let tickets = (0..<100).map { _ in pool.acquire { _ in deadCalls += 1 } }
        XCTAssertEqual(pool.waiting, 100)
        tickets.forEach { $0.cancel() }
        tickets.forEach { $0.cancel() } // idempotent
        XCTAssertEqual(pool.waiting, 0)
        var live: HTTP1UpstreamConnection?
        let liveTicket = pool.acquire { if case .success(let c) = $0 { live = c } }
        XCTAssertTrue(liveTicket.isPending)
        pool.release(connection, reusable: true)
        XCTAssertTrue(live === connection, "the live waiter behind the dead ones gets the connection")
        XCTAssertEqual(deadCalls, 0)
        XCTAssertFalse(liveTicket.isPending)
        XCTAssertEqual(pool.waiting, 0)
        pool.close()
    }

    func testAFloodOfCallersThatGiveUpDoesNotGrowTheQueue() throws {
        final class Weak { weak var ticket: PoolTicket? }
        let pool = pool()
        _ = try XCTUnwrap(borrowed(from: pool))
        var kept: [Weak] = []
        kept.reserveCapacity(100_000)
        for _ in 0..<100_000 {
            let ticket = pool.acquire { _ in XCTFail("cancelled waiter called") }
            ticket.cancel()
            let reference = Weak()
            reference.ticket = ticket
            kept.append(reference)
        }
        XCTAssertEqual(pool.waiting, 0)
        // Only the queue holds a cancelled ticket: the ones still alive are the ones it keeps.
        XCTAssertLessThanOrEqual(kept.filter { $0.ticket != nil }.count, 65)
        var refused = false
        pool.acquire { if case .failure = $0 { refused = true } }
        XCTAssertFalse(refused, "cancelled waiters do not count against the bound")
        pool.close()
    }

    func testAConnectionDialedForACancelledTicketGoesToTheIdleList() {
        let pool = pool()
        var called = false
        let ticket = pool.acquire { _ in called = true }
        ticket.cancel()
        XCTAssertEqual(pool.totalConnections, 1)
        var next: HTTP1UpstreamConnection?
        run(timeout: 0.2) { false } // the dial completes meanwhile
        XCTAssertFalse(called)
        // The dial finished meanwhile; the connection is idle and handed out at once.
        pool.acquire { if case .success(let c) = $0 { next = c } }
        XCTAssertNotNil(next)
        pool.close()
    }

    func testCloseFailsLiveWaitersOnly() throws {
        let pool = pool()
        _ = try XCTUnwrap(borrowed(from: pool))
        var results: [Bool] = []
        let dead = pool.acquire { _ in results.append(false) }
        pool.acquire { if case .failure = $0 { results.append(true) } }
        dead.cancel()
        pool.close()
        XCTAssertEqual(results, [true])
    }

    func testAnIdleConnectionOutlivesTheResponseTimeoutAndClosesAtTheIdleTimeout() throws {
        var limits = ClientLimits()
        limits.responseTimeout = 0.2
        limits.idleTimeout = 0.9
        let pool = HTTP1UpstreamPool(loop: loop, origin: origin, tls: nil, maxConnections: 1, limits: limits, logger: Logger(label: "test"))
        let connection = try XCTUnwrap(borrowed(from: pool))
        pool.release(connection, reusable: true)
        loop.expectIdleCloseAtPointNine { pool.totalConnections }
        pool.close()
    }

    /// `--upstream-idle-timeout` below the response timeout (60 s here, as the sidecar runs)
    /// still closes an idle connection on time: the bound is not checked only when the read
    /// timeout fires.
    func testAnIdleTimeoutShorterThanTheResponseTimeoutIsHonoured() throws {
        var limits = ClientLimits()
        limits.idleTimeout = 0.3
        let pool = HTTP1UpstreamPool(loop: loop, origin: origin, tls: nil, maxConnections: 1, limits: limits, logger: Logger(label: "test"))
        let connection = try XCTUnwrap(borrowed(from: pool))
        pool.release(connection, reusable: true)
        let idleSince = ContinuousClock.now
        run(timeout: 0.25) { false }
        XCTAssertEqual(pool.totalConnections, 1, "not idle for the bound yet")
        run(timeout: 2) { pool.totalConnections == 0 }
        XCTAssertEqual(pool.totalConnections, 0, "closed once idle for the idle timeout")
        XCTAssertLessThan(ContinuousClock.now - idleSince, .milliseconds(500))
        pool.close()
    }

    func testAWarmPoolReplacesItsLastIdleConnectionBeforeClosingItAndClosesExtraOnes() throws {
        var limits = ClientLimits()
        limits.responseTimeout = 0.2
        limits.idleTimeout = 0.5
        let pool = HTTP1UpstreamPool(loop: loop, origin: origin, tls: nil, maxConnections: 4, limits: limits, logger: Logger(label: "test"))
        let first = try XCTUnwrap(borrowed(from: pool))
        let second = try XCTUnwrap(borrowed(from: pool))
        pool.release(first, reusable: true)
        pool.release(second, reusable: true)
        pool.warmUp()
        XCTAssertEqual(pool.connectionsDialed, 2, "warm already")
        XCTAssertEqual(loop.fewest(over: 1.3) { pool.idleCount }, 1, "an idle connection at every moment")
        XCTAssertEqual(pool.totalConnections, 1, "the extra one closed, the last was replaced")
        XCTAssertGreaterThanOrEqual(pool.connectionsDialed, 3)
        pool.close()
    }

    func testABorrowerDuringTheStartUpDialTakesThatConnection() {
        let pool = pool(maxConnections: 4)
        pool.warmUp()
        var connection: HTTP1UpstreamConnection?
        pool.acquire { if case .success(let c) = $0 { connection = c } }
        XCTAssertEqual(pool.totalConnections, 1, "no second dial")
        run { connection != nil }
        XCTAssertNotNil(connection)
        XCTAssertEqual(pool.totalConnections, 1)
        pool.close()
    }

    func testWarmUpLeavesOneIdleConnectionAndOnlyOne() {
        let pool = pool(maxConnections: 4)
        pool.warmUp()
        pool.warmUp()
        XCTAssertEqual(pool.totalConnections, 1)
        run(timeout: 1) { pool.takeIdle() != nil }
        XCTAssertEqual(pool.totalConnections, 1, "the warm connection was lent, no other dialed")
        pool.close()
    }

    /// A connection holds its borrower for the exchange only: giving the connection back, or
    /// discarding it, lets go of the borrower, which (as a client connection does) holds the
    /// connection in turn.
    func testTheBorrowerIsHeldForTheExchangeAndLetGoWhenItEnds() throws {
        final class Sink: ResponseSink {
            var connection: HTTP1UpstreamConnection?
            func responseHead(_ head: ResponseHead, from connection: HTTP1UpstreamConnection) {}
            func responseBody(_ bytes: ByteView, from connection: HTTP1UpstreamConnection) {}
            func responseEnded(from connection: HTTP1UpstreamConnection) {}
            func responseFailed(_ failure: ProxyFailure, retryable: Bool) {}
        }
        let pool = pool(maxConnections: 2)
        for discard in [false, true] {
            weak var borrower: Sink?
            let connection = try XCTUnwrap(borrowed(from: pool))
            do {
                let sink = Sink()
                sink.connection = connection
                connection.beginExchange(method: "GET", sink: sink)
                borrower = sink
            }
            XCTAssertNotNil(borrower, "the connection let go of its borrower during the exchange")
            if discard {
                pool.discard(connection, reason: "test")
            } else {
                pool.release(connection, reusable: true)
            }
            XCTAssertNil(borrower, "the borrower outlived its exchange (discard: \(discard))")
        }
        pool.close()
    }

    func testAfterAnIdleStretchAnExchangeGetsTheWholeResponseTimeout() throws {
        final class Sink: ResponseSink {
            var failure: ProxyFailure?
            func responseHead(_ head: ResponseHead, from connection: HTTP1UpstreamConnection) {}
            func responseBody(_ bytes: ByteView, from connection: HTTP1UpstreamConnection) {}
            func responseEnded(from connection: HTTP1UpstreamConnection) {}
            func responseFailed(_ failure: ProxyFailure, retryable: Bool) { self.failure = failure }
        }
        var limits = ClientLimits()
        limits.responseTimeout = 0.2
        limits.idleTimeout = 0.5
        let pool = HTTP1UpstreamPool(loop: loop, origin: origin, tls: nil, maxConnections: 1, limits: limits, logger: Logger(label: "test"))
        pool.release(try XCTUnwrap(borrowed(from: pool)), reusable: true)
        // Ticks at 0.2 and 0.4 s; the last one, shortened to end on the idle bound, is pending.
        run(timeout: 0.45) { false }
        let connection = try XCTUnwrap(pool.takeIdle())
        let sink = Sink()
        connection.beginExchange(method: "GET", sink: sink)
        let asked = ContinuousClock.now
        run(timeout: 1) { sink.failure != nil }
        XCTAssertTrue(sink.failure?.message.contains("did not answer") ?? false, "\(String(describing: sink.failure))")
        XCTAssertGreaterThan(ContinuousClock.now - asked, .milliseconds(180), "the response timeout, not the idle remainder")
        pool.close()
    }
}
